"""Commands that look at a table: snapshots, history, schemas, files (worst bucket first) and
describe."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from lakeformat.cli.commands import Context, schema_json
from lakeformat.cli.errors import UsageError
from lakeformat.cli.render import (
    emit_text,
    human_size,
    iso_millis,
    local_millis_iso,
    pairs_text,
    shown_options,
    table_text,
)
from lakeformat.meta.snapshot import BATCH_COMMIT_IDENTIFIER, Snapshot
from lakeformat.schema.table_schema import TableSchema
from lakeformat.table import Table


def snapshot_json(s: Snapshot) -> dict[str, Any]:
    """A snapshot's fields (snake_case), with `time` (ISO UTC) beside `time_millis`."""
    out: dict[str, Any] = {}
    for key, value in s.to_dict().items():
        out[key] = value
        if key == "time_millis":
            out["time"] = iso_millis(value)
    return out


def _identifier(value: int | None) -> str:
    if value is None:
        return "-"
    return "batch" if value == BATCH_COMMIT_IDENTIFIER else str(value)


def snapshots(ctx: Context) -> None:
    a, table = ctx.args, ctx.table()
    if a.commit_identifier is not None:
        if a.commit_user is None:
            raise UsageError("--commit-identifier needs --commit-user")
        snaps = table.find_commit(a.commit_user, a.commit_identifier)
    else:
        snaps = table.snapshots()
        if a.commit_user is not None:
            snaps = [s for s in snaps if s.commit_user == a.commit_user]
    ctx.emit([snapshot_json(s) for s in snaps], lambda: table_text(
        ["ID", "KIND", "SCHEMA", "RECORDS", "DELTA", "TIME", "COMMIT USER", "IDENTIFIER"],
        [[s.id, s.commit_kind, s.schema_id, _count(s.total_record_count),
          _count(s.delta_record_count), iso_millis(s.time_millis), s.commit_user,
          _identifier(s.commit_identifier)] for s in snaps], right=[0, 2, 3, 4]))


def history_json(entry: dict[str, Any]) -> dict[str, Any]:
    """One entry of `Table.history()` with its `timestamp` as the CLI writes instants: `time`
    (ISO UTC) and `time_millis`."""
    out: dict[str, Any] = {}
    for key, value in entry.items():
        if key == "timestamp":
            millis = None if value is None else int(value.timestamp() * 1000)
            out["time"] = iso_millis(millis) if millis is not None else None
            out["time_millis"] = millis
        else:
            out[key] = value
    return out


def history(ctx: Context) -> None:
    """`Table.history()`: the commit log newest first, what each commit did and who made it."""
    limit = ctx.args.limit
    if limit is not None and limit < 1:
        raise UsageError(f"--limit must be at least 1, got {limit}")
    entries = [history_json(e) for e in ctx.table().history(limit)]
    ctx.emit(entries, lambda: table_text(
        ["VERSION", "TIME", "OPERATION", "KIND", "RECORDS", "DELTA", "SCHEMA", "COMMIT USER",
         "IDENTIFIER"],
        [[e["version"], e["time"] or "-", e.get("operation") or "-", e["commit_kind"],
          _count(e["total_record_count"]), _count(e["delta_record_count"]), e["schema_id"],
          e["commit_user"], _identifier(e["commit_identifier"])] for e in entries],
        right=[0, 4, 5, 6]))


def _count(n: int | None) -> str:
    return "-" if n is None else str(n)


def _fields_text(schema: TableSchema) -> str:
    return ", ".join(f"{f.name} {f.type}" for f in schema.fields)


def schemas(ctx: Context) -> None:
    found = ctx.table().schemas()
    ctx.emit([schema_json(s) for s in found], lambda: table_text(
        ["ID", "TIME", "COLUMNS", "OPTIONS"],
        [[s.id, iso_millis(s.time_millis) if s.time_millis else "-", _fields_text(s),
          ", ".join(f"{k}={v}" for k, v in shown_options(s.options).items()) or "-"]
         for s in found], right=[0]))


# -- files --------------------------------------------------------------------------------------
def partition_text(values: dict[str, Any]) -> str:
    if not values:
        return "-"
    return ",".join(f"{k}={'null' if v is None else v}" for k, v in values.items())


def bucket_summary(files: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (partition, bucket): files, sorted runs (each level-0 file is a run, each
    other non-empty level one), rows and bytes; the bucket most in need of compaction first."""
    groups: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for f in files:
        groups[(partition_text(f["partition"]), f["bucket"])].append(f)
    out = []
    for (part, bucket), members in groups.items():
        level0 = sum(1 for f in members if f["level"] == 0)
        upper = {f["level"] for f in members if f["level"] > 0}
        out.append({"partition": members[0]["partition"], "partition_text": part,
                    "bucket": bucket, "files": len(members), "sorted_runs": level0 + len(upper),
                    "level0_files": level0, "rows": sum(f["row_count"] for f in members),
                    "bytes": sum(f["file_size"] for f in members)})
    out.sort(key=lambda b: (-b["sorted_runs"], -b["files"], b["partition_text"], b["bucket"]))
    return out


def files(ctx: Context) -> None:
    a, table = ctx.args, ctx.table()
    found = table.files(snapshot_id=a.snapshot, tag=a.tag)
    buckets = bucket_summary(found)
    rank = {(b["partition_text"], b["bucket"]): i for i, b in enumerate(buckets)}
    found.sort(key=lambda f: (rank[(partition_text(f["partition"]), f["bucket"])],
                              f["level"], f["file_name"]))
    if ctx.json:
        for f in found:
            f["creation_time_millis"] = f.get("creation_time")
            f["creation_time"] = local_millis_iso(f.get("creation_time"))
        ctx.emit({"files": found, "buckets": [{k: v for k, v in b.items()
                                                if k != "partition_text"} for b in buckets]},
                 "")
        return
    summary = table_text(
        ["PARTITION", "BUCKET", "SORTED RUNS", "FILES", "LEVEL-0", "ROWS", "SIZE"],
        [[b["partition_text"], b["bucket"], b["sorted_runs"], b["files"], b["level0_files"],
          b["rows"], human_size(b["bytes"])] for b in buckets], right=[1, 2, 3, 4, 5, 6])
    if a.summary:
        emit_text(summary)
        return
    listing = table_text(
        ["PARTITION", "BUCKET", "LEVEL", "ROWS", "SIZE", "SCHEMA", "CREATED", "FILE"],
        [[partition_text(f["partition"]), f["bucket"], f["level"], f["row_count"],
          human_size(f["file_size"]), f["schema_id"],
          local_millis_iso(f.get("creation_time")) or "-", f["file_name"]] for f in found],
        right=[1, 2, 3, 4, 5])
    total = sum(f["file_size"] for f in found)
    emit_text(f"{listing}\n\n{len(found)} files, {human_size(total)} in {len(buckets)} "
              f"buckets; buckets by sorted runs:\n{summary}")


# -- describe -----------------------------------------------------------------------------------
def describe_json(table: Table) -> dict[str, Any]:
    """Everything `describe` shows, as the JSON result."""
    schema = table.refresh().table_schema
    snap = table.latest_snapshot()
    live = table.files() if snap is not None else []
    options = shown_options(schema.options)
    return {
        "table": table.name, "path": table.path, "comment": schema.comment,
        "schema_id": schema.id,
        "fields": [{"id": f.id, "name": f.name, "type": f.type.sql(),
                    "nullable": f.type.nullable, "comment": f.description} for f in
                   schema.fields],
        "primary_keys": list(schema.primary_keys), "partition_keys": list(schema.partition_keys),
        "bucket": options.get("bucket", "-1"),
        "merge_engine": options.get("merge-engine", "deduplicate"),
        "options": options,
        "latest_snapshot": None if snap is None else {
            "id": snap.id, "commit_kind": snap.commit_kind, "time": iso_millis(snap.time_millis),
            "time_millis": snap.time_millis, "total_record_count": snap.total_record_count,
            "schema_id": snap.schema_id},
        "data_files": len(live),
        "data_bytes": sum(f["file_size"] for f in live),
        "partitions": len({partition_text(f["partition"]) for f in live}),
        "snapshots": len(table.snapshot_manager.snapshot_ids()),
        "schema_files": len(table.schema_manager.schema_ids()),
        "tags": len(table.list_tags()),
    }


def describe_text(d: dict[str, Any]) -> str:
    snap = d["latest_snapshot"]
    latest = "none (no data written)" if snap is None else (
        f"{snap['id']} ({snap['commit_kind']}, {snap['time']}, "
        f"{_count(snap['total_record_count'])} records)")
    head = pairs_text([
        ("table", d["table"]), ("path", d["path"]), ("comment", d["comment"] or "-"),
        ("schema", str(d["schema_id"])),
        ("primary keys", ", ".join(d["primary_keys"]) or "-"),
        ("partition keys", ", ".join(d["partition_keys"]) or "-"),
        ("bucket", d["bucket"]), ("merge engine", d["merge_engine"]),
        ("latest snapshot", latest),
        ("data files", f"{d['data_files']} ({human_size(d['data_bytes'])}) in "
                       f"{d['partitions']} partitions"),
        ("snapshots", str(d["snapshots"])), ("schema files", str(d["schema_files"])),
        ("tags", str(d["tags"])),
    ])
    cols = table_text(["ID", "NAME", "TYPE", "NULLABLE", "COMMENT"],
                      [[f["id"], f["name"], f["type"], "yes" if f["nullable"] else "no",
                        f["comment"] or ""] for f in d["fields"]], right=[0])
    opts = table_text(["OPTION", "VALUE"], sorted(d["options"].items())) \
        if d["options"] else "(no options)"
    return f"{head}\n\n{cols}\n\n{opts}"


def describe(ctx: Context) -> None:
    d = describe_json(ctx.table())
    ctx.emit(d, lambda: describe_text(d))

