"""Merge-on-read: every bucket's sorted runs merged with the table's merge engine, in slices.

Plan (driver): the splits of one snapshot and the columns to read. Execute (anywhere):
`read_split`, a pure function of a split yielding merged rows slice by slice through
`MergeTreeReader` (the reader compaction and the changelog producer use), so a bucket of any
size is read within the memory budget. Buckets are independent: `read` maps them through a
`ThreadRunner`, `read_batches` streams them from threads (`_stream_splits`, at the end);
pyarrow and numpy release the GIL.

An append table (no primary key) has nothing to merge: a split's files are read one after the
other (a bucketed table's in sequence order, so rows come back as they were written), piece by
piece within the budget.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.data.file_read import iter_data_file
from lakeformat.data.kv_file import null_in_not_null_column
from lakeformat.errors import ColumnNotFoundError
from lakeformat.expressions import (
    Filter,
    check_filter,
    filter_columns,
    partition_predicate,
    to_expression,
)
from lakeformat.layout import POSTPONE_BUCKET
from lakeformat.merge import merge_engine
from lakeformat.mergetree import KeyComparator, MergeTreeReader, interval_partition
from lakeformat.meta.deletion_vector import DeletedRows
from lakeformat.meta.snapshot import Snapshot
from lakeformat.operation.paths import PathFactory
from lakeformat.operation.runner import ThreadRunner
from lakeformat.operation.scan import FileStoreScan, Split
from lakeformat.operation.support import READ, check_supported
from lakeformat.options import CoreOptions
from lakeformat.schema.schema_manager import SchemaManager
from lakeformat.schema.table_schema import TableSchema
from lakeformat.schema.types import arrow_schema
from lakeformat.storage import FileIO


@dataclass(frozen=True)
class ReadPlan:
    """What a read of one snapshot does: its splits, the columns merged, the rows kept."""

    splits: list[Split]
    read_columns: list[str]  # table columns the merge reads (schema order)
    output: pa.Schema  # the requested columns, in the requested order
    predicate: pc.Expression | None  # row filter, applied to merged rows
    not_null: tuple[str, ...] = ()  # NOT NULL columns of read_columns, checked after the merge


class TableRead:
    """Reads rows of one snapshot under that snapshot's schema."""

    def __init__(self, file_io: FileIO, table_path: str, schema: TableSchema,
                 schema_manager: SchemaManager, memory_budget: int | None = None):
        check_supported(schema, READ, table_path)
        self.file_io = file_io
        self.table_path = table_path
        self.schema = schema
        self.schema_manager = schema_manager
        self.options = CoreOptions(schema.options)
        self.memory_budget = memory_budget or self.options.write_buffer_size
        self.paths = PathFactory(file_io, table_path, schema)
        self.cmp = KeyComparator([f.type for f in schema.key_fields()])

    def plan(self, snapshot: Snapshot | None, columns: Sequence[str] | None = None,
             filter: Filter = None) -> ReadPlan:
        check_filter(filter, self.schema.fields, self.table_path)
        names = self.schema.field_names
        wanted = list(columns) if columns is not None else names
        unknown = [c for c in wanted if c not in names]
        if unknown:
            raise ColumnNotFoundError(f"unknown columns {unknown}; table columns are {names}")
        needed = [*wanted, *sorted(filter_columns(filter, names))]
        if self.schema.primary_keys:
            read_cols = merge_engine(self.schema).required_columns(needed)
        else:  # nothing to merge: what is asked for and what the filter needs
            read_cols = [n for n in names if n in set(needed)]
        output = arrow_schema([self.schema.field(c) for c in wanted], with_id=False)
        scan = FileStoreScan(self.file_io, self.table_path, self.schema)
        splits = scan.splits(snapshot, partition_predicate(filter, self.schema.partition_keys))
        # a batch read sees real buckets only: postpone files show once a compaction assigned
        # them to buckets [JAVA AbstractBatchTableScan onlyReadRealBuckets]
        splits = [s for s in splits if s.bucket != POSTPONE_BUCKET]
        if self.schema.primary_keys and self.options.deletion_vectors_enabled \
                and not self.options.deletion_vectors_merge_on_read:
            splits = [_without_level_0(s) for s in splits]
            splits = [s for s in splits if s.files]
        not_null = tuple(c for c in read_cols if not self.schema.field(c).type.nullable)
        return ReadPlan(splits, read_cols, output, to_expression(filter), not_null)

    def read(self, snapshot: Snapshot | None, columns: Sequence[str] | None = None,
             filter: Filter = None, max_workers: int | None = None) -> pa.Table:
        """The rows as one table, buckets in scan order (each merged slice by slice)."""
        plan = self.plan(snapshot, columns, filter)
        workers, budget = self._workers(plan, max_workers)
        parts = ThreadRunner(workers).map(lambda s: list(self.read_split(s, plan, budget)),
                                          plan.splits)
        parts = [t for p in parts for t in p if t.num_rows]
        if not parts:
            return plan.output.empty_table()
        return pa.concat_tables(parts)

    def read_batches(self, snapshot: Snapshot | None, columns: Sequence[str] | None = None,
                     filter: Filter = None, max_workers: int | None = None
                     ) -> pa.RecordBatchReader:
        """The rows as a stream of record batches, in the order buckets produce them: memory
        stays within the budget plus a few slices, whatever the size of a bucket."""
        plan = self.plan(snapshot, columns, filter)
        workers, budget = self._workers(plan, max_workers)
        slices = _stream_splits(lambda s: self.read_split(s, plan, budget), plan.splits,
                                workers)
        batches = (b for t in slices for b in t.to_batches() if b.num_rows)
        return pa.RecordBatchReader.from_batches(plan.output, batches)

    def _workers(self, plan: ReadPlan, max_workers: int | None) -> tuple[int, int]:
        """Threads for the splits, and each one's share of the memory budget."""
        workers = max_workers or min(len(plan.splits), os.cpu_count() or 2) or 1
        workers = max(1, min(workers, len(plan.splits)))
        return workers, max(64 << 10, self.memory_budget // workers)

    def read_split(self, split: Split, plan: ReadPlan, memory_budget: int
                   ) -> Iterator[pa.Table]:
        """Merged, visible, filtered rows of one bucket, slice by slice: one row per key,
        retracted keys dropped, in the plan's output schema."""
        if not self.schema.primary_keys:
            yield from self._read_append_split(split, plan, memory_budget)
            return
        reader = MergeTreeReader(
            self.file_io, self.schema, self.schema_manager,
            lambda meta: self.paths.data_file(split.partition_values, split.bucket, meta),
            self.options.file_format, memory_budget, columns=plan.read_columns,
            deleted_of=DeletedRows(self.file_io, split.deletion_files)
            if split.deletion_files else None, lookup=self.options.lookup_merge)
        wanted = plan.output.names
        for section in interval_partition(split.files, self.cmp):
            for piece in reader.merge_section(section, drop_delete=True):
                rows = piece.rows
                for name in plan.not_null:
                    # a merge may leave null where the schema forbids it; Paimon's writers
                    # refuse such rows, so flushes and compactions fail: reads fail alike, and
                    # before the filter, as the merge's own null checks do
                    if rows[name].null_count:
                        raise null_in_not_null_column(name, rows[name].null_count)
                if plan.predicate is not None:
                    rows = rows.filter(plan.predicate)
                yield rows.select(wanted).cast(plan.output)


    def _read_append_split(self, split: Split, plan: ReadPlan, memory_budget: int
                           ) -> Iterator[pa.Table]:
        files = list(split.files)
        if self.options.bucket != -1:
            files.sort(key=lambda f: f.min_sequence_number)
        wanted = plan.output.names
        deleted = DeletedRows(self.file_io, split.deletion_files)
        for meta in files:
            path = self.paths.data_file(split.partition_values, split.bucket, meta)
            for rows in iter_data_file(self.file_io, path, meta, self.schema,
                                       self.schema_manager, plan.read_columns,
                                       self.options.file_format, max(1 << 20, memory_budget // 4),
                                       deleted=deleted(meta.file_name)):
                if plan.predicate is not None:
                    rows = rows.filter(plan.predicate)
                yield rows.select(wanted).cast(plan.output)


def _without_level_0(split: Split) -> Split:
    """A deletion-vector table's batch read sees compacted files only: level-0 rows become
    visible once a compaction moves them up, leaving deletion vectors on the older rows
    (`deletion-vectors.merge-on-read` reads them too) [JAVA CoreOptions.batchScanSkipLevel0]."""
    return replace(split, files=tuple(f for f in split.files if f.level > 0))


# -- streaming: slices handed over as the buckets produce them ------------------------------------

_DONE = object()


def _stream_splits(read: Callable[[Split], Iterator[pa.Table]], splits: Sequence[Split],
                   workers: int, depth: int = 2) -> Iterator[pa.Table]:
    """The slices of every split as they are merged, `workers` splits at a time, at most
    `depth` slices per worker waiting for the consumer. A failure in a split is raised to the
    consumer; a consumer that stops early stops the threads after their current slice."""
    if workers <= 1 or len(splits) <= 1:
        for split in splits:
            yield from read(split)
        return
    out: queue.Queue = queue.Queue(maxsize=workers * depth)
    stop = threading.Event()

    def put(item: object) -> None:
        while not stop.is_set():
            try:
                out.put(item, timeout=0.05)
                return
            except queue.Full:
                continue

    def produce(split: Split) -> None:
        try:
            if stop.is_set():
                return
            for item in read(split):
                put(item)
                if stop.is_set():
                    return
        except BaseException as e:  # handed to the consumer, raised there
            put(e)
        finally:
            put(_DONE)

    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        for split in splits:
            pool.submit(produce, split)
        remaining = len(splits)
        while remaining:
            item = out.get()
            if item is _DONE:
                remaining -= 1
            elif isinstance(item, BaseException):
                raise item
            else:
                yield item  # type: ignore[misc]
    finally:
        stop.set()
        pool.shutdown(wait=True, cancel_futures=True)
