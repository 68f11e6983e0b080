"""`lakeformat --warehouse URI [-o key=value ...] COMMAND`: the library's verbs on the shell."""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import sys
import traceback
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from lakeformat.catalog import Catalog
from lakeformat.errors import (
    InvalidArgumentError,
    InvalidFilterError,
    LakeformatError,
    is_secret_option,
)
from lakeformat.ingest import read_file
from lakeformat.options import parse_bool
from lakeformat.schema.merging import MERGE_SCHEMA
from lakeformat.schema.schema_change import Move, SchemaChange
from lakeformat.schema.type_text import parse_type
from lakeformat.schema.types import DataField, to_arrow
from lakeformat.storage import get_file_io
from lakeformat.table import Table

DEBUG_ENV = "LAKEFORMAT_DEBUG"


class UsageError(LakeformatError):
    """A command line that cannot run as given (exit status 2, as argparse's own errors)."""


def _kv(items: Sequence[str] | None, what: str) -> dict[str, str]:
    out = {}
    for item in items or []:
        if "=" not in item:
            secret = any(is_secret_option(part) for part in re.split(r"[\s:]+", item) if part)
            shown = "'***'" if secret else repr(item)
            raise UsageError(f"{what} {shown} must be key=value")
        k, v = item.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def _split_top(text: str) -> list[str]:
    """Split 'a INT, b DECIMAL(10, 2)' on commas outside parentheses."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "(<":
            depth += 1
        elif ch in ")>":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def parse_columns(text: str) -> list[DataField]:
    """'id BIGINT NOT NULL, name STRING' -> fields (atomic types, Paimon SQL spelling)."""
    fields = []
    for i, col in enumerate(_split_top(text)):
        name, _, type_text = col.strip().partition(" ")
        if not type_text.strip():
            raise UsageError(f"column {col!r} needs a type, e.g. 'id BIGINT'")
        fields.append(DataField(i, name.strip("`\""), parse_type(type_text)))
    return fields


ALTER_FLAGS = (
    ("--set-option", "KEY=VALUE", "set a table option"),
    ("--remove-option", "KEY", "remove a table option"),
    ("--add-column", "'NAME TYPE [COMMENT text] [FIRST|AFTER col]'",
     "add a nullable column (NAME may be a.b for a field of a ROW column)"),
    ("--rename-column", "OLD=NEW", "rename a column (OLD may be a.b)"),
    ("--drop-column", "NAME", "drop a column"),
    ("--update-column-type", "'NAME TYPE'", "change a column's type (Paimon's cast rules)"),
    ("--update-column-nullability", "NAME=true|false", "make a column nullable or NOT NULL"),
    ("--update-column-comment", "NAME=COMMENT", "set a column's comment"),
    ("--update-column-position", "'NAME FIRST|LAST|AFTER col|BEFORE col'", "move a column"),
    ("--comment", "TEXT", "set the table comment"),
)


def _column_path(text: str) -> list[str]:
    """'a.b' -> ['a', 'b']; a backquoted name may hold dots: '`a.b`'."""
    text = text.strip()
    if text.startswith("`") and text.endswith("`") and text.count("`") == 2:
        return [text[1:-1]]
    return [p.strip("`") for p in text.split(".")]


def _pair(text: str, flag: str) -> tuple[str, str]:
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"{flag} takes KEY=VALUE, got {text!r}")
    k, v = text.split("=", 1)
    return k.strip(), v.strip()


def _name_and_rest(text: str, flag: str) -> tuple[str, str]:
    name, _, rest = text.strip().partition(" ")
    if not name or not rest.strip():
        raise argparse.ArgumentTypeError(f"{flag} takes 'NAME ...', got {text!r}")
    return name, rest.strip()


_POSITION = re.compile(r"^(?P<body>.*?)\s+(?:(?P<first>FIRST)|(?P<last>LAST)|"
                       r"(?P<kind>AFTER|BEFORE)\s+(?P<ref>\S+))\s*$", re.IGNORECASE)
_COMMENT = re.compile(r"^(?P<body>.*?)\s+COMMENT\s+'(?P<text>[^']*)'\s*$", re.IGNORECASE)


def _change_parser(flag: str):
    def parse(text: str) -> Any:
        if flag == "--set-option":
            return SchemaChange.set_option(*_pair(text, flag))
        if flag == "--remove-option":
            return SchemaChange.remove_option(text.strip())
        if flag == "--rename-column":
            old, new = _pair(text, flag)
            return SchemaChange.rename_column(_column_path(old), new)
        if flag == "--drop-column":
            return SchemaChange.drop_column(_column_path(text))
        if flag == "--update-column-nullability":
            name, value = _pair(text, flag)
            if value.lower() not in ("true", "false"):
                raise argparse.ArgumentTypeError(f"{flag}: {value!r} is not true or false")
            return SchemaChange.update_column_nullability(_column_path(name),
                                                          value.lower() == "true")
        if flag == "--update-column-comment":
            name, value = _pair(text, flag)
            return SchemaChange.update_column_comment(_column_path(name), value)
        if flag == "--comment":
            return SchemaChange.update_comment(text)
        name, rest = _name_and_rest(text, flag)
        try:
            if flag == "--update-column-type":
                return SchemaChange.update_column_type(_column_path(name), parse_type(rest))
            m = _POSITION.match(" " + rest if flag == "--update-column-position" else rest)
            if flag == "--update-column-position":
                if not m or m.group("body").strip():
                    raise argparse.ArgumentTypeError(
                        f"{flag} takes 'NAME FIRST|LAST|AFTER col|BEFORE col', got {text!r}")
                kind = (m.group("kind") or "").lower()
                return SchemaChange.update_column_position(
                    name, first=bool(m.group("first")), last=bool(m.group("last")),
                    after=m.group("ref") if kind == "after" else None,
                    before=m.group("ref") if kind == "before" else None)
            move = None
            if m and not m.group("last"):
                rest = m.group("body")
                if m.group("first"):
                    move = Move.first(_column_path(name)[-1])
                elif m.group("kind").lower() == "after":
                    move = Move.after(_column_path(name)[-1], m.group("ref"))
                else:
                    move = Move.before(_column_path(name)[-1], m.group("ref"))
            elif m:
                rest = m.group("body")
            comment = None
            c = _COMMENT.match(rest)
            if c:
                rest, comment = c.group("body"), c.group("text")
            return SchemaChange.add_column(_column_path(name), parse_type(rest), comment,
                                           move)
        except LakeformatError as e:
            raise argparse.ArgumentTypeError(f"{flag} {text!r}: {e}") from None

    parse.__name__ = flag.lstrip("-")
    return parse


def _print(obj: Any, as_json: bool) -> None:
    if as_json:
        print(json.dumps(obj, indent=2, default=str))
    elif isinstance(obj, list):
        for row in obj:
            print(row)
    else:
        print(obj)


def _read_rows(path: str, fmt: str | None, table: Table, catalog: Catalog,
               merge_schema: bool = False) -> pa.Table:
    """An input file (local, or on S3 with the catalog's options) in the table's types; a
    merge-schema write keeps the file's new columns too."""
    try:
        return read_file(path, fmt, schema=table, file_io=get_file_io(path, catalog.options),
                         allow_extra=merge_schema)
    except FileNotFoundError:
        raise UsageError(f"input file {path} does not exist") from None


def _write_output(result: pa.Table, path: str) -> None:
    ext = os.path.splitext(path)[1].lower()
    if ext == ".csv":
        import pyarrow.csv as pcsv
        pcsv.write_csv(result, path)
    elif ext in (".json", ".jsonl"):
        with open(path, "w") as f:
            for row in result.to_pylist():
                f.write(json.dumps(row, default=str) + "\n")
    else:
        import pyarrow.parquet as pq
        pq.write_table(result, path)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="lakeformat", description=__doc__)
    p.add_argument("--warehouse", default=os.environ.get("LAKEFORMAT_WAREHOUSE"),
                   help="warehouse URI: a path, file://..., or s3://bucket/prefix "
                        "(default: $LAKEFORMAT_WAREHOUSE)")
    p.add_argument("-o", "--catalog-option", action="append", metavar="KEY=VALUE",
                   help="catalog option such as s3.endpoint=http://127.0.0.1:9000")
    p.add_argument("--debug", action="store_true",
                   help=f"print the traceback of any error (also: {DEBUG_ENV}=1)")
    sub = p.add_subparsers(dest="command", required=True)

    def add(name: str, help: str, table: bool = True) -> argparse.ArgumentParser:
        sp = sub.add_parser(name, help=help)
        if table:
            sp.add_argument("table", help="database.table")
        sp.add_argument("--json", action="store_true", help="print JSON")
        return sp

    sp = add("create-database", "create a database", table=False)
    sp.add_argument("database")
    sp.add_argument("--if-not-exists", action="store_true")
    add("list-tables", "list tables of a database", table=False).add_argument("database")
    sp = add("create-table", "create a primary-key table")
    sp.add_argument("--columns", required=True,
                    help="'id BIGINT, dt STRING, name STRING' (Paimon type names)")
    sp.add_argument("--primary-key", required=True, help="comma list")
    sp.add_argument("--partition-key", default="", help="comma list")
    sp.add_argument("-O", "--option", action="append", metavar="KEY=VALUE",
                    help="table option, e.g. bucket=4")
    sp.add_argument("--comment")
    sp.add_argument("--if-not-exists", action="store_true")
    for name, help in (("write", "write rows from a Parquet/CSV/JSON file"),
                       ("delete", "delete rows by primary key, keys from a file")):
        sp = add(name, help)
        sp.add_argument("input")
        sp.add_argument("--format", choices=["parquet", "csv", "json"])
        if name == "write":
            sp.add_argument("--overwrite", action="store_true",
                            help="replace the partitions written to")
            sp.add_argument("--merge-schema", action="store_true",
                            help="add the input's new columns to the table and widen types "
                                 "(write.merge-schema)")
            sp.add_argument("-W", "--write-option", action="append", metavar="KEY=VALUE",
                            help="write option, e.g. write.merge-schema.explicit-cast=true")
        _add_commit_identity(sp)
    sp = add("read", "read rows (merge-on-read)")
    sp.add_argument("--columns", help="comma list")
    sp.add_argument("--where", action="append", metavar="COL=VALUE",
                    help="equality filter; prunes partitions when COL is a partition key")
    sp.add_argument("--snapshot", type=int)
    sp.add_argument("--tag")
    sp.add_argument("--output", help="write to .parquet/.csv/.json instead of printing")
    sp.add_argument("--limit", type=int, default=50, help="rows to print (default 50)")
    sp = add("alter", "change the schema: options and columns, applied in the order given")
    for flag, meta, text in ALTER_FLAGS:
        sp.add_argument(flag, dest="changes", action="append", metavar=meta,
                        type=_change_parser(flag), help=text)
    sp = add("expire-snapshots", "expire old snapshots and the files only they used")
    sp.add_argument("--retain-min", type=int, help="default: snapshot.num-retained.min (10)")
    sp.add_argument("--retain-max", type=int, help="default: snapshot.num-retained.max")
    sp.add_argument("--older-than", help="age such as '1 h' (default snapshot.time-retained) "
                                         "or an ISO time as the cut-off")
    sp.add_argument("--max-deletes", type=int, help="default: snapshot.expire.limit (10)")
    sp.add_argument("--dry-run", action="store_true", help="list what would be deleted")
    sp = add("clean-schemas", "delete schema files nothing can need any more")
    sp.add_argument("--retain-min", type=int)
    sp.add_argument("--older-than")
    sp.add_argument("--dry-run", action="store_true")
    sp = add("remove-orphan-files", "delete files no snapshot, tag or consumer references")
    sp.add_argument("--older-than", help="default 1 d; at least 1 h (see the next flag)")
    sp.add_argument("--no-enforce-retention-duration", dest="enforce_retention_duration",
                    action="store_false",
                    help="accept any past --older-than, '0 s' too: on-call cleanup after a "
                         "crash, only while no writer is running")
    sp.add_argument("--dry-run", action="store_true")
    sp = add("expire-partitions", "drop partitions older than partition.expiration-time")
    sp.add_argument("--expiration-time", help="default: partition.expiration-time")
    sp.add_argument("--dry-run", action="store_true")
    sp = add("tag", "create, delete or list tags")
    sp.add_argument("action", choices=["create", "delete", "list"])
    sp.add_argument("name", nargs="?")
    sp.add_argument("--snapshot", type=int, help="snapshot to tag (default: latest)")
    sp.add_argument("--time-retained", help="expire the tag after this long, e.g. '7 d'")
    sp.add_argument("--dry-run", action="store_true")
    sp = add("rollback", "make a snapshot or tag the latest state")
    sp.add_argument("target", help="snapshot id or tag name")
    sp = add("snapshots", "list snapshots")
    sp.add_argument("--commit-user", help="only the snapshots of this commit user ...")
    sp.add_argument("--commit-identifier", type=int, metavar="N",
                    help="... and identifier: did a commit land?")
    add("schemas", "list schema versions")
    sp = add("files", "list live data files")
    sp.add_argument("--snapshot", type=int)
    _add_compact_parser(add)
    return p


# -- compact ---------------------------------------------------------------------------------------
def _add_compact_parser(add: Any) -> None:
    sp = add("compact", "compact buckets (full by default) as COMPACT snapshots")
    mode = sp.add_mutually_exclusive_group()
    mode.add_argument("--full", dest="full", action="store_true", default=True,
                      help="merge every sorted run into the top level (default)")
    mode.add_argument("--minor", dest="full", action="store_false",
                      help="Paimon's universal compaction picks instead of a full compaction")
    sp.add_argument("--partition", action="append", metavar="K=V[,K2=V2]",
                    help="compact only this partition (repeatable)")
    sp.add_argument("--where", action="append", metavar="COL<op>VALUE",
                    help="partition filter such as dt>=2024-01-01 (ops = != < <= > >=; "
                         "repeated terms are ANDed)")
    sp.add_argument("--partition-idle-time", metavar="DURATION",
                    help="only partitions not written for this long, e.g. '1 d'")
    sp.add_argument("--memory-budget", metavar="SIZE",
                    help="memory of the whole job, e.g. '512 mb' (default write-buffer-size)")
    sp.add_argument("--workers", type=int, help="parallel buckets (default: CPU count)")
    _add_commit_identity(sp)


def _add_commit_identity(sp: Any) -> None:
    sp.add_argument("--commit-user", help="commitUser of the snapshot (default: a random one)")
    sp.add_argument("--commit-identifier", type=int, metavar="N",
                    help="with --commit-user: a run with a pair that already landed commits "
                         "nothing again (e.g. the logical date as yyyymmdd)")


_WHERE_OPS = ("!=", ">=", "<=", "=", ">", "<")


def _where_terms(items: Sequence[str] | None) -> list[tuple[str, str, str]] | None:
    if not items:
        return None
    out = []
    for item in items:
        for op in _WHERE_OPS:
            if op in item:
                col, value = item.split(op, 1)
                out.append((col.strip(), op, value.strip()))
                break
        else:
            raise UsageError(f"--where {item!r} must be COL<op>VALUE with op in {_WHERE_OPS}")
    return out


def _run_compact(table: Table, args: argparse.Namespace) -> None:
    partitions = None
    if args.partition:
        partitions = [_kv(p.split(","), "--partition") for p in args.partition]
    result = table.compact(
        full=args.full, partitions=partitions, where=_where_terms(args.where),
        partition_idle_time=args.partition_idle_time, memory_budget=args.memory_budget,
        workers=args.workers, progress=lambda msg: print(msg, file=sys.stderr, flush=True),
        commit_user=args.commit_user, commit_identifier=args.commit_identifier)
    _print(result.to_dict() if args.json else str(result), args.json)


def run(args: argparse.Namespace) -> int:
    if not args.warehouse:
        raise UsageError("--warehouse (or $LAKEFORMAT_WAREHOUSE) is required")
    catalog = Catalog(args.warehouse, _kv(args.catalog_option, "catalog option"))
    cmd = args.command
    if cmd == "create-database":
        catalog.create_database(args.database, exist_ok=args.if_not_exists)
        _print({"database": args.database, "created": True}, args.json)
        return 0
    if cmd == "list-tables":
        _print(catalog.list_tables(args.database), args.json)
        return 0
    if cmd == "create-table":
        t = catalog.create_table(
            args.table, parse_columns(args.columns),
            primary_keys=[k.strip() for k in args.primary_key.split(",") if k.strip()],
            partition_keys=[k.strip() for k in args.partition_key.split(",") if k.strip()],
            options=_kv(args.option, "table option"), comment=args.comment,
            exist_ok=args.if_not_exists)
        _print({"table": t.name, "path": t.path, "schema_id": t.table_schema.id}, args.json)
        return 0
    table = catalog.get_table(args.table)
    if cmd in ("write", "delete"):
        merge = cmd == "write" and (args.merge_schema or parse_bool(
            {**table.options, **_kv(args.write_option, "write option")}, MERGE_SCHEMA))
        data = _read_rows(args.input, args.format, table, catalog, merge)
        if cmd == "write":
            result = table.write(data, overwrite=args.overwrite,
                                 merge_schema=True if args.merge_schema else None,
                                 options=_kv(args.write_option, "write option"),
                                 commit_user=args.commit_user,
                                 commit_identifier=args.commit_identifier)
        else:
            result = table.delete(data, commit_user=args.commit_user,
                                  commit_identifier=args.commit_identifier)
        _print(result.to_dict() if args.json else str(result), args.json)
    elif cmd == "read":
        filt = _equality_filter(table, args.where)
        cols = [c.strip() for c in args.columns.split(",")] if args.columns else None
        result = table.read(columns=cols, filter=filt, snapshot_id=args.snapshot, tag=args.tag)
        if args.output:
            _write_output(result, args.output)
            _print({"rows": result.num_rows, "output": args.output}, args.json)
        elif args.json:
            _print(result.slice(0, args.limit).to_pylist(), True)
        else:
            print(result.slice(0, args.limit).to_pandas().to_string(index=False)
                  if _has_pandas() else result.slice(0, args.limit))
            print(f"({result.num_rows} rows)", file=sys.stderr)
    elif cmd == "alter":
        if not args.changes:
            raise UsageError("alter needs at least one change (see lakeformat alter --help)")
        schema = table.alter(args.changes)
        _print(json.loads(schema.to_json()) if args.json else
               f"{table.name}: schema {schema.id}: "
               f"{', '.join(f'{f.name} {f.type}' for f in schema.fields)}", args.json)
    elif cmd in MAINTENANCE:
        result = MAINTENANCE[cmd](table, args)
        _print(result.to_dict() if args.json else str(result), args.json)
    elif cmd == "tag":
        if args.action == "list":
            tags = table.list_tags()
            _print([x.to_dict() for x in tags] if args.json else [str(x) for x in tags],
                   args.json)
        elif not args.name:
            raise UsageError(f"tag {args.action} needs a tag name")
        elif args.action == "create":
            info = table.create_tag(args.name, args.snapshot, args.time_retained)
            _print(info.to_dict() if args.json else str(info), args.json)
        else:
            result = table.delete_tag(args.name, dry_run=args.dry_run)
            _print(result.to_dict() if args.json else str(result), args.json)
    elif cmd == "snapshots":
        snaps = table.snapshots()
        if args.commit_identifier is not None:
            if args.commit_user is None:
                raise UsageError("--commit-identifier needs --commit-user")
            snaps = table.find_commit(args.commit_user, args.commit_identifier)
        elif args.commit_user is not None:
            snaps = [s for s in snaps if s.commit_user == args.commit_user]
        _print([s.to_dict() for s in snaps] if args.json else
               [f"{s.id}\t{s.commit_kind}\tschema {s.schema_id}\t{s.total_record_count} records"
                f"\t{s.time_millis}\t{s.commit_user}\t{s.commit_identifier}" for s in snaps],
               args.json)
    elif cmd == "schemas":
        _print([json.loads(s.to_json()) for s in table.schemas()] if args.json else
               [f"{s.id}\t{', '.join(f'{f.name} {f.type}' for f in s.fields)}\t{s.options}"
                for s in table.schemas()], args.json)
    elif cmd == "compact":
        _run_compact(table, args)
    elif cmd == "files":
        files = table.files(snapshot_id=args.snapshot)
        _print(files if args.json else
               [f"{f['partition']}\tbucket-{f['bucket']}\tL{f['level']}\t{f['row_count']} rows"
                f"\t{f['file_size']} B\t{f['file_name']}" for f in files], args.json)
    return 0


def _older_than(text: str | None) -> Any:
    """'1 h' / '7 d' (an age) or an ISO date-time (the cut-off itself)."""
    if text is None:
        return None
    try:
        return datetime.datetime.fromisoformat(text)
    except ValueError:
        return text


MAINTENANCE = {
    "expire-snapshots": lambda t, a: t.expire_snapshots(
        a.retain_min, a.retain_max, _older_than(a.older_than), a.max_deletes, a.dry_run),
    "clean-schemas": lambda t, a: t.clean_schemas(a.retain_min, _older_than(a.older_than),
                                                  a.dry_run),
    "remove-orphan-files": lambda t, a: t.remove_orphan_files(
        _older_than(a.older_than), a.dry_run, a.enforce_retention_duration),
    "expire-partitions": lambda t, a: t.expire_partitions(_older_than(a.expiration_time),
                                                          a.dry_run),
    "rollback": lambda t, a: t.rollback_to(int(a.target) if a.target.isdigit() else a.target),
}


def _has_pandas() -> bool:
    try:
        import pandas  # noqa: F401
    except ImportError:
        return False
    return True


def _equality_filter(table: Table, items: Sequence[str] | None) -> list[tuple] | None:
    """`--where COL=VALUE` terms with VALUE converted to the column's type."""
    if not items:
        return None
    out = []
    schema = table.table_schema
    for k, v in _kv(items, "--where").items():
        if k not in schema.field_names:
            raise InvalidFilterError(f"--where {k}={v}: {table.name} has no column {k!r}; "
                                     f"columns are {schema.field_names}")
        dt = schema.field(k).type
        try:
            out.append((k, "=", pa.scalar(v).cast(to_arrow(dt)).as_py()))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            raise InvalidFilterError(f"--where {k}={v}: {v!r} cannot be converted to column "
                                     f"{k!r} of type {dt}") from None
    return out


# -- errors and exit status ------------------------------------------------------------------------
# 0 done; 2 the command cannot run as given: usage, names, option values, filters, an input
# file that is missing or does not fit the table; 1 anything else (missing table, storage,
# conflicts, internal errors); 130 interrupted.
#: errors in what the caller asked (arguments, names, options, filters, input rows): exit 2
USAGE_ERRORS = (UsageError, InvalidArgumentError)


def _message(e: BaseException) -> str:
    if isinstance(e, KeyError) and len(e.args) == 1 and isinstance(e.args[0], str):
        return e.args[0]  # str() of a KeyError quotes its message
    return str(e) or type(e).__name__


def _storage_error(e: BaseException) -> str | None:
    """A readable message for boto errors (unreachable endpoint, no or bad credentials)."""
    try:
        from botocore.exceptions import (
            BotoCoreError,
            ClientError,
            EndpointConnectionError,
            NoCredentialsError,
        )
    except ImportError:
        return None
    if isinstance(e, NoCredentialsError):
        return ("no S3 credentials: give -o s3.access-key=... -o s3.secret-key=... or set "
                "AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY")
    if isinstance(e, EndpointConnectionError):
        return f"cannot reach the S3 endpoint: {e}"
    if isinstance(e, (ClientError, BotoCoreError)):
        return f"S3 request failed: {e}"
    return None


def _secrets(argv: Sequence[str]) -> list[str]:
    """Values of secret-bearing KEY=VALUE arguments, so no message echoes one."""
    out = []
    for item in argv:
        key, eq, value = str(item).partition("=")
        if eq and value.strip() and is_secret_option(key):
            out.append(value.strip())
    return out


def _report(e: BaseException, debug: bool, secrets: Sequence[str]) -> int:
    storage = _storage_error(e)
    if isinstance(e, LakeformatError):
        text, code = _message(e), 2 if isinstance(e, USAGE_ERRORS) else 1
    elif storage is not None:
        text, code = storage, 1
    elif isinstance(e, OSError):
        text, code = _message(e), 1
    else:
        text, code = f"internal error: {type(e).__name__}: {_message(e)}", 1
        if not debug:
            text += f" (run with --debug or {DEBUG_ENV}=1 for the traceback)"
    if debug:
        traceback.print_exception(e, file=sys.stderr)
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, "***")
    print(f"lakeformat: error: {text}", file=sys.stderr)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit status (errors are one line on stderr)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:  # argparse has printed usage and its error (status 2) or help
        return e.code if isinstance(e.code, int) else 2
    debug = args.debug or os.environ.get(DEBUG_ENV, "").lower() in ("1", "true", "yes")
    try:
        return run(args)
    except KeyboardInterrupt:
        print("lakeformat: interrupted", file=sys.stderr)
        return 130
    except Exception as e:
        return _report(e, debug, _secrets(argv))


if __name__ == "__main__":
    sys.exit(main())
