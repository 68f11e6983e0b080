"""A write (or delete, or merge-schema write) as the three steps of every data job.

* `plan()` (driver): read the latest snapshot once — the base — evolve the schema first for a
  merge-schema write, and split the rows into `WriteUnit`s, one per (partition, bucket);
* `execute(runner)` (anywhere): `TableWrite.execute` over the units through a `Runner` (a thread
  pool by default; Spark plugs in its own), each returning a `CommitMessage`;
* `commit()` (driver): one APPEND (or OVERWRITE) snapshot; the `CommitResult` is counted from
  the committed entries.

Idempotent commits: a job given a `commit_user` and `commit_identifier` whose pair already
landed in a retained snapshot writes nothing and returns that commit's result (Paimon's
`filterCommitted`). An Airflow retry, a backfill re-run or a Spark driver that lost the answer of
its commit runs the same job again and lands at most once.

Sequence numbers: records are numbered after each bucket's largest sequence number in the base
snapshot. If another commit lands records in one of those buckets at or above this write's
first number before this one lands, the commit is refused (`SequenceConflict`) and the affected
units are executed again, numbered past the new largest number, and their first files deleted —
so a later commit's records always carry larger sequence numbers than every record committed
before it in the bucket, and concurrent writers never tie. Renumbering is bounded by
`commit.max-retries`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import random
import time
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from lakeformat.errors import (
    CommitConflictError,
    CommitFailedError,
    CommitStateUnknownError,
    SchemaMismatchError,
)
from lakeformat.merge.sort import DELETE
from lakeformat.meta.data_file_meta import FileKind, ManifestEntry
from lakeformat.meta.index_manifest import IndexManifestEntry
from lakeformat.meta.snapshot import Snapshot
from lakeformat.operation.commit import (
    NOT_WATCHED,
    AlreadyCommitted,
    CommitMessage,
    DataJob,
    SequenceBase,
    SequenceConflict,
    check_commit_identity,
    snapshot_identity,
)
from lakeformat.operation.compact import compact_after_write
from lakeformat.operation.runner import (
    Runner,
    ThreadRunner,
    captured,
    default_runner,
    split_failures,
)
from lakeformat.operation.write.cross_partition import is_cross_partition
from lakeformat.operation.write.merge_schema import evolve_for_write
from lakeformat.operation.write.table_write import TableWrite, WriteUnit
from lakeformat.options import CoreOptions
from lakeformat.results import CommitResult
from lakeformat.schema.schema_manager import SchemaManager
from lakeformat.schema.table_schema import TableSchema
from lakeformat.schema.types import arrow_schema
from lakeformat.storage import FileIO, PendingFiles

#: how far past a bucket's largest live sequence number a renumbered write starts (doubled
#: with each renumbering of the same write)
RENUMBER_GAP = 1 << 20

__all__ = ["RENUMBER_GAP", "WriteJob", "check_commit_identity", "commit_result", "delete_rows",
           "write_table"]


def delete_rows(schema: TableSchema, keys: pa.Table) -> tuple[pa.Table, np.ndarray]:
    """-D records for the given primary keys: every key column is required; other columns are
    null (or taken from `keys` when given) and `rowkind.field`, if any, says -D."""
    missing = [k for k in schema.primary_keys if k not in keys.column_names]
    if missing:
        raise SchemaMismatchError(f"delete needs every primary-key column; missing {missing}")
    # a cross-partition table finds each key's partition itself (the plan fills them in)
    located = set(schema.partition_keys) if is_cross_partition(schema) else set()
    cols = []
    for f in schema.fields:
        if f.name in keys.column_names:
            cols.append(keys[f.name])
        elif f.type.nullable or f.name in located:
            cols.append(pa.nulls(keys.num_rows, arrow_schema([f], with_id=False)[0].type))
        else:
            raise SchemaMismatchError(
                f"delete needs a value for NOT NULL column {f.name!r} ({f.type})")
    full = pa.table(cols, names=schema.field_names)
    rk = CoreOptions(schema.options).rowkind_field
    if rk and rk not in keys.column_names:
        full = full.set_column(full.column_names.index(rk), rk,
                               pa.array(["-D"] * full.num_rows, pa.string()))
    return full, np.full(full.num_rows, DELETE, dtype=np.int8)


def commit_result(table_name: str, snap: Snapshot | None, entries: Sequence[ManifestEntry], *,
                  started: float, rows_written: int, commit_user: str,
                  commit_identifier: int | None, rewrites: int = 0, already: bool = False,
                  partitions_dropped: Sequence[str] = ()) -> CommitResult:
    """The result of a write or delete whose snapshot `snap` (None: nothing was committed)
    changed the data files `entries`, counted from them; `started`: the job's
    `time.monotonic()` at its start; `already`: `snap` is an earlier run's commit."""
    added = [e for e in entries if e.kind == FileKind.ADD]
    return CommitResult(
        table=table_name, snapshot_id=snap.id if snap else None,
        commit_kind=snap.commit_kind if snap else None, rows_written=rows_written,
        files_added=len(added), files_deleted=len(entries) - len(added),
        bytes_added=sum(e.file.file_size for e in added),
        duration_s=round(time.monotonic() - started, 3), rewrites=rewrites,
        commit_user=commit_user, commit_identifier=commit_identifier,
        already_committed=already, partitions_dropped=tuple(partitions_dropped))


class WriteJob(DataJob[WriteUnit, CommitMessage, CommitResult]):
    """One batch write as plan → execute → commit (see the module docstring).

    `merge_schema_options`: the write's options when it is a merge-schema write (the schema is
    evolved in `plan`, before any file is written); None for a plain write.

    Of the `DataJob` base it overrides the three steps and `abort`; its `operation` ("write",
    or "delete" for `delete(keys)` and a delete by predicate's rows) is recorded in the
    snapshot of a commit with an identifier, and "already landed" (`find_landed`) is the
    base's, over a write's commit kinds (APPEND, OVERWRITE). A job whose execute step runs
    elsewhere (Spark) overrides the public hooks `renumber` (how the files of buckets another
    writer landed records in meanwhile get numbers past them) and `count_written_rows` (the
    rows the result reports).
    """

    def __init__(self, file_io: FileIO, table_path: str, schema: TableSchema, data: pa.Table,
                 kinds: np.ndarray | None = None, overwrite: bool = False,
                 commit_user: str | None = None, commit_identifier: int | None = None, *,
                 merge_schema_options: dict[str, str] | None = None,
                 runner: Runner | None = None, table_name: str | None = None,
                 operation: str = "write", compact_lookup: bool = True):
        super().__init__(file_io, table_path, schema, table_name, commit_user=commit_user,
                         commit_identifier=commit_identifier, runner=runner)
        self.data = data
        self.kinds = kinds
        self.overwrite = overwrite
        self.merge_schema_options = merge_schema_options
        self.writer = TableWrite(file_io, table_path, schema)
        self.writer.input_changelog &= not overwrite  # an overwrite commits no changelog
        opts = self.writer.options  # commit options are checked before anything is written
        _ = (opts.commit_max_retries, opts.commit_min_retry_wait, opts.commit_max_retry_wait,
             opts.commit_timeout)
        self.operation = operation
        #: a lookup table's level-0 files are compacted once the write landed (`commit`)
        self.compact_lookup = compact_lookup
        self.open_committer(properties=self.operation_properties())
        self.writer.commit_user = self.commit_user  # names a postpone writer's files
        self.units: list[WriteUnit] = []
        self.messages: list[CommitMessage] = []
        self.base: SequenceBase | None = None
        self.base_id: int | None = None
        self.rewrites = 0
        self.index_entries: list[IndexManifestEntry] = []
        #: (latest snapshot,) when the caller read it together with the schema (`plan` takes
        #: it instead of reading it again)
        self.read_latest: tuple[Snapshot | None] | None = None
        self._start = time.monotonic()

    # -- plan ----------------------------------------------------------------------------------
    def plan(self) -> list[WriteUnit]:
        """Read the base snapshot, evolve the schema for a merge-schema write, and split the
        rows into units. Plans nothing when this commit's (user, identifier) already landed."""
        self._start = time.monotonic()
        if self.find_landed() is not None:
            return []
        if self.merge_schema_options is not None:
            schema, self.data = evolve_for_write(SchemaManager(self.file_io, self.table_path),
                                                 self.data, self.merge_schema_options)
            self.use_schema(schema)
        read, self.read_latest = self.read_latest, None
        # the hint's next id needs no probe: the commit's write-if-absent of it is the probe
        latest = read[0] if read else self.committer.snapshots.latest_snapshot(probe_next=False)
        self.committer.assume_latest(latest, self.schema.id)  # the commit reads neither again
        self.base_id = latest.id if latest else None
        self.units = self.writer.plan(self.data, self.kinds, latest, self.overwrite,
                                      by_key=self.operation == "delete")
        # an append table has no keys for a later record to win: no renumbering
        self.base = None if not self.schema.primary_keys else SequenceBase(
            snapshot_identity(latest),
            {(u.partition, u.bucket): u.max_sequence_number for u in self.units
             if u.bucket >= 0})  # postpone files carry no sequence number to guard
        return self.units

    def use_schema(self, schema: TableSchema) -> None:
        """Write and commit with `schema` from now on (a merge-schema write evolved the
        table in its plan step)."""
        self.writer = TableWrite(self.file_io, self.table_path, schema)
        self.writer.commit_user = self.commit_user
        self.writer.input_changelog &= not self.overwrite
        self.open_committer(schema, self.operation_properties())

    # -- execute -------------------------------------------------------------------------------
    def execute(self, units: Sequence[WriteUnit] | None = None, runner: Runner | None = None
                ) -> list[CommitMessage]:
        """Write the units' files (default: the planned ones) through `runner` (the job's,
        else a thread pool); units renumbered at commit run through the same runner."""
        if runner is not None:
            self.runner = runner
        if units is not None:
            self.units = list(units)
        self.messages = self._execute(self.units)
        try:
            self.index_entries = self.writer.write_index()  # dynamic bucket: HASH files
        except BaseException:
            self.abort()
            raise
        return self.messages

    def _execute(self, units: Sequence[WriteUnit]) -> list[CommitMessage]:
        # units run in this process: a file's last flush and rename overlap the next unit's
        # work, and all have finished before the files are named anywhere
        local = self.runner is None or isinstance(self.runner, ThreadRunner)
        pending = self.writer.pending = PendingFiles() if local else None
        try:
            results = default_runner(self.runner).map(captured(self.writer.execute), list(units))
        except BaseException:
            if pending is not None:
                with contextlib.suppress(Exception):
                    pending.wait()
            raise
        finally:
            self.writer.pending = None
        done, error = split_failures(results)
        if pending is not None:
            try:
                pending.wait()
            except Exception as failed:  # noqa: BLE001 - the job fails as a unit would
                error = error or failed
        if error is not None:
            self.writer.remove_files(done, list(units))
            raise error
        return done

    # -- commit --------------------------------------------------------------------------------
    def commit(self, messages: Sequence[CommitMessage] | None = None) -> CommitResult:
        """Commit the executed units (`messages`: default those `execute` returned); renumber
        and rewrite buckets others wrote to meanwhile, after a randomized back-off
        (`commit.min-retry-wait` doubling up to `commit.max-retry-wait`, as Paimon's commit
        retries) so contenders fall out of step. A lookup table's written partitions are then
        compacted (`compact_after_write`), as Java's lookup writer does before it returns."""
        if messages is not None:
            self.messages = list(messages)
        result = self._commit_messages()
        if not self.compact_lookup:
            return result
        return compact_after_write(self.file_io, self.table_path, self.schema, self.table_name,
                                   result, {m.partition for m in self.messages}, stacklevel=4)

    def _commit_messages(self) -> CommitResult:
        if self.landed is not None:
            return self._landed_result(self.landed)
        opts = self.writer.options
        try:
            wait = opts.commit_min_retry_wait
            while True:
                try:
                    self._check_key_index()
                    snap = self._commit_once()
                    return self.result_of(snap, self.committer.committed_entries if snap else [])
                except AlreadyCommitted as twin:  # another run of this pair landed first
                    self.abort()
                    return self._landed_result(twin.snapshot)
                except SequenceConflict as conflict:
                    self.committer.raise_if_ambiguous(conflict, "write")
                    self._check_key_index()
                    if self.rewrites >= opts.commit_max_retries:
                        raise CommitFailedError(
                            f"commit to {self.table_path} gave up after renumbering "
                            f"{self.rewrites} times: other writers kept committing to the same "
                            "buckets") from conflict
                    time.sleep(wait * (0.5 + random.random()))
                    wait = min(wait * 2, opts.commit_max_retry_wait)
                    self.renumber(self._fresh(conflict))
        except CommitStateUnknownError:
            raise  # the snapshot may reference our files: keep them
        except BaseException as error:
            self.committer.raise_if_ambiguous(error, "write")
            self.abort()
            raise

    def _check_key_index(self) -> None:
        """A cross-partition write routed its keys by where they were in the base snapshot:
        refuse it when another write (not a compaction, which moves no key) landed since."""
        if not self.writer.cross or not self.units or self.base is None:
            return
        snapshots = self.committer.snapshots
        latest = snapshots.latest_snapshot()
        if snapshot_identity(latest) == self.base.snapshot:
            return
        base = self.base_id or 0
        kinds = [snapshots.snapshot(i).commit_kind if snapshots.exists(i) else None
                 for i in range(base + 1, (latest.id if latest else 0) + 1)]
        if not kinds or any(k != "COMPACT" for k in kinds):
            raise CommitConflictError(
                f"{self.table_path}: another commit changed the table while this "
                f"cross-partition upsert routed its keys by snapshot {self.base_id}; run the "
                "write again")

    def _landed_result(self, snap: Snapshot) -> CommitResult:
        self.landed = snap
        return self.result_of(snap, self.committer.delta_entries(snap), already=True)

    def abort(self) -> None:
        """Delete the files this job wrote (it will not be committed)."""
        self.writer.remove_files(self.messages, self.units)
        self.writer.remove_index(self.index_entries)
        self.messages = []
        self.index_entries = []

    def result_of(self, snap: Snapshot | None, entries: Sequence[ManifestEntry],
                  already: bool = False) -> CommitResult:
        """This job's result for snapshot `snap` (None: nothing committed) that changed the
        data files `entries`; `already`: `snap` is an earlier run's commit of this identity."""
        return commit_result(
            self.table_name, snap, entries, started=self._start,
            rows_written=self.data.num_rows if already else self.count_written_rows(),
            rewrites=self.rewrites, commit_user=self.commit_user,
            commit_identifier=self.commit_identifier, already=already)

    def count_written_rows(self) -> int:
        """The rows this job wrote, as its result reports them (hook: a job whose rows never
        reach the driver counts them from its tasks)."""
        return self.data.num_rows

    def _commit_once(self) -> Snapshot | None:
        watch = NOT_WATCHED if self.commit_identifier is None else self.base_id
        if self.overwrite:
            self._drop_changelog()
            parts = sorted({u.partition for u in self.units})
            return self.committer.commit(self.messages, overwrite_partitions=parts,
                                         overwrite_all=not self.schema.partition_keys,
                                         other_runs_after=watch,
                                         index_added=self.index_entries,
                                         index_base=self.writer.index_base)
        return self.committer.commit(self.messages, sequence_base=self.base,
                                     other_runs_after=watch, index_added=self.index_entries,
                                     index_base=self.writer.index_base)

    def _drop_changelog(self) -> None:
        """An overwrite commits no changelog, as Java's `overwritePartition` ignores it:
        changelog files its units wrote anyway (a Spark task's) are deleted, not committed."""
        written = [m for m in self.messages if m.changelog_files]
        if not written:
            return
        self.writer.remove_files([dataclasses.replace(m, new_files=[]) for m in written],
                                 self.units)
        self.messages = [dataclasses.replace(m, changelog_files=[]) for m in self.messages]

    def _fresh(self, conflict: SequenceConflict) -> SequenceConflict:
        """The conflict as of the latest snapshot now, over EVERY bucket of the job: others
        may have landed during the back-off, in these buckets or in others; the new base is
        that snapshot, so each bucket where records now live above its start is renumbered."""
        assert self.base is not None
        latest = self.committer.snapshots.latest_snapshot()
        state = self.writer.bucket_state(latest)
        buckets = {}
        for key, start in self.base.max_sequence.items():
            now = max(state.get(key, (None, -1))[1], conflict.buckets.get(key, -1))
            if now > start:
                buckets[key] = now
        return SequenceConflict(self.table_path, buckets, latest)

    def renumber(self, conflict: SequenceConflict) -> None:
        """Hook: execute the units of the conflicting buckets again, numbered a gap past the largest
        sequence number now live there; the files written first for them are deleted once the
        new ones exist. The gap lets writers that prepared before this renumbering (their
        numbers stay below ours) commit first without forcing yet another one; it doubles with
        every renumbering, so among writers renumbering at once the one that has waited
        longest jumps highest and lands (no leapfrogging livelock)."""
        assert self.base is not None
        gap = RENUMBER_GAP << min(self.rewrites, 24)
        redo = {k: v + gap for k, v in conflict.buckets.items()}
        old_units = [u for u in self.units if (u.partition, u.bucket) in redo]
        new_units = [dataclasses.replace(u, max_sequence_number=redo[(u.partition, u.bucket)])
                     for u in old_units]
        old_messages = [m for m in self.messages if (m.partition, m.bucket) in redo]
        fresh = self._execute(new_units)
        keep = [m for m in self.messages if (m.partition, m.bucket) not in redo]
        self.messages = keep + fresh
        self.units = [u for u in self.units if (u.partition, u.bucket) not in redo] + new_units
        self.writer.remove_files(old_messages, old_units)
        # the check stays "nothing live at or above our first number"
        self.base = SequenceBase(snapshot_identity(conflict.snapshot),
                                 {**self.base.max_sequence, **redo})
        self.rewrites += 1


def write_table(file_io: FileIO, table_path: str, schema: TableSchema, data: pa.Table,
                kinds: np.ndarray | None = None, overwrite: bool = False,
                commit_user: str | None = None, commit_identifier: int | None = None,
                runner: Runner | None = None, table_name: str | None = None) -> CommitResult:
    """One batch write, committed as one APPEND (or OVERWRITE) snapshot."""
    return WriteJob(file_io, table_path, schema, data, kinds, overwrite, commit_user,
                    commit_identifier, runner=runner, table_name=table_name).run()

