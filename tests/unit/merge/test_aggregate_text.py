"""listagg: Java's expectations (delimiters, blanks, distinct) and the model."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakeformat.errors import InvalidOptionError, LakeformatError
from lakeformat.merge.aggregation.registry import create_aggregator
from lakeformat.schema.types import (
    DataField,
    char,
    string,
    varchar,
)
from tests.support.depth import examples

from .aggregation_model import (
    AGG,
    DISTINCT,
    RESET,
    RETRACT,
    REV,
    SKIP,
    RefListagg,
    check_against_model,
    fold,
    fold1,
    groups_of,
    java_reduce,
    with_init,
)


def test_listagg_default_and_custom_delimiter():
    assert fold1("listagg", string(), ["user1", "user2"]) == "user1,user2"
    assert fold1("listagg", string(), ["user1", "user2"],
                 {"fields.f.list-agg-delimiter": "-"}) == "user1-user2"


@pytest.mark.parametrize("rows,options,want", [
    (["user1", "user2", "user1", "user3"], DISTINCT, "user1,user2,user3"),
    (["", ""], {**DISTINCT, "fields.f.list-agg-delimiter": ";"}, ""),
    (["user1", "user2", "user1,user3"], DISTINCT, "user1,user2,user3"),
    (["", "user2", "user1,user3"], DISTINCT, "user2,user1,user3"),
    (["k1=v1;k2=v2", "k1=v1;k3=v3", ""], {**DISTINCT, "fields.f.list-agg-delimiter": ";"},
     "k1=v1;k2=v2;k3=v3"),
    (["k1=v1 k2=v2", " k1=v1  k3=v3", " "], {**DISTINCT, "fields.f.list-agg-delimiter": " "},
     "k1=v1 k2=v2 k3=v3"),
    (["k1=v1,k2=v2", "k1=v1,k2=v3", ""], DISTINCT, "k1=v1,k2=v2,k2=v3"),
    (["abc,def,asd", "ab,xy"], DISTINCT, "abc,def,asd,ab,xy"),
    (["abc;def;asd", "ab;xy;def"], {**DISTINCT, "fields.f.list-agg-delimiter": ";"},
     "abc;def;asd;ab;xy"),
])
def test_listagg_examples_from_java(rows, options, want):
    assert java_reduce("listagg", string(), rows, options) == want

BLANKS = ["", " ", "   ", "\t", "\n", "\r", "\r\n", " \t\n ", " \t\n\r\n \u3000 ", "\u3000",
          "\u2000"]


def test_listagg_ignores_blank_values():
    rows = ["user1"] + BLANKS[:-2] + ["user2"] + BLANKS[-2:]
    assert java_reduce("listagg", string(), rows) == "user1,user2"
    rows = ["user1", "user2", "user1", "user3"] + BLANKS[:-2] + ["user2", "user3"] + BLANKS[-2:]
    assert java_reduce("listagg", string(), rows, DISTINCT) == "user1,user2,user3"
    # no-break spaces are not whitespace for Java
    assert fold1("listagg", string(), ["a", "\u00a0"]) == "a,\u00a0"


def test_listagg_first_non_blank_value_has_no_leading_delimiter():
    assert fold1("listagg", string(), [" ", "first line"]) == "first line"
    assert fold1("listagg", string(), [None, " "]) is None


def test_listagg_refuses_bounded_varchar_and_retract():
    with pytest.raises(InvalidOptionError, match="VARCHAR\\(100\\)"):
        create_aggregator("listagg", DataField(0, "f", varchar(100)), {})
    with pytest.raises(InvalidOptionError):
        create_aggregator("listagg", DataField(0, "f", char(3)), {})
    with pytest.raises(LakeformatError, match="'listagg' does not support retraction"):
        fold("listagg", string(), [[(AGG, "a"), (RETRACT, "a")]])


def test_listagg_reversed_rows_prepend():
    assert fold("listagg", string(), [[(AGG, "a"), (REV, "b"), (AGG, "c")]]) == ["b,a,c"]
    # a blank accumulator is replaced by a reversed row even when that row is blank
    assert fold("listagg", string(), [[(AGG, " "), (REV, None)]]) == [None]
    assert fold("listagg", string(), [[(REV, "x,y"), (REV, "y,z")]], DISTINCT) == ["y,z,x"]


def test_listagg_distinct_with_self_overlapping_delimiter():
    opts = {**DISTINCT, "fields.f.list-agg-delimiter": "||"}
    assert fold1("listagg", string(), ["a|", "b", "|b"], opts) == \
        RefListagg(string(), opts).agg(RefListagg(string(), opts).agg("a|", "b"), "|b")

LISTAGG_TEXT = st.one_of(st.none(), st.sampled_from(
    ["", " ", "a", "b", "a,b", "b,,a", "a,a", ",", "x y", "\u3000", "é,a", "a;b;a", "a|", "|a",
     "||", "a||b"]))


@pytest.mark.parametrize("options", [{}, DISTINCT, {"fields.f.list-agg-delimiter": ";"},
                                     {**DISTINCT, "fields.f.list-agg-delimiter": ";"},
                                     {**DISTINCT, "fields.f.list-agg-delimiter": ""},
                                     {**DISTINCT, "fields.f.list-agg-delimiter": "||"}],
                         ids=["plain", "distinct", "semicolon", "distinct-semicolon",
                              "distinct-empty", "distinct-border"])
@settings(max_examples=examples(50, 150), deadline=None)
@given(data=st.data())
def test_listagg_matches_the_model(options, data):
    groups = data.draw(groups_of(LISTAGG_TEXT, st.sampled_from([AGG, AGG, AGG, REV, RESET,
                                                                SKIP])))
    init = with_init(data, groups, LISTAGG_TEXT)
    check_against_model("listagg", string(), groups, options, init)
