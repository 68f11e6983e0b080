"""Manifest merging follows Java's legacy merger and never changes the live file set."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakeformat.errors import CorruptFileError
from lakeformat.meta import binary_row
from lakeformat.meta.data_file_meta import (
    DataFileMeta,
    FileKind,
    ManifestEntry,
    ManifestFileMeta,
    SimpleStats,
    merge_entries,
)
from lakeformat.meta.manifest import ManifestFile
from lakeformat.meta.manifest_merge import (
    DeletePartitionPredicate,
    compact_fully,
    merge_manifests,
)
from lakeformat.schema import types as T
from lakeformat.storage.local import LocalFileIO

PART_TYPES = [T.string()]
BIG = 1 << 40


def part(dt: str | None) -> bytes:
    return binary_row.to_avro_bytes([dt], PART_TYPES)


def dfile(name: str, level: int = 0) -> DataFileMeta:
    k = binary_row.to_avro_bytes([1], [T.bigint(False)])
    return DataFileMeta(name, 100, 1, k, k, SimpleStats(k, k, (0,)), SimpleStats.EMPTY, 0, 0, 0,
                        level, creation_time=0, delete_row_count=0, file_source=0,
                        value_stats_cols=())


def add(name: str, dt: str | None = "a", level: int = 0) -> ManifestEntry:
    return ManifestEntry.add(part(dt), 0, 1, dfile(name, level))


def delete(name: str, dt: str | None = "a", level: int = 0) -> ManifestEntry:
    return ManifestEntry.delete(part(dt), 0, 1, dfile(name, level))


@pytest.fixture
def mf(tmp_path: Path) -> ManifestFile:
    return ManifestFile(LocalFileIO(fsync=False), str(tmp_path / "t"), PART_TYPES, {})


def write_each(mf: ManifestFile, *groups: list[ManifestEntry]) -> list[ManifestFileMeta]:
    metas = []
    for g in groups:
        [m] = mf.write(g)
        metas.append(m)
    return metas


def live(mf: ManifestFile, metas: list[ManifestFileMeta]) -> set[ManifestEntry]:
    return set(merge_entries(mf.read_all(metas)))


def files_on_disk(mf: ManifestFile) -> set[str]:
    return set(os.listdir(mf.manifest_dir))


# -- minor compaction ---------------------------------------------------------------------------
def test_small_tail_below_min_count_is_kept(mf: ManifestFile) -> None:
    inputs = write_each(mf, [add("f1")], [add("f2")], [delete("f1")])
    result, new = merge_manifests(inputs, mf, BIG, 30, BIG)
    assert result == inputs and new == []


def test_tail_at_min_count_is_merged_cancelling_pairs(mf: ManifestFile) -> None:
    inputs = write_each(mf, [add("f1"), add("f2")], [delete("f1"), add("f3")], [delete("f0")])
    result, new = merge_manifests(inputs, mf, BIG, 3, BIG)
    assert result == new and len(new) == 1
    # Java's LinkedHashMap order; the DELETE of f0 stays: its ADD lives in an older manifest
    assert mf.read(new[0].file_name) == [add("f2"), add("f3"), delete("f0")]
    assert (new[0].num_added_files, new[0].num_deleted_files) == (2, 1)


def test_groups_reaching_target_size_are_merged(mf: ManifestFile) -> None:
    inputs = write_each(mf, *([add(f"f{i}")] for i in range(5)))
    target = sum(m.file_size for m in inputs[:3])
    result, new = merge_manifests(inputs, mf, target, 30, BIG)
    assert len(new) == 1 and result == [new[0], inputs[3], inputs[4]]
    assert mf.read(new[0].file_name) == [add("f0"), add("f1"), add("f2")]


def test_single_file_group_is_kept_as_is(mf: ManifestFile) -> None:
    inputs = write_each(mf, *([add(f"f{i}")] for i in range(4)))
    result, new = merge_manifests(inputs, mf, min(m.file_size for m in inputs), 1, BIG)
    assert result == inputs and new == []


def test_group_that_cancels_out_writes_nothing(mf: ManifestFile) -> None:
    inputs = write_each(mf, [add("f1")], [delete("f1")])
    result, new = merge_manifests(inputs, mf, BIG, 2, BIG)
    assert result == [] and new == []


def test_upgrade_pairs_cancel_only_same_level(mf: ManifestFile) -> None:
    inputs = write_each(mf, [add("f1")], [delete("f1"), add("f1", level=1)])
    result, new = merge_manifests(inputs, mf, BIG, 2, BIG)
    assert mf.read_all(result) == [add("f1", level=1)]


def test_double_add_fails_and_removes_files_written_so_far(mf: ManifestFile) -> None:
    first = write_each(mf, [add("f1")], [add("f2")])
    second = write_each(mf, [add("f3")], [add("f3")])
    before = files_on_disk(mf)
    target = sum(m.file_size for m in first)
    with pytest.raises(CorruptFileError, match="f3"):
        merge_manifests(first + second, mf, target, 2, BIG)
    assert files_on_disk(mf) == before


# -- full compaction ----------------------------------------------------------------------------
def test_full_compaction_drops_add_delete_pairs(mf: ManifestFile) -> None:
    inputs = write_each(mf, [add("f1"), add("f2")], [delete("f1"), add("f3")], [delete("f0")])
    result, new = merge_manifests(inputs, mf, BIG, 30, 1)
    assert result == new and len(new) == 1
    assert mf.read(new[0].file_name) == [add("f2"), add("f3")]
    assert new[0].num_deleted_files == 0


def test_full_compaction_without_deletes_rewrites_small_keeps_big(mf: ManifestFile) -> None:
    big = write_each(mf, [add(f"b{i}") for i in range(60)])
    small = write_each(mf, [add("s1")], [add("s2")])
    target = big[0].file_size
    result, new = merge_manifests(big + small, mf, target, 30, 1)
    assert len(new) == 1 and result == [big[0], new[0]]
    assert mf.read(new[0].file_name) == [add("s1"), add("s2")]


def test_full_compaction_skips_big_manifests_away_from_deleted_partitions(
        mf: ManifestFile) -> None:
    big_a = write_each(mf, [add(f"a{i}", "a") for i in range(60)])[0]
    big_b = write_each(mf, [add(f"b{i}", "b") for i in range(60)])[0]
    big_c = write_each(mf, [add(f"c{i}", "c") for i in range(60)])[0]
    big_b2 = write_each(mf, [add(f"bb{i}", "b") for i in range(60)])[0]
    dels = write_each(mf, [delete("b7", "b")])[0]
    target = min(m.file_size for m in (big_a, big_b, big_c, big_b2))
    inputs = [big_a, big_b, big_c, big_b2, dels]
    result, new = merge_manifests(inputs, mf, target, 30, dels.file_size)
    # a and c cannot hold partition b; big_b2 is read but unchanged; big_b loses b7
    assert len(new) == 1 and result == [big_a, big_c, big_b2, new[0]]
    assert mf.read(new[0].file_name) == [add(f"b{i}", "b") for i in range(60) if i != 7]
    assert live(mf, result) == live(mf, inputs)


def test_full_compaction_of_one_file_falls_back_to_minor(mf: ManifestFile) -> None:
    inputs = write_each(mf, [add("f1")])
    result, new = merge_manifests(inputs, mf, BIG, 30, 1)
    assert result == inputs and new == []


def test_partition_filter_overrides_stats_test(mf: ManifestFile) -> None:
    big_a = write_each(mf, [add(f"a{i}", "a") for i in range(60)])[0]
    dels = write_each(mf, [delete("x", "b")])[0]
    seen: list[str] = []

    def may_hold(meta: ManifestFileMeta) -> bool:
        seen.append(meta.file_name)
        return True

    result, new = merge_manifests([big_a, dels], mf, big_a.file_size, 30, 1,
                                  partition_filter=may_hold)
    assert seen == [big_a.file_name] and result == [big_a] and new == []


def test_threshold_must_be_positive(mf: ManifestFile) -> None:
    with pytest.raises(ValueError):
        merge_manifests([], mf, BIG, 30, 0)


# -- the partition predicate on manifest stats ---------------------------------------------------
TWO = [T.string(), T.int_()]


def meta_with(mins: list[Any], maxs: list[Any], nulls: tuple[int | None, ...] | None,
              rows: int = 10) -> ManifestFileMeta:
    stats = SimpleStats(binary_row.to_avro_bytes(mins, TWO), binary_row.to_avro_bytes(maxs, TWO),
                        nulls)
    return ManifestFileMeta("m", 1, rows, 0, stats, 0)


@pytest.mark.parametrize("mins, maxs, nulls, expected", [
    (["b", 2], ["b", 2], (0, 0), True),      # inside both ranges
    (["d", 1], ["e", 3], (0, 0), False),     # first column above the deleted range
    (["a", 5], ["c", 9], (0, 0), False),     # second column above the deleted range
    (["0", 0], ["a", 1], (0, 0), True),      # touches the lower corner
    ([None, 2], [None, 2], (10, 0), False),  # column all null, no null deleted
    ([None, 2], ["b", 2], (3, 0), True),     # unknown min with some values: maybe
    (["b", 2], ["b", 2], None, True),        # no null counts at all: compare values
])
def test_delete_partition_predicate(mins: list[Any], maxs: list[Any],
                                    nulls: tuple[int, ...] | None, expected: bool) -> None:
    deleted = {binary_row.to_avro_bytes(["a", 1], TWO), binary_row.to_avro_bytes(["c", 3], TWO)}
    assert DeletePartitionPredicate(TWO, deleted)(meta_with(mins, maxs, nulls)) is expected


def test_delete_partition_predicate_with_null_partitions() -> None:
    deleted = {binary_row.to_avro_bytes([None, 1], TWO)}
    pred = DeletePartitionPredicate(TWO, deleted)
    assert pred(meta_with([None, 1], [None, 1], (10, 0))) is True
    assert pred(meta_with(["a", 1], ["z", 1], (0, 0))) is False
    mixed = DeletePartitionPredicate(TWO, deleted | {binary_row.to_avro_bytes(["m", 1], TWO)})
    assert mixed(meta_with(["a", 1], ["c", 1], (0, 0))) is False
    assert mixed(meta_with(["a", 1], ["c", 1], (1, 0))) is True


# -- random histories ---------------------------------------------------------------------------
commit_st = st.tuples(
    st.integers(0, 4),                       # new files
    st.lists(st.integers(0, 50), max_size=3),  # indexes of live files to delete
    st.lists(st.integers(0, 50), max_size=2),  # indexes of live files to upgrade one level
    st.sampled_from([1, 700, 2500, 6000, BIG]),  # target size
    st.sampled_from([1, 2, 3, 30]),          # merge min count
    st.sampled_from([1, 3000, 9000, BIG]),   # full compaction threshold
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(commit_st, min_size=1, max_size=12), st.randoms(use_true_random=False))
def test_merging_preserves_the_live_set(commits: list[tuple[Any, ...]], rnd: Any) -> None:
    with tempfile.TemporaryDirectory() as d:
        mf = ManifestFile(LocalFileIO(fsync=False), d, PART_TYPES, {})
        model: dict[tuple[str, int], ManifestEntry] = {}
        base: list[ManifestFileMeta] = []
        counter = 0
        for n_new, dels, ups, target, min_count, threshold in commits:
            delta: list[ManifestEntry] = []
            names = sorted(model)
            for i in sorted({i % len(names) for i in dels} if names else set()):
                delta.append(model.pop(names[i]).with_kind(FileKind.DELETE))
            names = sorted(model)
            for i in sorted({i % len(names) for i in ups} if names else set()):
                old = model.pop(names[i])
                delta.append(old.with_kind(FileKind.DELETE))
                new_entry = ManifestEntry.add(old.partition, old.bucket, old.total_buckets,
                                              old.file.upgrade(old.file.level + 1))
                delta.append(new_entry)
                model[(new_entry.file_name, new_entry.level)] = new_entry
            for _ in range(n_new):
                e = add(f"data-{counter}.parquet", rnd.choice(["a", "b", "c", None]))
                counter += 1
                delta.append(e)
                model[(e.file_name, 0)] = e
            inputs = base + (mf.write(delta) if delta else [])
            before = live(mf, inputs)
            base, new = merge_manifests(inputs, mf, target, min_count, threshold)
            assert set(m.file_name for m in new) <= set(m.file_name for m in base)
            assert live(mf, base) == before == set(model.values())


# -- compaction on demand (compactManifest) ------------------------------------------------------
def test_compact_fully_keeps_only_live_adds(mf: ManifestFile) -> None:
    inputs = write_each(mf, [add("f1"), add("f2", "b")], [delete("f1"), add("f3")],
                        [add("f1", level=5), delete("f2", "b")])  # f1 upgraded, f2 gone
    before = live(mf, inputs)
    result, new = compact_fully(inputs, mf, BIG)
    assert new and all(m.num_deleted_files == 0 for m in result)
    entries = mf.read_all(result)
    assert set(entries) == before and len(entries) == len(before)  # no pair left over
    assert {e.file.file_name for e in entries} == {"f1", "f3"}


def test_compact_fully_without_deletes_writes_nothing(mf: ManifestFile) -> None:
    inputs = write_each(mf, [add("f1")], [add("f2")])
    on_disk = files_on_disk(mf)
    assert compact_fully(inputs, mf, BIG) == (inputs, [])
    assert files_on_disk(mf) == on_disk


def test_compact_fully_rewrites_a_lone_manifest_with_pairs(mf: ManifestFile) -> None:
    # one manifest holding an ADD and its DELETE: nothing else to merge it with
    inputs = write_each(mf, [add("f1"), add("f2"), delete("f1")])
    result, new = compact_fully(inputs, mf, BIG)
    assert result == new and [e.file.file_name for e in mf.read_all(result)] == ["f2"]
