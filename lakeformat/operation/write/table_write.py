"""Batch write, the work of its plan and execute steps (`write.job.WriteJob` drives them).

Plan: incoming rows are checked against the table schema and routed to partitions and buckets
with whole-column operations; each (partition, bucket) becomes a `WriteUnit` holding only its
own rows and the sequence number its bucket continues from. Execute (`TableWrite.execute`, a pure
function of a unit): number the rows, merge them per key with the table's merge engine (a data
file holds each key once) and write level-0 files, returning a `CommitMessage`.

An append table (no primary key) takes +I rows only and writes them as they come, numbered in
arrival order: a bucketed one (`bucket` > 0, rows hashed by `bucket-key`) continues its bucket's
numbers, as Java's writer restores them; a bucket-unaware one (`bucket` = -1, every file in
bucket 0) starts each write at 0, as Java's unaware writer (which restores nothing) does.
"""

from __future__ import annotations

import dataclasses
import os
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.data.gather import BatchViews, take_rows
from lakeformat.data.kv_file import KeyValueFileWriter
from lakeformat.errors import SchemaMismatchError, UnsupportedError
from lakeformat.merge import merge_engine
from lakeformat.merge.context import MergeContext
from lakeformat.merge.sort import (
    DELETE,
    INSERT,
    UPDATE_AFTER,
    UPDATE_BEFORE,
    KeyGroups,
    key_column,
    sort_for_merge,
    stable_int_sort,
)
from lakeformat.mergetree import check_record_level_expire
from lakeformat.meta.binary_row import to_avro_bytes
from lakeformat.meta.bucket import bucket_ids, hash_rows
from lakeformat.meta.data_file_meta import DataFileMeta
from lakeformat.meta.index_manifest import IndexManifestEntry, IndexManifestFile
from lakeformat.meta.snapshot import Snapshot
from lakeformat.operation.commit import CommitMessage
from lakeformat.operation.paths import PathFactory
from lakeformat.operation.scan import FileStoreScan
from lakeformat.operation.support import WRITE, check_supported
from lakeformat.operation.write import cross_partition, postpone
from lakeformat.operation.write.conform_input import conform
from lakeformat.operation.write.dynamic_bucket import PartitionHashes, load_partition
from lakeformat.operation.write.dynamic_bucket import assign as assign_buckets
from lakeformat.operation.write.input_changelog import (
    changelog_file_options,
    writes_input_changelog,
)
from lakeformat.options import CoreOptions
from lakeformat.schema.table_schema import SEQUENCE_NUMBER, VALUE_KIND, TableSchema
from lakeformat.storage import FileIO, PendingFiles
from lakeformat.storage.parallel import parallel_map

#: rows per slice when the bucket hashes of a large batch are computed in parallel
HASH_SLICE_ROWS = 1 << 17

ROW_KINDS = {"+I": INSERT, "-U": UPDATE_BEFORE, "+U": UPDATE_AFTER, "-D": DELETE}


#: up to this many possible unit codes, the codes present are found one comparison each
FEW_CODES = 32


def _codes_present(codes: np.ndarray, possible: int) -> np.ndarray:
    """The distinct values of `codes` (each below `possible`), ascending. A few possible
    codes are looked for one by one, a comparison pass each (~0.1 ms per million codes; a
    bincount of a million costs ~5 ms)."""
    if possible <= FEW_CODES:
        return np.array([c for c in range(possible) if np.any(codes == c)], dtype=np.int64)
    return np.flatnonzero(np.bincount(codes)) if codes.dtype == np.uint16 else np.unique(codes)


@dataclass(frozen=True)
class WriteUnit:
    """Rows of one (partition, bucket) plus the sequence number its bucket continues from: a
    small picklable value (shipped, it never carries the rest of the batch)."""

    partition: bytes
    partition_values: tuple
    bucket: int
    total_buckets: int
    #: this unit's rows in arrival order (value columns + _VALUE_KIND); with `index`, the
    #: planned batch that holds them
    source: pa.Table
    max_sequence_number: int
    #: positions of this unit's rows in `source`, in arrival order (None: all of `source`)
    index: np.ndarray | None = None
    #: or the unit code of every row of `source` and this unit's code: the positions are then
    #: found when the unit is executed (in parallel with the other units)
    codes: np.ndarray | None = None
    code: int = 0
    #: the string columns of `source` as views, shared by the units planned from it (never
    #: shipped: a detached unit holds its own rows)
    views: BatchViews | None = dataclasses.field(default=None, compare=False, repr=False)

    @cached_property
    def positions(self) -> np.ndarray | None:
        """Positions of this unit's rows in `source` (None: all of it)."""
        if self.index is not None or self.codes is None:
            return self.index
        return np.flatnonzero(self.codes == self.code)

    @property
    def rows(self) -> pa.Table:
        """This unit's rows in arrival order."""
        at = self.positions
        return self.source if at is None else self.source.take(pa.array(at))

    def detached(self) -> WriteUnit:
        """This unit holding a compact copy of its own rows only (not the planned batch)."""
        own = self.rows if self.positions is not None else self.source.take(
            pa.array(np.arange(self.source.num_rows, dtype=np.int64)))
        return WriteUnit(self.partition, self.partition_values, self.bucket, self.total_buckets,
                         own, self.max_sequence_number)

    def __reduce__(self) -> tuple:
        # in-process a unit points into the planned batch; shipped to another process (a
        # Spark task) it carries its own rows only
        own = self.detached()
        return (WriteUnit, (own.partition, own.partition_values, own.bucket, own.total_buckets,
                            own.source, own.max_sequence_number))


def check_bucket_count(table_path: str, schema: TableSchema, partition_values: Sequence[Any],
                       live_total: int | None, num_buckets: int) -> None:
    """Refuse a write into a partition whose live files were written with another number of
    buckets than the table option's (`live_total`: theirs, None for a new partition)."""
    if live_total is not None and live_total != num_buckets:
        raise UnsupportedError(
            f"{table_path}: partition {dict(zip(schema.partition_keys, partition_values))}"
            f" has {live_total} buckets but the table option says {num_buckets}; "
            "rescaling needs an overwrite of that partition")


class TableWrite:
    def __init__(self, file_io: FileIO, table_path: str, schema: TableSchema):
        self.file_io = file_io
        self.table_path = table_path
        self.schema = schema
        self.options = CoreOptions(schema.options)
        self._check_writable()
        self.append = not schema.primary_keys
        self.unaware = self.append and self.options.bucket == -1
        self.engine = None if self.append else merge_engine(schema)
        self.dynamic = not self.append and self.options.bucket == -1
        #: a postpone-bucket table (`bucket = -2`): units planned by `write.postpone`
        self.postpone = not self.append and postpone.is_postpone(self.options)
        #: a postpone writer's commit user (its job sets it) and writer id, in its file names
        self.commit_user: str | None = None
        self._writer_id = postpone.new_writer_id()
        #: cross-partition upsert: keys routed by a key index bootstrapped from the data
        self.cross = self.dynamic and cross_partition.is_cross_partition(schema)
        if self.cross:
            cross_partition.check_options(schema, self.options, table_path)
        self.key_index: cross_partition.KeyIndex | None = None
        #: dynamic bucket: the index manifest the plan read, and each partition's hashes
        self.index_base: str | None = None
        self.index_state: dict[bytes, PartitionHashes] = {}
        self.ctx = MergeContext.of(schema)
        #: changelog-producer=input: every flush also writes its records as changelog
        #: (`input_changelog`); a job that commits no changelog (an overwrite) turns it off
        self.input_changelog = writes_input_changelog(schema, self.options)
        self.changelog_options = changelog_file_options(self.options)
        self.paths = PathFactory(file_io, table_path, schema)
        self.keys = list(schema.trimmed_primary_keys)
        self.partition_fields = schema.partition_fields()
        #: set by a job running its units in this process: their files finish in the
        #: background and the job waits for them before committing (`PendingFiles`)
        self.pending: PendingFiles | None = None
        #: per partition, the Parquet encodings its first unit chose (`KeyValueFileWriter`):
        #: the buckets of a partition are alike, one sample decides for all
        self._encodings: dict[bytes, dict] = {}

    def __getstate__(self) -> dict:
        # shipped to another process (a Spark task), a unit's files finish before it returns
        return {**self.__dict__, "pending": None, "_encodings": {}}

    def _check_writable(self) -> None:
        check_supported(self.schema, WRITE, self.table_path)
        check_record_level_expire(self.schema, self.schema.options)  # Java's writer checks it

    # -- plan ----------------------------------------------------------------------------------
    def plan(self, data: pa.Table, kinds: np.ndarray | None, latest: Snapshot | None,
             overwrite: bool = False, by_key: bool = False) -> list[WriteUnit]:
        """Split conformed rows into work units, numbered after the buckets' live state in
        `latest` (the job's base snapshot). `overwrite`: the rows replace their partitions
        (a dynamic-bucket table then assigns them from an empty index). `by_key`: the rows
        are a delete by key (a cross-partition table sends each to its key's partition)."""
        rows, buckets, part_codes, part_rows = self._route_rows(data, kinds, latest, overwrite,
                                                                by_key)
        if self.postpone:
            return [WriteUnit(p, values, b, total, rows, seq, index=at)
                    for p, values, b, total, seq, at in postpone.plan_postpone(
                        self, rows, part_codes, part_rows, latest, overwrite)]
        state = self.bucket_state(latest)
        num_buckets = self.options.bucket
        stride = max(num_buckets, int(buckets.max(initial=0)) + 1)  # dynamic: assigned ids
        combined = part_codes * stride + buckets if len(part_rows) > 1 else buckets
        # one unit per (partition, bucket) code present; each unit finds its own rows (in
        # arrival order) when executed
        codes = combined.astype(np.uint16 if combined.max(initial=0) < 1 << 16 else np.uint64)
        present = _codes_present(codes, stride * len(part_rows))
        single = len(present) == 1
        views = BatchViews(rows)
        units = []
        for code in present.tolist():
            part_code, bucket = divmod(code, stride)
            values = tuple(part_rows[part_code]) if self.partition_fields else ()
            partition = self.partition_bytes(values)
            _, max_seq = state.get((partition, bucket), (None, -1))
            if self.unaware:
                max_seq = -1
            check_bucket_count(self.table_path, self.schema, values,
                               state.get((partition, None), (None, -1))[0], num_buckets)
            units.append(WriteUnit(partition, values, bucket, num_buckets, rows, max_seq,
                                   codes=None if single else codes, code=code, views=views))
        return units

    def _route_rows(self, data: pa.Table, kinds: np.ndarray | None, latest: Snapshot | None,
                    overwrite: bool, by_key: bool
                    ) -> tuple[pa.Table, np.ndarray, np.ndarray, list[tuple]]:
        """The rows conformed, with their row kinds, and routed (`plan`): rows, each row's
        bucket, its partition code, and the partition values of each code."""
        if self.cross:
            if overwrite:
                raise UnsupportedError(
                    f"{self.table_path}: overwrite of a cross-partition upsert table (bucket=-1, "
                    "primary key without every partition column) is not supported: its keys "
                    "would stay live in the partitions not overwritten; delete and write instead")
            if by_key:
                data, hit = cross_partition.locate(self._key_index(latest), self.schema, data)
                kinds = None if kinds is None else kinds[hit]
        table = conform(data, self.schema)
        if kinds is None:
            kinds = self._row_kinds(table, given=data.column_names)
        table, kinds = self._filter_kinds(table, kinds)
        if self.engine is not None:
            self.engine.check_retracts(table, kinds, self.table_path)
        elif kinds.any():
            raise SchemaMismatchError(
                f"{self.table_path}: an append table (no primary key) takes +I rows only; "
                f"{int(np.count_nonzero(kinds))} rows have another row kind")
        rows = table.append_column(VALUE_KIND, pa.array(kinds.astype(np.int8)))
        if self.cross:
            rows, buckets, part_codes, part_rows = self._route_cross(rows, latest)
        elif self.dynamic:
            buckets, part_codes, part_rows = self._assign_dynamic(rows, latest, overwrite)
        else:
            buckets, part_codes, part_rows = self.route(rows)
        return rows, buckets, part_codes, part_rows

    def route(self, rows: pa.Table) -> tuple[np.ndarray, np.ndarray, list[tuple]]:
        """Where conformed rows go: each row's bucket (int32), each row's partition code, and
        the partition values of each code (whole-column work; a Spark job shuffles by
        these)."""
        part_codes, part_rows = self._partition_codes(rows)
        if self.unaware or self.postpone:  # a postpone table's buckets are planned per partition
            return np.zeros(rows.num_rows, dtype=np.int32), part_codes, part_rows
        bucket_cols = [rows[k] for k in self.schema.bucket_keys]
        bucket_types = [self.schema.field(k).type for k in self.schema.bucket_keys]
        n = rows.num_rows
        if n <= HASH_SLICE_ROWS:
            return bucket_ids(bucket_cols, bucket_types, self.options.bucket), part_codes, part_rows
        # slices of 128k rows, whose temporaries stay in cache (~15% faster than whole
        # columns), hashed side by side (numpy lets go of the GIL in its loops)
        cuts = list(range(0, n, HASH_SLICE_ROWS)) + [n]
        parts = parallel_map(lambda lo_hi: bucket_ids(
            [c.slice(lo_hi[0], lo_hi[1] - lo_hi[0]) for c in bucket_cols], bucket_types,
            self.options.bucket), list(zip(cuts[:-1], cuts[1:])), os.cpu_count() or 1)
        return np.concatenate(parts), part_codes, part_rows

    def _assign_dynamic(self, rows: pa.Table, latest: Snapshot | None, overwrite: bool
                        ) -> tuple[np.ndarray, np.ndarray, list[tuple]]:
        """Buckets of a dynamic-bucket table's rows from the partitions' HASH indexes in
        `latest` (`dynamic_bucket`); the updated indexes stay in `index_state`."""
        part_codes, part_rows = self._partition_codes(rows)
        keys = list(self.schema.trimmed_primary_keys)
        hashes = hash_rows([rows[k] for k in keys],
                           [self.schema.field(k).type for k in keys]).astype(np.int32)
        index_file = IndexManifestFile(self.file_io, self.table_path, self.schema.options)
        self.index_base = latest.index_manifest if latest else None
        live: dict[bytes, list] = {}
        for e in index_file.read(self.index_base):
            live.setdefault(e.partition, []).append(e)
        buckets = np.empty(rows.num_rows, dtype=np.int64)
        self.index_state = {}
        order = np.argsort(part_codes, kind="stable")
        bounds = np.flatnonzero(np.diff(part_codes[order])) + 1
        for group in np.split(order, bounds):
            if not len(group):
                continue
            values = tuple(part_rows[int(part_codes[group[0]])]) if self.partition_fields else ()
            partition = self.partition_bytes(values)
            state = load_partition(index_file, [] if overwrite else live.get(partition, []))
            buckets[group] = assign_buckets(state, partition, hashes[group], self.options)
            self.index_state[partition] = state
        return buckets, part_codes, part_rows

    def _key_index(self, latest: Snapshot | None) -> cross_partition.KeyIndex:
        """Where every live key of `latest` is (read once per base snapshot)."""
        wanted = latest.id if latest else None
        if self.key_index is None or self.key_index.snapshot_id != wanted:
            self.key_index = cross_partition.bootstrap(self.file_io, self.table_path,
                                                       self.schema, latest)
        return self.key_index

    def _route_cross(self, rows: pa.Table, latest: Snapshot | None
                     ) -> tuple[pa.Table, np.ndarray, np.ndarray, list[tuple]]:
        """A cross-partition table's rows routed by the key index (`cross_partition`)."""
        codes, values = self._partition_codes(rows)
        routed = cross_partition.route(self._key_index(latest), self.schema, rows, codes,
                                       [self.partition_bytes(v) for v in values], values)
        return routed.rows, routed.buckets, routed.part_codes, routed.part_values

    def write_index(self) -> list[IndexManifestEntry]:
        """New HASH index files for the buckets the plan added keys to."""
        index_file = IndexManifestFile(self.file_io, self.table_path, self.schema.options)
        return [index_file.write_hashes(p, b, state.buckets[b])
                for p, state in self.index_state.items() for b in sorted(state.changed)]

    def remove_index(self, entries: list[IndexManifestEntry]) -> None:
        index_file = IndexManifestFile(self.file_io, self.table_path, self.schema.options)
        if entries:
            self.file_io.delete_many([index_file.index_file_path(e) for e in entries])

    def partition_bytes(self, values: tuple) -> bytes:
        """The BinaryRow of one partition's values, as manifests store it."""
        return to_avro_bytes(list(values), [f.type for f in self.partition_fields])

    def _key_order(self, unit: WriteUnit
                   ) -> tuple[np.ndarray, KeyGroups | None, pa.Array | None]:
        """Stable key order of a unit's rows (positions in arrival order; ties keep arrival
        order), in Java's key order (floats by `Double.compare`); with a single integer key
        (or float codes) also the key groups of that order, and for an integer key the key
        column in it, which the sort yields for free."""
        keys = [key_column(unit.source[k]) for k in self.keys]
        at = unit.positions
        if len(keys) == 1 and pa.types.is_integer(keys[0].type) and not keys[0].null_count:
            values = keys[0].to_numpy()
            order, ordered, groups = stable_int_sort(values if at is None else values[at])
            # float keys sort as int64 codes: their column is still gathered
            own = pa.types.is_integer(unit.source[self.keys[0]].type)
            return order, groups, pa.array(ordered, type=keys[0].type) if own else None
        if at is not None:
            keys = [k.take(pa.array(at)) for k in keys]
        table = pa.table(keys, names=[f"k{i}" for i in range(len(keys))])
        return pc.sort_indices(table, sort_keys=[(f"k{i}", "ascending")
                                                 for i in range(len(keys))]).to_numpy(), None, None

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
        """A dense code per distinct partition, and the partition values per code. A null
        value is a partition of its own (Paimon's `partition.default-name` directory), so
        columns are dictionary-encoded with nulls encoded, not joined (a join drops nulls)."""
        n = rows.num_rows
        if not self.partition_fields:
            return np.zeros(n, dtype=np.int64), [()]
        indices, dictionaries = [], []
        for f in self.partition_fields:
            encoded = pc.dictionary_encode(rows[f.name].combine_chunks(),
                                           null_encoding="encode")
            indices.append(encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64))
            dictionaries.append(encoded.dictionary.to_pylist())
        if len(indices) == 1:  # the common case: the dictionary is the partition list
            return indices[0], [(v,) for v in dictionaries[0]]
        sizes = [max(len(d), 1) for d in dictionaries]
        if float(np.prod(sizes, dtype=np.float64)) < 2.0 ** 62:  # one int64 code per row
            combined = np.zeros(n, dtype=np.int64)
            for idx, size in zip(indices, sizes):
                combined = combined * size + idx
            uniq, codes = np.unique(combined, return_inverse=True)
            rows_of = np.array(np.unravel_index(uniq, sizes)).T
        else:
            rows_of, codes = np.unique(np.stack(indices, axis=1), axis=0, return_inverse=True)
        values = [tuple(d[i] for d, i in zip(dictionaries, row)) for row in rows_of.tolist()]
        return codes.reshape(-1).astype(np.int64), values

    def bucket_state(self, latest: Snapshot | None) -> dict:
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
        if self.engine is None:
            return self._execute_append(unit)
        if unit.bucket == postpone.POSTPONE_BUCKET:
            return postpone.execute_postpone(self, unit)
        # Rows are sorted by key (stable: a key's records keep arrival order) and numbered in
        # that order. Sequence numbers are only ever compared within a key, where this is
        # arrival order; ascending numbers also encode smaller and faster than a permutation.
        key_order, groups, sorted_key = self._key_order(unit)
        # one gather per column through the unit's positions in the batch (strings through
        # the batch's shared views), less what needs none: a single integer key comes sorted
        # out of the sort, a batch of inserts only has its row kinds known
        source = unit.source
        given: dict[str, pa.Array] = {}
        if sorted_key is not None:
            given[self.keys[0]] = sorted_key
        kinds = source[VALUE_KIND]
        if kinds.num_chunks == 1 and not np.any(kinds.chunk(0).to_numpy()):
            given[VALUE_KIND] = pa.array(np.zeros(len(key_order), dtype=np.int8))
        rows = take_rows(source.drop_columns(list(given)) if given else source, key_order,
                         unit.positions, unit.views)
        seq = pa.array(np.arange(len(key_order), dtype=np.int64)
                       + (unit.max_sequence_number + 1))
        columns = [given[name] if name in given else rows[name]
                   for name in (VALUE_KIND, *self.schema.field_names)]
        kv = pa.table([seq, *columns],
                      names=[SEQUENCE_NUMBER, VALUE_KIND, *self.schema.field_names])
        if self.ctx.sequence_fields:  # rows are key-sorted in arrival order; refine the ties
            kv = sort_for_merge(kv, self.keys, self.ctx.sequence_fields,
                                self.ctx.sequence_ascending)
        raw = kv  # the flush's records, sorted and unmerged: an input changelog's rows
        kv = self.engine.merge_sorted(kv, groups=groups)  # groups: by key, whatever the ties
        writer = KeyValueFileWriter(self.file_io,
                                    self.paths.bucket_dir(unit.partition_values, unit.bucket),
                                    self.schema, self.options, pending=self.pending,
                                    encodings=self._encodings.setdefault(unit.partition, {}))
        files = writer.write(kv)
        changelog = self.write_changelog(unit, raw) if self.input_changelog else []
        return CommitMessage(unit.partition, unit.bucket, unit.total_buckets, new_files=files,
                             changelog_files=changelog)

    def write_changelog(self, unit: WriteUnit, records: pa.Table) -> list[DataFileMeta]:
        """`records` (key-value rows of the unit's bucket, in file order) as changelog files
        of the bucket (`input_changelog`)."""
        writer = KeyValueFileWriter(self.file_io,
                                    self.paths.bucket_dir(unit.partition_values, unit.bucket),
                                    self.schema, self.changelog_options, pending=self.pending)
        return writer.write(records)

    def postpone_identity(self) -> tuple[str, int]:
        """(commit user, writer id) that name this writer's postpone files."""
        if self.commit_user is None:
            self.commit_user = str(uuid.uuid4())
        return self.commit_user, self._writer_id

    def _execute_append(self, unit: WriteUnit) -> CommitMessage:
        """An append table's rows as they came, numbered after the unit's start."""
        rows = unit.rows
        seq = pa.array(np.arange(rows.num_rows, dtype=np.int64) + (unit.max_sequence_number + 1))
        kv = pa.table([seq, rows[VALUE_KIND]] + [rows[f.name] for f in self.schema.fields],
                      names=[SEQUENCE_NUMBER, VALUE_KIND] + self.schema.field_names)
        writer = KeyValueFileWriter(self.file_io,
                                    self.paths.bucket_dir(unit.partition_values, unit.bucket),
                                    self.schema, self.options, pending=self.pending)
        return CommitMessage(unit.partition, unit.bucket, unit.total_buckets,
                             new_files=writer.write(kv))

    def remove_files(self, messages: list[CommitMessage], units: list[WriteUnit]) -> None:
        """Delete files of a job that will not be committed (best effort)."""
        where = {(u.partition, u.bucket): u.partition_values for u in units}
        paths = [self.paths.data_file(where[(m.partition, m.bucket)], m.bucket, f)
                 for m in messages for f in (*m.new_files, *m.changelog_files)]
        if paths:
            self.file_io.delete_many(paths)
