"""A compaction as the three steps of every data job, on the driver.

* `plan()`: read the latest snapshot once and make a `CompactTask` per (partition, bucket)
  (`compact.plan_compaction`, which gives each its share of the memory budget), grouped by
  `partitions_per_commit` partitions;
* `execute(tasks, runner)`: `CompactTaskExecutor.execute` over one group's tasks through a
  `Runner` (a thread pool by default; Spark plugs in its own);
* `commit(outcomes)`: one COMPACT snapshot per group with Paimon's conflict checks; a group that
  conflicts is retried partition by partition, and the files of whatever cannot commit are
  deleted (recorded in `failed`).

It is a `DataJob` (`commit/job.py`): the commit identity and "already landed" are the base's
(`landed_commits` over COMPACT snapshots, `landed_after` for a commit that looked failed); it
overrides the three steps, `abort`, and `run` (which commits group by group), and sets
`commit_kinds` (COMPACT) and `refuses_other_calls` (False: an identity a write used is no
reason to refuse a compaction, which plans from the latest snapshot anyway). The table's
options are checked once (`check_compactable`) and handed to the planner and the executor.

Every snapshot of one job carries the job's `commit_user` and `commit_identifier`. Compaction is
naturally idempotent: a re-run plans from the latest snapshot, so buckets an earlier run already
compacted give nothing to do. With the same (user, identifier) the result also names the
snapshots that earlier run committed (`earlier_snapshot_ids`).
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from lakeformat.errors import (
    CommitConflictError,
    CommitFailedError,
    CommitStateUnknownError,
)
from lakeformat.meta.binary_row import from_avro_bytes
from lakeformat.operation.commit import DataJob
from lakeformat.operation.compact.lookup import waits_for_lookup
from lakeformat.operation.compact.postpone import compact_postpone
from lakeformat.operation.compact.task import (
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
from lakeformat.operation.postpone import POSTPONE_BUCKET
from lakeformat.operation.runner import Runner
from lakeformat.operation.scan import PartitionPredicate
from lakeformat.options import CoreOptions
from lakeformat.results import CommitResult, CompactResult, CompactStats
from lakeformat.schema.table_schema import TableSchema
from lakeformat.storage import FileIO

ProgressFn = Callable[[str], Any]


class CompactJob(DataJob[list[CompactTask], CompactOutcome, CompactResult]):
    """One compaction of a table's latest snapshot (see the module docstring).

    Of the `DataJob` base it overrides `plan`, `execute`, `commit`, `abort` and `run`, and the
    class attributes `operation`, `commit_kinds` and `refuses_other_calls`."""

    operation = "compaction"
    commit_kinds = ("COMPACT",)
    refuses_other_calls = False

    def __init__(self, file_io: FileIO, table_path: str, schema: TableSchema,
                 table_name: str | None = None, *, full: bool = True,
                 partition_filter: PartitionPredicate | None = None,
                 partition_idle_before: int | None = None, memory_budget: int | None = None,
                 workers: int | None = None, partitions_per_commit: int = 16,
                 progress: ProgressFn | None = None, commit_user: str | None = None,
                 commit_identifier: int | None = None, runner: Runner | None = None):
        super().__init__(file_io, table_path, schema, table_name, commit_user=commit_user,
                         commit_identifier=commit_identifier, runner=runner)
        self.full = full
        self.partition_filter = partition_filter
        self.partition_idle_before = partition_idle_before
        self.options = check_compactable(schema, table_path)
        self.memory_budget = memory_budget or self.options.write_buffer_size
        self.workers = workers
        self.partitions_per_commit = max(1, partitions_per_commit)
        self.say = progress or (lambda _msg: None)
        self.open_committer()
        self.groups: list[list[CompactTask]] = []
        self.earlier: list[int] = []
        #: partition name -> why its compaction could not commit
        self.failed: dict[str, str] = {}
        self.outcomes: list[CompactOutcome] = []
        self._executor: CompactTaskExecutor | None = None

    # -- plan ----------------------------------------------------------------------------------
    def plan(self) -> list[list[CompactTask]]:
        """The tasks of the latest snapshot, one list per commit group."""
        self.earlier = [s.id for s in self.landed_commits()]
        latest = self.committer.snapshots.latest_snapshot()
        tasks = plan_compaction(self.file_io, self.table_path, self.schema, latest, self.full,
                                self.memory_budget, self.partition_filter,
                                self.partition_idle_before, workers=self.workers,
                                options=self.options)
        self.workers = self.workers or default_workers(tasks)
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
            self._executor = CompactTaskExecutor(self.file_io, self.table_path, self.schema,
                                                 self.options)
        return self._executor

    def execute(self, units: Sequence[CompactTask] | None = None, runner: Runner | None = None
                ) -> list[CompactOutcome]:
        """Compact the tasks' buckets (default: every planned group's; files written, nothing
        committed). When one task fails, the files of every task are removed."""
        tasks = [t for g in self.groups for t in g] if units is None else units
        self.outcomes = execute_tasks(self.executor, tasks, self.workers, runner or self.runner)
        return self.outcomes

    def abort(self) -> None:
        """Remove the files of the executed tasks not committed yet."""
        remove_outputs(self.executor, self.outcomes)
        self.outcomes = []

    # -- commit --------------------------------------------------------------------------------
    def commit(self, messages: Sequence[CompactOutcome] | None = None,
               failed: dict[str, str] | None = None) -> tuple[list[CompactOutcome], list[int]]:
        """Commit outcomes (default: those `execute` returned last) as one COMPACT snapshot;
        on a conflict retry each partition alone. Returns the committed outcomes and snapshot
        ids; what cannot commit is removed and its partition recorded in `failed` (default:
        the job's `failed`)."""
        failed = self.failed if failed is None else failed
        outcomes = [o for o in (self.outcomes if messages is None else messages)
                    if not o.message.is_empty]
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
            landed = self.landed_after(since, "COMPACT", e)
            if landed is not None:
                return outcomes, [landed.id]
            self.committer.raise_if_ambiguous(e, "compaction")
            reason = str(e)
        except CommitStateUnknownError:
            raise  # the snapshot may reference the outputs: delete nothing
        except BaseException as e:
            try:
                landed = self.landed_after(since, "COMPACT", e)
            except CommitStateUnknownError:
                raise e from None  # cannot tell: keep the outputs (orphan cleanup may remove)
            if landed is None:
                remove_outputs(self.executor, outcomes)
            raise
        remove_outputs(self.executor, outcomes)
        failed[partition_name(self.schema.partition_keys, outcomes[0].task.partition_values)] = \
            reason
        return [], []

    # -- the whole job -------------------------------------------------------------------------
    def run(self) -> CompactResult:
        """plan, then execute and commit each group in turn (a postpone-bucket table: its
        own compaction, `compact.postpone`)."""
        if self.schema.primary_keys and self.options.bucket == POSTPONE_BUCKET:
            return compact_postpone(self)
        start = time.monotonic()
        groups = self.plan()
        keys = self.schema.partition_keys
        committed: list[CompactOutcome] = []
        failed = self.failed
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


def compact_after_write(file_io: FileIO, table_path: str, schema: TableSchema, table_name: str,
                        result: CommitResult, partitions: set[bytes] | None,
                        stacklevel: int = 2) -> CommitResult:
    """A lookup table's writer compacts its level-0 files before it returns, as Java's does
    (`lookup-wait` / `changelog-producer.lookup-wait`, default true; never with
    `write-only`; first-row tables too, whatever their producer): a
    deletion-vector table shows written rows once compacted, and the lookup changelog comes
    with each write. `partitions`: those written (None: every partition). The compaction's
    snapshots are reported with the write's; one that cannot commit leaves the write landed
    (with a warning) and is left to the next compaction. Any other table: `result` as is."""
    opts = CoreOptions(schema.options)
    if result.snapshot_id is None or not schema.primary_keys or not waits_for_lookup(opts) \
            or opts.bucket == POSTPONE_BUCKET:  # Java's postpone writers never compact
        return result
    pred = None
    if partitions is not None:
        types = [f.type for f in schema.partition_fields()]
        wanted = {tuple(from_avro_bytes(p, types)) for p in partitions}
        keys = schema.partition_keys
        pred = lambda values: tuple(values[k] for k in keys) in wanted  # noqa: E731
    compacted = CompactJob(file_io, table_path, schema, table_name, full=False,
                           partition_filter=pred).run()
    if compacted.failed:
        warnings.warn(f"{table_name}: the write landed (snapshot {result.snapshot_id}) but "
                      f"its compaction did not: {compacted.failed}", stacklevel=stacklevel + 1)
    return dataclasses.replace(result, compaction_snapshot_ids=list(compacted.snapshot_ids))
