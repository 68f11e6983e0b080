"""Compaction: plan (driver) -> execute (one bucket, anywhere) -> commit (driver, COMPACT).

Plan reads the latest snapshot once and picks, per (partition, bucket), what to compact: every
sorted run into the top level (full), or Paimon's universal picks (minor). Each pick becomes a
`CompactTask`, a small picklable value. `CompactTaskExecutor.execute` is a pure function of a
task: it merges the task's files with the table's merge engine in key-range slices within its
memory budget, writes the results at the output level marked as compaction output, moves large
non-overlapping files up without rewriting them (Java's upgrade), and returns a `CommitMessage`
(plus counts). The driver commits each group of partitions as one COMPACT snapshot with
Paimon's conflict checks; a group that conflicts is retried partition by partition, and the
files of whatever cannot commit are deleted. An append table's files are picked and rewritten
by `compact.append` (nothing to merge); its tasks take the same path otherwise.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from lakeformat import clock
from lakeformat.data.file_read import format_of
from lakeformat.data.kv_read import verify_data_file
from lakeformat.data.kv_rolling import RollingKeyValueFileWriter
from lakeformat.merge import merge_engine
from lakeformat.mergetree import (
    BUDGET_COPIES,
    KeyComparator,
    Levels,
    MergeTreeReader,
    RecordLevelExpire,
    UniversalCompaction,
    check_record_level_expire,
    dedup_columns,
    interval_partition,
    pick_full_compaction,
)
from lakeformat.meta.binary_row import from_avro_bytes
from lakeformat.meta.data_file_meta import DataFileMeta, FileSource, ManifestEntry
from lakeformat.meta.deletion_vector import DeletedRows, DeletionFile
from lakeformat.meta.index_manifest import IndexManifestEntry, IndexManifestFile
from lakeformat.meta.snapshot import Snapshot
from lakeformat.operation.commit import CommitMessage
from lakeformat.operation.compact.append import AppendRewrite, pick_bucketed, pick_unaware
from lakeformat.operation.compact.lookup import (
    bucket_vectors,
    lookup_runs,
    merge_positions,
    needs_lookup,
    pick_lookup_unit,
    runs_meeting,
)
from lakeformat.operation.paths import PathFactory
from lakeformat.operation.postpone import POSTPONE_BUCKET
from lakeformat.operation.runner import Runner, captured, default_runner, split_failures
from lakeformat.operation.scan import FileStoreScan, PartitionPredicate
from lakeformat.operation.support import COMPACT, check_supported
from lakeformat.options import CoreOptions
from lakeformat.results import CompactStats
from lakeformat.schema.schema_manager import SchemaManager
from lakeformat.schema.table_schema import TableSchema
from lakeformat.storage import FileIO


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
    #: deletion vectors of `files` and `lookup_runs` at plan time (file name -> where it is)
    deletion_files: dict[str, DeletionFile] = field(default_factory=dict, compare=False)
    #: a lookup table's files above `output_level`, one run per level (`compact.lookup`)
    lookup_runs: tuple[tuple[DataFileMeta, ...], ...] = ()
    lookup_changelog: bool = False  # changelog-producer=lookup
    index_base: str | None = None  # the planned snapshot's index manifest
    #: which pick chose the files (`CompactUnit.reason`; "small-files" for an append table)
    reason: str = field(default="", compare=False)
    #: record-level expiry: "now" of the plan in epoch seconds (None: the table expires none)
    expire_now: int | None = None

    @property
    def deletions_seen(self) -> dict[str, tuple[str, int] | None]:
        """The deletion vector of each file read as planned (None: it had none): the commit
        checks that no other commit changed one since."""
        files = [*self.files, *(f for run in self.lookup_runs for f in run)]
        return {f.file_name: (self.deletion_files[f.file_name].identity
                              if f.file_name in self.deletion_files else None)
                for f in files}


@dataclass
class CompactOutcome:
    task: CompactTask
    message: CommitMessage
    stats: CompactStats = field(default_factory=CompactStats)
    #: the bucket's new deletion-vector index file, replacing its current ones
    index: list[IndexManifestEntry] = field(default_factory=list)


def check_compactable(schema: TableSchema, table_path: str) -> CoreOptions:
    """Fail closed: refuse tables and options compaction does not handle, naming them."""
    opts = check_supported(schema, COMPACT, table_path)
    if schema.primary_keys:
        merge_engine(schema)  # checks the merge options
        check_record_level_expire(schema, opts.raw)
    _ = (opts.compaction_min_file_num, opts.split_open_file_cost)
    _ = (opts.num_levels, opts.compaction_max_size_amplification_percent,
         opts.compaction_size_ratio, opts.compaction_file_size,
         opts.compaction_force_rewrite_all_files, opts.compaction_optimization_interval,
         opts.compaction_total_size_threshold, opts.compaction_incremental_size_threshold)
    return opts


# -- plan ----------------------------------------------------------------------------------------
def task_budget(memory_budget: int, workers: int | None, tasks: int) -> int:
    """One task's share of a job's memory budget: the budget is shared by the tasks that run
    at once (`workers` of them, default one per core)."""
    running = workers or max(1, min(tasks, os.cpu_count() or 2))
    return max(64 << 10, memory_budget // max(1, min(running, tasks)))


def plan_compaction(file_io: FileIO, table_path: str, schema: TableSchema,
                    latest: Snapshot | None, full: bool, memory_budget: int,
                    partition_filter: PartitionPredicate | None = None,
                    partition_idle_before: int | None = None, *, workers: int | None = None,
                    options: CoreOptions | None = None) -> list[CompactTask]:
    """Tasks for the latest snapshot, each given its share of the job's `memory_budget`
    (`task_budget`, over `workers`). `partition_idle_before`: only partitions whose newest file
    was created before this instant (epoch millis of local wall-clock time, as stored).
    `options`: the table's, as `check_compactable` returned them (checked here when None)."""
    opts = options if options is not None else check_compactable(schema, table_path)
    tasks = _plan_tasks(file_io, table_path, schema, opts, latest, full, partition_filter,
                        partition_idle_before)
    share = task_budget(memory_budget, workers, len(tasks))
    return [replace(t, memory_budget=share) for t in tasks]


def _plan_tasks(file_io: FileIO, table_path: str, schema: TableSchema, opts: CoreOptions,
                latest: Snapshot | None, full: bool, partition_filter: PartitionPredicate | None,
                partition_idle_before: int | None) -> list[CompactTask]:
    """The tasks, before the budget is shared out (their `memory_budget` is 0)."""
    scan = FileStoreScan(file_io, table_path, schema)
    entries = scan.live_entries(latest, partition_filter)
    dvs = scan.deletion_files(latest) if entries else {}
    expire = RecordLevelExpire.of(schema, opts.raw, clock.now_millis() // 1000)
    return plan_from_entries(schema, opts, entries, dvs, full, partition_idle_before,
                             latest.index_manifest if latest else None, expire,
                             _schemas(schema, SchemaManager(file_io, table_path)))


def plan_from_entries(schema: TableSchema, opts: CoreOptions, entries: Sequence[ManifestEntry],
                      dvs: dict[tuple[bytes, int], dict[str, DeletionFile]], full: bool,
                      partition_idle_before: int | None = None,
                      index_base: str | None = None, expire: RecordLevelExpire | None = None,
                      schema_of: Callable[[int], TableSchema] | None = None
                      ) -> list[CompactTask]:
    """The picks of compaction over live `entries` already read (and the deletion vectors of
    their snapshot): what `plan_compaction` plans, for a caller that holds the metadata (table
    health asks it which buckets are due). Pure: reads nothing (but `schema_of`, the schema
    of a file's schema id, which `expire` asks of files written with an older schema).
    `expire`: the table's record-level expiry, as of the plan's "now"."""
    buckets: dict[tuple[bytes, int], list] = {}
    newest: dict[bytes, int] = {}
    for e in entries:
        buckets.setdefault((e.partition, e.bucket), []).append(e)
        newest[e.partition] = max(newest.get(e.partition, 0), e.file.creation_time or 0)
    part_types = [f.type for f in schema.partition_fields()]
    if not schema.primary_keys:
        tasks = _plan_append(buckets, newest, part_types, opts, full, partition_idle_before)
        return [_with_deletions(t, dvs) for t in tasks]
    cmp = KeyComparator([f.type for f in schema.key_fields()])
    universal = None if full else UniversalCompaction(opts)
    changelog = opts.changelog_producer == "full-compaction"
    lookup = needs_lookup(opts)
    expired = None
    if expire is not None:
        of = schema_of or (lambda sid: schema)
        expired = lambda f: expire.is_expired_file(f, of)  # noqa: E731
    tasks = []
    for (partition, bucket), group in sorted(buckets.items(), key=lambda kv: kv[0]):
        if partition_idle_before is not None and newest[partition] >= partition_idle_before:
            continue
        files = [e.file for e in group]
        if bucket == POSTPONE_BUCKET:  # assigned to buckets by `compact.postpone`, never merged
            tasks.append(CompactTask(partition, tuple(from_avro_bytes(partition, part_types)),
                                     bucket, group[0].total_buckets, tuple(files), 0, 0, False,
                                     False, len(files), len(files), 0, reason="postpone"))
            continue
        levels = Levels(files, opts.num_levels, cmp)
        runs = levels.sorted_runs()
        bucket_dvs = dvs.get((partition, bucket), {})
        if lookup or bucket_dvs:
            unit = pick_lookup_unit(levels, full, universal,
                                    opts.compaction_force_rewrite_all_files, bool(bucket_dvs),
                                    expired)
        elif full:
            unit = pick_full_compaction(levels, opts.compaction_force_rewrite_all_files,
                                        expired)
        else:
            unit = universal.pick(levels.num_levels, runs)  # type: ignore[union-attr]
        if unit is not None and not full and (not unit.files or (
                len(unit.files) == 1 and unit.files[0].level == unit.output_level
                and unit.files[0].file_name not in bucket_dvs)):
            unit = None
        if unit is None:
            continue
        names = {f.file_name for f in unit.files}
        in_unit = sum(1 for r in runs if any(f.file_name in names for f in r.files))
        # a deletion-vector table drops retracts at any level above 0: the rows they retract
        # get deletion vectors instead [JAVA MergeTreeCompactManager]
        drop = unit.output_level != 0 and (
            unit.output_level >= levels.non_empty_highest_level()
            or opts.deletion_vectors_enabled)
        above = lookup_runs(files, unit) if lookup else ()
        tasks.append(_with_deletions(CompactTask(
            partition, tuple(from_avro_bytes(partition, part_types)), bucket,
            group[0].total_buckets, unit.files, unit.output_level, levels.max_level, drop,
            changelog and unit.output_level == levels.max_level, len(runs), in_unit,
            0, lookup_runs=above,
            lookup_changelog=opts.changelog_producer == "lookup", index_base=index_base,
            reason=unit.reason, expire_now=None if expire is None else expire.now_seconds),
            dvs))
    return tasks


def _schemas(schema: TableSchema, manager: SchemaManager) -> Callable[[int], TableSchema]:
    """The schema of a schema id (the table's own without a read)."""
    return lambda sid: schema if sid == schema.id else manager.schema(sid)


def _with_deletions(task: CompactTask, dvs: dict[tuple[bytes, int], dict[str, DeletionFile]]
                    ) -> CompactTask:
    bucket_dvs = dvs.get((task.partition, task.bucket))
    if not bucket_dvs:
        return task
    files = [*task.files, *(f for run in task.lookup_runs for f in run)]
    return replace(task, deletion_files={f.file_name: bucket_dvs[f.file_name]
                                         for f in files if f.file_name in bucket_dvs})


def _plan_append(buckets: dict[tuple[bytes, int], list], newest: dict[bytes, int],
                 part_types: list, opts: CoreOptions, full: bool,
                 partition_idle_before: int | None) -> list[CompactTask]:
    """An append table's tasks: one per bucket of a bucketed table, one per group of small
    files of a bucket-unaware one (`compact.append`). Each file counts as a sorted run."""
    tasks = []
    for (partition, bucket), entries in sorted(buckets.items(), key=lambda kv: kv[0]):
        if partition_idle_before is not None and newest[partition] >= partition_idle_before:
            continue
        files = [e.file for e in entries]
        if opts.bucket == -1:
            groups = pick_unaware(files, opts, full)
        else:
            picked = pick_bucketed(files, opts, full)
            groups = [picked] if picked else []
        values = tuple(from_avro_bytes(partition, part_types))
        for group in groups:
            tasks.append(CompactTask(partition, values, bucket, entries[0].total_buckets,
                                     tuple(group), 0, 0, False, False, len(files), len(group),
                                     0, reason="small-files"))
    return tasks


# -- execute -------------------------------------------------------------------------------------
class CompactTaskExecutor:
    """Runs tasks of one table; holds no snapshot state (safe in a thread pool or a Spark task)."""

    def __init__(self, file_io: FileIO, table_path: str, schema: TableSchema,
                 options: CoreOptions | None = None):
        """`options`: the table's, as `check_compactable` returned them (checked when None)."""
        self.file_io = file_io
        self.table_path = table_path
        self.schema = schema
        self.options = options if options is not None else check_compactable(schema, table_path)
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
        self.dedup_columns = dedup_columns(
            schema.field_names, self.options.changelog_row_deduplicate_ignore_fields) \
            if self.options.changelog_row_deduplicate else None

    def execute(self, task: CompactTask) -> CompactOutcome:
        if not self.schema.primary_keys:
            return self._execute_append(task)
        job = _BucketCompaction(self, task)
        try:
            return job.run()
        except BaseException:
            job.abort()
            raise


    def _execute_append(self, task: CompactTask) -> CompactOutcome:
        rewrite = AppendRewrite(
            self.file_io, self.schema, self.schema_manager, self.options,
            self.paths.bucket_dir(task.partition_values, task.bucket),
            lambda meta: self.paths.data_file(task.partition_values, task.bucket, meta),
            task.memory_budget)
        try:
            after = rewrite.run(task.files, DeletedRows(self.file_io, task.deletion_files)
                                if task.deletion_files else None)
        except BaseException:
            rewrite.abort()
            raise
        before = list(task.files)
        msg = CommitMessage(task.partition, task.bucket, task.total_buckets,
                            new_files=after, deleted_files=before)
        stats = CompactStats(
            buckets_compacted=1, files_in=len(before), files_out=len(after),
            bytes_in=sum(f.file_size for f in before), bytes_out=sum(f.file_size for f in after),
            rows_in=sum(f.row_count for f in before), rows_out=sum(f.row_count for f in after),
            sorted_runs_before=task.runs_before,
            sorted_runs_after=task.runs_before - len(before) + len(after))
        return CompactOutcome(task, msg, stats)


class _BucketCompaction:
    """Java's `MergeTreeCompactTask` for one task: sections are rewritten or upgraded."""

    def __init__(self, ex: CompactTaskExecutor, task: CompactTask):
        self.ex = ex
        self.task = task
        self.bucket_dir = ex.paths.bucket_dir(task.partition_values, task.bucket)
        self.expire = None if task.expire_now is None else RecordLevelExpire.of(
            ex.schema, ex.options.raw, task.expire_now)
        self.reader = MergeTreeReader(
            ex.file_io, ex.schema, ex.schema_manager,
            lambda meta: ex.paths.data_file(task.partition_values, task.bucket, meta),
            ex.options.file_format, task.memory_budget,
            deleted_of=DeletedRows(ex.file_io, task.deletion_files)
            if task.deletion_files else None, lookup=needs_lookup(ex.options),
            expire=self.expire, mark_expired=ex.options.deletion_vectors_enabled)
        self.replaced: dict[str, np.ndarray] = {}  # rows of files above the output, replaced
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
                # a file with deleted rows is rewritten without them, never just moved up; a
                # lookup table's level-0 file is rewritten through the lookup
                if f.file_size < min_size or f.file_name in task.deletion_files or (
                        self.reader.lookup and f.level == 0):
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
        if len(candidate) == 1 and len(candidate[0]) == 1 and not any(
                f.file_name in self.task.deletion_files
                or (self.reader.lookup and f.level == 0) for f in candidate[0][0]):
            for f in candidate[0][0]:
                self._upgrade(f)
            return
        self._rewrite_sections(candidate)

    def _upgrade(self, f: DataFileMeta) -> None:
        task = self.task
        top = task.output_level == task.max_level
        has_deletes = f.delete_row_count is None or f.delete_row_count > 0
        # a file holding expired records is rewritten without them [JAVA MergeTreeCompactTask]
        expired = self.expire is not None and self.expire.is_expired_file(
            f, _schemas(self.ex.schema, self.ex.schema_manager))
        if (top and has_deletes) or self.ex.options.compaction_force_rewrite_all_files \
                or expired:
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
        log = self._new_writer(True) if task.changelog or task.lookup_changelog else None
        level = task.max_level if task.changelog else None
        drop = task.drop_delete or task.changelog
        dedup = self.ex.dedup_columns
        for section in sections:
            above = runs_meeting(task.lookup_runs, section, self.ex.cmp) if any(
                f.level == 0 for run in section for f in run) else []
            for piece in self.reader.merge_section(section, drop, level, lookup_runs=above,
                                                   lookup_changelog=task.lookup_changelog,
                                                   dedup=dedup):
                if piece.rows.num_rows:
                    data.append(piece.rows)
                if log is not None and piece.changelog is not None \
                        and piece.changelog.num_rows:
                    log.append(piece.changelog)
                # only a deletion-vector table marks the rows its results replace; other
                # lookup tables (changelog-producer=lookup, force-lookup) keep them, and their
                # reads merge only the newest record above level 0 [JAVA dvMaintainer null]
                if piece.replaced and self.ex.options.deletion_vectors_enabled:
                    merge_positions(self.replaced, piece.replaced)
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
        index = []
        if self.replaced:
            entry = bucket_vectors(
                IndexManifestFile(self.ex.file_io, self.ex.table_path, self.ex.schema.options),
                self.ex.file_io, task.partition, task.bucket, task.deletion_files,
                self.replaced, {f.file_name for f in self.before})
            index = [] if entry is None else [entry]
        return CompactOutcome(task, msg, stats, index)

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
    """One worker per task, at most one per core (`task_budget` assumes the same)."""
    return max(1, min(len(tasks), os.cpu_count() or 2))


def execute_tasks(executor: CompactTaskExecutor, tasks: Sequence[CompactTask],
                  workers: int | None = None, runner: Runner | None = None
                  ) -> list[CompactOutcome]:
    """Run tasks through `runner` (a thread pool of `workers` by default); if one fails, the
    files the others wrote are deleted too and its error is raised."""
    results = default_runner(runner, workers).map(captured(executor.execute), list(tasks))
    done, error = split_failures(results)
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


def partition_name(keys: Sequence[str], values: Sequence[Any]) -> str:
    return "/".join(f"{k}={v}" for k, v in zip(keys, values)) or "(unpartitioned)"
