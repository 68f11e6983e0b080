"""The `Table` users hold: thin verbs over `operation/`."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from numbers import Integral
from typing import Any

import numpy as np
import pyarrow as pa

from lakeformat.errors import (
    InvalidOptionError,
    LakeformatError,
    SchemaMismatchError,
    TableNotFoundError,
)
from lakeformat.merge import check_merge_options
from lakeformat.merge.sort import DELETE
from lakeformat.meta.binary_row import from_avro_bytes
from lakeformat.meta.snapshot import Snapshot, SnapshotManager
from lakeformat.meta.tag import TagManager
from lakeformat.operation.alter_check import check_stored_values
from lakeformat.operation.cleanup import OlderThan
from lakeformat.operation.conform import as_table, conform_merged, data_fields
from lakeformat.operation.paths import PathFactory
from lakeformat.operation.predicate import Filter
from lakeformat.operation.read import TableRead
from lakeformat.operation.scan import FileStoreScan
from lakeformat.operation.write import write_table
from lakeformat.options import CoreOptions, parse_bool
from lakeformat.results import CommitResult, CompactResult, MaintenanceResult
from lakeformat.schema.alter import apply_changes
from lakeformat.schema.merging import (
    EXPLICIT_CAST,
    MERGE_SCHEMA,
    TYPE_WIDENING,
    MergeSchemaOptions,
    merge_schemas,
)
from lakeformat.schema.schema_manager import SchemaManager
from lakeformat.schema.table_schema import TableSchema
from lakeformat.schema.types import arrow_schema
from lakeformat.storage import FileIO

WRITE_OPTIONS = (MERGE_SCHEMA, TYPE_WIDENING, EXPLICIT_CAST)


def validate_table_schema(schema: TableSchema) -> None:
    """The checks a new schema version passes before it is published (create and alter)."""
    _ = schema.trimmed_primary_keys  # raises when the key is only partition columns
    _ = schema.bucket_keys  # raises when bucket-key names a missing column
    CoreOptions(schema.options).validate()
    check_merge_options(schema)


def _positive_int(table: str, arg: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, Integral) or value <= 0:
        raise InvalidOptionError(f"compact of {table}: {arg} must be a positive integer, "
                                 f"got {value!r}")


class Table:
    def __init__(self, name: str, path: str, file_io: FileIO):
        self.name = name
        self.path = path
        self.file_io = file_io
        self.schema_manager = SchemaManager(file_io, path)
        self.snapshot_manager = SnapshotManager(file_io, path)
        self._schema = self._latest_schema()

    def __repr__(self) -> str:
        return f"Table({self.name!r}, {self.path!r})"

    # -- metadata ------------------------------------------------------------------------------
    @property
    def table_schema(self) -> TableSchema:
        """The latest schema version (re-read by `refresh`)."""
        return self._schema

    @property
    def schema(self) -> pa.Schema:
        """Arrow schema of the table's rows (with Paimon field ids in field metadata)."""
        return arrow_schema(self._schema.fields)

    @property
    def options(self) -> dict[str, str]:
        return dict(self._schema.options)

    @property
    def primary_keys(self) -> list[str]:
        return list(self._schema.primary_keys)

    @property
    def partition_keys(self) -> list[str]:
        return list(self._schema.partition_keys)

    def refresh(self) -> Table:
        """Re-read the latest schema; every verb starts here, so one on a dropped table raises
        `TableNotFoundError` before it reads or writes anything."""
        self._schema = self._latest_schema()
        return self

    def _latest_schema(self) -> TableSchema:
        latest = self.schema_manager.latest()
        if latest is None:
            raise TableNotFoundError(f"table {self.name} does not exist (dropped?): no schema "
                                     f"file under {self.path}")
        return latest

    def latest_snapshot(self) -> Snapshot | None:
        return self.snapshot_manager.latest_snapshot()

    def snapshots(self) -> list[Snapshot]:
        return self.snapshot_manager.snapshots()

    def schemas(self) -> list[TableSchema]:
        return self.schema_manager.list_all()

    def files(self, snapshot_id: int | None = None, tag: str | None = None) -> list[dict[str, Any]]:
        """Live data files of a snapshot (latest by default), one dict per file."""
        self.refresh()
        snap = self._resolve_snapshot(snapshot_id, tag)
        schema = self._schema_of(snap, snapshot_id is not None or tag is not None)
        scan = FileStoreScan(self.file_io, self.path, schema)
        paths = PathFactory(self.file_io, self.path, schema)
        out = []
        for e in scan.live_entries(snap):
            values = from_avro_bytes(e.partition, [f.type for f in schema.partition_fields()])
            f = e.file
            out.append({
                "partition": dict(zip(schema.partition_keys, values)),
                "bucket": e.bucket, "total_buckets": e.total_buckets,
                "file_name": f.file_name, "path": paths.data_file(values, e.bucket, f),
                "level": f.level, "row_count": f.row_count, "file_size": f.file_size,
                "min_sequence_number": f.min_sequence_number,
                "max_sequence_number": f.max_sequence_number,
                "schema_id": f.schema_id, "delete_row_count": f.delete_row_count,
                "creation_time": f.creation_time,
            })
        return out

    # -- snapshots and tags --------------------------------------------------------------------
    def _tag_snapshot(self, tag: str) -> Snapshot:
        try:
            return TagManager(self.file_io, self.path).get(tag).snapshot
        except LakeformatError:
            raise LakeformatError(f"tag {tag!r} does not exist in {self.name}") from None

    def _resolve_snapshot(self, snapshot_id: int | None, tag: str | None) -> Snapshot | None:
        if snapshot_id is not None and tag is not None:
            raise LakeformatError("give either snapshot_id or tag, not both")
        if tag is not None:
            return self._tag_snapshot(tag)
        if snapshot_id is not None:
            try:
                return self.snapshot_manager.snapshot(int(snapshot_id))
            except FileNotFoundError:
                raise LakeformatError(
                    f"snapshot {snapshot_id} of {self.name} does not exist (expired or never "
                    "written)") from None
        return self.snapshot_manager.latest_snapshot()

    def _schema_of(self, snap: Snapshot | None, time_travel: bool) -> TableSchema:
        """The latest schema for a read of the table as it is now; a past snapshot's or tag's
        own schema for time travel (as Paimon reads)."""
        if not time_travel or snap is None:
            return self._schema  # callers refresh first
        return self.schema_manager.schema(snap.schema_id)

    # -- read ------------------------------------------------------------------------------------
    def read(self, columns: Sequence[str] | None = None, filter: Filter = None,
             snapshot_id: int | None = None, tag: str | None = None) -> pa.Table:
        """Rows of a snapshot (latest by default), merged with the table's merge engine.

        `filter` is a pyarrow compute Expression or DNF tuples such as
        `[("dt", "=", "2024-01-01")]`; DNF terms on partition columns prune partitions.
        The rows of `read_batches` gathered in one table (buckets in scan order): memory is the
        result plus the `write-buffer-size` budget.
        """
        reader, snap = self._table_read(snapshot_id, tag, None)
        return reader.read(snap, columns, filter)

    def read_batches(self, columns: Sequence[str] | None = None, filter: Filter = None,
                     snapshot_id: int | None = None, tag: str | None = None,
                     memory_budget: int | str | None = None) -> pa.RecordBatchReader:
        """The rows `read` returns, as a stream of record batches (pyarrow's
        `RecordBatchReader`): each bucket is merged slice by slice, so memory stays within
        `memory_budget` (bytes or a size string; default the table's `write-buffer-size`)
        however large a bucket is. Files are opened as the stream is consumed."""
        reader, snap = self._table_read(snapshot_id, tag, memory_budget)
        return reader.read_batches(snap, columns, filter)

    def _table_read(self, snapshot_id: int | None, tag: str | None,
                    memory_budget: int | str | None) -> tuple[TableRead, Snapshot | None]:
        from lakeformat.operation.compact_select import parse_budget

        self.refresh()  # a dropped table is not read, not even by snapshot id
        snap = self._resolve_snapshot(snapshot_id, tag)
        schema = self._schema_of(snap, snapshot_id is not None or tag is not None)
        return TableRead(self.file_io, self.path, schema, self.schema_manager,
                         parse_budget(memory_budget)), snap

    # -- write -----------------------------------------------------------------------------------
    def write(self, data: Any, overwrite: bool = False, merge_schema: bool | None = None,
              options: dict[str, str] | None = None) -> CommitResult:
        """Write rows as one snapshot. `overwrite=True` replaces the partitions written to.

        `merge_schema=True` (or option `write.merge-schema`) first evolves the table to accept
        the data: new columns are added, missing ones written as null, types widened. `options`
        are per-write options (`write.merge-schema.*`) over the table's.
        """
        table = as_table(data)
        self.refresh()
        per_write = {str(k): str(v).lower() if isinstance(v, bool) else str(v)
                     for k, v in (options or {}).items()}
        unknown = sorted(set(per_write) - set(WRITE_OPTIONS))
        if unknown:
            raise InvalidOptionError(f"unknown per-write options {unknown}; supported: "
                                     f"{list(WRITE_OPTIONS)} (table options go through alter)")
        opts = {**self._schema.options, **per_write}
        if merge_schema is None:
            merge_schema = parse_bool(opts, MERGE_SCHEMA, False)
        if not merge_schema:
            return self._write(table, None, overwrite)
        start = time.monotonic()
        merge_opts = MergeSchemaOptions.of(opts)
        fields = data_fields(table.schema)
        conformed: dict[str, pa.Table] = {}

        def make_next(latest: TableSchema) -> TableSchema:
            merged = merge_schemas(latest, fields, merge_opts)
            if merged is not latest:
                validate_table_schema(merged)
            # check the rows against the new schema before it is published
            conformed["rows"] = conform_merged(table, merged, merge_opts)
            return merged

        schema = self.schema_manager.commit_next(make_next)
        self._schema = max(schema, self._schema, key=lambda s: s.id)
        return self._write(conformed["rows"], None, overwrite, schema=schema, start=start)

    def alter(self, changes: Any) -> TableSchema:
        """Apply schema changes (`lakeformat.SchemaChange.*`) as one new schema version.

        Validated as Paimon does; retried against the newest schema if another writer changed
        it first. Returns the new schema (the current one when `changes` is empty).
        """
        changes = [changes] if not isinstance(changes, (list, tuple)) else list(changes)
        has_snapshots: list[bool] = []

        def make_next(latest: TableSchema) -> TableSchema:
            if not changes:
                return latest
            if not has_snapshots:
                has_snapshots.append(self.snapshot_manager.latest_snapshot() is not None)
            nxt = apply_changes(latest, changes, has_snapshots[0])
            validate_table_schema(nxt)
            # type changes Paimon allows but whose stored values may not convert
            check_stored_values(self.file_io, self.path, self.name, latest, nxt,
                                self.schema_manager, self.snapshot_manager.latest_snapshot())
            return nxt

        schema = self.schema_manager.commit_next(make_next)
        self._schema = schema
        return schema

    def delete(self, keys: Any) -> CommitResult:
        """Delete rows by primary key: writes -D records (all primary-key columns required)."""
        table = as_table(keys)
        schema = self.refresh()._schema
        missing = [k for k in schema.primary_keys if k not in table.column_names]
        if missing:
            raise SchemaMismatchError(f"delete needs every primary-key column; missing {missing}")
        cols = []
        for f in schema.fields:
            if f.name in table.column_names:
                cols.append(table[f.name])
            elif f.type.nullable:
                cols.append(pa.nulls(table.num_rows, arrow_schema([f], with_id=False)[0].type))
            else:
                raise SchemaMismatchError(
                    f"delete needs a value for NOT NULL column {f.name!r} ({f.type})")
        full = pa.table(cols, names=schema.field_names)
        rk = CoreOptions(schema.options).rowkind_field
        if rk and rk not in table.column_names:
            full = full.set_column(full.column_names.index(rk), rk,
                                   pa.array(["-D"] * full.num_rows, pa.string()))
        kinds = np.full(full.num_rows, DELETE, dtype=np.int8)
        return self._write(full, kinds, False, schema=schema)

    def _write(self, table: pa.Table, kinds: np.ndarray | None, overwrite: bool,
               schema: TableSchema | None = None, start: float | None = None) -> CommitResult:
        start = time.monotonic() if start is None else start
        if schema is None:
            schema = self.refresh()._schema
        outcome = write_table(self.file_io, self.path, schema, table, kinds, overwrite)
        snap = outcome.snapshot
        files_added = files_deleted = bytes_added = 0
        if snap is not None:
            files_added, files_deleted, bytes_added = self._delta_counts(snap)
        return CommitResult(
            table=self.name, snapshot_id=snap.id if snap else None,
            commit_kind=snap.commit_kind if snap else None, rows_written=table.num_rows,
            files_added=files_added, files_deleted=files_deleted, bytes_added=bytes_added,
            duration_s=round(time.monotonic() - start, 3), rewrites=outcome.rewrites)

    def _delta_counts(self, snap: Snapshot) -> tuple[int, int, int]:
        scan = FileStoreScan(self.file_io, self.path, self._schema)
        metas = scan.manifest_list.read(snap.delta_manifest_list)
        added = sum(m.num_added_files for m in metas)
        deleted = sum(m.num_deleted_files for m in metas)
        entries = scan.read_entries(metas)
        return added, deleted, sum(e.file.file_size for e in entries if e.kind == 0)

    # -- maintenance -----------------------------------------------------------------------------
    def expire_snapshots(self, retain_min: int | None = None, retain_max: int | None = None,
                         older_than: OlderThan = None, max_deletes: int | None = None,
                         dry_run: bool = False) -> MaintenanceResult:
        """Expire old snapshots as Paimon does (defaults from `snapshot.num-retained.min`,
        `snapshot.num-retained.max`, `snapshot.time-retained`, `snapshot.expire.limit`)."""
        from lakeformat.operation.expire import expire_snapshots
        return expire_snapshots(self.file_io, self.path, self.refresh()._schema, self.name,
                                retain_min, retain_max, older_than, max_deletes, dry_run)

    def clean_schemas(self, retain_min: int | None = None, older_than: OlderThan = None,
                      dry_run: bool = False) -> MaintenanceResult:
        """Delete schema files nothing can need any more (Paimon keeps them forever)."""
        from lakeformat.operation.schema_retention import clean_schemas
        return clean_schemas(self.file_io, self.path, self.refresh()._schema, self.name,
                             retain_min, older_than, dry_run)

    def remove_orphan_files(self, older_than: OlderThan = None, dry_run: bool = False,
                            enforce_retention_duration: bool = True) -> MaintenanceResult:
        """Delete files under the table that nothing references (older than 1 day by default).

        A cut-off less than 1 hour ago is refused, since a running writer's files exist before
        its snapshot does; `enforce_retention_duration=False` lifts that rail (any past cut-off,
        "0 s" too) for on-call cleanup after a crash, when no writer is running.
        """
        from lakeformat.operation.orphan_files import remove_orphan_files
        return remove_orphan_files(self.file_io, self.path, self.refresh()._schema, self.name,
                                   older_than, dry_run, enforce_retention_duration)

    def expire_partitions(self, expiration_time: OlderThan = None, dry_run: bool = False
                          ) -> MaintenanceResult:
        """Drop partitions whose time (from their values) is older than
        `partition.expiration-time`, as one OVERWRITE commit."""
        from lakeformat.operation.partition_expire import expire_partitions
        return expire_partitions(self.file_io, self.path, self.refresh()._schema, self.name,
                                 expiration_time, dry_run)

    def create_tag(self, name: str, snapshot_id: int | None = None,
                   time_retained: OlderThan = None) -> dict[str, Any]:
        """Tag a snapshot (latest by default); a tag keeps its files from expiry."""
        from lakeformat.operation.tags import create_tag
        return create_tag(self.file_io, self.path, name, snapshot_id, time_retained).to_dict()

    def delete_tag(self, name: str, dry_run: bool = False) -> MaintenanceResult:
        """Delete a tag and the files only it still held."""
        from lakeformat.operation.tags import delete_tag
        return delete_tag(self.file_io, self.path, self.refresh()._schema, self.name, name,
                          dry_run)

    def list_tags(self) -> list[dict[str, Any]]:
        return [t.to_dict() for t in TagManager(self.file_io, self.path).tags()]

    def rollback_to(self, target: int | str) -> MaintenanceResult:
        """Make a snapshot id (int) or tag (str) the latest: later snapshots and tags are
        deleted; files only they used become orphans (`remove_orphan_files`)."""
        from lakeformat.operation.rollback import rollback_to
        return rollback_to(self.file_io, self.path, self.name, target)
    # -- compaction ----------------------------------------------------------------------------
    def compact(self, full: bool = True, partitions: Sequence[dict[str, Any]] | None = None,
                where: Filter = None, partition_idle_time: Any = None,
                memory_budget: int | str | None = None, workers: int | None = None,
                partitions_per_commit: int = 16,
                progress: Callable[[str], Any] | None = None) -> CompactResult:
        """Compact the latest snapshot's buckets; COMPACT snapshot(s) per group of partitions.

        `full=True` merges every sorted run of a bucket into the top level; `full=False` runs
        Paimon's universal compaction picks. `partitions` (list of {key: value}) or `where`
        (DNF tuples on partition columns) select partitions; `partition_idle_time` (timedelta
        or "1 h") keeps only partitions not written for that long. `memory_budget` (bytes or
        "256 mb"; default the table's write-buffer-size) bounds the memory of the whole job.
        """
        from lakeformat.operation.compact import compact_table
        from lakeformat.operation.compact_select import (
            idle_before,
            parse_budget,
            select_partitions,
        )

        if workers is not None:
            _positive_int(self.name, "workers", workers)
        _positive_int(self.name, "partitions_per_commit", partitions_per_commit)
        self.refresh()
        schema = self._schema
        return compact_table(
            self.file_io, self.path, schema, self.name, full=full,
            partition_filter=select_partitions(schema, partitions, where),
            partition_idle_before=idle_before(partition_idle_time),
            memory_budget=parse_budget(memory_budget), workers=workers,
            partitions_per_commit=partitions_per_commit, progress=progress)
