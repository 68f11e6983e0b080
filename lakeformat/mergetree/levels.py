"""The LSM tree of one bucket and Paimon's compaction picks over it.

`Levels` orders a bucket's files into sorted runs as Java's `Levels` does (level-0 files
newest first, one run each; every level >= 1 one run). `pick_full_compaction` and
`UniversalCompaction.pick` choose what to compact and at which output level
[paimon-format.md §7.5]; `interval_partition` splits the chosen files into key-disjoint
sections of sorted runs, so a section holding one large file can be moved up a level without
rewriting it (Java's "upgrade").
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import numpy as np

from lakeformat import clock
from lakeformat.meta.binary_row import from_avro_bytes
from lakeformat.meta.data_file_meta import DataFileMeta
from lakeformat.options import CoreOptions
from lakeformat.schema.types import DataType


class KeyComparator:
    """Compares the serialized `_MIN_KEY`/`_MAX_KEY` rows of files, field by field.

    Values compare like Java's generated key comparator for the types keys can have: numbers,
    strings (by code point, which is UTF-8 byte order), bytes, dates and times; floats order like
    Double.compare (-0.0 below 0.0, NaN largest).
    """

    def __init__(self, key_types: Sequence[DataType]):
        self.key_types = list(key_types)
        self._cache: dict[bytes, tuple] = {}

    def key(self, row: bytes) -> tuple:
        cached = self._cache.get(row)
        if cached is None:
            values = from_avro_bytes(row, self.key_types)
            cached = self._cache[row] = tuple(_order(v) for v in values)
        return cached

    def compare(self, a: bytes, b: bytes) -> int:
        ka, kb = self.key(a), self.key(b)
        return (ka > kb) - (ka < kb)


def _order(v: Any) -> Any:
    if v is None:
        return (0,)
    if isinstance(v, float):
        if math.isnan(v):
            return (1, 2, 0.0)
        return (1, 1, v, math.copysign(1.0, v))
    return (1, v)


@dataclass(frozen=True)
class LevelSortedRun:
    level: int
    files: tuple[DataFileMeta, ...]

    @property
    def total_size(self) -> int:
        return sum(f.file_size for f in self.files)


@dataclass(frozen=True)
class CompactUnit:
    output_level: int
    files: tuple[DataFileMeta, ...]
    #: which pick chose it: "full", "size-amp", "size-ratio", "run-count", "force-l0", or the
    #: early-full option that fired ("optimization-interval", "total-size-threshold",
    #: "incremental-size-threshold"); reports and health messages show it
    reason: str = field(default="", compare=False)

    @staticmethod
    def of_runs(output_level: int, runs: Sequence[LevelSortedRun]) -> CompactUnit:
        return CompactUnit(output_level, tuple(f for r in runs for f in r.files))


def _level0_order(a: DataFileMeta, b: DataFileMeta) -> int:
    """Newest first: larger max sequence number, then smaller min sequence number, then older
    creation time, then file name (Java's level-0 TreeSet comparator)."""
    if a.max_sequence_number != b.max_sequence_number:
        return -1 if a.max_sequence_number > b.max_sequence_number else 1
    if a.min_sequence_number != b.min_sequence_number:
        return -1 if a.min_sequence_number < b.min_sequence_number else 1
    ta, tb = a.creation_time or 0, b.creation_time or 0
    if ta != tb:
        return -1 if ta < tb else 1
    return (a.file_name > b.file_name) - (a.file_name < b.file_name)


def _run_order(a: DataFileMeta, b: DataFileMeta) -> int:
    """The order of `Levels.sorted_runs`: level 0 first (newest first), then levels ascending;
    files of one level >= 1 are one run and compare equal."""
    if a.level != b.level:
        return -1 if a.level < b.level else 1
    return _level0_order(a, b) if a.level == 0 else 0


def tie_ranks(files: Sequence[DataFileMeta]) -> np.ndarray:
    """Per file, its rank for breaking ties between records of one key with equal
    `sequence.field` values and sequence numbers: larger = newer = wins.

    The rule: the sorted run that comes first in `Levels.sorted_runs` (Java's run order) is the
    newest — level 0 beats every higher level, a lower level beats a higher one, and among
    level-0 files the one Java's level-0 order puts first wins. Every reader (merge-on-read,
    compaction, the changelog producer) ranks by it, and every compaction that touches level 0
    takes all of it, so compaction never changes which record of a tie wins.
    """
    n = len(files)
    order = sorted(range(n), key=functools.cmp_to_key(
        lambda i, j: _run_order(files[i], files[j])))
    ranks = np.empty(n, dtype=np.int64)
    rank = n
    for pos, i in enumerate(order):
        if pos and _run_order(files[order[pos - 1]], files[i]) != 0:
            rank -= 1
        ranks[i] = rank
    return ranks


def may_tie(files: Sequence[DataFileMeta]) -> bool:
    """Whether two records of one key in `files` can tie on sequence number: only if the
    sequence ranges of two sorted runs overlap (a level >= 1 is one run: its files hold
    distinct keys). lakeformat's writers never number so; without a possible tie the file
    rank need not be sorted on."""
    spans = [(f.min_sequence_number, f.max_sequence_number) for f in files if f.level == 0]
    by_level: dict[int, tuple[int, int]] = {}
    for f in files:
        if f.level > 0:
            lo, hi = by_level.get(f.level, (f.min_sequence_number, f.max_sequence_number))
            by_level[f.level] = (min(lo, f.min_sequence_number), max(hi, f.max_sequence_number))
    spans = sorted(spans + list(by_level.values()))
    return any(b[0] <= a[1] for a, b in zip(spans, spans[1:]))


class Levels:
    """A bucket's files by level; `num_levels` grows to hold the highest level present."""

    def __init__(self, files: Sequence[DataFileMeta], num_levels: int, cmp: KeyComparator):
        highest = max((f.level for f in files), default=-1)
        self.num_levels = max(num_levels, highest + 1)
        if self.num_levels < 2:
            raise ValueError("num-levels must be at least 2")
        self.level0 = sorted((f for f in files if f.level == 0),
                             key=functools.cmp_to_key(_level0_order))
        self.levels: dict[int, list[DataFileMeta]] = {}
        for f in files:
            if f.level > 0:
                self.levels.setdefault(f.level, []).append(f)
        for lv in self.levels.values():
            lv.sort(key=lambda f: cmp.key(f.min_key))

    @property
    def max_level(self) -> int:
        return self.num_levels - 1

    def sorted_runs(self) -> list[LevelSortedRun]:
        runs = [LevelSortedRun(0, (f,)) for f in self.level0]
        runs += [LevelSortedRun(lv, tuple(self.levels[lv])) for lv in sorted(self.levels)]
        return runs

    def non_empty_highest_level(self) -> int:
        if self.levels:
            return max(self.levels)
        return 0 if self.level0 else -1


def pick_full_compaction(levels: Levels, force_rewrite_all: bool = False,
                         rewrite: Callable[[DataFileMeta], bool] | None = None
                         ) -> CompactUnit | None:
    """Everything into the top level. A bucket that is one run at the top already: nothing,
    or (`compaction.force-rewrite-all-files`) all its files, or the files `rewrite` asks for
    (those holding expired records) [JAVA CompactStrategy.pickFullCompaction]."""
    runs = levels.sorted_runs()
    if not runs:
        return None
    if len(runs) == 1 and runs[0].level == levels.max_level:
        if force_rewrite_all:
            return CompactUnit(levels.max_level, runs[0].files, "full")
        picked = tuple(f for f in runs[0].files if rewrite is not None and rewrite(f))
        return CompactUnit(levels.max_level, picked, "full") if picked else None
    return replace(CompactUnit.of_runs(levels.max_level, runs), reason="full")


class UniversalCompaction:
    """Java's `UniversalCompaction` picks: size amplification, size ratio, run count."""

    def __init__(self, options: CoreOptions, now: datetime | None = None):
        self.max_size_amp = options.compaction_max_size_amplification_percent
        self.size_ratio = options.compaction_size_ratio
        self.trigger = options.num_sorted_run_compaction_trigger
        self.offpeak_ratio = options.compaction_offpeak_ratio_now(now or clock.local_now())
        self.optimization_interval = options.compaction_optimization_interval
        self.total_size_threshold = options.compaction_total_size_threshold
        self.incremental_size_threshold = options.compaction_incremental_size_threshold

    def early_full_compaction(self, max_level: int, runs: list[LevelSortedRun]
                              ) -> CompactUnit | None:
        """Java's `EarlyFullCompaction`. A batch job has no memory of earlier full compactions,
        so `compaction.optimization-interval` always fires, as in a freshly started Java job."""
        if len(runs) <= 1:
            return None
        if self.optimization_interval is not None:
            return replace(CompactUnit.of_runs(max_level, runs), reason="optimization-interval")
        total = sum(r.total_size for r in runs)
        if self.total_size_threshold is not None and total < self.total_size_threshold:
            return replace(CompactUnit.of_runs(max_level, runs), reason="total-size-threshold")
        incremental = sum(r.total_size for r in runs if r.level != max_level)
        if (self.incremental_size_threshold is not None
                and incremental > self.incremental_size_threshold):
            return replace(CompactUnit.of_runs(max_level, runs),
                           reason="incremental-size-threshold")
        return None

    def pick(self, num_levels: int, runs: list[LevelSortedRun]) -> CompactUnit | None:
        max_level = num_levels - 1
        unit = self.early_full_compaction(max_level, runs)
        if unit is not None:
            return unit
        unit = self.pick_for_size_amp(max_level, runs)
        if unit is None:
            unit = self.pick_for_size_ratio(max_level, runs)
        if unit is None and len(runs) > self.trigger:
            unit = self._size_ratio(max_level, runs, len(runs) - self.trigger + 1)
            unit = unit and replace(unit, reason="run-count")
        return unit

    def force_pick_level_0(self, num_levels: int, runs: list[LevelSortedRun]
                           ) -> CompactUnit | None:
        """Java's `forcePickL0`: the leading level-0 runs (and what size ratio adds) go up,
        even below the run-count trigger; what a lookup table's compaction picks when the
        regular picks find nothing [JAVA ForceUpLevel0Compaction]."""
        count = 0
        for r in runs:
            if r.level > 0:
                break
            count += 1
        unit = self._size_ratio(num_levels - 1, runs, count, force=True) if count else None
        return unit and replace(unit, reason="force-l0")

    def pick_for_size_amp(self, max_level: int, runs: list[LevelSortedRun]) -> CompactUnit | None:
        if len(runs) < self.trigger:
            return None
        candidate = sum(r.total_size for r in runs[:-1])
        earliest = runs[-1].total_size
        if candidate * 100 > self.max_size_amp * earliest:
            return replace(CompactUnit.of_runs(max_level, runs), reason="size-amp")
        return None

    def pick_for_size_ratio(self, max_level: int, runs: list[LevelSortedRun]
                            ) -> CompactUnit | None:
        if len(runs) < self.trigger:
            return None
        unit = self._size_ratio(max_level, runs, 1)
        return unit and replace(unit, reason="size-ratio")

    def _size_ratio(self, max_level: int, runs: list[LevelSortedRun], count: int,
                    force: bool = False) -> CompactUnit | None:
        size = sum(r.total_size for r in runs[:count])
        triggered = force or count > 1
        ratio = (100.0 + self.size_ratio + self.offpeak_ratio) / 100.0
        for nxt in runs[count:]:
            if size * ratio < nxt.total_size and (not triggered or nxt.level > 1):
                break
            size += nxt.total_size
            count += 1
            triggered = True
        return create_unit(runs, max_level, count) if triggered else None


def create_unit(runs: list[LevelSortedRun], max_level: int, count: int) -> CompactUnit:
    """Output level = level of the next untouched run - 1, never 0; the top when all runs."""
    if count == len(runs):
        return CompactUnit.of_runs(max_level, runs)
    output = max(0, runs[count].level - 1)
    if output == 0:
        for nxt in runs[count:]:
            count += 1
            if nxt.level != 0:
                output = nxt.level
                break
    if count == len(runs):
        output = max_level
    return CompactUnit.of_runs(output, runs[:count])


def interval_partition(files: Sequence[DataFileMeta], cmp: KeyComparator
                       ) -> list[list[list[DataFileMeta]]]:
    """Key-disjoint sections, each a list of sorted runs (Java's `IntervalPartition`)."""
    ordered = sorted(files, key=lambda f: (cmp.key(f.min_key), cmp.key(f.max_key)))
    sections: list[list[DataFileMeta]] = []
    bound: tuple | None = None
    for f in ordered:
        if sections and bound is not None and cmp.key(f.min_key) > bound:
            bound = None
            sections.append([])
        if not sections:
            sections.append([])
        sections[-1].append(f)
        if bound is None or cmp.key(f.max_key) > bound:
            bound = cmp.key(f.max_key)
    return [_runs_of_section(s, cmp) for s in sections]


def _runs_of_section(files: list[DataFileMeta], cmp: KeyComparator) -> list[list[DataFileMeta]]:
    """Greedy packing of a section's files into as few non-overlapping runs as Java makes."""
    runs: list[list[DataFileMeta]] = []
    for f in files:  # files are sorted by min key
        lo = cmp.key(f.min_key)
        # Java polls the run whose last max key is smallest
        best = min(range(len(runs)), key=lambda i: cmp.key(runs[i][-1].max_key), default=None)
        if best is not None and lo > cmp.key(runs[best][-1].max_key):
            runs[best].append(f)
        else:
            runs.append([f])
    return runs
