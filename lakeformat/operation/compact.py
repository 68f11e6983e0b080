"""Compaction: plan (driver) -> execute (one bucket, anywhere) -> commit (driver, COMPACT).

Plan reads the latest snapshot once and picks, per (partition, bucket), what to compact: every
sorted run into the top level (full), or Paimon's universal picks (minor). Each pick becomes a
`CompactTask`, a small picklable value. `CompactTaskExecutor.execute` is a pure function of a
task: it merges the task's files with the table's merge engine in key-range slices within its
memory budget, writes the results at the output level marked as compaction output, moves large
non-overlapping files up without rewriting them (Java's upgrade), and returns a `CommitMessage`
(plus counts). The driver commits each group of partitions as one COMPACT snapshot with
Paimon's conflict checks; a group that conflicts is retried partition by partition, and the
files of whatever cannot commit are deleted.
"""

from __future__ import annotations

import dataclasses
import os
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from lakeformat.data.kv_file import verify_data_file
from lakeformat.data.kv_rolling import RollingKeyValueFileWriter
from lakeformat.errors import (
    CommitConflictError,
    CommitFailedError,
    CommitOutcomeUnknownError,
    UnsupportedError,
)
from lakeformat.meta.binary_row import from_avro_bytes
from lakeformat.meta.data_file_meta import DataFileMeta, FileSource
from lakeformat.meta.snapshot import Snapshot, SnapshotManager
from lakeformat.operation.commit import CommitMessage, FileStoreCommit
from lakeformat.operation.compact_levels import (
    KeyComparator,
    Levels,
    UniversalCompaction,
    interval_partition,
    pick_full_compaction,
)
from lakeformat.operation.data_file_read import format_of
from lakeformat.operation.merge_tree_reader import BUDGET_COPIES, MergeTreeReader
from lakeformat.operation.paths import PathFactory
from lakeformat.operation.scan import FileStoreScan, PartitionPredicate
from lakeformat.options import CoreOptions
from lakeformat.results import CompactResult, CompactStats
from lakeformat.schema.schema_manager import SchemaManager
from lakeformat.schema.table_schema import TableSchema
from lakeformat.storage import FileIO

#: Options that change what a compaction must do and that lakeformat does not implement.
_UNSUPPORTED_TRUE = ("compaction.force-up-level-0", "changelog-producer.row-deduplicate")
_UNSUPPORTED_SET = ("record-level.expire-time", "data-file.external-paths")


@dataclass(frozen=True)
class CompactTask:
    """One (partition, bucket): the files to compact and where the result goes."""

    partition: bytes
    partition_values: tuple
    bucket: int
    total_buckets: int
    files: tuple[DataFileMeta, ...]
    output_level: int
    max_level: int
    drop_delete: bool
    changelog: bool  # changelog-producer=full-compaction and output at the top level
    runs_before: int  # sorted runs of the bucket before
    runs_in_unit: int
    memory_budget: int


@dataclass
class CompactOutcome:
    task: CompactTask
    message: CommitMessage
    stats: CompactStats = field(default_factory=CompactStats)


def check_compactable(schema: TableSchema, table_path: str) -> CoreOptions:
    """Fail closed: refuse tables and options compaction does not handle, naming them."""
    opts = CoreOptions(schema.options)
    if not schema.primary_keys:
        raise UnsupportedError(f"{table_path}: compaction of append tables (no primary key) "
                               "is not supported")
    if opts.bucket == -2:
        raise UnsupportedError(f"{table_path}: bucket=-2 (postpone bucket) tables cannot be "
                               "compacted by lakeformat")
    producer = opts.changelog_producer
    if producer not in ("none", "input", "full-compaction"):
        raise UnsupportedError(f"{table_path}: changelog-producer={producer} is not supported "
                               "by compaction (none, input, full-compaction)")
    for key in _UNSUPPORTED_TRUE:
        v = opts.get(key)
        if v is not None and v.strip().lower() != "false":
            raise UnsupportedError(f"{table_path}: option {key}={v} is not supported by "
                                   "compaction")
    for key in _UNSUPPORTED_SET:
        if opts.get(key):
            raise UnsupportedError(f"{table_path}: option {key}={opts.get(key)} is not supported"
                                   " by compaction")
    from lakeformat.merge import check_merge_options
    check_merge_options(schema)
    _ = (opts.num_levels, opts.compaction_max_size_amplification_percent,
         opts.compaction_size_ratio, opts.compaction_file_size,
         opts.compaction_force_rewrite_all_files, opts.compaction_optimization_interval,
         opts.compaction_total_size_threshold, opts.compaction_incremental_size_threshold)
    return opts


# -- plan ----------------------------------------------------------------------------------------
def plan_compaction(file_io: FileIO, table_path: str, schema: TableSchema,
                    latest: Snapshot | None, full: bool, memory_budget: int,
                    partition_filter: PartitionPredicate | None = None,
                    partition_idle_before: int | None = None) -> list[CompactTask]:
    """Tasks for the latest snapshot. `partition_idle_before`: only partitions whose newest
    file was created before this instant (epoch millis of local wall-clock time, as stored)."""
    opts = check_compactable(schema, table_path)
    scan = FileStoreScan(file_io, table_path, schema)
    buckets: dict[tuple[bytes, int], list] = {}
    newest: dict[bytes, int] = {}
    for e in scan.live_entries(latest, partition_filter):
        buckets.setdefault((e.partition, e.bucket), []).append(e)
        newest[e.partition] = max(newest.get(e.partition, 0), e.file.creation_time or 0)
    cmp = KeyComparator([f.type for f in schema.key_fields()])
    universal = None if full else UniversalCompaction(opts)
    part_types = [f.type for f in schema.partition_fields()]
    changelog = opts.changelog_producer == "full-compaction"
    tasks = []
    for (partition, bucket), entries in sorted(buckets.items(), key=lambda kv: kv[0]):
        if partition_idle_before is not None and newest[partition] >= partition_idle_before:
            continue
        files = [e.file for e in entries]
        levels = Levels(files, opts.num_levels, cmp)
        runs = levels.sorted_runs()
        if full:
            unit = pick_full_compaction(levels, opts.compaction_force_rewrite_all_files)
        else:
            unit = universal.pick(levels.num_levels, runs)  # type: ignore[union-attr]
            if unit is not None and (not unit.files or (
                    len(unit.files) == 1 and unit.files[0].level == unit.output_level)):
                unit = None
        if unit is None:
            continue
        names = {f.file_name for f in unit.files}
        in_unit = sum(1 for r in runs if any(f.file_name in names for f in r.files))
        drop = unit.output_level != 0 and unit.output_level >= levels.non_empty_highest_level()
        tasks.append(CompactTask(
            partition, tuple(from_avro_bytes(partition, part_types)), bucket,
            entries[0].total_buckets, unit.files, unit.output_level, levels.max_level, drop,
            changelog and unit.output_level == levels.max_level, len(runs), in_unit,
            memory_budget))
    return tasks


# -- execute -------------------------------------------------------------------------------------
class CompactTaskExecutor:
    """Runs tasks of one table; holds no snapshot state (safe in a thread pool or a Spark task)."""

    def __init__(self, file_io: FileIO, table_path: str, schema: TableSchema):
        self.file_io = file_io
        self.table_path = table_path
        self.schema = schema
        self.options = check_compactable(schema, table_path)
        self.schema_manager = SchemaManager(file_io, table_path)
        self.paths = PathFactory(file_io, table_path, schema)
        self.cmp = KeyComparator([f.type for f in schema.key_fields()])
        raw = self.options.raw
        changelog_opts = dict(raw)
        changelog_opts["data-file.prefix"] = self.options.changelog_file_prefix
        for src, dst in (("changelog-file.format", "file.format"),
                         ("changelog-file.compression", "file.compression"),
                         ("changelog-file.stats-mode", "metadata.stats-mode")):
            if raw.get(src):
                changelog_opts[dst] = raw[src]
        self.changelog_options = CoreOptions(changelog_opts)

    def execute(self, task: CompactTask) -> CompactOutcome:
        job = _BucketCompaction(self, task)
        try:
            return job.run()
        except BaseException:
            job.abort()
            raise


class _BucketCompaction:
    """Java's `MergeTreeCompactTask` for one task: sections are rewritten or upgraded."""

    def __init__(self, ex: CompactTaskExecutor, task: CompactTask):
        self.ex = ex
        self.task = task
        self.bucket_dir = ex.paths.bucket_dir(task.partition_values, task.bucket)
        self.reader = MergeTreeReader(
            ex.file_io, ex.schema, ex.schema_manager,
            lambda meta: ex.paths.data_file(task.partition_values, task.bucket, meta),
            ex.options.file_format, task.memory_budget)
        self.before: list[DataFileMeta] = []
        self.after: list[DataFileMeta] = []
        self.changelog: list[DataFileMeta] = []
        self.writers: list[RollingKeyValueFileWriter] = []

    def run(self) -> CompactOutcome:
        task, opts = self.task, self.ex.options
        min_size = opts.compaction_file_size
        candidate: list[list[list[DataFileMeta]]] = []
        for section in interval_partition(task.files, self.ex.cmp):
            if len(section) > 1:
                candidate.append(section)
                continue
            for f in section[0]:
                if f.file_size < min_size:
                    candidate.append([[f]])
                else:
                    self._rewrite(candidate)
                    candidate = []
                    self._upgrade(f)
        self._rewrite(candidate)
        return self._outcome()

    def _rewrite(self, candidate: list[list[list[DataFileMeta]]]) -> None:
        if not candidate:
            return
        if len(candidate) == 1 and len(candidate[0]) == 1:
            for f in candidate[0][0]:
                self._upgrade(f)
            return
        self._rewrite_sections(candidate)

    def _upgrade(self, f: DataFileMeta) -> None:
        task = self.task
        top = task.output_level == task.max_level
        has_deletes = f.delete_row_count is None or f.delete_row_count > 0
        if (top and has_deletes) or self.ex.options.compaction_force_rewrite_all_files:
            self._rewrite_sections([[[f]]])
            return
        if f.level == task.output_level:
            return
        # moved as is, never read: its footer must agree with its manifest entry
        verify_data_file(self.ex.file_io, self.reader.path_of(f),
                         format_of(f.file_name, self.ex.options.file_format), f)
        if task.changelog:
            # the file moves to the top as is; its rows are new there: +I changelog
            self._write_changelog_only([f])
        self.before.append(f)
        self.after.append(f.upgrade(task.output_level))

    def _new_writer(self, changelog: bool) -> RollingKeyValueFileWriter:
        budget = self.task.memory_budget
        w = RollingKeyValueFileWriter(
            self.ex.file_io, self.bucket_dir, self.ex.schema,
            self.ex.changelog_options if changelog else self.ex.options,
            level=self.task.output_level,
            file_source=int(FileSource.APPEND if changelog else FileSource.COMPACT),
            row_group_bytes=max(1 << 20, budget // BUDGET_COPIES))
        self.writers.append(w)
        return w

    def _rewrite_sections(self, sections: list[list[list[DataFileMeta]]]) -> None:
        task = self.task
        data = self._new_writer(False)
        log = self._new_writer(True) if task.changelog else None
        level = task.max_level if task.changelog else None
        drop = task.drop_delete or task.changelog
        for section in sections:
            for piece in self.reader.merge_section(section, drop, level):
                data.append(piece.rows)
                if log is not None and piece.changelog is not None:
                    log.append(piece.changelog)
        self.before += [f for s in sections for run in s for f in run]
        self.after += data.close()
        if log is not None:
            self.changelog += log.close()

    def _write_changelog_only(self, files: list[DataFileMeta]) -> None:
        log = self._new_writer(True)
        for piece in self.reader.merge_section([files], False, self.task.max_level):
            if piece.changelog is not None:
                log.append(piece.changelog)
        self.changelog += log.close()

    def _outcome(self) -> CompactOutcome:
        task = self.task
        msg = CommitMessage(task.partition, task.bucket, task.total_buckets,
                            new_files=list(self.after), deleted_files=list(self.before),
                            changelog_files=list(self.changelog))
        before_names = {f.file_name for f in self.before}
        untouched = [f for f in task.files if f.file_name not in before_names]
        stats = CompactStats(
            buckets_compacted=1 if self.before else 0,
            files_in=len(self.before), files_out=len(self.after),
            bytes_in=sum(f.file_size for f in self.before),
            bytes_out=sum(f.file_size for f in self.after),
            rows_in=sum(f.row_count for f in self.before),
            rows_out=sum(f.row_count for f in self.after),
            sorted_runs_before=task.runs_before,
            sorted_runs_after=_runs_after(task, untouched, self.after),
            changelog_files=len(self.changelog),
            changelog_rows=sum(f.row_count for f in self.changelog))
        return CompactOutcome(task, msg, stats)

    def abort(self) -> None:
        for w in self.writers:
            w.abort()


def _runs_after(task: CompactTask, untouched: list[DataFileMeta],
                after: list[DataFileMeta]) -> int:
    """Sorted runs of the bucket once the task's result is live."""
    outside = task.runs_before - task.runs_in_unit
    level0 = sum(1 for f in untouched + after if f.level == 0)
    upper = {f.level for f in untouched + after if f.level > 0}
    return outside + level0 + len(upper)


def default_workers(tasks: Sequence[CompactTask]) -> int:
    return max(1, min(len(tasks), os.cpu_count() or 2))


def execute_tasks(executor: CompactTaskExecutor, tasks: Sequence[CompactTask],
                  workers: int) -> list[CompactOutcome]:
    """Run tasks in a thread pool; if one fails, the files of the others are deleted too."""
    if workers <= 1 or len(tasks) <= 1:
        results: list[CompactOutcome] = []
        try:
            for t in tasks:
                results.append(executor.execute(t))
        except BaseException:
            remove_outputs(executor, results)
            raise
        return results
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(executor.execute, t) for t in tasks]
        done, error = [], None
        for fut in futures:
            try:
                done.append(fut.result())
            except BaseException as e:  # keep collecting so every finished task is cleaned
                error = error or e
        if error is not None:
            remove_outputs(executor, done)
            raise error
        return done


def remove_outputs(executor: CompactTaskExecutor, outcomes: Sequence[CompactOutcome]) -> None:
    """Delete the files compaction wrote for outcomes that will not be committed. Upgraded
    files are the inputs themselves (same name, new level): never deleted."""
    paths = []
    for o in outcomes:
        inputs = {f.file_name for f in o.message.deleted_files}
        for f in o.message.new_files + o.message.changelog_files:
            if f.file_name not in inputs:
                paths.append(executor.paths.data_file(o.task.partition_values, o.task.bucket, f))
    if paths:
        executor.file_io.delete_many(paths)


ProgressFn = Callable[[str], Any]


# -- the whole job (driver) ------------------------------------------------------------------------
def compact_table(file_io: FileIO, table_path: str, schema: TableSchema, table_name: str, *,
                  full: bool = True, partition_filter: PartitionPredicate | None = None,
                  partition_idle_before: int | None = None, memory_budget: int | None = None,
                  workers: int | None = None, partitions_per_commit: int = 16,
                  progress: ProgressFn | None = None) -> CompactResult:
    """Plan, execute and commit a compaction of the latest snapshot."""
    start = time.monotonic()
    say = progress or (lambda _msg: None)
    opts = check_compactable(schema, table_path)
    latest = SnapshotManager(file_io, table_path).latest_snapshot()
    budget = memory_budget or opts.write_buffer_size
    tasks = plan_compaction(file_io, table_path, schema, latest, full, budget,
                            partition_filter, partition_idle_before)
    workers = workers or default_workers(tasks)
    if tasks:
        per_task = max(64 << 10, budget // max(1, min(workers, len(tasks))))
        tasks = [dataclasses.replace(t, memory_budget=per_task) for t in tasks]
    by_partition: dict[bytes, list[CompactTask]] = {}
    for t in tasks:
        by_partition.setdefault(t.partition, []).append(t)
    parts = list(by_partition)
    groups = [parts[i:i + max(1, partitions_per_commit)]
              for i in range(0, len(parts), max(1, partitions_per_commit))]
    say(f"{table_name}: {len(tasks)} buckets to compact in {len(parts)} partitions "
        f"({'full' if full else 'minor'}, {workers} workers, memory budget {budget} bytes)")
    executor = CompactTaskExecutor(file_io, table_path, schema) if tasks else None
    keys = schema.partition_keys
    committed: list[CompactOutcome] = []
    failed: dict[str, str] = {}
    snapshot_ids: list[int] = []
    for n, group in enumerate(groups, 1):
        group_tasks = [t for p in group for t in by_partition[p]]
        outcomes = execute_tasks(executor, group_tasks, workers)  # type: ignore[arg-type]
        ok, ids = _commit_group(file_io, table_path, schema, executor, outcomes, failed, keys)
        committed += ok
        snapshot_ids += ids
        say(f"{table_name}: group {n}/{len(groups)}: {len(group_tasks)} buckets, "
            f"{'snapshot ' + ','.join(map(str, ids)) if ids else 'no snapshot'}")
    partitions: dict[str, CompactStats] = {}
    total = CompactStats()
    for o in committed:
        name = partition_name(keys, o.task.partition_values)
        partitions.setdefault(name, CompactStats()).add(o.stats)
        total.add(o.stats)
    return CompactResult(table_name, full, snapshot_ids, partitions, total, failed,
                         round(time.monotonic() - start, 3))


def partition_name(keys: Sequence[str], values: Sequence[Any]) -> str:
    return "/".join(f"{k}={v}" for k, v in zip(keys, values)) or "(unpartitioned)"


def _commit_group(file_io: FileIO, table_path: str, schema: TableSchema,
                  executor: CompactTaskExecutor | None, outcomes: list[CompactOutcome],
                  failed: dict[str, str], keys: Sequence[str]
                  ) -> tuple[list[CompactOutcome], list[int]]:
    """Commit outcomes as one COMPACT snapshot; on a conflict retry each partition alone.
    Returns the committed outcomes and snapshot ids; what cannot commit is removed."""
    outcomes = [o for o in outcomes if not o.message.is_empty]
    if not outcomes:
        return [], []
    commit = FileStoreCommit(file_io, table_path, schema, str(uuid.uuid4()))
    since = commit.snapshots.latest_snapshot_id()
    try:
        snap = commit.commit([o.message for o in outcomes], kind="COMPACT")
        return outcomes, ([snap.id] if snap is not None else [])
    except CommitConflictError as e:
        _unless_ambiguous(commit, e)
        partitions = list(dict.fromkeys(o.task.partition for o in outcomes))
        if len(partitions) > 1:
            done: list[CompactOutcome] = []
            ids: list[int] = []
            for p in partitions:
                ok, got = _commit_group(file_io, table_path, schema, executor,
                                        [o for o in outcomes if o.task.partition == p],
                                        failed, keys)
                done += ok
                ids += got
            return done, ids
        reason = str(e)
    except CommitFailedError as e:
        if _landed(commit, since):
            return outcomes, []
        _unless_ambiguous(commit, e)
        reason = str(e)
    except CommitOutcomeUnknownError:
        raise  # the snapshot may reference the outputs: delete nothing
    except BaseException:
        if executor is not None and not _landed(commit, since):
            remove_outputs(executor, outcomes)
        raise
    if executor is not None:
        remove_outputs(executor, outcomes)
    failed[partition_name(keys, outcomes[0].task.partition_values)] = reason
    return [], []


def _unless_ambiguous(commit: FileStoreCommit, error: Exception) -> None:
    """A publish of this commit failed but could still land: keep the outputs, say so."""
    if commit.ambiguous_publish is not None:
        raise CommitOutcomeUnknownError(
            f"compaction commit stopped ({error}) after publishing snapshot "
            f"{commit.ambiguous_publish} failed in a way that may still land; its files were "
            "kept (remove_orphan_files removes them if it never lands)",
            snapshot_id=commit.ambiguous_publish, commit_user=commit.commit_user) from error


def _landed(commit: FileStoreCommit, since: int | None) -> bool:
    """Whether a snapshot of this commit user landed after `since` (outcome looked unknown)."""
    try:
        latest = commit.snapshots.latest_snapshot()
        return commit._find_landed(since, latest, "COMPACT") is not None
    except Exception:
        return True  # cannot tell: keep the files (orphan cleanup can remove them later)
