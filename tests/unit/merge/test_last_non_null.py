"""Partial-update's add-only merge (`merge.last_non_null`) against the engine's full merge.

The row-at-a-time model (`test_engines_property`) checks both on small histories; here tables
are larger and shaped like compaction's: columns in several chunks, records put into merge order
by a permutation that may leave rows out (a lookup merge selects some), every kind of column
with and without nulls. The two merges must give the same table, value for value."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakeformat.merge import last_non_null, merge_engine
from lakeformat.merge.partial_update import _Merge
from lakeformat.merge.sort import KeyGroups, merge_order
from lakeformat.schema.table_schema import SEQUENCE_NUMBER, VALUE_KIND, new_schema
from lakeformat.schema.types import DataField, bigint, double, int_, string

IN, UB, UA, D = 0, 1, 2, 3
FIELDS = [DataField(0, "k", int_(False)), DataField(1, "a", string()),
          DataField(2, "b", bigint()), DataField(3, "c", double()),
          DataField(4, "d", string(False))]


def engine(**options: str):
    return merge_engine(new_schema(0, FIELDS, [], ["k"], {
        "bucket": "1", "merge-engine": "partial-update", **options}, None))


def records(seed: int, n: int, keys: int, null_share: float, chunks: int,
            kinds=(IN, UA)) -> pa.Table:
    rng = np.random.default_rng(seed)

    def maybe_null(values: pa.Array) -> pa.Array:
        mask = rng.random(n) < null_share
        return pa.array(values.to_pylist(), values.type, mask=mask) if mask.any() else values

    words = np.array(["", "x", "mid", "a longer value", "ü"], dtype=object)
    table = pa.table({
        SEQUENCE_NUMBER: pa.array(rng.permutation(n).astype(np.int64)),
        VALUE_KIND: pa.array(rng.choice(kinds, n).astype(np.int8)),
        "k": pa.array(rng.integers(0, keys, n).astype(np.int32)),
        "a": maybe_null(pa.array(words[rng.integers(0, len(words), n)], pa.string())),
        "b": maybe_null(pa.array(rng.integers(-5, 5, n), pa.int64())),
        "c": maybe_null(pa.array(rng.normal(size=n))),
        "d": pa.array(words[rng.integers(0, len(words), n)], pa.string()),
    })
    bounds = np.unique(np.concatenate([[0, n], rng.integers(0, n, chunks - 1)]))
    return pa.Table.from_batches(
        [b for lo, hi in zip(bounds[:-1], bounds[1:]) for b in table.slice(lo, hi - lo)
         .to_batches()], schema=table.schema)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 400), keys=st.integers(1, 60),
       null_share=st.sampled_from([0.0, 0.3, 0.9, 1.0]), chunks=st.integers(1, 5),
       drop=st.sampled_from([0.0, 0.0, 0.4]))
def test_add_only_merge_equals_the_full_merge(seed, n, keys, null_share, chunks, drop):
    eng = engine()
    table = records(seed, n, keys, null_share, chunks)
    perm, groups = merge_order(table, ["k"])
    if drop:  # a lookup merge hands over some rows of the table only
        keep = np.random.default_rng(seed + 1).random(len(perm)) >= drop
        keep[groups.starts] = True  # every key keeps a record
        ranks = np.cumsum(keep) - 1
        perm = perm[keep]
        groups = KeyGroups(ranks[groups.starts], ranks[groups.ends])
    assert last_non_null.applies(table, False, ["k", "d"])
    fast = last_non_null.merge_adds(table, groups, perm)
    full = _Merge(table, groups, eng.ctx, eng.cfg, perm).run()
    assert fast.schema == full.schema
    assert fast.to_pydict() == full.to_pydict()
    in_order = table.take(pa.array(perm))
    assert last_non_null.merge_adds(in_order, groups).equals(fast)


def test_engine_merges_add_only_records_by_last_non_null_value():
    table = pa.table({
        SEQUENCE_NUMBER: pa.array([1, 2, 3, 4, 5], pa.int64()),
        VALUE_KIND: pa.array([IN, UA, IN, UA, UA], pa.int8()),
        "k": pa.array([1, 1, 1, 2, 3], pa.int32()),
        "a": pa.array(["x", None, "z", None, "w"]),
        "b": pa.array([10, 20, None, None, 7], pa.int64()),
        "c": pa.array([None, None, None, 1.5, None], pa.float64()),
        "d": pa.array(["p", "q", "r", "s", "t"]),
    })
    got = engine().merge(table).to_pylist()
    assert got == [
        # merged: last non-null per column, +I, the last record's sequence number
        {SEQUENCE_NUMBER: 3, VALUE_KIND: IN, "k": 1, "a": "z", "b": 20, "c": None, "d": "r"},
        # lone records unchanged, their +U kept
        {SEQUENCE_NUMBER: 4, VALUE_KIND: UA, "k": 2, "a": None, "b": None, "c": 1.5, "d": "s"},
        {SEQUENCE_NUMBER: 5, VALUE_KIND: UA, "k": 3, "a": "w", "b": 7, "c": None, "d": "t"},
    ]


@pytest.mark.parametrize("case", ["retract", "null in NOT NULL", "sequence group"])
def test_what_the_add_only_merge_leaves_to_the_full_merge(case):
    table = records(7, 50, 5, 0.3, 2, kinds=(IN, UA, D) if case == "retract" else (IN, UA))
    not_null = ["k", "d"]
    if case == "null in NOT NULL":
        not_null.append("a")
    assert not last_non_null.applies(table, case == "sequence group", not_null)
