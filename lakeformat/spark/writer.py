"""The write side of the `lakeformat` data source:
`df.write.format("lakeformat").mode("append"|"overwrite").option(...).save("db.t")`.

* `LakeformatWriter(options, schema, overwrite)` is built once on the driver side: it opens
  the table, merges the schema first for a merge-schema write (`option("merge-schema",
  "true")`; a refused merge fails here, before any task writes) and reads the base snapshot.
* `write(batches)` runs in every task: the task's rows go to level-0 files per (partition,
  bucket) (`write_tasks.BucketWriter`). Spark gives a data-source write no distribution, so
  several tasks may write one bucket: task N numbers its records from
  base + 1 + N × 2³², so no two tasks tie and a later task wins a key, as a later row does.
* `commit(messages)` publishes **one** snapshot through the library's `WriteJob` commit (conflict
  checks, renumbering, idempotent `commit-user`/`commit-identifier`). It runs in a separate
  Python worker, so its `CommitResult` is written as JSON to `result-path` when given; the
  snapshot can also be found by its commit user and identifier (`Table.find_commit`).
* `abort(messages)` deletes the files of the tasks that reported; a task that failed deletes its
  own files, and anything a lost task left is an orphan no snapshot references.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage

from lakeformat.errors import InvalidOptionError, UnsupportedError
from lakeformat.operation.commit import SequenceBase
from lakeformat.operation.maintain import check_auto_tags
from lakeformat.operation.runner import ThreadRunner
from lakeformat.operation.write import TableWrite, wants_merge_schema, write_options
from lakeformat.options import parse_budget
from lakeformat.schema.merging import MERGE_SCHEMA as WRITE_MERGE_SCHEMA
from lakeformat.spark.options import check_direction, open_table
from lakeformat.spark.write_job import SparkWriteJob, tags_after_commit
from lakeformat.spark.write_tasks import (
    TASK_SEQUENCE_STRIDE,
    TaskOutput,
    message_units,
    write_batches,
)
from lakeformat.storage import get_file_io

log = logging.getLogger(__name__)
#: tasks of one data-source write: task N numbers from base + 1 + N * 2^32, and a bucket's
#: numbers must stay far inside a Java long across many writes
MAX_TASKS = 1 << 20

#: data-source options of a write (everything else is a catalog option)
MERGE_SCHEMA = "merge-schema"
COMMIT_USER = "commit-user"
COMMIT_IDENTIFIER = "commit-identifier"
RESULT_PATH = "result-path"


@dataclass
class LakeformatCommitMessage(WriterCommitMessage):
    """What one task wrote."""

    partition_id: int
    output: TaskOutput


def _identifier(own: dict[str, str]) -> int | None:
    text = own.get(COMMIT_IDENTIFIER)
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        raise InvalidOptionError(f"option {COMMIT_IDENTIFIER} must be an integer, got "
                                 f"{text!r}") from None


class LakeformatWriter(DataSourceArrowWriter):
    def __init__(self, options: dict[str, str], schema: Any, overwrite: bool):
        from pyspark.sql.pandas.types import to_arrow_schema

        self.options = dict(options)
        self.overwrite = bool(overwrite)
        self.incoming = to_arrow_schema(schema, timezone="UTC")
        catalog, table, own = open_table(self.options)
        try:
            check_direction(own, "write")
            check_auto_tags(table.table_schema, table.path)
            self.user = own.get(COMMIT_USER)
            self.identifier = _identifier(own)
            self.result_path = own.get(RESULT_PATH)
            per_write = {WRITE_MERGE_SCHEMA: own[MERGE_SCHEMA]} if MERGE_SCHEMA in own else {}
            opts = write_options(table.table_schema, per_write)
            merge = opts if wants_merge_schema(opts, None) else None
            job = SparkWriteJob(table.file_io, table.path, table.table_schema, self.incoming,
                                self.overwrite, self.user, self.identifier,
                                merge_schema_options=merge, table_name=table.name,
                                memory_budget=parse_budget(own.get("memory-budget")))
            job.plan()  # a merge-schema write publishes its schema here, before any task
            self.landed = job.landed is not None
            self.landed_snapshot = job.landed
            self.plan = job.write_plan()
            self.base_state = job.base_state
            self.base_id = job.base_id
            self.base_snapshot = job.base.snapshot if job.base else None
            self.user = job.commit_user  # one user for every task and the commit
        finally:
            catalog.close()

    # -- tasks ---------------------------------------------------------------------------------
    def write(self, iterator: Iterator[pa.RecordBatch]) -> LakeformatCommitMessage:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        pid = ctx.partitionId() if ctx is not None else 0
        if self.landed:  # this commit already landed: write nothing, commit() reports it
            return LakeformatCommitMessage(pid, TaskOutput())
        if pid >= MAX_TASKS:
            raise UnsupportedError(f"a lakeformat data-source write takes at most {MAX_TASKS} "
                                   f"tasks (task {pid}): coalesce the DataFrame, or use "
                                   "lakeformat.spark.write, which shuffles by bucket")
        return LakeformatCommitMessage(
            pid, write_batches(self.plan, iterator, pid * TASK_SEQUENCE_STRIDE))

    # -- driver --------------------------------------------------------------------------------
    def _job(self) -> tuple[Any, SparkWriteJob]:
        catalog, table, _ = open_table(self.options)
        schema = table.schema_manager.schema(self.plan.schema.id)
        job = SparkWriteJob(table.file_io, table.path, schema, self.incoming, self.overwrite,
                            self.user, self.identifier, runner=ThreadRunner(),
                            table_name=table.name)
        job.base_state = self.base_state
        job.base_id = self.base_id
        job.base = SequenceBase(self.base_snapshot, {})
        return catalog, job

    def commit(self, messages: list[LakeformatCommitMessage | None]) -> None:
        """Publish one snapshot. Spark calls `abort` whenever this raises, so nothing after the
        publish may raise: writing the result is best effort (logged when it fails)."""
        catalog, job = self._job()
        try:
            if self.landed:
                # planned as already landed: the tasks wrote nothing, and nothing is committed
                # even when that snapshot has been expired since (an empty OVERWRITE would
                # wipe the partitions)
                result = (job.commit() if job.find_landed() is not None
                          else job.result_of(self.landed_snapshot, [], already=True))
            else:
                job.take_outputs([m.output for m in messages if m is not None])
                result = job.commit()
        except BaseException:
            _close(catalog)
            raise
        try:
            if self.result_path:
                get_file_io(self.result_path, catalog.options).write_bytes(
                    self.result_path, json.dumps(result.to_dict(), sort_keys=True).encode())
        except Exception as e:  # noqa: BLE001 - the snapshot landed: never let abort() run
            log.error("%s: snapshot %s landed but its result could not be written to %s: %s",
                      result.table, result.snapshot_id, self.result_path, e)
        try:
            tags_after_commit(catalog.get_table(result.table), result)
        except Exception as e:  # noqa: BLE001 - as above
            log.error("%s: snapshot %s landed but tag.automatic-creation could not run: %s",
                      result.table, result.snapshot_id, e)
        _close(catalog)

    def abort(self, messages: list[LakeformatCommitMessage | None]) -> None:
        """Delete the reporting tasks' files, unless a snapshot of this write may reference
        them: a commit that raised after publishing, or whose outcome is unknown, is followed by
        this call too. When that cannot be ruled out, nothing is deleted (orphan cleanup
        removes what no snapshot references)."""
        done = [m.output for m in messages if m is not None]
        job_messages = [msg for out in done for msg in out.messages]
        if not job_messages or self.landed:
            return
        catalog, table, _ = open_table(self.options)
        try:
            try:
                mine = _snapshots_of(table.snapshot_manager, self.base_id, self.user)
            except Exception as e:  # noqa: BLE001 - cannot tell: delete less, never more
                log.warning("%s: abort keeps the write's files (cannot read snapshots: %s)",
                            table.name, e)
                return
            if mine:
                log.warning("%s: abort keeps the write's files: snapshot %s of commit user %s "
                            "landed after the write's base", table.name, mine[0].id, self.user)
                return
            writer = TableWrite(table.file_io, table.path, self.plan.schema)
            writer.remove_files(job_messages, message_units(self.plan.schema, job_messages))
        finally:
            _close(catalog)


def _snapshots_of(snapshots: Any, after: int | None, user: str) -> list[Any]:
    """Snapshots committed by `user` after snapshot `after` (None: all)."""
    found = []
    for i in snapshots.snapshot_ids():
        if after is not None and i <= after:
            continue
        try:
            snap = snapshots.snapshot(i)
        except FileNotFoundError:  # expired meanwhile
            continue
        if snap.commit_user == user:
            found.append(snap)
    return found


def _close(catalog: Any) -> None:
    try:
        catalog.close()
    except Exception as e:  # noqa: BLE001 - closing a connection must not fail a write
        log.warning("closing the catalog failed: %s", e)
