"""`merge_order` (the key-sort shortcut over sorted runs) gives exactly `merge_permutation`'s
order and key groups, whichever way the runs come."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from lakeformat.merge.sort import key_groups, merge_order, merge_permutation

KINDS = (0, 1, 2, 3)  # +I -U +U -D


def _runs(draw_keys: list[list[int]], seqs: list[list[int]], kinds: list[list[int]],
          float_keys: bool) -> tuple[pa.Table, np.ndarray]:
    """Key-sorted runs side by side (each run's keys distinct), with their row counts."""
    ids, seq, kind, sizes = [], [], [], []
    for keys, s, k in zip(draw_keys, seqs, kinds, strict=True):
        keys = sorted(set(keys))
        ids += keys
        seq += s[:len(keys)]
        kind += k[:len(keys)]
        sizes.append(len(keys))
    key_type = pa.float64() if float_keys else pa.int64()
    table = pa.table({"id": pa.array([float(i) if float_keys else i for i in ids], key_type),
                      "_SEQUENCE_NUMBER": pa.array(seq, pa.int64()),
                      "_VALUE_KIND": pa.array(kind, pa.int8())})
    return table, np.array([n for n in sizes if n], dtype=np.int64)


def _expected(table: pa.Table) -> tuple[np.ndarray, list[tuple[int, int]]]:
    perm = merge_permutation(table, ["id"]).to_numpy()
    groups = key_groups(table.select(["id"]).take(pa.array(perm)), ["id"])
    return perm, list(zip(groups.starts.tolist(), groups.ends.tolist(), strict=True))


@settings(max_examples=200, deadline=None)
@given(st.data(), st.integers(1, 5), st.booleans(), st.booleans())
def test_merge_order_is_the_merge_permutation(data, n_runs, disjoint, float_keys):
    keys = [data.draw(st.lists(st.integers(0, 12), max_size=10)) for _ in range(n_runs)]
    if disjoint:  # each run newer than the last, given newest first or in any order
        base = [100 * i for i in data.draw(st.permutations(range(n_runs)))]
        seqs = [[b + j for j in range(10)] for b in base]
    else:  # overlapping and tied sequence numbers
        seqs = [data.draw(st.lists(st.integers(0, 6), min_size=10, max_size=10))
                for _ in range(n_runs)]
    kinds = [data.draw(st.lists(st.sampled_from(KINDS), min_size=10, max_size=10))
             for _ in range(n_runs)]
    table, sizes = _runs(keys, seqs, kinds, float_keys)
    want_perm, want_groups = _expected(table)
    for runs in (sizes, None):
        perm, groups = merge_order(table, ["id"], runs=runs)
        assert perm.tolist() == want_perm.tolist()
        assert list(zip(groups.starts.tolist(), groups.ends.tolist(), strict=True)) == \
            want_groups


def test_newest_run_first_is_merged_oldest_first():
    # two runs of key 1: the newer one (seq 9) comes first; its record must merge last
    table = pa.table({"id": pa.array([1, 2, 1], pa.int64()),
                      "_SEQUENCE_NUMBER": pa.array([9, 10, 3], pa.int64()),
                      "_VALUE_KIND": pa.array([0, 0, 0], pa.int8())})
    perm, groups = merge_order(table, ["id"], runs=np.array([2, 1]))
    assert perm.tolist() == [2, 0, 1]
    assert groups.starts.tolist() == [0, 2] and groups.ends.tolist() == [1, 2]


def test_a_full_tie_across_reordered_runs_keeps_the_original_order():
    # key 1 has the same sequence number and kind in both runs: the full sort keeps the rows
    # in table order (run 0's first), which visiting the older run first would swap
    table = pa.table({"id": pa.array([0, 1, 1, 2], pa.int64()),
                      "_SEQUENCE_NUMBER": pa.array([7, 5, 5, 1], pa.int64()),
                      "_VALUE_KIND": pa.array([0, 0, 0, 0], pa.int8())})
    perm, _ = merge_order(table, ["id"], runs=np.array([2, 2]))
    assert perm.tolist() == merge_permutation(table, ["id"]).to_numpy().tolist() == [0, 1, 2, 3]
