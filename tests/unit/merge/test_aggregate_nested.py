"""collect and merge_map: Java's expectations and the model."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakeformat.errors import InvalidOptionError
from lakeformat.merge.aggregation.registry import create_aggregator
from lakeformat.schema.types import (
    DataField,
    DataType,
    bytes_,
    int_,
    string,
)
from tests.support.depth import examples

from .aggregation_model import (
    AGG,
    ARRAY_INT,
    DISTINCT,
    MAP_IS,
    NESTED_OPS,
    RETRACT,
    REV,
    check_against_model,
    fold,
    fold1,
    groups_of,
    java_reduce,
    retract_from,
    with_init,
)

ROW_T = DataType("ROW", fields=(DataField(1, "a", int_()), DataField(2, "b", string())))

ARRAY_ROW = DataType("ARRAY", element=ROW_T)

ARRAY_ARRAY = DataType("ARRAY", element=ARRAY_INT)

ARRAY_MAP = DataType("ARRAY", element=MAP_IS)

ARRAY_BYTES = DataType("ARRAY", element=bytes_())


def test_collect_distinct_examples_from_java():
    assert fold1("collect", ARRAY_INT, [None, None], DISTINCT) is None
    assert sorted(fold1("collect", ARRAY_INT, [None, [1, 1, 2]], DISTINCT)) == [1, 2]
    assert sorted(java_reduce("collect", ARRAY_INT, [[1, 1, 2], [2, 3]], DISTINCT)) == [1, 2, 3]
    assert java_reduce("collect", ARRAY_BYTES, [[b"\x01\x02"], [b"\x01\x02", b"\x03\x04"]],
                       DISTINCT) == [b"\x01\x02", b"\x03\x04"]
    rows1 = [{"a": 1, "b": "A"}, {"a": 1, "b": "B"}]
    rows2 = [{"a": 1, "b": "A"}, {"a": 2, "b": "A"}]
    assert java_reduce("collect", ARRAY_ROW, [rows1, rows2], DISTINCT) == rows1 + rows2[1:]
    assert java_reduce("collect", ARRAY_ARRAY, [[[1, 1], [1, 2]], [[1, 1], [1, 2], [2, 1]]],
                       DISTINCT) == [[1, 1], [1, 2], [2, 1]]
    assert java_reduce("collect", ARRAY_MAP, [[[(1, "A")], [(1, "A"), (2, "B")]],
                                              [[(1, "A")], [(2, "B"), (1, "A")], [(1, "C")]]],
                       DISTINCT) == [[(1, "A")], [(1, "A"), (2, "B")], [(1, "C")]]


def test_collect_without_distinct():
    assert fold1("collect", ARRAY_INT, [None, None]) is None
    assert fold1("collect", ARRAY_INT, [None, [1, 1, 2]]) == [1, 1, 2]
    assert java_reduce("collect", ARRAY_INT, [[1, 1, 2], [2, 3]]) == [1, 1, 2, 2, 3]


def test_collect_retract_examples_from_java():
    assert sorted(retract_from("collect", ARRAY_INT, [1, 2, 3], [1], DISTINCT)) == [2, 3]
    acc = [{"a": 1, "b": "A"}, {"a": 1, "b": "B"}, {"a": 2, "b": "B"}]
    assert retract_from("collect", ARRAY_ROW, acc, [acc[0], acc[2]], DISTINCT) == [acc[1]]
    assert retract_from("collect", ARRAY_ARRAY, [[1, 1], [1, 2], [2, 1]], [[1, 1], [1, 2]],
                        DISTINCT) == [[2, 1]]
    assert retract_from("collect", ARRAY_MAP, [[(1, "A")], [(2, "B"), (1, "A")], [(1, "C")]],
                        [[(1, "A")], [(1, "A"), (2, "B")]], DISTINCT) == [[(1, "C")]]
    assert retract_from("collect", ARRAY_BYTES, [b"\x01\x02", b"\x03\x04"], [b"\x01\x02"],
                        DISTINCT) == [b"\x03\x04"]
    # one element removed per retracted element
    assert retract_from("collect", ARRAY_INT, [1, 1, 2, 2, 3], [1, 2, 3], DISTINCT) == [1, 2]
    acc = [{"a": 1, "b": "A"}, {"a": 1, "b": "A"}, {"a": 1, "b": "B"}, {"a": 2, "b": "B"}]
    assert retract_from("collect", ARRAY_ROW, acc, [acc[0], acc[3]], DISTINCT) == acc[1:3]
    assert retract_from("collect", ARRAY_MAP, [[(1, "A")], [(1, "A")], [(2, "B"), (1, "A")],
                                               [(1, "C")]],
                        [[(1, "A")], [(1, "A"), (2, "B")]], DISTINCT) == [[(1, "A")], [(1, "C")]]
    # a null accumulator stays null, an empty or null retraction keeps it
    assert fold("collect", ARRAY_INT, [[(RETRACT, [1])]]) == [None]
    assert retract_from("collect", ARRAY_INT, [1], []) == [1]


def test_collect_reversed_rows():
    # collect overrides aggReversed with agg(acc, v) ...
    assert fold("collect", ARRAY_INT, [[(AGG, [1]), (REV, [2])]]) == [[1, 2]]
    # ... but the ignore-retract wrapper does not delegate it: agg(v, acc), the row goes first
    assert fold("collect", ARRAY_INT, [[(AGG, [1]), (REV, [2])]],
                {"fields.f.ignore-retract": "true"}) == [[2, 1]]


def test_merge_map_examples_from_java():
    assert fold1("merge_map", MAP_IS, [None, None]) is None
    acc = fold1("merge_map", MAP_IS, [None, [(1, "A")]])
    assert dict(acc) == {1: "A"}
    acc = java_reduce("merge_map", MAP_IS, [acc, [(1, "A"), (2, "B")]])
    assert dict(acc) == {1: "A", 2: "B"}
    acc = java_reduce("merge_map", MAP_IS, [acc, [(1, "a"), (3, "c")]])
    assert dict(acc) == {1: "a", 2: "B", 3: "c"}
    assert retract_from("merge_map", MAP_IS, [(1, "A"), (2, "B"), (3, "C")],
                        [(1, "A"), (2, "A")]) == [(3, "C")]
    bin_map = DataType("MAP", key=bytes_(False), value=int_())
    merged = java_reduce("merge_map", bin_map, [[(b"\x01\x02", 1)],
                                                [(b"\x01\x02", 2), (b"\x03\x04", 3)]])
    assert dict(merged) == {b"\x01\x02": 2, b"\x03\x04": 3}
    assert retract_from("merge_map", bin_map, [(b"\x01\x02", 1), (b"\x03\x04", 2)],
                        [(b"\x01\x02", 1)]) == [(b"\x03\x04", 2)]


def test_merge_map_reversed_rows_only_add_absent_keys():
    assert dict(fold("merge_map", MAP_IS, [[(AGG, [(1, "a")]), (REV, [(1, "x"), (2, "y")])]])[0]
                ) == {1: "a", 2: "y"}


def test_collect_and_merge_map_refuse_other_types():
    with pytest.raises(InvalidOptionError, match="ARRAY"):
        create_aggregator("collect", DataField(0, "f", int_()), {})
    with pytest.raises(InvalidOptionError, match="MAP"):
        create_aggregator("merge_map", DataField(0, "f", ARRAY_INT), {})

INT_LISTS = st.one_of(st.none(), st.lists(st.one_of(st.none(), st.integers(0, 3)), max_size=4))

ROW_LISTS = st.one_of(st.none(), st.lists(st.one_of(
    st.none(), st.fixed_dictionaries({"a": st.integers(0, 2), "b": st.sampled_from(["x", "y"])})),
    max_size=3))

MAP_VALUES = st.one_of(st.none(), st.lists(
    st.tuples(st.integers(0, 3), st.one_of(st.none(), st.sampled_from(["p", "q"]))),
    max_size=3))

MAP_LISTS = st.one_of(st.none(), st.lists(st.one_of(
    st.none(), st.dictionaries(st.integers(0, 2), st.sampled_from(["p", "q"]), max_size=2).map(
        lambda d: list(d.items()))), max_size=3))

COLLECT_CASES = [
    ("plain-int", ARRAY_INT, INT_LISTS, {}),
    ("distinct-int", ARRAY_INT, INT_LISTS, DISTINCT),
    ("distinct-row", ARRAY_ROW, ROW_LISTS, DISTINCT),
    ("plain-row", ARRAY_ROW, ROW_LISTS, {}),
    ("distinct-map", ARRAY_MAP, MAP_LISTS, DISTINCT),
    ("ignore-retract-int", ARRAY_INT, INT_LISTS, {"fields.f.ignore-retract": "true"}),
    ("ignore-retract-distinct-int", ARRAY_INT, INT_LISTS,
     {**DISTINCT, "fields.f.ignore-retract": "true"}),
    ("ignore-retract-distinct-row", ARRAY_ROW, ROW_LISTS,
     {**DISTINCT, "fields.f.ignore-retract": "true"}),
]


@pytest.mark.parametrize("dtype,values,options", [c[1:] for c in COLLECT_CASES],
                         ids=[c[0] for c in COLLECT_CASES])
@settings(max_examples=examples(50, 150), deadline=None)
@given(data=st.data())
def test_collect_matches_the_model(dtype, values, options, data):
    groups = data.draw(groups_of(values, NESTED_OPS))
    init = with_init(data, groups, values)
    check_against_model("collect", dtype, groups, options, init)


@settings(max_examples=examples(60, 200), deadline=None)
@given(data=st.data())
def test_merge_map_matches_the_model(data):
    groups = data.draw(groups_of(MAP_VALUES, NESTED_OPS))
    init = with_init(data, groups, MAP_VALUES)
    check_against_model("merge_map", MAP_IS, groups, {}, init)
