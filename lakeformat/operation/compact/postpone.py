"""Compaction of a postpone-bucket table (`bucket = -2`), as Java's postpone compaction does.

Records in `bucket-postpone` are invisible to readers until this compaction assigns them to real
buckets [JAVA CompactAction.buildForPostponeBucketCompaction, PostponeBucketCompactSplitSource,
PostponeBucketCompactOperator, RewritePostponeBucketCommittableOperator, BucketFiles,
RemovePostponeBucketFilesOperator, PostponeUtils]. One run, from the latest snapshot:

1. Each partition with postpone files gets its bucket count: the one its real buckets already
   have, else `postpone.default-bucket-num`, else the postpone files' rows over
   `postpone.target-row-num-per-bucket` or their bytes over `postpone.target-size-per-bucket`
   (1 gb), at least one (`PostponeBucketNumResolver`).
2. Its postpone files are read whole, oldest first (by creation time; the manifest's order breaks
   ties), each file's records in file order, and routed by the bucket hash. Each bucket's
   records are written as a writer writes them: numbered after the bucket's largest sequence
   number in that order (a later postpone record wins its key), merged per key with the table's
   merge engine, into level-0 files marked as written by a writer (`_FILE_SOURCE` APPEND), with
   the partition's bucket count as `_TOTAL_BUCKETS`; with `changelog-producer=input` the records
   are also written as changelog files, as Java's writer does.
3. Every bucket that received records, and every real bucket holding level-0 files, then gets
   Paimon's universal (non-full) pick, as Java's `write.compact(partition, bucket, false)`;
   the merge with the bucket's earlier data happens there or on a later compaction.
4. One COMPACT snapshot: DELETE of the postpone files, and per bucket the files the pick
   compacted as DELETE and the new level-0 files plus the pick's outputs as ADD (a new file the
   pick consumed is never committed and is deleted).

`full` is not used: Java's compact action takes this path for a postpone table whatever is
asked. Partition selection and `partition_idle_time` narrow which partitions are assigned.
The writes of step 2 run in this process; the picks of step 3 run through the job's runner.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.data.file_read import read_data_file
from lakeformat.data.kv_file import KeyValueFileWriter
from lakeformat.errors import (
    CommitConflictError,
    CommitFailedError,
    CommitStateUnknownError,
    UnsupportedError,
)
from lakeformat.merge import merge_engine
from lakeformat.merge.context import MergeContext
from lakeformat.merge.sort import DELETE, UPDATE_BEFORE, key_column, sort_for_merge
from lakeformat.meta.binary_row import from_avro_bytes
from lakeformat.meta.bucket import bucket_ids
from lakeformat.meta.data_file_meta import FileKind, ManifestEntry
from lakeformat.operation.commit import (
    CommitMessage,
    SequenceBase,
    SequenceConflict,
    snapshot_identity,
)
from lakeformat.operation.compact.task import (
    execute_tasks,
    partition_name,
    plan_from_entries,
    remove_outputs,
    task_budget,
)
from lakeformat.operation.paths import PathFactory
from lakeformat.operation.postpone import (
    POSTPONE_BUCKET,
    compaction_bucket_num,
    known_bucket_counts,
)
from lakeformat.operation.runner import ThreadRunner, captured, split_failures
from lakeformat.operation.scan import FileStoreScan
from lakeformat.options import CoreOptions
from lakeformat.results import CompactResult, CompactStats
from lakeformat.schema.schema_manager import SchemaManager
from lakeformat.schema.table_schema import SEQUENCE_NUMBER, VALUE_KIND
from lakeformat.storage.parallel import parallel_map


@dataclass(frozen=True)
class BucketAssignment:
    """The postpone records one real bucket receives, in the order they are numbered."""

    partition: bytes
    partition_values: tuple
    bucket: int
    total_buckets: int
    rows: pa.Table  # value columns and _VALUE_KIND
    max_sequence_number: int  # the bucket's largest live one (-1: none)


class PostponeCompaction:
    """One postpone compaction for `job` (a `CompactJob` of a `bucket = -2` table)."""

    def __init__(self, job: Any):
        self.job = job
        self.schema = job.schema
        self.options: CoreOptions = job.options
        self.paths = PathFactory(job.file_io, job.table_path, job.schema)
        self.schema_manager = SchemaManager(job.file_io, job.table_path)
        self.engine = merge_engine(job.schema)
        self.ctx = MergeContext.of(job.schema)
        self.keys = list(job.schema.trimmed_primary_keys)
        self.part_types = [f.type for f in job.schema.partition_fields()]
        self.written: list[CommitMessage] = []  # the level-0 files of step 2
        self.outcomes: list = []  # the picks of step 3

    # -- the whole run -------------------------------------------------------------------------
    def run(self) -> CompactResult:
        job = self.job
        start = time.monotonic()
        earlier = [s.id for s in job.landed_commits()]
        latest = job.committer.snapshots.latest_snapshot()
        scan = FileStoreScan(job.file_io, job.table_path, self.schema)
        entries = scan.live_entries(latest, job.partition_filter)
        entries = self._idle_partitions(entries)
        dvs = scan.deletion_files(latest) if entries else {}
        if any(b == POSTPONE_BUCKET and files for (_, b), files in dvs.items()):
            raise UnsupportedError(f"{job.table_path}: postpone files with deletion vectors "
                                   "are not compacted")
        known = known_bucket_counts(entries, job.table_path)
        postponed: dict[bytes, list[ManifestEntry]] = {}
        real: dict[tuple[bytes, int], list[ManifestEntry]] = {}
        for e in entries:
            if e.bucket == POSTPONE_BUCKET:
                postponed.setdefault(e.partition, []).append(e)
            elif e.bucket >= 0:
                real.setdefault((e.partition, e.bucket), []).append(e)
        level0 = {k for k, es in real.items()
                  if any(e.file.level == 0 and e.total_buckets > 0 for e in es)}
        max_seq = {k: max(e.file.max_sequence_number for e in es) for k, es in real.items()}
        assignments = [a for p, es in postponed.items()
                       for a in self._assign(p, es, known, max_seq)]
        job.say(f"{job.table_name}: {sum(len(v) for v in postponed.values())} postpone files "
                f"in {len(postponed)} partitions to assign; {len(level0)} buckets with level-0 "
                "files")
        parts: dict[str, CompactStats] = {}
        total = CompactStats()
        failed: dict[str, str] = job.failed
        ids: list[int] = []
        if postponed or level0:
            ids = self._write_pick_commit(latest, postponed, real, level0, assignments, dvs,
                                          parts, total, failed)
        return CompactResult(job.table_name, job.full, ids, parts, total, failed,
                             round(time.monotonic() - start, 3), job.commit_user,
                             job.commit_identifier, earlier)

    def _idle_partitions(self, entries: list[ManifestEntry]) -> list[ManifestEntry]:
        cutoff = self.job.partition_idle_before
        if cutoff is None:
            return entries
        newest: dict[bytes, int] = {}
        for e in entries:
            newest[e.partition] = max(newest.get(e.partition, 0), e.file.creation_time or 0)
        return [e for e in entries if newest[e.partition] < cutoff]

    # -- step 1 and 2: route the postpone records --------------------------------------------
    def _assign(self, partition: bytes, entries: list[ManifestEntry], known: dict[bytes, int],
                max_seq: dict[tuple[bytes, int], int]) -> list[BucketAssignment]:
        values = tuple(from_avro_bytes(partition, self.part_types))
        files = [e.file for e in sorted(entries, key=lambda e: e.file.creation_time or 0)]
        n = known.get(partition) or compaction_bucket_num(
            sum(f.row_count for f in files), sum(f.file_size for f in files), self.options)
        names = self.schema.field_names

        def read(meta):
            return read_data_file(self.job.file_io,
                                  self.paths.data_file(values, POSTPONE_BUCKET, meta), meta,
                                  self.schema, self.schema_manager, names,
                                  self.options.file_format)

        tables = parallel_map(read, files)
        rows = pa.concat_tables([t.drop_columns([SEQUENCE_NUMBER]) for t in tables])
        kinds = rows[VALUE_KIND].to_numpy()
        drop = np.zeros(rows.num_rows, dtype=bool)
        if self.options.ignore_delete:  # Java's writer filters the kinds again
            drop |= (kinds == UPDATE_BEFORE) | (kinds == DELETE)
        if self.options.ignore_update_before:
            drop |= kinds == UPDATE_BEFORE
        if drop.any():
            rows = rows.filter(pa.array(~drop))
        types = [self.schema.field(k).type for k in self.schema.bucket_keys]
        buckets = bucket_ids([rows[k] for k in self.schema.bucket_keys], types, n)
        out = []
        for b in np.unique(buckets).tolist():
            at = np.flatnonzero(buckets == b)
            out.append(BucketAssignment(partition, values, int(b), n, rows.take(pa.array(at)),
                                        max_seq.get((partition, int(b)), -1)))
        return out

    def write_bucket(self, a: BucketAssignment) -> CommitMessage:
        """A bucket's postpone records as a writer writes them: level-0 files (and, with
        `changelog-producer=input`, the records as changelog)."""
        rows = a.rows
        self.engine.check_retracts(rows.drop_columns([VALUE_KIND]),
                                   rows[VALUE_KIND].to_numpy(), self.job.table_path)
        keys = pa.table([key_column(rows[k]) for k in self.keys],
                        names=[f"k{i}" for i in range(len(self.keys))])
        order = pc.sort_indices(keys, sort_keys=[(f"k{i}", "ascending")
                                                 for i in range(len(self.keys))])
        rows = rows.take(order)  # stable: a key's records keep their order
        seq = pa.array(np.arange(rows.num_rows, dtype=np.int64) + (a.max_sequence_number + 1))
        names = self.schema.field_names
        kv = pa.table([seq, rows[VALUE_KIND], *(rows[n] for n in names)],
                      names=[SEQUENCE_NUMBER, VALUE_KIND, *names])
        if self.ctx.sequence_fields:
            kv = sort_for_merge(kv, self.keys, self.ctx.sequence_fields,
                                self.ctx.sequence_ascending)
        bucket_dir = self.paths.bucket_dir(a.partition_values, a.bucket)
        changelog = []
        if self.options.changelog_producer == "input":
            changelog = KeyValueFileWriter(self.job.file_io, bucket_dir, self.schema,
                                           self.job.executor.changelog_options).write(kv)
        files = KeyValueFileWriter(self.job.file_io, bucket_dir, self.schema,
                                   self.options).write(self.engine.merge_sorted(kv))
        return CommitMessage(a.partition, a.bucket, a.total_buckets, new_files=files,
                             changelog_files=changelog)

    # -- step 2 to 4 ---------------------------------------------------------------------------
    def _write_pick_commit(self, latest, postponed, real, level0, assignments, dvs, parts,
                           total, failed) -> list[int]:
        job = self.job
        results = ThreadRunner(job.workers or 2).map(captured(self.write_bucket), assignments)
        self.written, error = split_failures(results)
        if error is not None:
            self._remove_written()
            raise error
        try:
            picks = self._pick(real, level0, dvs, latest)
            self.outcomes = execute_tasks(job.executor, picks, job.workers, job.runner)
        except BaseException:
            self._remove_written()
            raise
        messages, consumed, stats = self._messages(postponed)
        seen = {f: dv for o in self.outcomes for f, dv in o.task.deletions_seen.items()}
        watch = self.options.deletion_vectors_enabled or any(
            o.task.deletion_files for o in self.outcomes)
        index = [e for o in self.outcomes for e in o.index]
        base = SequenceBase(snapshot_identity(latest), {
            (a.partition, a.bucket): a.max_sequence_number for a in assignments})
        since = job.committer.snapshots.latest_snapshot_id()
        try:
            snap = job.committer.commit(
                messages, kind="COMPACT", sequence_base=base,
                deletions_seen=seen if watch else None, index_added=index,
                index_base=latest.index_manifest if index else None)
        except CommitStateUnknownError:
            raise  # the snapshot may name the new files: keep them
        except (CommitConflictError, SequenceConflict, CommitFailedError) as e:
            snap = job.landed_after(since, "COMPACT", e) \
                if isinstance(e, CommitFailedError) else None
            if snap is None:  # nothing landed: the new files go, the partitions say why
                self._remove_all()
                for p in {m.partition for m in messages}:
                    failed[self._name(p)] = str(e)
                return []
        except BaseException as e:
            try:
                landed = job.landed_after(since, "COMPACT", e)
            except CommitStateUnknownError:
                raise e from None
            if landed is None:
                self._remove_all()
            raise
        if consumed:  # new files a pick compacted away: never committed
            job.file_io.delete_many(consumed)
        for name, s in stats.items():
            parts.setdefault(name, CompactStats()).add(s)
            total.add(s)
        return [snap.id] if snap is not None else []

    def _pick(self, real, level0, dvs, latest) -> list:
        """Universal picks for the buckets that received records or hold level-0 files."""
        touched = {(m.partition, m.bucket) for m in self.written} | set(level0)
        entries = [e for k in sorted(touched) for e in real.get(k, [])]
        entries += [ManifestEntry(FileKind.ADD, m.partition, m.bucket, m.total_buckets, f)
                    for m in self.written for f in m.new_files]
        tasks = plan_from_entries(self.schema, self.options, entries, dvs, False,
                                  index_base=latest.index_manifest if latest else None)
        share = task_budget(self.job.memory_budget, self.job.workers, len(tasks))
        return [replace(t, memory_budget=share) for t in tasks]

    def _messages(self, postponed) -> tuple[list[CommitMessage], list[str], dict]:
        """Java's `BucketFiles`: per bucket, the new files a pick left, its outputs and the
        earlier files it compacted; the postpone files' DELETE. Also the paths of the new files
        a pick consumed and each partition's counts."""
        stats: dict[str, CompactStats] = {}
        messages = []
        for p, es in postponed.items():
            messages.append(CommitMessage(p, POSTPONE_BUCKET, es[0].total_buckets,
                                          deleted_files=[e.file for e in es]))
            s = stats.setdefault(self._name(p), CompactStats())
            s.files_in += len(es)
            s.bytes_in += sum(e.file.file_size for e in es)
            s.rows_in += sum(e.file.row_count for e in es)
        buckets: dict[tuple[bytes, int], dict] = {}
        for m in self.written:
            buckets[(m.partition, m.bucket)] = {
                "total": m.total_buckets, "new": {f.file_name: f for f in m.new_files},
                "before": [], "after": [], "log": list(m.changelog_files)}
        consumed = []
        for o in self.outcomes:
            t = o.task
            b = buckets.setdefault((t.partition, t.bucket), {
                "total": t.total_buckets, "new": {}, "before": [], "after": [], "log": []})
            outputs = {f.file_name for f in o.message.new_files}
            for f in o.message.deleted_files:
                if f.file_name in b["new"]:
                    del b["new"][f.file_name]
                    if f.file_name not in outputs:
                        consumed.append(self.paths.data_file(t.partition_values, t.bucket, f))
                else:
                    b["before"].append(f)
            b["after"] += o.message.new_files
            b["log"] += o.message.changelog_files
        for (p, bucket), b in buckets.items():
            new = list(b["new"].values()) + b["after"]
            messages.append(CommitMessage(p, bucket, b["total"], new_files=new,
                                          deleted_files=b["before"], changelog_files=b["log"]))
            s = stats.setdefault(self._name(p), CompactStats())
            s.buckets_compacted += 1
            s.files_in += len(b["before"])
            s.files_out += len(new)
            s.bytes_in += sum(f.file_size for f in b["before"])
            s.bytes_out += sum(f.file_size for f in new)
            s.rows_in += sum(f.row_count for f in b["before"])
            s.rows_out += sum(f.row_count for f in new)
            s.changelog_files += len(b["log"])
            s.changelog_rows += sum(f.row_count for f in b["log"])
        return messages, consumed, stats

    def _name(self, partition: bytes) -> str:
        return partition_name(self.schema.partition_keys,
                              from_avro_bytes(partition, self.part_types))

    # -- cleanup -------------------------------------------------------------------------------
    def _remove_written(self) -> None:
        paths = []
        for m in self.written:
            values = tuple(from_avro_bytes(m.partition, self.part_types))
            paths += [self.paths.data_file(values, m.bucket, f)
                      for f in m.new_files + m.changelog_files]
        if paths:
            self.job.file_io.delete_many(paths)
        self.written = []

    def _remove_all(self) -> None:
        remove_outputs(self.job.executor, self.outcomes)
        self.outcomes = []
        self._remove_written()


def compact_postpone(job: Any) -> CompactResult:
    """Run `job` (a `CompactJob` of a `bucket = -2` table) as a postpone compaction."""
    return PostponeCompaction(job).run()
