"""A compaction as the three steps of every data job, on the driver.

* `plan()`: read the latest snapshot once and make a `CompactTask` per (partition, bucket)
  (`compact.plan_compaction`), grouped by `partitions_per_commit` partitions;
* `execute(tasks, runner)`: `CompactTaskExecutor.execute` over one group's tasks through a
  `Runner` (a thread pool by default; Spark plugs in its own);
* `commit(outcomes)`: one COMPACT snapshot per group with Paimon's conflict checks; a group that
  conflicts is retried partition by partition, and the files of whatever cannot commit are
  deleted.

Every snapshot of one job carries the job's `commit_user` and `commit_identifier`. Compaction is
naturally idempotent: a re-run plans from the latest snapshot, so buckets an earlier run already
compacted give nothing to do. With the same (user, identifier) the result also names the
snapshots that earlier run committed (`earlier_snapshot_ids`).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from typing import Any

from lakeformat.errors import (
    CommitConflictError,
    CommitFailedError,
    CommitStateUnknownError,
)
from lakeformat.meta.snapshot import Snapshot
from lakeformat.operation.commit import FileStoreCommit
from lakeformat.operation.compact import (
    CompactOutcome,
    CompactTask,
    CompactTaskExecutor,
    check_compactable,
    default_workers,
    execute_tasks,
    partition_name,
    plan_compaction,
    remove_outputs,
)
from lakeformat.operation.runner import Runner
from lakeformat.operation.scan import PartitionPredicate
from lakeformat.operation.write_job import check_commit_identity
from lakeformat.results import CompactResult, CompactStats
from lakeformat.schema.table_schema import TableSchema
from lakeformat.storage import FileIO

ProgressFn = Callable[[str], Any]


class CompactJob:
    """One compaction of a table's latest snapshot (see the module docstring)."""

    def __init__(self, file_io: FileIO, table_path: str, schema: TableSchema,
                 table_name: str | None = None, *, full: bool = True,
                 partition_filter: PartitionPredicate | None = None,
                 partition_idle_before: int | None = None, memory_budget: int | None = None,
                 workers: int | None = None, partitions_per_commit: int = 16,
                 progress: ProgressFn | None = None, commit_user: str | None = None,
                 commit_identifier: int | None = None, runner: Runner | None = None):
        check_commit_identity(commit_user, commit_identifier)
        self.file_io = file_io
        self.table_path = table_path
        self.schema = schema
        self.table_name = table_name or table_path
        self.full = full
        self.partition_filter = partition_filter
        self.partition_idle_before = partition_idle_before
        self.options = check_compactable(schema, table_path)
        self.memory_budget = memory_budget or self.options.write_buffer_size
        self.workers = workers
        self.partitions_per_commit = max(1, partitions_per_commit)
        self.say = progress or (lambda _msg: None)
        self.runner = runner
        self.committer = FileStoreCommit(file_io, table_path, schema, commit_user,
                                         commit_identifier)
        self.commit_identifier = commit_identifier
        self.groups: list[list[CompactTask]] = []
        self.earlier: list[int] = []
        self._executor: CompactTaskExecutor | None = None

    @property
    def commit_user(self) -> str:
        return self.committer.commit_user

    # -- plan ----------------------------------------------------------------------------------
    def plan(self) -> list[list[CompactTask]]:
        """The tasks of the latest snapshot, one list per commit group."""
        if self.commit_identifier is not None:
            self.earlier = [s.id for s in self.committer.snapshots.find_commit(
                self.commit_user, self.commit_identifier) if s.commit_kind == "COMPACT"]
        latest = self.committer.snapshots.latest_snapshot()
        tasks = plan_compaction(self.file_io, self.table_path, self.schema, latest, self.full,
                                self.memory_budget, self.partition_filter,
                                self.partition_idle_before)
        self.workers = self.workers or default_workers(tasks)
        if tasks:  # the job's budget is shared by the tasks running at once
            per_task = max(64 << 10, self.memory_budget // max(1, min(self.workers, len(tasks))))
            tasks = [dataclasses.replace(t, memory_budget=per_task) for t in tasks]
        by_partition: dict[bytes, list[CompactTask]] = {}
        for t in tasks:
            by_partition.setdefault(t.partition, []).append(t)
        parts = list(by_partition)
        n = self.partitions_per_commit
        self.groups = [[t for p in parts[i:i + n] for t in by_partition[p]]
                       for i in range(0, len(parts), n)]
        self.say(f"{self.table_name}: {len(tasks)} buckets to compact in {len(parts)} partitions "
                 f"({'full' if self.full else 'minor'}, {self.workers} workers, memory budget "
                 f"{self.memory_budget} bytes)")
        return self.groups

    # -- execute -------------------------------------------------------------------------------
    @property
    def executor(self) -> CompactTaskExecutor:
        if self._executor is None:
            self._executor = CompactTaskExecutor(self.file_io, self.table_path, self.schema)
        return self._executor

    def execute(self, tasks: Sequence[CompactTask], runner: Runner | None = None
                ) -> list[CompactOutcome]:
        """Compact the tasks' buckets (files written, nothing committed)."""
        return execute_tasks(self.executor, tasks, self.workers, runner or self.runner)

    # -- commit --------------------------------------------------------------------------------
    def commit(self, outcomes: list[CompactOutcome], failed: dict[str, str]
               ) -> tuple[list[CompactOutcome], list[int]]:
        """Commit outcomes as one COMPACT snapshot; on a conflict retry each partition alone.
        Returns the committed outcomes and snapshot ids; what cannot commit is removed and its
        partition recorded in `failed`."""
        outcomes = [o for o in outcomes if not o.message.is_empty]
        if not outcomes:
            return [], []
        since = self.committer.snapshots.latest_snapshot_id()
        try:
            seen = {f: dv for o in outcomes for f, dv in o.task.deletions_seen.items()}
            watch = self.committer.options.deletion_vectors_enabled or any(
                o.task.deletion_files for o in outcomes)
            index = [e for o in outcomes for e in o.index]
            snap = self.committer.commit(
                [o.message for o in outcomes], kind="COMPACT",
                deletions_seen=seen if watch else None, index_added=index,
                index_base=outcomes[0].task.index_base if index else None)
            return outcomes, ([snap.id] if snap is not None else [])
        except CommitConflictError as e:
            self.committer.raise_if_ambiguous(e, "compaction")
            partitions = list(dict.fromkeys(o.task.partition for o in outcomes))
            if len(partitions) > 1:
                done: list[CompactOutcome] = []
                ids: list[int] = []
                for p in partitions:
                    ok, got = self.commit([o for o in outcomes if o.task.partition == p], failed)
                    done += ok
                    ids += got
                return done, ids
            reason = str(e)
        except CommitFailedError as e:
            landed = self._landed(since, e)
            if landed is not None:
                return outcomes, [landed.id]
            self.committer.raise_if_ambiguous(e, "compaction")
            reason = str(e)
        except CommitStateUnknownError:
            raise  # the snapshot may reference the outputs: delete nothing
        except BaseException as e:
            try:
                landed = self._landed(since, e)
            except CommitStateUnknownError:
                raise e from None  # cannot tell: keep the outputs (orphan cleanup may remove)
            if landed is None:
                remove_outputs(self.executor, outcomes)
            raise
        remove_outputs(self.executor, outcomes)
        failed[partition_name(self.schema.partition_keys, outcomes[0].task.partition_values)] = \
            reason
        return [], []

    def _landed(self, since: int | None, error: BaseException) -> Snapshot | None:
        """The COMPACT snapshot this job published after `since` although the commit looked
        failed, or None; CommitStateUnknownError when the snapshots cannot be read."""
        try:
            latest = self.committer.snapshots.latest_snapshot()
            return self.committer.find_landed(since, latest, "COMPACT")
        except Exception as unreadable:
            raise CommitStateUnknownError(
                f"compaction commit of {self.table_path} stopped ({error}) and whether it "
                f"landed cannot be read ({unreadable}); its files were kept",
                path=self.table_path, commit_user=self.commit_user) from unreadable

    # -- the whole job -------------------------------------------------------------------------
    def run(self) -> CompactResult:
        start = time.monotonic()
        groups = self.plan()
        keys = self.schema.partition_keys
        committed: list[CompactOutcome] = []
        failed: dict[str, str] = {}
        snapshot_ids: list[int] = []
        for n, group in enumerate(groups, 1):
            ok, ids = self.commit(self.execute(group), failed)
            committed += ok
            snapshot_ids += ids
            self.say(f"{self.table_name}: group {n}/{len(groups)}: {len(group)} buckets, "
                     f"{'snapshot ' + ','.join(map(str, ids)) if ids else 'no snapshot'}")
        partitions: dict[str, CompactStats] = {}
        total = CompactStats()
        seen: set[tuple[bytes, int]] = set()
        for o in committed:
            stats = o.stats
            key = (o.task.partition, o.task.bucket)
            if key in seen:  # an append table's next group of the same bucket: count once
                stats = dataclasses.replace(
                    stats, buckets_compacted=0, sorted_runs_before=0,
                    sorted_runs_after=stats.sorted_runs_after - stats.sorted_runs_before)
            seen.add(key)
            name = partition_name(keys, o.task.partition_values)
            partitions.setdefault(name, CompactStats()).add(stats)
            total.add(stats)
        return CompactResult(self.table_name, self.full, snapshot_ids, partitions, total, failed,
                             round(time.monotonic() - start, 3), self.commit_user,
                             self.commit_identifier, self.earlier)

