"""Schema-file retention, which Paimon lacks (its tables keep every `schema/schema-N` forever).

`schema-K` is deleted only when all of these hold:

* K is not the latest schema, and not among the newest `retain_min` schema files;
* no snapshot, tag or long-lived changelog has `schemaId = K`, and no data or changelog file
  named by any of their manifests (ADD or DELETE entries) has `_SCHEMA_ID = K` (consumers pin
  snapshots, which are read like any other);
* schema K is older than the cut-off (a missing `timeMillis` counts as young), and so is the
  schema that replaced it: a writer that started on K and has not committed yet writes files
  with `_SCHEMA_ID = K`, and it has had the whole retention time to commit.

Just before deleting, snapshots, tags and schemas are listed again: a candidate that became
referenced, or the latest, or is gone, is dropped. Any failed read deletes nothing.
"""

from __future__ import annotations

import time

from lakeformat import clock
from lakeformat.errors import CleanupAbortedError, InvalidOptionError, TableNotFoundError
from lakeformat.layout import SCHEMA_PREFIX, numbered_id
from lakeformat.operation.cleanup import OlderThan, past_cutoff_millis
from lakeformat.operation.references import ReferenceScan
from lakeformat.options import parse_duration
from lakeformat.results import MaintenanceResult
from lakeformat.schema.schema_manager import SchemaManager
from lakeformat.schema.table_schema import TableSchema
from lakeformat.storage import FileIO
from lakeformat.storage.parallel import parallel_map

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


def plan(schemas: SchemaManager, ids: list[int], used: set[int], retain_min: int, cutoff: int
         ) -> list[int]:
    """Schema ids the rules allow deleting, oldest first."""
    protected = set(ids[-retain_min:]) | used
    pairs = [(sid, ids[i + 1]) for i, sid in enumerate(ids[:-1]) if sid not in protected]
    needed = sorted({x for pair in pairs for x in pair})
    times = dict(zip(needed, parallel_map(lambda k: _time_of(schemas, k), needed)))
    # the successor is the schema that replaced it (or a later one, if that is gone)
    return [sid for sid, successor in pairs
            if 0 < times[sid] < cutoff and 0 < times[successor] < cutoff]


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
                  retain_min: int | None, older_than: OlderThan, dry_run: bool
                  ) -> MaintenanceResult:
    start = time.monotonic()
    retain_min, cutoff = retention(schema.options, retain_min, older_than, clock.now_millis())
    result = MaintenanceResult(table_name, OPERATION, dry_run=dry_run)
    schemas = SchemaManager(file_io, table_path)
    sizes = _list(file_io, schemas)
    ids = list(sizes)
    if not ids:
        raise TableNotFoundError(f"{table_path} holds no schema file: not a Paimon table")
    scan = ReferenceScan(file_io, table_path, schema, OPERATION)
    scan.scan_until_stable()
    candidates = plan(schemas, ids, scan.schema_ids, retain_min, cutoff)
    if candidates:
        # re-check right before deleting: commits, tags or schema changes made meanwhile
        scan.scan_until_stable()
        now_ids = list(_list(file_io, schemas))
        keep = scan.schema_ids | set(now_ids[-retain_min:])
        present = set(now_ids)
        dropped = [k for k in candidates if k in keep or k not in present]
        if dropped:
            result.skipped.append(f"schemas {dropped} became referenced or latest (or were "
                                  "deleted) during the run; kept")
        candidates = [k for k in candidates if k not in keep and k in present]
    paths = [schemas.schema_path(k) for k in candidates]
    failed: set[str] = set()
    if paths and not dry_run:
        failed = set(file_io.delete_many(paths))
        if failed:
            result.skipped.append(f"{len(failed)} schema files could not be deleted, e.g. "
                                  f"{sorted(failed)[0]}")
    result.deleted = [p for p in paths if p not in failed]
    result.schema_files_deleted = len(result.deleted)
    result.bytes_deleted = sum(sizes[k] for k, p in zip(candidates, paths) if p not in failed)
    ids_read = scan.snapshot_ids
    result.earliest_snapshot = ids_read[0] if ids_read else None
    result.latest_snapshot = ids_read[-1] if ids_read else None
    result.duration_s = round(time.monotonic() - start, 3)
    return result
