"""Schema-file retention, which Paimon lacks (its tables keep every `schema/schema-N` forever).

`schema-K` is deleted only when all of these hold:

* K is not the latest schema, and not among the newest `retain_min` schema files;
* no snapshot, tag or long-lived changelog has `schemaId = K`, and no data or changelog file
  named by any of their manifests (ADD or DELETE entries) has `_SCHEMA_ID = K` (consumers pin
  snapshots, which are read like any other); the snapshots, tags and changelogs of every
  branch count too (a branch reads its own `branch/branch-<name>/schema/`, which is never
  touched, but its files were written under the table's schema ids);
* schema K is older than the cut-off (a missing `timeMillis` counts as young), and so is the
  schema that replaced it: a writer that started on K and has not committed yet writes files
  with `_SCHEMA_ID = K`, and it has had the whole retention time to commit.

Just before deleting, snapshots, tags and schemas are listed again: a candidate that became
referenced, or the latest, or is gone, is dropped. Any failed read deletes nothing. The result
says why each remaining schema is kept (`kept`, `kept_kinds`).

Manifests keep the entries of deleted files until a full manifest compaction (Java's merge
keeps DELETE entries and the ADDs they cancel), so after a full compaction old schemas can stay
referenced by files no snapshot reads. `compact_manifests=True` first commits Paimon's manifest
compaction (`CompactManifestsJob`); older snapshots keep their manifests, and
the schemas they name, until they expire.
"""

from __future__ import annotations

import datetime as dt
import time

from lakeformat import clock
from lakeformat.errors import CleanupAbortedError, InvalidOptionError, TableNotFoundError
from lakeformat.layout import SCHEMA_PREFIX, numbered_id
from lakeformat.operation.commit import CompactManifestsJob
from lakeformat.operation.maintain.cleanup import OlderThan, delete_paths, past_cutoff_millis
from lakeformat.operation.maintain.references import ReferenceScan
from lakeformat.options import parse_duration
from lakeformat.results import MaintenanceResult
from lakeformat.schema.schema_manager import SchemaManager
from lakeformat.schema.table_schema import TableSchema
from lakeformat.storage import FileIO
from lakeformat.storage.parallel import concurrently, parallel_map

SCHEMA_NUM_RETAINED_MIN = "schema.num-retained.min"
SCHEMA_TIME_RETAINED = "schema.time-retained"
DEFAULT_NUM_RETAINED_MIN = 10
DEFAULT_TIME_RETAINED = "1 d"
OPERATION = "clean-schemas"


def retention(options: dict[str, str], retain_min: int | None, older_than: OlderThan,
              now_ms: int) -> tuple[int, int]:
    """(retain_min, cut-off millis) from the arguments, else the table options."""
    if retain_min is None:
        raw = options.get(SCHEMA_NUM_RETAINED_MIN, str(DEFAULT_NUM_RETAINED_MIN))
        try:
            retain_min = int(str(raw).strip())
        except ValueError:
            raise InvalidOptionError(f"option {SCHEMA_NUM_RETAINED_MIN!r} must be an integer, "
                                     f"got {raw!r}") from None
    if retain_min < 1:
        raise InvalidOptionError(f"{SCHEMA_NUM_RETAINED_MIN} (retain_min) must be at least 1, "
                                 f"got {retain_min}")
    default = parse_duration(options.get(SCHEMA_TIME_RETAINED, DEFAULT_TIME_RETAINED),
                             SCHEMA_TIME_RETAINED)
    cutoff = past_cutoff_millis(older_than, default, now_ms,
                                "a schema being used by a writer right now could be deleted")
    return retain_min, cutoff


def _time_of(schemas: SchemaManager, schema_id: int) -> int:
    try:
        return schemas.schema(schema_id).time_millis
    except Exception as e:
        raise CleanupAbortedError(f"{OPERATION} of {schemas.table_path} aborted, nothing "
                                  f"deleted: cannot read schema {schema_id} "
                                  f"({schemas.schema_path(schema_id)}): {e}") from e


Reasons = dict[int, tuple[str, str]]  # schema id -> (kind, reason) of a kept schema


def plan(schemas: SchemaManager, ids: list[int], used: set[int], retain_min: int, cutoff: int
         ) -> tuple[list[int], Reasons]:
    """Schema ids the rules allow deleting, oldest first; and why the young ones are kept."""
    protected = set(ids[-retain_min:]) | used
    pairs = [(sid, ids[i + 1]) for i, sid in enumerate(ids[:-1]) if sid not in protected]
    needed = sorted({x for pair in pairs for x in pair})
    times = dict(zip(needed, parallel_map(lambda k: _time_of(schemas, k), needed)))
    # the successor is the schema that replaced it (or a later one, if that is gone)
    out: list[int] = []
    young: Reasons = {}
    for sid, successor in pairs:
        why = _too_young(sid, times[sid], cutoff) or _too_young(successor, times[successor],
                                                                 cutoff, sid)
        if why is None:
            out.append(sid)
        else:
            young[sid] = ("too-young", why)
    return out, young


def _too_young(sid: int, millis: int, cutoff: int, replaced: int | None = None) -> str | None:
    """Why schema `sid` counts as young (None: it is old enough)."""
    if 0 < millis < cutoff:
        return None
    whose = f"schema {sid}, which replaced it," if replaced is not None else "it"
    if millis <= 0:
        return f"too young: {whose} has no creation time (timeMillis), which counts as young"
    return (f"too young: {whose} was created {_instant(millis)}, after the cut-off "
            f"{_instant(cutoff)}")


def _instant(millis: int) -> str:
    return dt.datetime.fromtimestamp(millis / 1000, dt.UTC).isoformat(
        sep=" ", timespec="seconds")


def explain(ids: list[int], scan: ReferenceScan, retain_min: int, young: Reasons) -> Reasons:
    """Why each of `ids` (the schemas left) is kept: the first rule that keeps it."""
    out: Reasons = {}
    newest = set(ids[-retain_min:])
    for sid in ids:
        if sid == ids[-1]:
            out[sid] = ("latest", "latest schema")
        elif sid in newest:
            out[sid] = ("retain-min", f"among the newest {retain_min} schemas (retain_min)")
        elif sid in scan.schema_ids:
            out[sid] = scan.why_referenced(sid) or (
                "snapshot", "referenced by a snapshot, tag or changelog")
        elif sid in young:
            out[sid] = young[sid]
    return out


def _compact_manifests(file_io: FileIO, table_path: str, schema: TableSchema,
                       result: MaintenanceResult, dry_run: bool) -> None:
    """Commit Paimon's manifest compaction of the latest snapshot (`CompactManifestsJob`; or,
    dry, plan it and say it would)."""
    job = CompactManifestsJob(file_io, table_path, schema)
    units = job.plan()
    latest, deletes = job.base, job.deletes
    if not units:
        where = f"snapshot {latest.id}" if latest is not None else "the table (no snapshot)"
        result.notes.append(f"compact_manifests: the manifests of {where} hold no DELETE "
                            "entry; nothing to compact")
        return
    assert latest is not None
    if dry_run:
        result.notes.append(f"compact_manifests: would compact the manifests of snapshot "
                            f"{latest.id} ({deletes} DELETE entries) into a new COMPACT "
                            "snapshot; the schemas kept below are as before that compaction")
        return
    snap = job.commit(job.execute(units))
    if snap is None:  # a commit meanwhile left nothing to compact
        result.notes.append("compact_manifests: nothing left to compact")
        return
    result.manifest_compaction_snapshot = snap.id
    result.notes.append(f"compact_manifests: committed COMPACT snapshot {snap.id}, whose "
                        f"manifests hold only live files (snapshot {latest.id}'s held "
                        f"{deletes} DELETE entries); older snapshots keep theirs until they "
                        "expire")


def compact_manifests(file_io: FileIO, table_path: str, schema: TableSchema, table_name: str,
                      dry_run: bool = False) -> MaintenanceResult:
    """Paimon's manifest compaction alone: what `clean_schemas(compact_manifests=True)` commits
    first, without the schema retention after it (no file is deleted). The result's
    `manifest_compaction_snapshot` is the COMPACT snapshot committed (None when the latest
    snapshot's manifests hold no DELETE entry, or on a dry run), `notes` say what was done."""
    start = time.monotonic()
    result = MaintenanceResult(table_name, "compact-manifests", dry_run=dry_run)
    _compact_manifests(file_io, table_path, schema, result, dry_run)
    result.latest_snapshot = result.manifest_compaction_snapshot
    result.duration_s = round(time.monotonic() - start, 3)
    return result


def _list(file_io: FileIO, schemas: SchemaManager) -> dict[int, int]:
    """schema id -> file size, from one listing of `schema/`."""
    try:
        listing = file_io.list_status(schemas.schema_dir)
    except Exception as e:
        raise CleanupAbortedError(f"{OPERATION} of {schemas.table_path} aborted, nothing "
                                  f"deleted: cannot list {schemas.schema_dir}: {e}") from e
    out = {}
    for st in listing:
        sid = numbered_id(st.path.rsplit("/", 1)[-1], SCHEMA_PREFIX)
        if sid is not None:
            out[sid] = st.size
    return dict(sorted(out.items()))


def clean_schemas(file_io: FileIO, table_path: str, schema: TableSchema, table_name: str,
                  retain_min: int | None, older_than: OlderThan, dry_run: bool,
                  compact_manifests: bool = False) -> MaintenanceResult:
    start = time.monotonic()
    retain_min, cutoff = retention(schema.options, retain_min, older_than, clock.now_millis())
    result = MaintenanceResult(table_name, OPERATION, dry_run=dry_run)
    if compact_manifests:
        _compact_manifests(file_io, table_path, schema, result, dry_run)
    schemas = SchemaManager(file_io, table_path)
    scan = ReferenceScan(file_io, table_path, schema, OPERATION)
    # the schema listing beside the first look at what references them (the re-check below
    # repeats that look until nothing new appears, before anything is deleted)
    sizes, _ = concurrently(lambda: _list(file_io, schemas), scan.refresh)
    ids = list(sizes)
    if not ids:
        raise TableNotFoundError(f"{table_path} holds no schema file: not a Paimon table")
    candidates, young = plan(schemas, ids, scan.schema_ids, retain_min, cutoff)
    if candidates:
        # re-check right before deleting: commits, tags or schema changes made meanwhile
        _, listed = concurrently(scan.scan_until_stable, lambda: _list(file_io, schemas))
        now_ids = list(listed)
        keep = scan.schema_ids | set(now_ids[-retain_min:])
        present = set(now_ids)
        dropped = [k for k in candidates if k in keep or k not in present]
        if dropped:
            result.skipped.append(f"schemas {dropped} became referenced or latest (or were "
                                  "deleted) during the run; kept")
        candidates = [k for k in candidates if k not in keep and k in present]
        ids = now_ids
    paths = [schemas.schema_path(k) for k in candidates]
    failed: set[str] = set()
    if paths and not dry_run:
        failed = set(delete_paths(file_io, paths))
        if failed:
            result.skipped.append(f"{len(failed)} schema files could not be deleted, e.g. "
                                  f"{sorted(failed)[0]}")
    result.deleted = [p for p in paths if p not in failed]
    gone = {k for k, p in zip(candidates, paths) if p not in failed}
    try:
        reasons = explain([k for k in ids if k not in gone], scan, retain_min, young)
    except Exception as e:  # a report only: never fail a run that already deleted
        reasons = {}
        result.notes.append(f"could not say why schemas are kept: {type(e).__name__}: {e}")
    result.kept = {k: why for k, (_, why) in reasons.items()}
    result.kept_kinds = {k: kind for k, (kind, _) in reasons.items()}
    result.schema_files_deleted = len(result.deleted)
    result.bytes_deleted = sum(sizes[k] for k, p in zip(candidates, paths) if p not in failed)
    ids_read = scan.snapshot_ids
    result.earliest_snapshot = ids_read[0] if ids_read else None
    result.latest_snapshot = ids_read[-1] if ids_read else None
    result.duration_s = round(time.monotonic() - start, 3)
    return result
