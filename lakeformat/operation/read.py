"""Merge-on-read: every bucket's sorted runs merged with the table's merge engine, in slices.

Plan (driver): the splits of one snapshot and the columns to read. Execute (anywhere):
`read_split`, a pure function of a split yielding merged rows slice by slice through
`MergeTreeReader` (the reader compaction and the changelog producer use), so a bucket of any
size is read within the memory budget. Buckets are independent and run in threads
(`_stream_splits`, the one place that starts them); pyarrow and numpy release the GIL.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.errors import ColumnNotFoundError, UnsupportedError
from lakeformat.merge.columns import required_columns
from lakeformat.meta.snapshot import Snapshot
from lakeformat.operation.compact_levels import KeyComparator, interval_partition
from lakeformat.operation.merge_tree_reader import MergeTreeReader
from lakeformat.operation.paths import PathFactory
from lakeformat.operation.predicate import (
    Filter,
    check_filter,
    filter_columns,
    partition_predicate,
    to_expression,
)
from lakeformat.operation.scan import FileStoreScan, Split
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


class TableRead:
    """Reads rows of one snapshot under that snapshot's schema."""

    def __init__(self, file_io: FileIO, table_path: str, schema: TableSchema,
                 schema_manager: SchemaManager, memory_budget: int | None = None):
        if not schema.primary_keys:
            raise UnsupportedError(f"table at {table_path} has no primary key; append tables "
                                   "are not supported")
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
        read_cols = required_columns(self.schema, [*wanted, *sorted(filter_columns(filter,
                                                                                   names))])
        output = arrow_schema([self.schema.field(c) for c in wanted], with_id=False)
        scan = FileStoreScan(self.file_io, self.table_path, self.schema)
        splits = scan.splits(snapshot, partition_predicate(filter, self.schema.partition_keys))
        return ReadPlan(splits, read_cols, output, to_expression(filter))

    def read(self, snapshot: Snapshot | None, columns: Sequence[str] | None = None,
             filter: Filter = None, max_workers: int | None = None) -> pa.Table:
        """The rows as one table: every bucket's slices, buckets in scan order."""
        plan = self.plan(snapshot, columns, filter)
        parts = [t for t in self._stream(plan, max_workers, depth=0) if t.num_rows]
        if not parts:
            return plan.output.empty_table()
        return pa.concat_tables(parts)

    def read_batches(self, snapshot: Snapshot | None, columns: Sequence[str] | None = None,
                     filter: Filter = None, max_workers: int | None = None
                     ) -> pa.RecordBatchReader:
        """The rows as a stream of record batches: the budget bounds memory, whatever the
        size of a bucket (buckets are merged ahead by at most two slices each)."""
        plan = self.plan(snapshot, columns, filter)
        batches = (b for t in self._stream(plan, max_workers, depth=2) for b in t.to_batches()
                   if b.num_rows)
        return pa.RecordBatchReader.from_batches(plan.output, batches)

    def _stream(self, plan: ReadPlan, max_workers: int | None, depth: int) -> Iterator[pa.Table]:
        workers = max_workers or min(len(plan.splits), os.cpu_count() or 2) or 1
        workers = max(1, min(workers, len(plan.splits)))
        budget = max(64 << 10, self.memory_budget // workers)
        return _stream_splits(lambda s: self.read_split(s, plan, budget), plan.splits,
                              workers, depth)

    def read_split(self, split: Split, plan: ReadPlan, memory_budget: int
                   ) -> Iterator[pa.Table]:
        """Merged, visible, filtered rows of one bucket, slice by slice: one row per key,
        retracted keys dropped, in the plan's output schema."""
        reader = MergeTreeReader(
            self.file_io, self.schema, self.schema_manager,
            lambda meta: self.paths.data_file(split.partition_values, split.bucket, meta),
            self.options.file_format, memory_budget, columns=plan.read_columns)
        wanted = plan.output.names
        for section in interval_partition(split.files, self.cmp):
            for piece in reader.merge_section(section, drop_delete=True):
                rows = piece.rows
                if plan.predicate is not None:
                    rows = rows.filter(plan.predicate)
                yield rows.select(wanted).cast(plan.output)


_DONE = object()


def _stream_splits(read: Callable[[Split], Iterator[pa.Table]], splits: Sequence[Split],
                   workers: int, depth: int) -> Iterator[pa.Table]:
    """The slices of every split, splits in order; up to `workers` splits are read at once in
    threads, each holding at most `depth` slices not yet consumed (0: no limit). A failure in
    a split is raised to the consumer; a consumer that stops early stops the threads."""
    if workers <= 1 or len(splits) <= 1:
        for split in splits:
            yield from read(split)
        return
    stop = threading.Event()

    def produce(split: Split, out: queue.Queue) -> None:
        try:
            for item in read(split):
                while not stop.is_set():
                    try:
                        out.put(item, timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            out.put(_DONE)
        except BaseException as e:  # handed to the consumer, raised there
            out.put(e)

    queues: list[queue.Queue] = [queue.Queue(maxsize=depth) for _ in splits]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        try:
            # the pool runs `workers` splits at a time, in order; the rest wait in its queue
            for split, q in zip(splits, queues):
                pool.submit(produce, split, q)
            for q in queues:
                while True:
                    item = q.get()
                    if item is _DONE:
                        break
                    if isinstance(item, BaseException):
                        raise item
                    yield item
        finally:
            stop.set()
