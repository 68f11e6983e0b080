"""The execute step of a Spark write, as it runs inside a task (no Spark import here).

`BucketWriter` takes whatever rows a task holds, routes them to (partition, bucket) with the
library's whole-column routing (`TableWrite.plan`), buffers them per bucket and writes level-0
files through `TableWrite.execute` whenever the buffers pass the memory budget, as Paimon's
writer flushes its write buffer. Each flush of a bucket is numbered after the records the task
already wrote there, so one bucket's files of one write never share a sequence number.

`shift_sequence` renumbers files already written (the commit step's answer to another writer
landing records in one of the write's buckets meanwhile): the file is rewritten with every
sequence number moved by the same amount, which is exactly what writing its rows again after the
new base would give.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.data.file_read import read_data_file
from lakeformat.data.kv_file import KeyValueFileWriter
from lakeformat.meta.binary_row import from_avro_bytes
from lakeformat.operation.commit import CommitMessage
from lakeformat.operation.write import TableWrite, WriteUnit, check_bucket_count, conform_merged
from lakeformat.schema.merging import MergeSchemaOptions
from lakeformat.schema.schema_manager import SchemaManager
from lakeformat.schema.table_schema import SEQUENCE_NUMBER, TableSchema
from lakeformat.schema.types import to_arrow
from lakeformat.storage import FileIO

#: sequence numbers one task of a data-source write may use per bucket: task N numbers a
#: bucket's records from base + 1 + N * TASK_SEQUENCE_STRIDE, so tasks writing one bucket never
#: tie and a later task of the DataFrame wins a key, as a later row of one batch does
TASK_SEQUENCE_STRIDE = 1 << 32


_UNITS = {"s": 0, "ms": 3, "us": 6, "ns": 9}
_UNIT_NAMES = {"s": "second", "ms": "millisecond", "us": "microsecond"}


def from_spark(rows: pa.Table, schema: TableSchema) -> pa.Table:
    """Rows as Spark hands them to Python, brought to the table's timestamp precision.

    Spark has one timestamp precision (microseconds): a TIMESTAMP(3) column arrives as
    microseconds and is truncated to its declared precision, as Paimon's Spark writer stores
    it, and a TIMESTAMP WITH LOCAL TIME ZONE arrives in the session's zone (the same instant).
    Only unit and zone name change here: a time-zone mismatch (Spark TIMESTAMP into a Paimon
    TIMESTAMP without time zone, or the reverse) is still refused by `conform`, by name."""
    for f in schema.fields:
        if f.type.root not in ("TIMESTAMP", "TIMESTAMP_LTZ") or f.name not in rows.column_names:
            continue
        col = rows[f.name]
        target = to_arrow(f.type)
        given = col.type
        if (not pa.types.is_timestamp(given) or (given.tz is None) != (target.tz is None)
                or (given.unit == target.unit and given.tz == target.tz)):
            continue
        # an instant stays the same instant: Arrow keeps UTC values whatever the zone name;
        # dropped digits are floored (toward the past, as Java's Timestamp.fromMicros does),
        # not truncated toward 1970
        if _UNITS[target.unit] < _UNITS[given.unit]:
            col = pc.floor_temporal(col, unit=_UNIT_NAMES[target.unit])
        cast = pc.cast(col, target)
        rows = rows.set_column(rows.column_names.index(f.name),
                               rows.schema.field(f.name).with_type(cast.type), cast)
    return rows


@dataclass(frozen=True)
class WritePlan:
    """What every task of one write needs from the driver's plan: small and picklable."""

    file_io: FileIO
    table_path: str
    schema: TableSchema
    #: (partition, bucket) -> largest sequence number live there in the base snapshot
    base: dict[tuple[bytes, int], int]
    #: partition -> its number of buckets in the base snapshot
    totals: dict[bytes, int]
    memory_budget: int
    #: the write's options when it is a merge-schema write (rows conformed with its casts)
    merge_options: dict[str, str] | None = None


@dataclass
class TaskOutput:
    """What one task hands back: its messages (at most one per (partition, bucket) and flush)
    and the rows it took in."""

    messages: list[CommitMessage] = field(default_factory=list)
    rows: int = 0


class BucketWriter:
    """Rows in, level-0 files out, per (partition, bucket); memory within the plan's budget."""

    def __init__(self, plan: WritePlan, sequence_offset: int = 0):
        self.plan = plan
        self.writer = TableWrite(plan.file_io, plan.table_path, plan.schema)
        self.merge = (MergeSchemaOptions.of(plan.merge_options)
                      if plan.merge_options is not None else None)
        self.offset = sequence_offset
        self.pending: dict[tuple[bytes, int], list[WriteUnit]] = {}
        self.pending_bytes = 0
        self.written: dict[tuple[bytes, int], int] = {}
        self.units: list[WriteUnit] = []
        self.output = TaskOutput()

    def add(self, rows: pa.Table) -> None:
        if rows.num_rows == 0:
            return
        rows = from_spark(rows, self.plan.schema)
        if self.merge is not None:
            rows = conform_merged(rows, self.plan.schema, self.merge)
        self.output.rows += rows.num_rows
        for unit in self.writer.plan(rows, None, None):
            # held until flushed: each unit's own rows, gathered once (not the whole batch)
            unit = unit.detached()
            key = (unit.partition, unit.bucket)
            check_bucket_count(self.plan.table_path, self.plan.schema, unit.partition_values,
                               self.plan.totals.get(unit.partition), unit.total_buckets)
            self.pending.setdefault(key, []).append(unit)
            self.pending_bytes += unit.rows.nbytes
        if self.pending_bytes > self.plan.memory_budget:
            self.flush()

    def flush(self) -> None:
        for key, units in self.pending.items():
            rows = pa.concat_tables([u.rows for u in units])
            done = self.written.get(key, 0)
            first = units[0]
            unit = WriteUnit(first.partition, first.partition_values, first.bucket,
                             first.total_buckets, rows,
                             self.plan.base.get(key, -1) + self.offset + done)
            self.units.append(unit)
            self.output.messages.append(self.writer.execute(unit))
            self.written[key] = done + rows.num_rows
        self.pending = {}
        self.pending_bytes = 0

    def finish(self) -> TaskOutput:
        self.flush()
        return self.output

    def abort(self) -> None:
        """Delete the files this task wrote (best effort)."""
        self.pending = {}
        self.writer.remove_files(self.output.messages, self.units)
        self.output.messages = []


def message_units(schema: TableSchema, messages: Sequence[CommitMessage],
                  start: dict[tuple[bytes, int], int] | None = None) -> list[WriteUnit]:
    """A row-less `WriteUnit` per (partition, bucket) of `messages`: where their files live
    (for `TableWrite.remove_files`) and the number each bucket's records start after."""
    types = [f.type for f in schema.partition_fields()]
    keys = {(m.partition, m.bucket): m.total_buckets for m in messages}
    return [WriteUnit(p, tuple(from_avro_bytes(p, types)), b, total, _NO_ROWS,
                      (start or {}).get((p, b), -1)) for (p, b), total in keys.items()]


_NO_ROWS = pa.table({})


def write_batches(plan: WritePlan, batches, sequence_offset: int = 0) -> TaskOutput:
    """A task's whole write: every batch through one `BucketWriter`; on failure the task's
    files are deleted before the error goes on."""
    writer = BucketWriter(plan, sequence_offset)
    try:
        for batch in batches:
            writer.add(batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch]))
        return writer.finish()
    except BaseException:
        writer.abort()
        raise


@dataclass(frozen=True)
class ShiftUnit:
    """One written bucket's files, to be renumbered `delta` higher."""

    message: CommitMessage
    partition_values: tuple
    delta: int


class SequenceShifter:
    """Rewrites a message's files with every sequence number moved by the unit's delta; the
    new files replace the old in the message (the caller deletes the old ones)."""

    def __init__(self, file_io: FileIO, table_path: str, schema: TableSchema):
        self.writer = TableWrite(file_io, table_path, schema)
        self.file_io = file_io
        self.table_path = table_path
        self.schema = schema

    def __call__(self, unit: ShiftUnit) -> CommitMessage:
        w = self.writer
        msg = unit.message
        bucket_dir = w.paths.bucket_dir(unit.partition_values, msg.bucket)
        schemas = SchemaManager(self.file_io, self.table_path)
        shifted: list[list] = [[], []]
        # data files, and an input changelog's files (changelog-producer=input), alike
        for out, files, options in ((shifted[0], msg.new_files, w.options),
                                    (shifted[1], msg.changelog_files, w.changelog_options)):
            for meta in files:
                path = w.paths.data_file(unit.partition_values, msg.bucket, meta)
                kv = read_data_file(self.file_io, path, meta, self.schema, schemas,
                                    self.schema.field_names, options.file_format)
                seq = pc.add(kv[SEQUENCE_NUMBER], pa.scalar(unit.delta, pa.int64()))
                kv = kv.set_column(0, SEQUENCE_NUMBER, seq)
                writer = KeyValueFileWriter(self.file_io, bucket_dir, self.schema, options)
                out += writer.write(kv)
        return CommitMessage(msg.partition, msg.bucket, msg.total_buckets, new_files=shifted[0],
                             changelog_files=shifted[1])
