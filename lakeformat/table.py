"""The `Table` users hold: thin verbs over `operation/`."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from numbers import Integral
from typing import Any

import pyarrow as pa

from lakeformat.branch_table import BranchView, refuse_other_verbs
from lakeformat.errors import (
    InvalidArgumentError,
    InvalidOptionError,
    SnapshotNotFoundError,
    TableNotFoundError,
    TagNotFoundError,
    UnsupportedError,
)
from lakeformat.expressions import Filter, resolve_filter
from lakeformat.health import (
    COMPACTION_OPTIONS,
    DueReport,
    TableHealth,
    check_thresholds,
    maintenance_due,
    table_health,
)
from lakeformat.lock.table_locks import NO_LOCKS, TableLocks
from lakeformat.meta.binary_row import from_avro_bytes
from lakeformat.meta.branch import BranchManager
from lakeformat.meta.snapshot import Snapshot, SnapshotManager
from lakeformat.meta.tag import TagManager
from lakeformat.operation.commit import check_commit_identity
from lakeformat.operation.compact import CompactJob, idle_before, select_partitions
from lakeformat.operation.maintain import (
    AutoTagResult,
    OlderThan,
    auto_tags_after_commit,
    check_auto_tags,
    check_manual_tag,
    clean_schemas,
    compact_manifests,
    create_auto_tags,
    create_tag,
    delete_tag,
    expire_changelogs,
    expire_partitions,
    expire_snapshots,
    expire_tags,
    list_tags,
    remove_orphan_files,
    rollback_to,
)
from lakeformat.operation.paths import PathFactory
from lakeformat.operation.read import (
    TableInspect,
    TableRead,
    delta_partitions,
    partition_spec,
    to_polars,
)
from lakeformat.operation.runner import Runner
from lakeformat.operation.scan import FileStoreScan
from lakeformat.operation.write import (
    DeleteWhere,
    WriteJob,
    as_table,
    check_stored_values,
    delete_rows,
    validate_table_schema,
    wants_merge_schema,
    write_options,
)
from lakeformat.options import parse_budget, parse_duration
from lakeformat.results import (
    BranchInfo,
    CommitResult,
    CompactResult,
    MaintenanceResult,
    TagInfo,
)
from lakeformat.schema.alter import apply_changes
from lakeformat.schema.option_names import check_option_names
from lakeformat.schema.schema_change import SetOption
from lakeformat.schema.schema_manager import SchemaManager
from lakeformat.schema.table_schema import TableSchema
from lakeformat.schema.types import arrow_schema
from lakeformat.storage import FileIO
from lakeformat.storage.parallel import parallel_map


def _positive_int(table: str, arg: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, Integral) or value <= 0:
        raise InvalidOptionError(f"compact of {table}: {arg} must be a positive integer, "
                                 f"got {value!r}")


class Table:
    """One table of a catalog (`Catalog.get_table`).

    Its writes go through `locks.guarded(file_io)` (publishes under the commit lock when
    `lock.enabled=true`); its maintenance verbs hold the table's maintenance lock for the whole
    job, so two of them never run on one table at once (dry runs change nothing and take no
    lock)."""

    def __init__(self, name: str, path: str, file_io: FileIO, locks: TableLocks = NO_LOCKS):
        self.name = name
        self.path = path
        self.locks = locks
        self.file_io = locks.guarded(file_io)
        self.schema_manager = SchemaManager(self.file_io, path)  # alter publishes under it
        self.snapshot_manager = SnapshotManager(self.file_io, path)
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

    def delta_partitions(self, snapshot_id: int, partition: dict[str, Any] | None = None
                         ) -> list[dict[str, Any]]:
        """The partitions (`{key: value}`) in which snapshot `snapshot_id` itself added or
        deleted data files (its delta, not the table's state); with `partition` (values as
        text or typed, e.g. `{"dt": "2024-01-01"}`) only those equal to it, so `[]` means the
        snapshot did not touch that partition. Manifests whose partition range excludes it
        are not read."""
        self.refresh()
        spec = partition_spec(self._schema, partition, self.name)
        snap = self._resolve_snapshot(snapshot_id, None)
        if snap is None:  # no id given and no snapshot yet
            return []
        return delta_partitions(self.file_io, self.path, self._schema, snap, spec)

    @property
    def inspect(self) -> TableInspect:
        """The table's metadata as Arrow tables, as Paimon's system tables: `snapshots()`,
        `files()`, `partitions()`, `buckets()`, `manifests()`, `schemas()`, `tags()`."""
        return TableInspect(self.file_io, self.path, self.name, self._snapshot_and_schema)

    def history(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The commit log, newest first (at most `limit` snapshots): one dict per snapshot with
        its id (`version`), `timestamp` (UTC), `operation`, commit kind, user and identifier,
        record counts and schema id."""
        return self.inspect.history(limit)

    def _snapshot_and_schema(self, snapshot_id: int | None, tag: str | None
                             ) -> tuple[Snapshot | None, TableSchema]:
        """The snapshot asked for (latest by default) and the schema to read it with; a dropped
        table is not read, not even by snapshot id."""
        self.refresh()
        snap = self._resolve_snapshot(snapshot_id, tag)
        return snap, self._schema_of(snap, snapshot_id is not None or tag is not None)

    # -- snapshots and tags --------------------------------------------------------------------
    def _tag_snapshot(self, tag: str) -> Snapshot:
        try:
            return TagManager(self.file_io, self.path).get(tag).snapshot
        except TagNotFoundError:
            raise TagNotFoundError(f"tag {tag!r} does not exist in {self.name}") from None

    def _resolve_snapshot(self, snapshot_id: int | None, tag: str | None) -> Snapshot | None:
        if snapshot_id is not None and tag is not None:
            raise InvalidArgumentError("give either snapshot_id or tag, not both")
        if tag is not None:
            return self._tag_snapshot(tag)
        if snapshot_id is not None:
            try:
                return self.snapshot_manager.snapshot(int(snapshot_id))
            except FileNotFoundError:
                raise SnapshotNotFoundError(
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

        `filter` is a pyarrow compute Expression, DNF tuples such as
        `[("dt", "=", "2024-01-01")]`, or where text such as `"dt = '2024-01-01' AND id > 5"`
        (`lakeformat.expressions.where`); terms on partition columns prune partitions.
        The rows of `read_batches` gathered in one table (buckets in scan order): memory is the
        result plus the `write-buffer-size` budget.
        """
        reader, snap = self._table_read(snapshot_id, tag, None)
        return reader.read(snap, columns, resolve_filter(filter, reader.schema.fields, self.name))

    def read_batches(self, columns: Sequence[str] | None = None, filter: Filter = None,
                     snapshot_id: int | None = None, tag: str | None = None,
                     memory_budget: int | str | None = None) -> pa.RecordBatchReader:
        """The rows `read` returns, as a stream of record batches (pyarrow's
        `RecordBatchReader`): each bucket is merged slice by slice, so memory stays within
        `memory_budget` (bytes or a size string; default the table's `write-buffer-size`)
        however large a bucket is. Files are opened as the stream is consumed."""
        reader, snap = self._table_read(snapshot_id, tag, memory_budget)
        return reader.read_batches(snap, columns,
                                   resolve_filter(filter, reader.schema.fields, self.name))

    def to_pandas(self, columns: Sequence[str] | None = None, filter: Filter = None,
                  snapshot_id: int | None = None, tag: str | None = None,
                  **to_pandas_options: Any) -> Any:
        """`read(...)` as a pandas DataFrame (`to_pandas_options` go to pyarrow's
        `Table.to_pandas`, e.g. `types_mapper=pd.ArrowDtype`)."""
        return self.read(columns, filter, snapshot_id, tag).to_pandas(**to_pandas_options)

    def to_polars(self, columns: Sequence[str] | None = None, filter: Filter = None,
                  snapshot_id: int | None = None, tag: str | None = None) -> Any:
        """`read(...)` as a Polars DataFrame (Polars is not a dependency: install it)."""
        return to_polars(self.read(columns, filter, snapshot_id, tag))

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        """The Arrow PyCapsule stream of the latest snapshot's rows (`read_batches()`), so
        `pa.table(t)`, `polars.DataFrame(t)` and DuckDB's `FROM t` take a Table directly."""
        return self.read_batches().__arrow_c_stream__(requested_schema)

    def _table_read(self, snapshot_id: int | None, tag: str | None,
                    memory_budget: int | str | None) -> tuple[TableRead, Snapshot | None]:
        snap, schema = self._snapshot_and_schema(snapshot_id, tag)
        return TableRead(self.file_io, self.path, schema, self.schema_manager,
                         parse_budget(memory_budget)), snap

    # -- write -----------------------------------------------------------------------------------
    def write(self, data: Any, overwrite: bool = False, merge_schema: bool | None = None,
              options: dict[str, str] | None = None, *, commit_user: str | None = None,
              commit_identifier: int | None = None, runner: Runner | None = None
              ) -> CommitResult:
        """Write rows as one snapshot. `overwrite=True` replaces the partitions written to.

        `merge_schema=True` (or option `write.merge-schema`) first evolves the table to accept
        the data: new columns are added, missing ones written as null, types widened. `options`
        are per-write options (`write.merge-schema.*`) over the table's.

        With `commit_user` and `commit_identifier` (e.g. the DAG task and its logical date) a
        write that already landed is not committed again: its result comes back with
        `already_committed=True`. `runner` runs the execute step (default: a thread pool).
        """
        table = as_table(data)
        latest = self._refresh_with_latest()
        check_auto_tags(self._schema, self.path)  # a bad tag.* option fails before writing
        opts = write_options(self._schema, options)
        merge = opts if wants_merge_schema(opts, merge_schema) else None
        job = WriteJob(self.file_io, self.path, self._schema, table, None, overwrite,
                       commit_user, commit_identifier, merge_schema_options=merge,
                       runner=runner, table_name=self.name)
        job.read_latest = (latest,)
        return self._run(job)

    def _refresh_with_latest(self) -> Snapshot | None:
        """`refresh` and the latest snapshot read at once: independent reads, so a write's
        plan costs the round trips of one of them (a dropped table still raises first)."""
        _, latest = parallel_map(lambda read: read(), [
            self.refresh, lambda: self.snapshot_manager.latest_snapshot(probe_next=False)])
        return latest

    def delete(self, keys: Any = None, *, where: Filter = None, commit_user: str | None = None,
               commit_identifier: int | None = None, runner: Runner | None = None,
               memory_budget: int | str | None = None) -> CommitResult:
        """Delete rows by primary key (`keys`: every primary-key column) or by predicate
        (`where`: what `read(filter=...)` takes, where text too), writing -D records.

        A `where` on partition columns only drops the matching partitions whole, as one
        OVERWRITE commit (Paimon's drop partition); any other `where` reads the matching keys
        (streamed within `memory_budget`) and deletes them as `keys` would.
        `commit_user`/`commit_identifier` as for `write`."""
        schema = self.refresh()._schema
        if keys is not None and where is not None:
            raise InvalidArgumentError(f"delete from {self.name}: give either keys or where, "
                                       "not both")
        check_auto_tags(schema, self.path)
        if where is not None:
            where = resolve_filter(where, schema.fields, self.name)
            result = DeleteWhere(
                self.file_io, self.path, schema, self.schema_manager, where,
                table_name=self.name, commit_user=commit_user,
                commit_identifier=commit_identifier, runner=runner,
                memory_budget=parse_budget(memory_budget)).run()
            self._tags_after_commit(result.snapshot_id is not None)
            return result
        if not schema.primary_keys:
            raise UnsupportedError(
                f"delete from {self.name}: an append table has no primary key to delete rows "
                "by; drop whole partitions with a `where` on partition columns, or overwrite")
        rows, kinds = delete_rows(schema, as_table(keys))
        return self._run(WriteJob(self.file_io, self.path, schema, rows, kinds, False,
                                  commit_user, commit_identifier, runner=runner,
                                  table_name=self.name, operation="delete"))

    def _run(self, job: WriteJob) -> CommitResult:
        result = job.run()
        if job.schema.id > self._schema.id:
            self._schema = job.schema
        self._tags_after_commit(result.snapshot_id is not None)
        return result

    def _tags_after_commit(self, committed: bool, file_io: FileIO | None = None) -> None:
        """`tag.automatic-creation` once a job's commit landed, as Java's commit does (a
        failure is logged, never raised: the commit cannot be undone). `file_io`: the job holds
        the maintenance lock already and this is its fenced FileIO."""
        lock = None if file_io is not None else (
            lambda: self.locks.maintaining(self.file_io, f"tag.num-retained-max {self.name}"))
        auto_tags_after_commit(file_io or self.file_io, self.path, self._schema, self.name,
                               lock=lock, committed=committed)

    def create_auto_tags(self) -> AutoTagResult:
        """Run `tag.automatic-creation` now, as every write, delete and compaction does after
        its commit (Java's `trigger_tag_automatic_creation`): process-time and watermark modes
        tag the snapshots since the last auto-created tag, batch mode tags the latest snapshot;
        `tag.num-retained-max` then deletes the oldest (with the files only they held). Errors
        are raised here."""
        schema = self.refresh()._schema
        return create_auto_tags(
            self.file_io, self.path, schema, self.name,
            lock=lambda: self.locks.maintaining(self.file_io, f"create_auto_tags {self.name}"))

    def find_commit(self, commit_user: str, commit_identifier: int) -> list[Snapshot]:
        """The retained snapshots (oldest first) a commit with this user and identifier made:
        how a caller whose commit's outcome is unknown finds out whether it landed."""
        check_commit_identity(commit_user, commit_identifier)
        return self.snapshot_manager.find_commit(commit_user, commit_identifier)

    def alter(self, changes: Any) -> TableSchema:
        """Apply schema changes (`lakeformat.SchemaChange.*`) as one new schema version.

        Validated as Paimon does; retried against the newest schema if another writer changed
        it first. Returns the new schema (the current one when `changes` is empty).
        """
        changes = [changes] if not isinstance(changes, (list, tuple)) else list(changes)
        check_option_names(self.name, {c.key: c.value for c in changes
                                       if isinstance(c, SetOption)},
                           self._schema.field_names)
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

    # -- maintenance -----------------------------------------------------------------------------
    @contextmanager
    def _maintaining(self, purpose: str, dry_run: bool) -> Iterator[FileIO]:
        """The FileIO of a maintenance job: fenced by the table's maintenance lease for the
        whole job (`LockTimeoutError` naming the holder when another job keeps it)."""
        if dry_run:
            yield self.file_io
            return
        with self.locks.maintaining(self.file_io, f"{purpose} {self.name}") as file_io:
            yield file_io

    def expire_snapshots(self, retain_min: int | None = None, retain_max: int | None = None,
                         older_than: OlderThan = None, max_deletes: int | None = None,
                         dry_run: bool = False) -> MaintenanceResult:
        """Expire old snapshots as Paimon does (defaults from `snapshot.num-retained.min`,
        `snapshot.num-retained.max`, `snapshot.time-retained`, `snapshot.expire.limit`); with
        a decoupled changelog (`changelog.*` retention longer than the snapshot one) expired
        snapshots stay as `changelog/changelog-<id>`, and changelog expiry runs after."""
        schema = self.refresh()._schema
        with self._maintaining("expire_snapshots", dry_run) as file_io:
            return expire_snapshots(file_io, self.path, schema, self.name, retain_min,
                                    retain_max, older_than, max_deletes, dry_run)

    def expire_changelogs(self, retain_max: int | None = None, retain_min: int | None = None,
                          older_than: OlderThan = None, max_deletes: int | None = None,
                          delete_all: bool = False, dry_run: bool = False
                          ) -> MaintenanceResult:
        """Expire long-lived changelogs (`changelog/changelog-<id>`) on their own, as Paimon's
        `expire_changelogs` procedure (defaults from `changelog.num-retained.max`,
        `changelog.num-retained.min`, `changelog.time-retained`, each falling back to the
        snapshot setting, and `snapshot.expire.limit`); `delete_all` removes every one of them
        (only when all are older than the earliest snapshot). `expire_snapshots` already runs
        this after snapshot expiry when the changelog is decoupled."""
        schema = self.refresh()._schema
        with self._maintaining("expire_changelogs", dry_run) as file_io:
            return expire_changelogs(file_io, self.path, schema, self.name, retain_max,
                                     retain_min, older_than, max_deletes, delete_all, dry_run)

    def clean_schemas(self, retain_min: int | None = None, older_than: OlderThan = None,
                      dry_run: bool = False, compact_manifests: bool = False
                      ) -> MaintenanceResult:
        """Delete schema files nothing can need any more (Paimon keeps them forever); the
        result's `kept` says why each remaining one stays.

        Manifests list deleted files (ADD/DELETE entries) until a full manifest compaction, so
        after a full compaction old schemas can stay referenced by files no snapshot reads.
        `compact_manifests=True` (off by default) first commits Paimon's manifest compaction:
        a COMPACT snapshot of the same data whose manifests hold only live files (nothing is
        committed when the latest snapshot's manifests hold no DELETE entry, or on a dry run).
        Older snapshots keep their manifests, and the schemas those name, until they expire.
        """
        schema = self.refresh()._schema
        with self._maintaining("clean_schemas", dry_run) as file_io:
            return clean_schemas(file_io, self.path, schema, self.name, retain_min, older_than,
                                 dry_run, compact_manifests)

    def remove_orphan_files(self, older_than: OlderThan = None, dry_run: bool = False,
                            enforce_retention_duration: bool = True) -> MaintenanceResult:
        """Delete files under the table that nothing references (older than 1 day by default).

        A cut-off less than 1 hour ago is refused, since a running writer's files exist before
        its snapshot does; `enforce_retention_duration=False` lifts that rail (any past cut-off,
        "0 s" too) for on-call cleanup after a crash, when no writer is running.
        """
        schema = self.refresh()._schema
        with self._maintaining("remove_orphan_files", dry_run) as file_io:
            return remove_orphan_files(file_io, self.path, schema, self.name, older_than,
                                       dry_run, enforce_retention_duration)

    def expire_partitions(self, expiration_time: OlderThan = None, dry_run: bool = False,
                          options: dict[str, Any] | None = None) -> MaintenanceResult:
        """Drop partitions whose time is older than `partition.expiration-time`: the time in
        their values (`partition.expiration-strategy=values-time`, the default) or their last
        update, the newest file creation time (`update-time`); at most
        `partition.expiration-max-num`, in OVERWRITE commits of
        `partition.expiration-batch-size` partitions. `notes` say why each one expires (also
        in a dry run). `options` override the `partition.*` expiry options for this run only
        (expiration-time, expiration-max-num, expiration-batch-size, expiration-strategy,
        timestamp-formatter, timestamp-pattern): what a due action computed under threshold
        overrides passes."""
        schema = self.refresh()._schema
        with self._maintaining("expire_partitions", dry_run) as file_io:
            return expire_partitions(file_io, self.path, schema, self.name, expiration_time,
                                     dry_run, options)

    def compact_manifests(self, dry_run: bool = False) -> MaintenanceResult:
        """Paimon's manifest compaction alone: a COMPACT snapshot of the same data whose
        manifests hold only live files (nothing is committed when the latest snapshot's
        manifests hold no DELETE entry, or on a dry run). Deletes no file: the schemas it
        frees go with `clean_schemas()` once the snapshots before it expire."""
        schema = self.refresh()._schema
        with self._maintaining("compact_manifests", dry_run) as file_io:
            return compact_manifests(file_io, self.path, schema, self.name, dry_run)

    def create_tag(self, name: str, snapshot_id: int | None = None,
                   time_retained: OlderThan = None) -> TagInfo:
        """Tag a snapshot (latest by default); a tag keeps its files from expiry until
        `time_retained` (default the table's `tag.default-time-retained`; none: forever) has
        passed and `expire_tags` runs."""
        schema = self.refresh()._schema
        check_manual_tag(self.file_io, self.path, schema, name, snapshot_id)
        if time_retained is None:
            raw = schema.options.get("tag.default-time-retained")
            time_retained = None if raw is None else parse_duration(
                raw, "tag.default-time-retained")
        return create_tag(self.file_io, self.path, name, snapshot_id, time_retained)

    def expire_tags(self, older_than: OlderThan = None, dry_run: bool = False
                    ) -> MaintenanceResult:
        """Delete the tags past their `time_retained` (Java's `expire_tags`) and, with
        `older_than` (a datetime, or an age such as "7 d"), every tag created before it — a tag
        without retention then counting from its file's time. Each goes as `delete_tag` does,
        with the files only it held; tags without retention are otherwise kept."""
        schema = self.refresh()._schema
        with self._maintaining("expire_tags", dry_run) as file_io:
            return expire_tags(file_io, self.path, schema, self.name, older_than, dry_run)

    def delete_tag(self, name: str, dry_run: bool = False) -> MaintenanceResult:
        """Delete a tag and the files only it still held."""
        schema = self.refresh()._schema
        with self._maintaining("delete_tag", dry_run) as file_io:
            return delete_tag(file_io, self.path, schema, self.name, name, dry_run)

    def list_tags(self) -> list[TagInfo]:
        """Every tag, ordered by tagged snapshot id then name."""
        return list_tags(self.file_io, self.path)

    # -- branches --------------------------------------------------------------------------------
    def branches(self) -> list[BranchInfo]:
        """Every branch (`branch/branch-<name>/`), by name: what Java's `$branches` shows and
        the snapshots, schema and tags each holds."""
        return BranchManager(self.file_io, self.path).branches()

    def branch(self, name: str) -> BranchTable:
        """Branch `name` as a read-only table: `read`, `files`, `snapshots`, `schemas`,
        `list_tags` and time travel see the branch's snapshots, tags and schemas."""
        return BranchTable(self, name)

    def create_branch(self, name: str, tag: str | None = None) -> BranchInfo:
        """A branch from tag `tag` (a copy of the tag, its snapshot and the schemas up to its
        schema id), or an empty branch holding the table's schemas, as Paimon's
        `create_branch` makes them."""
        self.refresh()
        # under the maintenance lease: a tag deletion or expiry planned before the branch
        # existed must not run while it is being made
        with self._maintaining("create_branch", False) as file_io:
            return BranchManager(file_io, self.path).create(name, tag)

    def fast_forward(self, branch: str) -> list[str]:
        """Make the table what branch `branch` is, as Paimon's `fast_forward`: the table's
        snapshots from the branch's earliest snapshot id on, its schemas from that snapshot's
        schema id on and the tags of those snapshots are deleted, and the branch's snapshot,
        schema and tag files copied in (run it with no writer on the table: Java's takes no
        lock either). Returns the metadata files deleted; the data files only they used are
        left to `remove_orphan_files`."""
        with self._maintaining("fast_forward", False) as file_io:
            deleted = BranchManager(file_io, self.path).fast_forward(branch)
        self.refresh()
        return deleted

    def delete_branch(self, name: str) -> None:
        """Remove the branch directory, as Paimon's `delete_branch`: the data files written on
        the branch stay until `remove_orphan_files` finds nothing references them."""
        with self._maintaining("delete_branch", False) as file_io:
            BranchManager(file_io, self.path).delete(name)

    def rollback_to(self, target: int | str, dry_run: bool = False) -> MaintenanceResult:
        """Make a snapshot id (int) or tag (str) the latest: later snapshots, long-lived
        changelogs and tags are deleted; files only they used become orphans
        (`remove_orphan_files`). `dry_run` lists what it would delete."""
        with self._maintaining("rollback", dry_run) as file_io:
            return rollback_to(file_io, self.path, self.name, target, dry_run)
    # -- health --------------------------------------------------------------------------------
    def health(self, *, orphans: bool = False) -> TableHealth:
        """The table's state from its metadata alone (no data file is read, no lock taken):
        per bucket sorted runs, level-0 and small files, rows deleted by deletion vectors and
        the last compaction; snapshots, what expiry may remove now, tags, consumers, schema
        files, manifests; a score 0-100 with its components. `orphans=True` also lists the
        table directory for files nothing references."""
        schema = self.refresh()._schema
        return table_health(self.file_io, self.path, schema, self.name, orphans=orphans)

    def maintenance_due(self, thresholds: dict[str, Any] | None = None, *,
                        orphans: bool = False) -> DueReport:
        """The maintenance due now, each action with the rule that fired and its figures, the
        buckets or partitions it covers and its work; `not_due` says why each other rule
        found nothing. `thresholds` override the table's options by Paimon name (e.g.
        `{"num-sorted-run.compaction-trigger": 3}`); an unknown name or a bad value raises
        `InvalidArgumentError` before anything is read. Run an action with
        `lakeformat.health.perform(table, action)`."""
        overrides = check_thresholds(thresholds)
        schema = self.refresh()._schema
        return maintenance_due(self.file_io, self.path, schema, self.name, overrides,
                               orphans=orphans)

    # -- compaction ----------------------------------------------------------------------------
    def compact(self, full: bool = True, partitions: Sequence[dict[str, Any]] | None = None,
                where: Filter = None, partition_idle_time: Any = None,
                memory_budget: int | str | None = None, workers: int | None = None,
                partitions_per_commit: int = 16,
                progress: Callable[[str], Any] | None = None, *,
                commit_user: str | None = None, commit_identifier: int | None = None,
                runner: Runner | None = None, options: dict[str, Any] | None = None
                ) -> CompactResult:
        """Compact the latest snapshot's buckets; COMPACT snapshot(s) per group of partitions.

        `full=True` merges every sorted run of a bucket into the top level; `full=False` runs
        Paimon's universal compaction picks. `partitions` (list of {key: value}) or `where`
        (DNF tuples on partition columns) select partitions; `partition_idle_time` (timedelta
        or "1 h") keeps only partitions not written for that long. `memory_budget` (bytes or
        "256 mb"; default the table's write-buffer-size) bounds the memory of the whole job.
        `commit_user`/`commit_identifier` mark its snapshots (a re-run with the same pair
        reports what the earlier run committed); `runner` runs the execute step. `options`
        override the compaction thresholds for this run only (the names in
        `lakeformat.health.COMPACTION_OPTIONS`, e.g. `num-sorted-run.compaction-trigger`): what
        a due action computed under threshold overrides passes.
        """
        if options:
            unknown = sorted(set(options) - COMPACTION_OPTIONS)
            if unknown:
                raise InvalidArgumentError(
                    f"compact of {self.name}: options may only override compaction "
                    f"thresholds ({', '.join(sorted(COMPACTION_OPTIONS))}); got {unknown}")
            overrides = check_thresholds(options)
        if workers is not None:
            _positive_int(self.name, "workers", workers)
        _positive_int(self.name, "partitions_per_commit", partitions_per_commit)
        self.refresh()
        schema = self._schema
        if options:
            schema = schema.copy(options={**schema.options, **overrides})
        partition_filter = select_partitions(
            schema, partitions, resolve_filter(where, schema.fields, self.name))
        idle = idle_before(partition_idle_time)
        budget = parse_budget(memory_budget)
        check_auto_tags(self._schema, self.path)
        with self._maintaining("compact", False) as file_io:
            result = CompactJob(
                file_io, self.path, schema, self.name, full=full,
                partition_filter=partition_filter, partition_idle_before=idle,
                memory_budget=budget, workers=workers,
                partitions_per_commit=partitions_per_commit, progress=progress,
                commit_user=commit_user, commit_identifier=commit_identifier,
                runner=runner).run()
            self._tags_after_commit(bool(result.snapshot_ids or result.earlier_snapshot_ids),
                                    file_io)
            return result


class BranchTable(BranchView, Table):
    """A branch of a table (`Table.branch(name)`), read-only (`lakeformat.branch_table`)."""


refuse_other_verbs(BranchTable, Table)
