"""`write(df, table)`: a Spark DataFrame into a table as one snapshot, plan → execute → commit.

* plan (driver): the base snapshot is read once; a merge-schema write publishes the table's next
  schema — computed from the DataFrame's schema — before any task writes, as the in-process
  write does (a refused merge writes nothing); a plain write checks the DataFrame's columns and
  types against the table first.
* execute (executors): a first `mapInArrow` conforms each batch and routes every row to its
  (partition, bucket) with the library's vectorized bucket function; the rows are shuffled by
  (partition, bucket), sorted by their position in the DataFrame (a later row wins a key, as in
  one in-process batch), and a second `mapInArrow` writes each bucket's level-0 files through
  lakeformat's storage (`write_tasks.BucketWriter`), returning commit messages. A task that
  fails hands its error back as a value, so the files of every task are known and deleted.
* commit (driver): `WriteJob`'s commit — one APPEND or OVERWRITE snapshot with the library's
  conflict checks, idempotent with `commit_user`/`commit_identifier`. Buckets another writer
  landed records in meanwhile are renumbered by rewriting their files' sequence numbers
  (`write_tasks.SequenceShifter`, run on the executors).
"""

from __future__ import annotations

import dataclasses
import pickle
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from lakeformat.errors import UnsupportedError
from lakeformat.operation.commit import (
    CommitMessage,
    SequenceBase,
    SequenceConflict,
    snapshot_identity,
)
from lakeformat.operation.maintain import auto_tags_after_commit, check_auto_tags
from lakeformat.operation.runner import Runner, UnitFailure, captured, default_runner
from lakeformat.operation.write import (
    RENUMBER_GAP,
    TableWrite,
    WriteJob,
    WriteUnit,
    conform,
    conform_merged,
    evolve_for_write,
    wants_merge_schema,
    write_options,
)
from lakeformat.results import CommitResult
from lakeformat.schema.merging import MergeSchemaOptions
from lakeformat.schema.schema_manager import SchemaManager
from lakeformat.schema.table_schema import TableSchema
from lakeformat.spark.failures import reraise
from lakeformat.spark.runner import SparkRunner, dump_result
from lakeformat.spark.write_tasks import (
    SequenceShifter,
    ShiftUnit,
    TaskOutput,
    WritePlan,
    from_spark,
    message_units,
    write_batches,
)
from lakeformat.storage import FileIO

if TYPE_CHECKING:
    from lakeformat import Table

PARTITION_COL = "__lakeformat_partition"
BUCKET_COL = "__lakeformat_bucket"
ORDER_COL = "__lakeformat_order"
HELPER_COLUMNS = (PARTITION_COL, BUCKET_COL, ORDER_COL)


class SparkWriteJob(WriteJob):
    """`WriteJob` whose execute step runs on Spark and whose rows never reach the driver.

    `data` is an empty table of the incoming schema: what the plan step checks and merges the
    schema with. Units are known after the execute step (one per (partition, bucket) written).

    Of `WriteJob` it overrides `plan` (no unit before the tasks ran) and the public hooks
    `renumber` (sequence numbers shifted on the executors) and `count_written_rows`; its
    execute step is `execute_frame`/`take_outputs`. `commit`, `abort`, commit identity and
    "already landed" are `WriteJob`'s and the `DataJob` base's."""

    def __init__(self, file_io: FileIO, table_path: str, schema: TableSchema,
                 incoming: pa.Schema, overwrite: bool = False, commit_user: str | None = None,
                 commit_identifier: int | None = None, *,
                 merge_schema_options: dict[str, str] | None = None,
                 runner: Runner | None = None, table_name: str | None = None,
                 memory_budget: int | None = None):
        super().__init__(file_io, table_path, schema, incoming.empty_table(), None, overwrite,
                         commit_user, commit_identifier,
                         merge_schema_options=merge_schema_options, runner=runner,
                         table_name=table_name)
        self.memory_budget = memory_budget
        self.rows_written = 0
        self.base_state: dict[tuple[bytes, int | None], tuple[int, int]] = {}

    # -- plan ----------------------------------------------------------------------------------
    def plan(self) -> list[WriteUnit]:
        """Check (or merge) the schema and read the base; no unit exists before execute."""
        self._start = time.monotonic()
        self.units = []
        if self.writer.postpone:
            raise UnsupportedError(
                f"{self.table_path}: postpone-bucket (bucket=-2) tables are not written through "
                "Spark yet (each partition's bucket count is planned from the whole batch); "
                "write with the library (engine='local')")
        if self.writer.dynamic:
            raise UnsupportedError(
                f"{self.table_path}: dynamic-bucket (bucket=-1) primary-key tables are not "
                "written through Spark yet (their bucket assignment is one sequential pass "
                "over the partition's index); write with the library (engine='local')")
        if self.find_landed() is not None:
            return []
        if self.merge_schema_options is not None:
            schema, _ = evolve_for_write(SchemaManager(self.file_io, self.table_path),
                                         from_spark(self.data, self.schema),
                                         self.merge_schema_options)
            self.use_schema(schema)
        else:
            conform(from_spark(self.data, self.schema), self.schema)  # fails before any task
        latest = self.committer.snapshots.latest_snapshot()
        self.base_id = latest.id if latest else None
        self.base_state = self.writer.bucket_state(latest)
        self.base = SequenceBase(snapshot_identity(latest), {})
        return []

    def write_plan(self) -> WritePlan:
        """What the tasks need: picklable, holding the plain FileIO (tasks never publish)."""
        base = {k: seq for k, (_, seq) in self.base_state.items() if k[1] is not None}
        totals = {k[0]: total for k, (total, _) in self.base_state.items() if k[1] is None}
        budget = self.memory_budget or self.writer.options.write_buffer_size
        merge = self.merge_schema_options
        return WritePlan(self.file_io, self.table_path, self.schema, base, totals, budget,
                         dict(merge) if merge is not None else None)

    # -- execute -------------------------------------------------------------------------------
    def take_outputs(self, outputs: Sequence[TaskOutput | UnitFailure]) -> None:
        """Adopt the tasks' outputs as this job's messages and units; when one task failed,
        delete every task's files and raise its error."""
        done = [o for o in outputs if isinstance(o, TaskOutput)]
        failed = [o.error for o in outputs if isinstance(o, UnitFailure)]
        merged: dict[tuple[bytes, int], CommitMessage] = {}
        for out in done:
            for m in out.messages:
                key = (m.partition, m.bucket)
                if key in merged:
                    merged[key].new_files.extend(m.new_files)
                    merged[key].changelog_files.extend(m.changelog_files)  # changelog input
                else:
                    merged[key] = CommitMessage(m.partition, m.bucket, m.total_buckets,
                                                new_files=list(m.new_files),
                                                changelog_files=list(m.changelog_files))
        self.messages = list(merged.values())
        start = {k: seq for k, (_, seq) in self.base_state.items() if k[1] is not None}
        self.units = message_units(self.schema, self.messages, start)
        # an append table has no keys for a later record to win: no renumbering
        self.base = None if not self.schema.primary_keys else SequenceBase(
            self.base.snapshot if self.base else None,
            {(u.partition, u.bucket): u.max_sequence_number for u in self.units})
        self.rows_written = sum(o.rows for o in done)
        if failed:
            self.abort()
            raise failed[0]

    def execute_frame(self, df: Any) -> list[CommitMessage]:
        """Run the Spark stages over `df` and adopt their outputs."""
        plan = self.write_plan()
        routed = _route(df, plan)
        written = routed.mapInArrow(_WriteTask(plan), "output binary")
        try:
            rows = written.toArrow()
        except Exception as e:  # noqa: BLE001 - a routing failure: nothing was written
            reraise(e)
        self.take_outputs([pickle.loads(b) for b in rows.column("output").to_pylist()])
        return self.messages

    # -- commit --------------------------------------------------------------------------------
    def renumber(self, conflict: SequenceConflict) -> None:
        """Hook of `WriteJob`: move the conflicting buckets' records a gap past the numbers
        now live there by rewriting their files (on the job's runner); the old files are
        deleted after."""
        assert self.base is not None
        gap = RENUMBER_GAP << min(self.rewrites, 24)
        redo = {k: v + gap for k, v in conflict.buckets.items()}
        where = {(u.partition, u.bucket): u for u in self.units}
        shifts = [ShiftUnit(m, where[(m.partition, m.bucket)].partition_values,
                            redo[(m.partition, m.bucket)] - self.base.max_sequence[
                                (m.partition, m.bucket)])
                  for m in self.messages if (m.partition, m.bucket) in redo]
        old = [s.message for s in shifts]
        shifter = SequenceShifter(self.file_io, self.table_path, self.schema)
        results = default_runner(self.runner).map(captured(shifter), shifts)
        fresh = [r for r in results if isinstance(r, CommitMessage)]
        failed = [r.error for r in results if isinstance(r, UnitFailure)]
        if failed:
            self.writer.remove_files(fresh, self.units)
            raise failed[0]
        self.messages = [m for m in self.messages if (m.partition, m.bucket) not in redo] + fresh
        self.units = [dataclasses.replace(u, max_sequence_number=redo[(u.partition, u.bucket)])
                      if (u.partition, u.bucket) in redo else u for u in self.units]
        self.writer.remove_files(old, self.units)
        self.base = SequenceBase(snapshot_identity(conflict.snapshot),
                                 {**self.base.max_sequence, **redo})
        self.rewrites += 1

    def count_written_rows(self) -> int:
        """Hook of `WriteJob`: the rows the tasks wrote (none reach the driver)."""
        return self.rows_written


class _Router:
    """First stage: each batch conformed (checks every value) and routed; the batch goes on
    unchanged (with its position column) plus its rows' partition (BinaryRow bytes) and
    bucket."""

    def __init__(self, plan: WritePlan):
        self.plan = plan

    def __call__(self, batches: Any) -> Any:
        plan = self.plan
        writer = TableWrite(plan.file_io, plan.table_path, plan.schema)
        merge = (MergeSchemaOptions.of(plan.merge_options)
                 if plan.merge_options is not None else None)
        for batch in batches:
            if batch.num_rows == 0:
                continue
            data = from_spark(pa.Table.from_batches([batch.drop_columns([ORDER_COL])]),
                              plan.schema)
            rows = (conform_merged(data, plan.schema, merge) if merge is not None
                    else conform(data, plan.schema))
            buckets, codes, values = writer.route(rows)
            parts = pa.array([writer.partition_bytes(v) for v in values], pa.binary())
            yield (batch.append_column(PARTITION_COL, parts.take(pa.array(codes)))
                   .append_column(BUCKET_COL, pa.array(buckets.astype(np.int32))))


class _WriteTask:
    """Second stage: the task's rows (grouped by bucket, in DataFrame order) written as files;
    one row out holding the pickled `TaskOutput`, or the pickled error."""

    def __init__(self, plan: WritePlan):
        self.plan = plan

    def __call__(self, batches: Any) -> Any:
        drop = list(HELPER_COLUMNS)
        try:
            out: Any = write_batches(self.plan, (b.drop_columns(drop) for b in batches))
        except Exception as error:  # noqa: BLE001 - the driver deletes every task's files
            out = UnitFailure(error)
        yield pa.RecordBatch.from_arrays([pa.array([dump_result(out)], pa.binary())],
                                         names=["output"])


def _route(df: Any, plan: WritePlan) -> Any:
    """df → rows with their DataFrame position, partition and bucket, shuffled by (partition,
    bucket) and sorted by position within each."""
    from pyspark.sql.types import BinaryType, IntegerType, LongType, StructField, StructType

    # DataFrame methods and SQL text only: `pyspark.sql.functions` picks classic or Connect
    # by process-wide state, not by the session the DataFrame belongs to
    ordered = df.selectExpr("*", f"monotonically_increasing_id() AS {ORDER_COL}")
    schema = StructType([*df.schema.fields,
                         StructField(ORDER_COL, LongType(), False),
                         StructField(PARTITION_COL, BinaryType(), False),
                         StructField(BUCKET_COL, IntegerType(), False)])
    routed = ordered.mapInArrow(_Router(plan), schema)
    return (routed.repartition(PARTITION_COL, BUCKET_COL)
            .sortWithinPartitions(PARTITION_COL, BUCKET_COL, ORDER_COL))


def incoming_schema(df: Any) -> pa.Schema:
    """The Arrow schema Spark hands a DataFrame's rows to Python in."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(df.schema, timezone="UTC")


def write(df: Any, table: Table, overwrite: bool = False, merge_schema: bool | None = None,
          options: dict[str, str] | None = None, *, commit_user: str | None = None,
          commit_identifier: int | None = None, memory_budget: int | None = None
          ) -> CommitResult:
    """Write a Spark DataFrame into `table` (a `lakeformat.Table`) as one snapshot, with the
    semantics of `Table.write`: `overwrite` replaces the partitions written to, `merge_schema`
    (or `write.merge-schema`) evolves the table first, `commit_user`/`commit_identifier` make a
    retried write land once. `memory_budget` bounds each task's write buffer (bytes; default the
    table's `write-buffer-size`). Returns the `CommitResult`."""
    table.refresh()
    schema = table.table_schema
    check_auto_tags(schema, table.path)  # a bad tag.* option fails before any task writes
    opts = write_options(schema, options)
    merge = opts if wants_merge_schema(opts, merge_schema) else None
    job = SparkWriteJob(table.file_io, table.path, schema, incoming_schema(df), overwrite,
                        commit_user, commit_identifier, merge_schema_options=merge,
                        runner=SparkRunner(df.sparkSession), table_name=table.name,
                        memory_budget=memory_budget)
    job.plan()
    if job.landed is None:
        job.execute_frame(df)
    result = job.commit()
    table.refresh()
    tags_after_commit(table, result)
    return result


def tags_after_commit(table: Table, result: CommitResult) -> None:
    """`tag.automatic-creation` once the write's snapshot landed, as `Table.write` runs it
    (logged, never raised)."""
    auto_tags_after_commit(
        table.file_io, table.path, table.table_schema, table.name,
        lock=lambda: table.locks.maintaining(table.file_io,
                                             f"tag.num-retained-max {table.name}"),
        committed=result.snapshot_id is not None)
