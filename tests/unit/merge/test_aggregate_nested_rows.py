"""nested_update, nested_partial_update, merge_map_with_keytime: Java's
expectations and the model."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakeformat.errors import InvalidOptionError, LakeformatError
from lakeformat.merge.aggregation.registry import create_aggregator
from lakeformat.merge.aggregation.rows_fold import RowsFold
from lakeformat.schema.types import (
    DataField,
    DataType,
    int_,
    string,
    to_arrow,
)
from tests.support.depth import examples

from .aggregation_model import (
    AGG,
    ARRAY_INT,
    MAP_IS,
    NESTED_OPS,
    RESET,
    RETRACT,
    REV,
    SKIP,
    check_against_model,
    fold,
    groups_of,
    r,
    retract_from,
    with_init,
)

NROW = DataType("ROW", fields=(DataField(1, "k0", int_()), DataField(2, "k1", int_()),
                               DataField(3, "v", string()), DataField(4, "seq", int_())))

NESTED = DataType("ARRAY", element=NROW)

KEYED = {"fields.f.nested-key": "k0,k1"}


def steps(name, dtype, rows, options):
    """Feed (op, array) rows one by one; returns the accumulator after each."""
    out = []
    for i in range(1, len(rows) + 1):
        out.append(fold(name, dtype, [rows[:i]], options)[0])
    return out


def as_set(rows):
    return sorted(map(repr, rows))


def test_nested_update_examples_from_java():
    got = steps("nested_update", NESTED, [(AGG, [r(0, 0, "A")]), (AGG, [r(0, 1, "B")]),
                                          (AGG, [r(0, 1, "b")]), (RETRACT, [r(0, 1, "b")])],
                KEYED)
    assert [as_set(g) for g in got] == [
        as_set([r(0, 0, "A")]), as_set([r(0, 0, "A"), r(0, 1, "B")]),
        as_set([r(0, 0, "A"), r(0, 1, "b")]), as_set([r(0, 0, "A")])]


def test_nested_append_examples_from_java():
    got = steps("nested_update", NESTED, [(AGG, [r(0, 1, "B")]), (AGG, [r(0, 1, "b")]),
                                          (RETRACT, [r(0, 1, "b")])], {})
    assert got == [[r(0, 1, "B")], [r(0, 1, "B"), r(0, 1, "b")], [r(0, 1, "B")]]
    limit = {"fields.f.count-limit": "2"}
    got = steps("nested_update", NESTED, [(AGG, [r(0, 1, "B")]), (AGG, [r(0, 1, "b")]),
                                          (AGG, [r(0, 1, "C")])], limit)
    assert got[-1] == [r(0, 1, "B"), r(0, 1, "b")]
    assert fold("nested_update", NESTED, [[(AGG, [r(0, 1, "B"), None, r(0, 1, "b"),
                                                  r(0, 1, "C")])]], limit) == \
        [[r(0, 1, "B"), r(0, 1, "b")]]


def test_nested_update_with_sequence_field():
    opts = {**KEYED, "fields.f.nested-sequence-field": "seq"}
    got = steps("nested_update", NESTED, [(AGG, [r(0, 1, "A", 1)]), (AGG, [r(0, 1, "B", 2)]),
                                          (AGG, [r(0, 1, "b_Late", 1)])], opts)
    assert got[1] == [r(0, 1, "B", 2)] and got[2] == [r(0, 1, "B", 2)]
    got = steps("nested_update", NESTED, [(AGG, [r(0, 0, "A", 1)]), (AGG, [r(0, 1, "B", 2)]),
                                          (AGG, [r(0, 1, "b", 3)]), (AGG, [r(0, 1, "B_late", 2)]),
                                          (RETRACT, [r(0, 1, "b", 3)])], opts)
    assert as_set(got[3]) == as_set([r(0, 0, "A", 1), r(0, 1, "b", 3)])
    assert got[4] == [r(0, 0, "A", 1)]


def test_nested_update_count_limit_with_keys():
    opts = {**KEYED, "fields.f.count-limit": "2"}
    got = steps("nested_update", NESTED, [(AGG, [r(0, 1, "B")]), (AGG, [r(1, 2, "C")]),
                                          (AGG, [r(0, 1, "B_updated")]), (AGG, [r(2, 3, "D")])],
                opts)
    assert as_set(got[2]) == as_set([r(0, 1, "B_updated"), r(1, 2, "C")])
    assert as_set(got[3]) == as_set([r(0, 1, "B_updated"), r(1, 2, "C")])
    first = fold("nested_update", NESTED, [[(AGG, [r(0, 1, "B"), r(1, 2, "C"), r(2, 3, "D"),
                                                   r(0, 1, "B_updated")])]], opts)[0]
    assert as_set(first) == as_set([r(0, 1, "B_updated"), r(1, 2, "C")])
    opts = {**opts, "fields.f.nested-sequence-field": "seq"}
    rows = [(AGG, [r(0, 1, "A", 1)]), (AGG, [r(0, 2, "B", 2)]), (AGG, [r(0, 3, "C", 3)]),
            (AGG, [r(0, 1, "A_Update", 4)]), (AGG, [r(0, 2, "B_Late", 1)])]
    assert as_set(fold("nested_update", NESTED, [rows], opts)[0]) == \
        as_set([r(0, 1, "A_Update", 4), r(0, 2, "B", 2)])


def test_nested_key_null_strategies():
    merge = {**KEYED, "fields.f.nested-key-null-strategy": "merge"}
    assert fold("nested_update", NESTED, [[(AGG, [r(0, None, "A", 1)])]], merge) == \
        [[r(0, None, "A", 1)]]
    ignore = {**KEYED, "fields.f.nested-key-null-strategy": "ignore"}
    assert fold("nested_update", NESTED, [[(AGG, [r(0, 1, "A", 1)]),
                                           (AGG, [r(0, None, "B", 2)])]], ignore) == \
        [[r(0, 1, "A", 1)]]
    error = {**KEYED, "fields.f.nested-key-null-strategy": "error"}
    with pytest.raises(LakeformatError, match="Nested key contains null values"):
        fold("nested_update", NESTED, [[(AGG, [r(0, None, "B", 2)])]], error)
    # the strategy also applies to the accumulator and the input of a retract
    acc = [r(0, None, "A"), r(1, 0, "B"), r(1, 1, "C")]
    assert retract_from("nested_update", NESTED, acc, [r(1, 0, "B")], ignore) == [r(1, 1, "C")]
    with pytest.raises(LakeformatError, match="Nested key contains null values"):
        retract_from("nested_update", NESTED, acc, [r(1, 0, "B")], error)
    acc = [r(0, 0, "A"), r(1, 1, "B")]
    assert retract_from("nested_update", NESTED, acc, [r(0, None, "X")], ignore) == acc


def test_nested_update_option_dependencies():
    field = DataField(0, "f", NESTED)
    with pytest.raises(InvalidOptionError, match="requires 'fields.f.nested-key'"):
        create_aggregator("nested_update", field, {"fields.f.nested-sequence-field": "seq"})
    with pytest.raises(InvalidOptionError, match="requires 'fields.f.nested-key'"):
        create_aggregator("nested_update", field,
                          {"fields.f.nested-key-null-strategy": "merge"})
    with pytest.raises(InvalidOptionError, match="nested-key"):
        create_aggregator("nested_partial_update", field, {})
    with pytest.raises(InvalidOptionError, match="ARRAY<ROW"):
        create_aggregator("nested_update", DataField(0, "f", ARRAY_INT), {})
    with pytest.raises(InvalidOptionError, match="not a field"):
        create_aggregator("nested_update", field, {"fields.f.nested-key": "nope"})


def test_nested_partial_update_examples_from_java():
    rows = [(AGG, [r(0, 0, "A", None)]), (AGG, [r(0, 0, None, 1), r(0, 1, "B", 2)]),
            (AGG, [r(0, 0, "a", None)])]
    got = fold("nested_partial_update", NESTED, [rows], KEYED)[0]
    assert as_set(got) == as_set([r(0, 0, "a", 1), r(0, 1, "B", 2)])
    with pytest.raises(LakeformatError, match="'nested_partial_update' does not support"):
        fold("nested_partial_update", NESTED, [[(RETRACT, [r(0, 0, "A")])]], KEYED)


def reduce_on(agg, groups):
    """`fold` on a given aggregator (groups of (op, value) rows)."""
    values = [v for g in groups for _, v in g]
    ops = np.array([op for g in groups for op, _ in g], dtype=np.int8)
    sizes = np.array([len(g) for g in groups], dtype=np.int64)
    ends = np.cumsum(sizes) - 1
    out = agg.reduce(pa.array(values, to_arrow(NESTED)), ends - sizes + 1, ends, ops)
    return out.to_pylist()


@pytest.mark.parametrize("ignore_retract", ["false", "true"])
def test_nested_update_folds_sharing_an_aggregator_keep_their_own_state(monkeypatch,
                                                                        ignore_retract):
    # One engine's aggregators merge several buckets at once (a write job's thread pool). A
    # fold that runs while another is between its setup and its output (here: from inside
    # it) used to overwrite the other's pool arrays: IndexError, or rows from the wrong pool.
    opts = {"fields.f.nested-key": "k0", "fields.f.nested-sequence-field": "seq",
            "fields.f.ignore-retract": ignore_retract}
    agg = create_aggregator("nested_update", DataField(0, "f", NESTED), opts)
    first = [[(RETRACT, [r(0, None, "y", 0), None, r(0, None, "x")]),
              (RETRACT, [None, r(None, None, "x")]),
              (AGG, [r(2, None, "y"), None, r(0, None, None, 0)])],
             [(AGG, [r(2, None, None), r(1, None, None)]),
              (AGG, [None, r(None, None, "x"), None]), (AGG, []), (RETRACT, [None]),
              (RETRACT, [None, None]), (AGG, [None])]]
    second = [[(AGG, [r(5, None, "z", 1)])]]
    inner = []
    lists = RowsFold._lists

    def interleaved(self, *args):
        if not inner:
            inner.append(None)
            inner[0] = reduce_on(agg, second)
        return lists(self, *args)

    monkeypatch.setattr(RowsFold, "_lists", interleaved)
    got = reduce_on(agg, first)
    assert inner == [[[r(5, None, "z", 1)]]]
    # Java: retracts from a null accumulator (or of null rows) change nothing; keys upsert
    assert [as_set(g) for g in got] == [
        as_set([r(2, None, "y"), r(0, None, None, 0)]),
        as_set([r(2, None, None), r(1, None, None), r(None, None, "x")])]

KT_ROW = DataType("ROW", fields=(DataField(1, "v", string()), DataField(2, "ts", string())))

KEYTIME = DataType("MAP", key=int_(False), value=KT_ROW)


def kt(v, ts):
    return {"v": v, "ts": ts}


def test_merge_map_with_keytime():
    rows = [(AGG, [(1, kt("a", "2024-01-01")), (2, kt("b", "2024-01-02"))]),
            (AGG, [(1, kt("a2", "2023-12-31")), (2, kt("b2", "2024-02-01")),
                   (3, kt("c", None))]),
            (AGG, [(1, None)])]
    got = fold("merge_map_with_keytime", KEYTIME, [rows])[0]
    assert dict(got) == {2: kt("b2", "2024-02-01")}
    with pytest.raises(InvalidOptionError, match="ts-field"):
        create_aggregator("merge_map_with_keytime", DataField(0, "f", KEYTIME),
                          {"fields.f.ts-field": "nope"})
    with pytest.raises(InvalidOptionError, match="ROW"):
        create_aggregator("merge_map_with_keytime", DataField(0, "f", MAP_IS), {})

NESTED_ROWS = st.one_of(st.none(), st.lists(st.one_of(
    st.none(),
    st.builds(r, st.one_of(st.none(), st.integers(0, 1)), st.integers(0, 1),
              st.one_of(st.none(), st.sampled_from(["x", "y", "z"])),
              st.one_of(st.none(), st.integers(0, 2)))), max_size=3))

NESTED_CASES = [
    ("nested_update", {}),
    ("nested_update", {"fields.f.count-limit": "2"}),
    ("nested_update", KEYED),
    ("nested_update", {**KEYED, "fields.f.count-limit": "2"}),
    ("nested_update", {**KEYED, "fields.f.nested-sequence-field": "seq",
                       "fields.f.count-limit": "3"}),
    ("nested_update", {**KEYED, "fields.f.nested-key-null-strategy": "ignore"}),
    ("nested_update", {"fields.f.nested-key": "k1", "fields.f.nested-key-null-strategy": "error"}),
    ("nested_partial_update", KEYED),
    ("nested_partial_update", {**KEYED, "fields.f.nested-key-null-strategy": "ignore"}),
]


@pytest.mark.parametrize("name,options", NESTED_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(NESTED_CASES)])
@settings(max_examples=examples(50, 150), deadline=None)
@given(data=st.data())
def test_nested_functions_match_the_model(name, options, data):
    ops = NESTED_OPS if name == "nested_update" else st.sampled_from([AGG, AGG, REV, RESET,
                                                                       SKIP])
    groups = data.draw(groups_of(NESTED_ROWS, ops))
    init = with_init(data, groups, NESTED_ROWS)
    check_against_model(name, NESTED, groups, options, init)

KT_VALUES = st.one_of(st.none(), st.lists(st.tuples(
    st.integers(0, 2), st.one_of(st.none(), st.builds(
        kt, st.sampled_from(["p", "q"]), st.one_of(st.none(), st.sampled_from(
            ["1", "2", "10", "\uffff", "\U0001f600"]))))), max_size=3))


@settings(max_examples=examples(50, 150), deadline=None)
@given(data=st.data())
def test_merge_map_with_keytime_matches_the_model(data):
    groups = data.draw(groups_of(KT_VALUES, st.sampled_from([AGG, AGG, REV, RESET, SKIP])))
    init = with_init(data, groups, KT_VALUES)
    check_against_model("merge_map_with_keytime", KEYTIME, groups, {}, init)


@pytest.mark.parametrize("options", [c[1] for c in NESTED_CASES if c[0] == "nested_update"],
                         ids=[str(i) for i, c in enumerate(NESTED_CASES)
                              if c[0] == "nested_update"])
@settings(max_examples=examples(50, 150), deadline=None)
@given(data=st.data())
def test_nested_update_adds_only_matches_the_model(options, data):
    # only adds (and an initial accumulator): the one-call closed form
    groups = data.draw(groups_of(NESTED_ROWS, st.sampled_from([AGG, AGG, SKIP])))
    init = with_init(data, groups, NESTED_ROWS)
    check_against_model("nested_update", NESTED, groups, options, init)
