"""Every simple aggregate function: retraction support, type refusals, unknown
names, and the vectorized `reduce` against the row-at-a-time model."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakeformat.errors import InvalidOptionError, LakeformatError, UnsupportedError
from lakeformat.merge.aggregation.registry import create_aggregator
from lakeformat.schema.types import (
    DataField,
    bigint,
    boolean,
    bytes_,
    decimal,
    double,
    float_,
    int_,
    string,
    tinyint,
)
from tests.support.depth import examples

from .aggregation_model import AGG, RETRACT, check_against_model, fold, groups_of, with_init


@pytest.mark.parametrize("name", ["first_value", "first_non_null_value", "max", "min",
                                  "bool_and", "bool_or"])
def test_functions_without_retraction(name):
    dtype = boolean() if name.startswith("bool") else int_()
    v = True if name.startswith("bool") else 1
    with pytest.raises(LakeformatError,
                       match=f"Aggregate function '{name}' does not support retraction"):
        fold(name, dtype, [[(AGG, v), (RETRACT, v)]])
    # ignore-retract turns the retraction into a no-op
    assert fold(name, dtype, [[(AGG, v), (RETRACT, v)]],
                options={"fields.f.ignore-retract": "true"}) == [v]


@pytest.mark.parametrize("name,dtype", [
    ("sum", string()), ("product", boolean()), ("bool_and", int_()), ("bool_or", string()),
])
def test_type_refusals(name, dtype):
    with pytest.raises(InvalidOptionError, match="fields.col.aggregate-function"):
        create_aggregator(name, DataField(0, "col", dtype), {})


@pytest.mark.parametrize("name", ["hll_sketch", "theta_sketch", "rbm32", "rbm64", "nope"])
def test_unsupported_functions(name):
    with pytest.raises(UnsupportedError, match=name):
        create_aggregator(name, DataField(0, "col", bytes_()), {})


def _retractable(name):
    return name in ("sum", "product", "last_value", "last_non_null_value")

SIMPLE_CASES = [
    ("sum", int_(), st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1))),
    ("sum", tinyint(), st.one_of(st.none(), st.integers(-128, 127))),
    ("sum", bigint(), st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1),
                                st.integers(-50, 50))),
    ("sum", double(), st.one_of(st.none(), st.floats(allow_nan=True, width=64))),
    ("sum", float_(), st.one_of(st.none(), st.floats(width=32))),
    ("sum", decimal(5, 2), st.one_of(st.none(), st.decimals(-999, 999, places=2))),
    ("sum", decimal(20, 1), st.one_of(st.none(), st.decimals(-(10**19) + 1, 10**19 - 1, places=1,
                                                             allow_nan=False))),
    ("product", int_(), st.one_of(st.none(), st.integers(-300, 300))),
    ("product", bigint(), st.one_of(st.none(), st.integers(-(2**40), 2**40))),
    ("product", double(), st.one_of(st.none(), st.floats(-1e3, 1e3))),
    ("product", decimal(8, 2), st.one_of(st.none(), st.sampled_from(
        [Decimal(x) for x in ("0.50", "2.00", "1.25", "-4.00", "0.00", "3.10")]))),
    ("max", int_(), st.one_of(st.none(), st.integers(-5, 5))),
    ("min", double(), st.one_of(st.none(), st.sampled_from([0.0, -0.0, 1.5, float("nan")]))),
    ("max", string(), st.one_of(st.none(), st.sampled_from(["", "a", "b", "ab", "é", "z"]))),
    ("min", decimal(30, 3), st.one_of(st.none(), st.decimals(-100, 100, places=3))),
    ("last_value", int_(), st.one_of(st.none(), st.integers(0, 9))),
    ("last_non_null_value", string(), st.one_of(st.none(), st.sampled_from(["x", "y"]))),
    ("first_value", int_(), st.one_of(st.none(), st.integers(0, 9))),
    ("first_non_null_value", int_(), st.one_of(st.none(), st.integers(0, 9))),
    ("bool_and", boolean(), st.one_of(st.none(), st.booleans())),
    ("bool_or", boolean(), st.one_of(st.none(), st.booleans())),
]


@pytest.mark.parametrize("name,dtype,values", SIMPLE_CASES,
                         ids=[f"{c[0]}-{c[1]}" for c in SIMPLE_CASES])
@settings(max_examples=examples(50, 150), deadline=None)
@given(data=st.data())
def test_simple_functions_match_the_model(name, dtype, values, data):
    groups = data.draw(groups_of(values))
    if not _retractable(name):
        groups = [[(AGG if op == RETRACT else op, v) for op, v in g] for g in groups]
    init = with_init(data, groups, values)
    check_against_model(name, dtype, groups, init=init)
