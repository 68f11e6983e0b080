"""Batch write: plan (bucket state) -> execute (per partition and bucket) -> commit.

Incoming rows are checked against the table schema, routed to partitions and buckets with
whole-column operations, given sequence numbers that continue each bucket's state, merged per
key with the table's merge engine (a data file holds each key once), and written as level-0
files. One commit publishes them as one snapshot.
"""

from __future__ import annotations

import dataclasses
import os
import random
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.data.kv_file import KeyValueFileWriter
from lakeformat.errors import (
    CommitFailedError,
    CommitOutcomeUnknownError,
    SchemaMismatchError,
    UnsupportedError,
)
from lakeformat.merge import merge_engine
from lakeformat.merge.context import MergeContext
from lakeformat.merge.sort import (
    DELETE,
    INSERT,
    UPDATE_AFTER,
    UPDATE_BEFORE,
    key_column,
    sort_for_merge,
)
from lakeformat.meta.binary_row import to_avro_bytes
from lakeformat.meta.bucket import bucket_ids
from lakeformat.meta.snapshot import Snapshot
from lakeformat.operation.commit import (
    CommitMessage,
    FileStoreCommit,
    SequenceBase,
    SequenceConflict,
    snapshot_identity,
)
from lakeformat.operation.conform import conform
from lakeformat.operation.paths import PathFactory
from lakeformat.operation.scan import FileStoreScan
from lakeformat.options import CoreOptions
from lakeformat.schema.table_schema import SEQUENCE_NUMBER, VALUE_KIND, TableSchema
from lakeformat.storage import FileIO

#: how far past a bucket's largest live sequence number a renumbered write starts (doubled
#: with each renumbering of the same write)
RENUMBER_GAP = 1 << 20

ROW_KINDS = {"+I": INSERT, "-U": UPDATE_BEFORE, "+U": UPDATE_AFTER, "-D": DELETE}


@dataclass(frozen=True)
class WriteUnit:
    """Rows of one (partition, bucket) plus the bucket's restored sequence number."""

    partition: bytes
    partition_values: tuple
    bucket: int
    total_buckets: int
    source: pa.Table  # the whole batch: value columns + _VALUE_KIND
    indices: np.ndarray  # this unit's rows of `source`, in arrival order
    max_sequence_number: int


class TableWrite:
    def __init__(self, file_io: FileIO, table_path: str, schema: TableSchema):
        self.file_io = file_io
        self.table_path = table_path
        self.schema = schema
        self.options = CoreOptions(schema.options)
        self._check_writable()
        self.engine = merge_engine(schema)
        self.ctx = MergeContext.of(schema)
        self.paths = PathFactory(file_io, table_path, schema)
        self.keys = list(schema.trimmed_primary_keys)
        self.partition_fields = schema.partition_fields()

    def _check_writable(self) -> None:
        opts, path = self.options, self.table_path
        if not self.schema.primary_keys:
            raise UnsupportedError(f"{path}: append tables (no primary key) are not supported")
        bucket = opts.bucket
        if bucket == -1:
            raise UnsupportedError(f"{path}: bucket=-1 (dynamic bucket) writes are not supported"
                                   " yet; create the table with options={'bucket': 'N'}")
        if bucket == -2:
            raise UnsupportedError(f"{path}: bucket=-2 (postpone bucket) writes are not supported")
        if bucket <= 0:
            raise UnsupportedError(f"{path}: invalid option bucket={bucket}")
        if opts.get("bucket-function.type", "default").lower() != "default":
            raise UnsupportedError(f"{path}: bucket-function.type="
                                   f"{opts.get('bucket-function.type')} is not supported")
        # full-compaction: writers produce no changelog; full compaction does (as in Paimon)
        if opts.get("changelog-producer", "none").lower() not in ("none", "full-compaction"):
            raise UnsupportedError(f"{path}: changelog-producer={opts.get('changelog-producer')}"
                                   " writes are not supported yet")
        for key in ("data-file.external-paths", "row-tracking.enabled", "data-evolution.enabled"):
            v = opts.get(key)
            if v and v.lower() != "false":
                raise UnsupportedError(f"{path}: option {key}={v} is not supported for writes")
        if opts.file_format not in ("parquet", "orc"):
            raise UnsupportedError(f"{path}: file.format={opts.file_format} is not supported")
        if opts.get("write.sequence-number-init-mode", "scan").lower() != "scan":
            raise UnsupportedError(f"{path}: write.sequence-number-init-mode="
                                   f"{opts.get('write.sequence-number-init-mode')} not supported")

    # -- plan ----------------------------------------------------------------------------------
    def prepare(self, data: pa.Table, kinds: np.ndarray | None, latest: Snapshot | None
                ) -> list[WriteUnit]:
        """Split conformed rows into work units; reads the latest snapshot's state once."""
        table = conform(data, self.schema)
        if kinds is None:
            kinds = self._row_kinds(table, given=data.column_names)
        table, kinds = self._filter_kinds(table, kinds)
        self.engine.check_retracts(table, kinds, self.table_path)
        rows = table.append_column(VALUE_KIND, pa.array(kinds.astype(np.int8)))
        num_buckets = self.options.bucket
        bucket_cols = [rows[k] for k in self.schema.bucket_keys]
        bucket_types = [self.schema.field(k).type for k in self.schema.bucket_keys]
        buckets = bucket_ids(bucket_cols, bucket_types, num_buckets).astype(np.int64)
        part_codes, part_rows = self._partition_codes(rows)
        combined = part_codes * num_buckets + buckets
        # Group rows by (partition, bucket), keeping arrival order inside each group; small
        # unsigned codes let numpy's stable argsort use a radix sort.
        codes = combined.astype(np.uint16 if combined.max(initial=0) < 1 << 16 else np.uint64)
        order = np.argsort(codes, kind="stable")
        sorted_codes = codes[order]
        bounds = np.concatenate([[0], np.flatnonzero(np.diff(sorted_codes)) + 1, [len(order)]])
        state = self._bucket_state(latest)
        units = []
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            if hi <= lo:
                continue
            first = int(order[lo])
            values = tuple(part_rows[int(part_codes[first])]) if self.partition_fields else ()
            partition = to_avro_bytes(list(values), [f.type for f in self.partition_fields])
            bucket = int(buckets[first])
            _, max_seq = state.get((partition, bucket), (None, -1))
            part_total = state.get((partition, None), (None, -1))[0]
            if part_total is not None and part_total != num_buckets:
                raise UnsupportedError(
                    f"{self.table_path}: partition {dict(zip(self.schema.partition_keys, values))}"
                    f" has {part_total} buckets but the table option says {num_buckets}; "
                    "rescaling needs an overwrite of that partition")
            units.append(WriteUnit(partition, values, bucket, num_buckets,
                                   rows, order[lo:hi], max_seq))
        return units

    def _key_order(self, rows: pa.Table) -> np.ndarray:
        """Stable key order of a unit's rows (ties keep arrival order), in Java's key order
        (floats by `Double.compare`)."""
        keys = [key_column(rows[k]) for k in self.keys]
        if len(keys) == 1 and pa.types.is_integer(keys[0].type):
            return np.argsort(keys[0].to_numpy(), kind="stable")
        table = pa.table(keys, names=[f"k{i}" for i in range(len(keys))])
        return pc.sort_indices(table, sort_keys=[(f"k{i}", "ascending")
                                                 for i in range(len(keys))]).to_numpy()

    def _filter_kinds(self, table: pa.Table, kinds: np.ndarray) -> tuple[pa.Table, np.ndarray]:
        """`ignore-delete` drops retracts and `ignore-update-before` drops -U before writing."""
        drop = np.zeros(len(kinds), dtype=bool)
        if self.options.ignore_delete:
            drop |= (kinds == UPDATE_BEFORE) | (kinds == DELETE)
        if self.options.ignore_update_before:
            drop |= kinds == UPDATE_BEFORE
        if not drop.any():
            return table, kinds
        return table.filter(pa.array(~drop)), kinds[~drop]

    def _row_kinds(self, table: pa.Table, given: list[str]) -> np.ndarray:
        field = self.options.rowkind_field
        if not field or field not in given:  # a stream that leaves the column out writes +I
            return np.zeros(table.num_rows, dtype=np.int8)
        col = table[field]
        if col.null_count:
            raise SchemaMismatchError(f"row kind column {field!r} (rowkind.field) has nulls")
        codes = pc.index_in(col, value_set=pa.array(list(ROW_KINDS)))
        if codes.null_count:
            bad = pc.filter(col, pc.is_null(codes)).unique().to_pylist()[:5]
            raise SchemaMismatchError(f"row kind column {field!r} has values {bad}; expected "
                                      f"{list(ROW_KINDS)}")
        return np.asarray(list(ROW_KINDS.values()), dtype=np.int8)[
            codes.to_numpy(zero_copy_only=False)]

    def _partition_codes(self, rows: pa.Table) -> tuple[np.ndarray, list[tuple]]:
        """A dense code per distinct partition, and the partition values per code."""
        n = rows.num_rows
        if not self.partition_fields:
            return np.zeros(n, dtype=np.int64), [()]
        keys = [f.name for f in self.partition_fields]
        uniq = rows.select(keys).group_by(keys, use_threads=False).aggregate([])
        uniq = uniq.append_column("__code", pa.array(np.arange(uniq.num_rows, dtype=np.int64)))
        probe = rows.select(keys).append_column("__row", pa.array(np.arange(n, dtype=np.int64)))
        joined = probe.join(uniq, keys=keys, join_type="left outer", use_threads=False)
        codes = np.empty(n, dtype=np.int64)
        codes[joined["__row"].to_numpy()] = joined["__code"].to_numpy()
        values = list(zip(*[uniq[k].to_pylist() for k in keys]))
        return codes, values

    def _bucket_state(self, latest: Snapshot | None) -> dict:
        """(partition, bucket) -> (total buckets, max sequence number) of live files."""
        state: dict = {}
        for e in FileStoreScan(self.file_io, self.table_path, self.schema).live_entries(latest):
            _, seq = state.get((e.partition, e.bucket), (None, -1))
            state[(e.partition, e.bucket)] = (e.total_buckets,
                                              max(seq, e.file.max_sequence_number))
            state[(e.partition, None)] = (e.total_buckets, -1)
        return state

    # -- execute -------------------------------------------------------------------------------
    def execute(self, unit: WriteUnit) -> CommitMessage:
        """Pure function of a unit: write its files, return what to commit."""
        # Sequence numbers follow arrival order; rows are then sorted by key (stable), and
        # gathered once, here in the worker.
        key_order = self._key_order(unit.source.select(self.keys).take(pa.array(unit.indices)))
        rows = unit.source.take(pa.array(unit.indices[key_order]))
        seq = pa.array(key_order.astype(np.int64) + (unit.max_sequence_number + 1))
        kv = pa.table([seq, rows[VALUE_KIND]] + [rows[f.name] for f in self.schema.fields],
                      names=[SEQUENCE_NUMBER, VALUE_KIND] + self.schema.field_names)
        if self.ctx.sequence_fields:  # rows are key-sorted in arrival order; refine the ties
            kv = sort_for_merge(kv, self.keys, self.ctx.sequence_fields,
                                self.ctx.sequence_ascending)
        kv = self.engine.merge_sorted(kv)
        writer = KeyValueFileWriter(self.file_io,
                                    self.paths.bucket_dir(unit.partition_values, unit.bucket),
                                    self.schema, self.options)
        files = writer.write(kv)
        return CommitMessage(unit.partition, unit.bucket, unit.total_buckets, new_files=files)

    def execute_all(self, units: Iterable[WriteUnit]) -> list[CommitMessage]:
        units = list(units)
        workers = min(len(units), os.cpu_count() or 2)
        if workers <= 1:
            return [self.execute(u) for u in units]
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(self.execute, units))

    def remove_files(self, messages: list[CommitMessage], units: list[WriteUnit]) -> None:
        """Delete files of a job that will not be committed (best effort)."""
        where = {(u.partition, u.bucket): u.partition_values for u in units}
        paths = [self.paths.data_file(where[(m.partition, m.bucket)], m.bucket, f)
                 for m in messages for f in m.new_files]
        if paths:
            self.file_io.delete_many(paths)


@dataclass(frozen=True)
class WriteOutcome:
    """A committed write: its snapshot (None: nothing to commit) and how many times buckets of
    it were renumbered and rewritten because other commits wrote there first."""

    snapshot: Snapshot | None
    rewrites: int = 0


class WriteJob:
    """One batch write as its three steps: `prepare` (reads the latest snapshot once and plans
    the work units), `execute` (writes the files), `commit` (one snapshot).

    Records are numbered after each bucket's largest sequence number in the base snapshot. If
    another commit lands records in one of those buckets at or above this write's first
    number before this one lands, the commit is refused (`SequenceConflict`) and the affected
    units are executed again, numbered past the new largest number, and their first files
    deleted — so a later commit's records always carry larger sequence numbers than every
    record committed before it in the bucket, and concurrent writers never tie. Renumbering is
    bounded by `commit.max-retries`.
    """

    def __init__(self, file_io: FileIO, table_path: str, schema: TableSchema, data: pa.Table,
                 kinds: np.ndarray | None = None, overwrite: bool = False,
                 commit_user: str | None = None):
        self.schema = schema
        self.data = data
        self.kinds = kinds
        self.overwrite = overwrite
        self.writer = TableWrite(file_io, table_path, schema)
        opts = self.writer.options  # commit options are checked before anything is written
        _ = (opts.commit_max_retries, opts.commit_min_retry_wait, opts.commit_max_retry_wait,
             opts.commit_timeout)
        self.committer = FileStoreCommit(file_io, table_path, schema, commit_user)
        self.units: list[WriteUnit] = []
        self.messages: list[CommitMessage] = []
        self.base: SequenceBase | None = None
        self.rewrites = 0

    def prepare(self) -> list[WriteUnit]:
        latest = self.committer.snapshots.latest_snapshot()
        self.units = self.writer.prepare(self.data, self.kinds, latest)
        self.base = SequenceBase(snapshot_identity(latest),
                                 {(u.partition, u.bucket): u.max_sequence_number
                                  for u in self.units})
        return self.units

    def execute(self) -> list[CommitMessage]:
        try:
            self.messages = self.writer.execute_all(self.units)
        except BaseException:
            self.abort()
            raise
        return self.messages

    def commit(self) -> WriteOutcome:
        """Commit the executed units; renumber and rewrite buckets others wrote to meanwhile,
        after a randomized back-off (`commit.min-retry-wait` doubling up to
        `commit.max-retry-wait`, as Paimon's commit retries) so contenders fall out of step."""
        opts = self.writer.options
        try:
            wait = opts.commit_min_retry_wait
            while True:
                try:
                    snap = self._commit_once()
                    return WriteOutcome(snap, self.rewrites)
                except SequenceConflict as conflict:
                    self._unless_ambiguous(conflict)
                    if self.rewrites >= opts.commit_max_retries:
                        raise CommitFailedError(
                            f"commit to {self.writer.table_path} gave up after renumbering "
                            f"{self.rewrites} times: other writers kept committing to the same "
                            "buckets") from conflict
                    time.sleep(wait * (0.5 + random.random()))
                    wait = min(wait * 2, opts.commit_max_retry_wait)
                    self._renumber(self._fresh(conflict))
        except CommitOutcomeUnknownError:
            raise  # the snapshot may reference our files: keep them
        except BaseException as error:
            self._unless_ambiguous(error)
            self.abort()
            raise

    def _unless_ambiguous(self, error: BaseException) -> None:
        """After a publish whose request failed (the snapshot was absent when read back, but
        the request could still land), this job's files may be referenced by a snapshot yet
        to appear: instead of deleting or rewriting them, end with CommitOutcomeUnknownError."""
        ambiguous = self.committer.ambiguous_publish
        if ambiguous is not None:
            raise CommitOutcomeUnknownError(
                f"commit to {self.writer.table_path} stopped ({error}) after publishing snapshot "
                f"{ambiguous} failed in a way that may still land; nothing was deleted. If "
                f"snapshot {ambiguous} appears with commitUser {self.committer.commit_user} the "
                "write landed; otherwise run it again (remove_orphan_files removes the files "
                "it left)", snapshot_id=ambiguous, commit_user=self.committer.commit_user
            ) from error

    def run(self) -> WriteOutcome:
        self.prepare()
        self.execute()
        return self.commit()

    def abort(self) -> None:
        """Delete the files this job wrote (it will not be committed)."""
        self.writer.remove_files(self.messages, self.units)
        self.messages = []

    def _commit_once(self) -> Snapshot | None:
        if self.overwrite:
            parts = sorted({u.partition for u in self.units})
            return self.committer.commit(self.messages, overwrite_partitions=parts,
                                         overwrite_all=not self.schema.partition_keys)
        return self.committer.commit(self.messages, sequence_base=self.base)

    def _fresh(self, conflict: SequenceConflict) -> SequenceConflict:
        """The conflict as of the latest snapshot now, over EVERY bucket of the job: others
        may have landed during the back-off, in these buckets or in others; the new base is
        that snapshot, so each bucket where records now live above its start is renumbered."""
        assert self.base is not None
        latest = self.committer.snapshots.latest_snapshot()
        state = self.writer._bucket_state(latest)
        buckets = {}
        for key, start in self.base.max_sequence.items():
            now = max(state.get(key, (None, -1))[1], conflict.buckets.get(key, -1))
            if now > start:
                buckets[key] = now
        return SequenceConflict(self.writer.table_path, buckets, latest)

    def _renumber(self, conflict: SequenceConflict) -> None:
        """Execute the units of the conflicting buckets again, numbered a gap past the largest
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
        fresh = self.writer.execute_all(new_units)
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
                commit_user: str | None = None) -> WriteOutcome:
    """One batch write, committed as one APPEND (or OVERWRITE) snapshot."""
    return WriteJob(file_io, table_path, schema, data, kinds, overwrite, commit_user).run()
