"""Commands that change a warehouse or a table: databases, tables, writes, schema changes,
maintenance, tags and compaction. Each prints its result once: a line or table for people,
the JSON envelope with --json. Library results (CommitResult, MaintenanceResult,
CompactResult) are printed with their own `str` and `to_dict`."""

from __future__ import annotations

import argparse
import datetime
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from lakeformat.catalog import Catalog, Identifier
from lakeformat.cli.errors import UsageError, kv
from lakeformat.cli.render import (
    emit_json,
    emit_text,
    iso_local,
    iso_millis,
    shown_options,
    table_text,
)
from lakeformat.cli.schema_args import parse_columns
from lakeformat.errors import TableNotFoundError
from lakeformat.expressions import where_filter
from lakeformat.ingest import read_file
from lakeformat.options import parse_bool
from lakeformat.results import TagInfo
from lakeformat.schema.merging import MERGE_SCHEMA
from lakeformat.schema.table_schema import TableSchema
from lakeformat.storage import get_file_io
from lakeformat.table import Table


@dataclass
class Context:
    """What a command runs with: the parsed arguments and the catalog."""

    args: argparse.Namespace
    catalog: Catalog

    @property
    def json(self) -> bool:
        return bool(getattr(self.args, "json", False))

    def table(self) -> Table:
        return self.catalog.get_table(self.args.table)

    def emit(self, result: Any, text: str | Callable[[], str]) -> None:
        """The JSON envelope of `result`, or `text` for people."""
        if self.json:
            emit_json(self.args.command, result)
        else:
            emit_text(text() if callable(text) else text)


def _names(text: str) -> list[str]:
    return [k.strip() for k in text.split(",") if k.strip()]


def older_than(text: str | None) -> Any:
    """'1 h' / '7 d' (an age) or an ISO date-time (the cut-off itself)."""
    if text is None:
        return None
    try:
        return datetime.datetime.fromisoformat(text)
    except ValueError:
        return text


# -- warehouse and databases --------------------------------------------------------------------
def list_databases(ctx: Context) -> None:
    names = sorted(ctx.catalog.list_databases())
    if not names:  # a mistyped warehouse also holds nothing: say where we looked
        print(f"lakeformat: no databases in warehouse {ctx.catalog.warehouse}", file=sys.stderr)
    ctx.emit(names, lambda: table_text(["DATABASE"], [[n] for n in names]))


def create_database(ctx: Context) -> None:
    name = ctx.args.database
    existed = ctx.args.if_not_exists and ctx.catalog.database_exists(name)
    ctx.catalog.create_database(name, exist_ok=ctx.args.if_not_exists)
    where = ctx.catalog.warehouse
    ctx.emit({"database": name, "created": not existed, "warehouse": where},
             f"database {name} already exists in {where}" if existed else
             f"created database {name} in {where}")


def list_tables(ctx: Context) -> None:
    db = ctx.args.database
    names = sorted(ctx.catalog.list_tables(db))
    ctx.emit(names, lambda: table_text(["TABLE"], [[f"{db}.{n}"] for n in names]))


def create_table(ctx: Context) -> None:
    a = ctx.args
    existed = a.if_not_exists and ctx.catalog.table_exists(a.table)
    t = ctx.catalog.create_table(
        a.table, parse_columns(a.columns), primary_keys=_names(a.primary_key),
        partition_keys=_names(a.partition_key), options=kv(a.option, "table option"),
        comment=a.comment, exist_ok=a.if_not_exists)
    verb = "table exists" if existed else "created table"
    ctx.emit({"table": t.name, "path": t.path, "schema_id": t.table_schema.id,
              "created": not existed},
             f"{verb} {t.name} (schema {t.table_schema.id}) at {t.path}")


def drop_table(ctx: Context) -> None:
    name = ctx.args.table
    try:
        ctx.catalog.drop_table(name)
        dropped = True
    except TableNotFoundError:
        if not ctx.args.if_exists:
            raise
        ctx.catalog.list_tables(Identifier.parse(name).database)  # a missing database is
        dropped = False                                            # still an error
    ctx.emit({"table": name, "dropped": dropped},
             f"dropped table {name}" if dropped else
             f"table {name} does not exist in {ctx.catalog.warehouse}; nothing dropped")


# -- writes ---------------------------------------------------------------------------------------
def _input_rows(path: str, fmt: str | None, table: Table, catalog: Catalog,
                merge_schema: bool = False) -> pa.Table:
    """An input file (local, or on S3 with the catalog's options) in the table's types; a
    merge-schema write keeps the file's new columns too."""
    try:
        return read_file(path, fmt, schema=table, file_io=get_file_io(path, catalog.options),
                         allow_extra=merge_schema)
    except FileNotFoundError:
        raise UsageError(f"input file {path} does not exist") from None


def write_or_delete(ctx: Context) -> None:
    a, table = ctx.args, ctx.table()
    if a.command == "write":
        options = kv(a.write_option, "write option")
        merge = a.merge_schema or parse_bool({**table.options, **options}, MERGE_SCHEMA)
        data = _input_rows(a.input, a.format, table, ctx.catalog, merge)
        result = table.write(data, overwrite=a.overwrite,
                             merge_schema=True if a.merge_schema else None, options=options,
                             commit_user=a.commit_user, commit_identifier=a.commit_identifier)
    elif a.where:
        if a.input is not None:
            raise UsageError("delete takes a file of keys or --where, not both")
        where = " AND ".join(f"({w})" for w in a.where)
        result = table.delete(where=where, commit_user=a.commit_user,
                              commit_identifier=a.commit_identifier)
    else:
        if a.input is None:
            raise UsageError("delete needs a file of primary keys or --where CONDITION")
        data = _input_rows(a.input, a.format, table, ctx.catalog)
        result = table.delete(data, commit_user=a.commit_user,
                              commit_identifier=a.commit_identifier)
    ctx.emit(result.to_dict(), lambda: str(result))


# -- schema ---------------------------------------------------------------------------------------
def snake(key: str) -> str:
    out = []
    for i, ch in enumerate(key):
        if ch.isupper() and i:
            out.append("_")
        out.append(ch.lower())
    return "".join(out)


def schema_json(schema: TableSchema) -> dict[str, Any]:
    """A schema in the CLI's JSON style: Paimon's schema JSON with snake_case keys (option
    keys and field names kept as they are) and `time` next to `time_millis`."""
    import json

    raw = json.loads(schema.to_json())
    out: dict[str, Any] = {}
    for key, value in raw.items():
        out[snake(key)] = value
    out["fields"] = [field_json(f) for f in raw.get("fields", [])]
    out["options"] = shown_options(schema.options)
    out["time"] = iso_millis(schema.time_millis) if schema.time_millis else None
    return out


def field_json(field: dict[str, Any]) -> dict[str, Any]:
    return {snake(k): (_type_json(v) if k == "type" else v) for k, v in field.items()}


def _type_json(t: Any) -> Any:
    if isinstance(t, dict):
        return {snake(k): ([field_json(f) for f in v] if k == "fields" else _type_json(v))
                for k, v in t.items()}
    return t


def columns_table(schema: TableSchema) -> str:
    return table_text(
        ["ID", "NAME", "TYPE", "NULLABLE", "COMMENT"],
        [[f.id, f.name, f.type.sql(), "yes" if f.type.nullable else "no",
          f.description or ""] for f in schema.fields],
        right=[0])


def alter(ctx: Context) -> None:
    if not ctx.args.changes:
        raise UsageError("alter needs at least one change (see lakeformat alter --help)")
    table = ctx.table()
    schema = table.alter(ctx.args.changes)
    ctx.emit(schema_json(schema),
             lambda: f"{table.name}: schema {schema.id}\n{columns_table(schema)}")


# -- maintenance ----------------------------------------------------------------------------------
MAINTENANCE: dict[str, Callable[[Table, argparse.Namespace], Any]] = {
    "expire-snapshots": lambda t, a: t.expire_snapshots(
        a.retain_min, a.retain_max, older_than(a.older_than), a.max_deletes, a.dry_run),
    "clean-schemas": lambda t, a: t.clean_schemas(a.retain_min, older_than(a.older_than),
                                                  a.dry_run, a.compact_manifests),
    "remove-orphan-files": lambda t, a: t.remove_orphan_files(
        older_than(a.older_than), a.dry_run, a.enforce_retention_duration),
    "expire-partitions": lambda t, a: t.expire_partitions(older_than(a.expiration_time),
                                                          a.dry_run),
    "expire-tags": lambda t, a: t.expire_tags(older_than(a.older_than), a.dry_run),
    "rollback": lambda t, a: t.rollback_to(int(a.target) if a.target.isdigit() else a.target),
}


def maintenance(ctx: Context) -> None:
    result = MAINTENANCE[ctx.args.command](ctx.table(), ctx.args)
    ctx.emit(result.to_dict(), lambda: str(result))


def tag_json(tag: TagInfo) -> dict[str, Any]:
    return {"name": tag.name, "snapshot_id": tag.snapshot_id, "schema_id": tag.schema_id,
            "commit_time": iso_millis(tag.commit_time), "commit_time_millis": tag.commit_time,
            "create_time": iso_local(tag.create_time),
            "time_retained_s": (tag.time_retained.total_seconds()
                                if tag.time_retained is not None else None)}


def _retained(tag: TagInfo) -> str:
    return str(tag.time_retained) if tag.time_retained is not None else "-"


def tag(ctx: Context) -> None:
    a, table = ctx.args, ctx.table()
    if a.action == "list":
        tags = table.list_tags()
        ctx.emit([tag_json(x) for x in tags], lambda: table_text(
            ["NAME", "SNAPSHOT", "SCHEMA", "COMMIT TIME", "CREATED", "RETAINED"],
            [[x.name, x.snapshot_id, x.schema_id, iso_millis(x.commit_time) or "-",
              iso_local(x.create_time) or "-", _retained(x)] for x in tags], right=[1, 2]))
        return
    if not a.name:
        raise UsageError(f"tag {a.action} needs a tag name: lakeformat tag {a.table} "
                         f"{a.action} NAME")
    if a.action == "create":
        info = table.create_tag(a.name, a.snapshot, a.time_retained)
        ctx.emit(tag_json(info), lambda: str(info))
    else:
        result = table.delete_tag(a.name, dry_run=a.dry_run)
        ctx.emit(result.to_dict(), lambda: str(result))


def compact(ctx: Context) -> None:
    a, table = ctx.args, ctx.table()
    partitions = None
    if a.partition:
        partitions = [kv(p.split(","), "--partition") for p in a.partition]
    where = where_filter(a.where, table.table_schema.fields, table.name) if a.where else None
    result = table.compact(
        full=a.full, partitions=partitions, where=where,
        partition_idle_time=a.partition_idle_time, memory_budget=a.memory_budget,
        workers=a.workers, progress=lambda msg: print(msg, file=sys.stderr, flush=True),
        commit_user=a.commit_user, commit_identifier=a.commit_identifier)
    ctx.emit(result.to_dict(), lambda: str(result))

