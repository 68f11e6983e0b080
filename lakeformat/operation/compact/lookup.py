"""Compaction of lookup tables (`changelog-producer=lookup`, `deletion-vectors.enabled`,
`force-lookup`): what is picked, the runs a rewrite looks keys up in, and the deletion vectors
the rewrite leaves on the rows it replaces.

Every first-row table compacts this way too, whatever its changelog producer (`needs_lookup`).
Picking follows Java's `ForceUpLevel0Compaction`: universal compaction first, else every leading
level-0 run goes up (what a Java writer does before each commit of such a table). A full
compaction of a deletion-vector bucket also rewrites a top run that carries vectors. A rewrite
of level-0 files reads the files above its output level whose key range meets the section
(`mergetree.lookup` does the rest); each replaced row gets a mark in its file's deletion vector,
and the bucket's vectors are written into one new index file that replaces the bucket's
[JAVA LookupMergeTreeCompactRewriter, BucketedDvMaintainer].
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from lakeformat.mergetree import (
    CompactUnit,
    KeyComparator,
    Levels,
    UniversalCompaction,
    pick_full_compaction,
)
from lakeformat.meta.data_file_meta import DataFileMeta
from lakeformat.meta.deletion_vector import (
    DeletionFile,
    frames_of,
    read_deleted,
    serialize_vector,
    write_index_file,
)
from lakeformat.meta.index_manifest import (
    DeletionVectorRange,
    IndexManifestEntry,
    IndexManifestFile,
)
from lakeformat.options import CoreOptions, parse_bool
from lakeformat.storage import FileIO


def needs_lookup(opts: CoreOptions) -> bool:
    """Whether compaction looks keys up in the levels above its output: the lookup producer,
    deletion vectors, `force-lookup`, and every first-row table [JAVA LookupStrategy]."""
    return opts.lookup_merge or opts.merge_engine == "first-row"


def waits_for_lookup(opts: CoreOptions) -> bool:
    """Whether a writer compacts its level-0 files before it returns: a table that looks keys
    up, with `lookup-wait` (fallback `changelog-producer.lookup-wait`, default true) and
    not `write-only` [JAVA CoreOptions.prepareCommitWaitCompaction]."""
    key = "lookup-wait" if "lookup-wait" in opts.raw else "changelog-producer.lookup-wait"
    return (needs_lookup(opts) and parse_bool(opts.raw, key, True)
            and not parse_bool(opts.raw, "write-only", False))


def pick_lookup_unit(levels: Levels, full: bool, universal: UniversalCompaction | None,
                     force_rewrite_all: bool, has_vectors: bool,
                     rewrite: Callable[[DataFileMeta], bool] | None = None
                     ) -> CompactUnit | None:
    runs = levels.sorted_runs()
    if full:
        # a bucket that is one run at the top already: one with vectors is rewritten whole
        # (its expired files with it); otherwise the files `rewrite` asks for
        top_only = len(runs) == 1 and runs[0].level == levels.max_level
        if has_vectors and top_only and not force_rewrite_all:
            return CompactUnit(levels.max_level, tuple(runs[0].files), "deletion-vectors")
        return pick_full_compaction(levels, force_rewrite_all, rewrite)
    assert universal is not None
    unit = universal.pick(levels.num_levels, runs)
    return unit if unit is not None else universal.force_pick_level_0(levels.num_levels, runs)


def lookup_runs(files: Sequence[DataFileMeta], unit: CompactUnit
                ) -> tuple[tuple[DataFileMeta, ...], ...]:
    """The bucket's files above the unit's output level, one run per level, lowest first."""
    if not any(f.level == 0 for f in unit.files):
        return ()
    picked = {f.file_name for f in unit.files}
    by_level: dict[int, list[DataFileMeta]] = {}
    for f in files:
        if f.file_name not in picked and f.level > unit.output_level:
            by_level.setdefault(f.level, []).append(f)
    return tuple(tuple(by_level[lv]) for lv in sorted(by_level))


def runs_meeting(runs: Sequence[Sequence[DataFileMeta]], section: Sequence[Sequence[DataFileMeta]],
                 cmp: KeyComparator) -> list[list[DataFileMeta]]:
    """The files of `runs` whose key range meets the section's, in key order per run."""
    files = [f for run in section for f in run]
    lo = min((f.min_key for f in files), key=cmp.key)
    hi = max((f.max_key for f in files), key=cmp.key)
    out = []
    for run in runs:
        meeting = [f for f in run
                   if cmp.compare(f.max_key, lo) >= 0 and cmp.compare(f.min_key, hi) <= 0]
        if meeting:
            out.append(sorted(meeting, key=lambda f: cmp.key(f.min_key)))
    return out


def merge_positions(into: dict[str, np.ndarray], more: Mapping[str, np.ndarray]) -> None:
    for name, positions in more.items():
        old = into.get(name)
        into[name] = positions if old is None else np.union1d(old, positions)


def bucket_vectors(index_file: IndexManifestFile, file_io: FileIO, partition: bytes,
                   bucket: int, current: Mapping[str, DeletionFile],
                   replaced: Mapping[str, np.ndarray], removed: set[str]
                   ) -> IndexManifestEntry | None:
    """The bucket's deletion vectors after a rewrite: the current ones of files that stay, with
    the replaced rows added, in one new index file (None when no vector is left)."""
    frames: dict[str, bytes] = {}
    by_index: dict[str, list[tuple[str, DeletionFile]]] = {}
    for name, deletion in current.items():
        if name not in removed and name not in replaced:
            by_index.setdefault(deletion.path, []).append((name, deletion))
    for path, files in by_index.items():  # unchanged vectors: their bytes as stored
        frames.update(frames_of(file_io, path, [
            DeletionVectorRange(n, d.offset, d.length, d.cardinality) for n, d in files]))
    for name, positions in replaced.items():
        if name in removed:
            continue
        old = current.get(name)
        merged = positions if old is None else np.union1d(positions,
                                                          read_deleted(file_io, old))
        frames[name] = serialize_vector(merged)
    if not frames:
        return None
    return write_index_file(index_file, partition, bucket, dict(sorted(frames.items())))
