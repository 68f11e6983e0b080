"""Levels, universal compaction picks and interval partitioning, against the cases of Java
Paimon's UniversalCompactionTest / IntervalPartitionTest (sizes and expected picks)."""

from __future__ import annotations

from datetime import datetime

from lakeformat.mergetree.levels import (
    KeyComparator,
    Levels,
    LevelSortedRun,
    UniversalCompaction,
    create_unit,
    interval_partition,
    may_tie,
    pick_full_compaction,
    tie_ranks,
)
from lakeformat.meta.binary_row import to_avro_bytes
from lakeformat.meta.data_file_meta import DataFileMeta, SimpleStats
from lakeformat.options import CoreOptions
from lakeformat.schema.types import int_

CMP = KeyComparator([int_(False)])
_n = iter(range(1_000_000))


def meta(level: int, size: int = 1, lo: int = 0, hi: int = 10, min_seq: int = 0,
         max_seq: int = 0, name: str | None = None, ctime: int = 0) -> DataFileMeta:
    return DataFileMeta(
        file_name=name or f"f{next(_n)}", file_size=size, row_count=1,
        min_key=to_avro_bytes([lo], [int_(False)]), max_key=to_avro_bytes([hi], [int_(False)]),
        key_stats=SimpleStats.EMPTY, value_stats=SimpleStats.EMPTY,
        min_sequence_number=min_seq, max_sequence_number=max_seq, schema_id=0, level=level,
        creation_time=ctime)


def runs(*sizes: int, levels: list[int] | None = None) -> list[LevelSortedRun]:
    levels = levels or [0] * len(sizes)
    return [LevelSortedRun(lv, (meta(lv, s),)) for s, lv in zip(sizes, levels)]


def sizes_of(unit) -> list[int]:
    return [f.file_size for f in unit.files]


def universal(**opts: str) -> UniversalCompaction:
    return UniversalCompaction(CoreOptions({"num-sorted-run.compaction-trigger": "3",
                                            "compaction.max-size-amplification-percent": "25",
                                            "compaction.size-ratio": "1", **opts}),
                               now=datetime(2024, 1, 1, 12))


def test_size_amplification_picks_everything_into_the_top_level():
    u = universal()
    assert u.pick_for_size_amp(2, runs(1, 1)) is None  # fewer runs than the trigger
    assert u.pick_for_size_amp(2, runs(1, 1, 9)) is None  # 2 * 100 <= 25 * 9
    unit = u.pick_for_size_amp(2, runs(1, 2, 3))
    assert unit.output_level == 2 and sizes_of(unit) == [1, 2, 3]


def test_size_ratio_chains_from_the_newest_run():
    u = universal()
    unit = u.pick_for_size_ratio(3, runs(1, 1, 1, 50, levels=[0, 0, 0, 3]))
    assert sizes_of(unit) == [1, 1, 1] and unit.output_level == 2
    assert u.pick_for_size_ratio(3, runs(1, 5, 50, levels=[0, 0, 3])) is None
    # a level-1 run is pulled in even when it is much larger once compaction is triggered
    unit = u.pick_for_size_ratio(3, runs(1, 1, 100, levels=[0, 0, 1]))
    assert sizes_of(unit) == [1, 1, 100] and unit.output_level == 3  # all runs: the top


def test_run_count_trigger_compacts_the_newest_runs():
    u = universal(**{"compaction.max-size-amplification-percent": "10000"})
    r = runs(10, 20, 40, 80, 160, levels=[0, 0, 0, 0, 0])
    unit = u.pick(6, r)  # 5 runs > trigger 3: newest 3 runs, then size ratio fails
    assert sizes_of(unit) == [10, 20, 40, 80, 160]  # but output level 0 forces runs in
    assert unit.output_level == 5


def test_output_level_is_next_level_minus_one_never_zero():
    r = runs(1, 1, 1, 1, levels=[0, 0, 3, 5])
    assert create_unit(r, 5, 2).output_level == 2
    unit = create_unit(runs(1, 1, 1, 1, levels=[0, 0, 1, 5]), 5, 2)
    assert unit.output_level == 1 and len(unit.files) == 3  # level 1 is taken in
    unit = create_unit(runs(1, 1, 1, levels=[0, 0, 1]), 5, 2)
    assert unit.output_level == 5 and len(unit.files) == 3  # ... and then it is everything
    assert create_unit(runs(1, 1, 1), 5, 2).output_level == 5  # all level 0: to the top


def test_early_full_compaction_options():
    assert universal(**{"compaction.total-size-threshold": "100 b"}).pick(
        6, runs(1, 1)).output_level == 5
    assert universal(**{"compaction.total-size-threshold": "1 b"}).pick(6, runs(1, 1)) is None
    assert universal(**{"compaction.incremental-size-threshold": "1 b"}).pick(
        6, runs(2, 1, levels=[0, 5])).output_level == 5


def test_offpeak_ratio_applies_only_in_the_window():
    o = CoreOptions({"compaction.offpeak.start.hour": "22", "compaction.offpeak.end.hour": "6",
                     "compaction.offpeak-ratio": "20"})
    assert o.compaction_offpeak_ratio_now(datetime(2024, 1, 1, 23)) == 20
    assert o.compaction_offpeak_ratio_now(datetime(2024, 1, 1, 3)) == 20
    assert o.compaction_offpeak_ratio_now(datetime(2024, 1, 1, 12)) == 0


def test_levels_order_level0_newest_first_and_full_pick():
    a = meta(0, max_seq=5, min_seq=3, name="a")
    b = meta(0, max_seq=9, min_seq=6, name="b")
    c = meta(0, max_seq=9, min_seq=4, name="c")
    top = meta(5, lo=0, hi=100, name="top")
    lv = Levels([a, b, c, top], 6, CMP)
    assert [r.files[0].file_name for r in lv.sorted_runs()] == ["c", "b", "a", "top"]
    assert lv.non_empty_highest_level() == 5
    assert pick_full_compaction(lv).output_level == 5
    assert pick_full_compaction(Levels([top], 6, CMP)) is None  # already one top run
    assert pick_full_compaction(Levels([top], 6, CMP), force_rewrite_all=True) is not None
    assert Levels([meta(7)], 6, CMP).max_level == 7  # levels grow to hold existing files


def test_interval_partition_sections_and_runs():
    f1, f2, f3 = meta(0, lo=0, hi=10), meta(0, lo=5, hi=15), meta(0, lo=11, hi=20)
    f4 = meta(0, lo=30, hi=40)
    sections = interval_partition([f4, f3, f2, f1], CMP)
    assert len(sections) == 2
    first = sections[0]
    assert sorted(len(r) for r in first) == [1, 2]  # f1+f3 share a run, f2 alone
    assert sections[1] == [[f4]]


def test_key_comparator_orders_floats_like_java():
    from lakeformat.schema.types import double

    cmp = KeyComparator([double(False)])
    enc = [to_avro_bytes([v], [double(False)]) for v in (-0.0, 0.0, float("nan"), 1.0)]
    assert cmp.compare(enc[0], enc[1]) < 0
    assert cmp.compare(enc[2], enc[3]) > 0


def test_tie_ranks_follow_javas_sorted_run_order():
    """The run Java's Levels lists first wins a tie: level 0 (newest first by max sequence
    number, then smaller min sequence number, then older creation time, then file name), then
    levels ascending; the files of one level >= 1 rank alike."""
    top_a, top_b = meta(3, name="t1", max_seq=9), meta(3, name="t2", max_seq=50)
    mid = meta(1, name="m", max_seq=80)
    old0 = meta(0, name="z", max_seq=20, min_seq=11)
    new0 = meta(0, name="y", max_seq=30, min_seq=21)
    wide0 = meta(0, name="x", max_seq=30, min_seq=5)     # same max, smaller min: first in Java
    early0 = meta(0, name="w", max_seq=20, min_seq=11, ctime=1)  # same seqs as old0, younger
    files = [top_a, top_b, mid, old0, new0, wide0, early0]
    ranks = dict(zip((f.file_name for f in files), tie_ranks(files).tolist()))
    java_order = [f.file_name for r in Levels(files, 4, CMP).sorted_runs() for f in r.files]
    assert java_order[:4] == ["x", "y", "z", "w"]
    assert ranks["x"] > ranks["y"] > ranks["z"] > ranks["w"] > ranks["m"] > ranks["t1"]
    assert ranks["t1"] == ranks["t2"]


def test_may_tie_only_when_two_runs_share_sequence_numbers():
    top = [meta(3, lo=0, hi=4, min_seq=0, max_seq=90), meta(3, lo=5, hi=9, min_seq=3, max_seq=99)]
    assert not may_tie(top)  # one level: distinct keys
    assert not may_tie(top + [meta(0, min_seq=100, max_seq=120), meta(0, min_seq=121,
                                                                       max_seq=130)])
    assert may_tie(top + [meta(0, min_seq=99, max_seq=120)])
    assert may_tie([meta(0, min_seq=5, max_seq=9), meta(0, min_seq=9, max_seq=12)])
    assert may_tie([meta(1, min_seq=0, max_seq=50), meta(2, min_seq=40, max_seq=45)])
