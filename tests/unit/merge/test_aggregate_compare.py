"""max, min, bool_and, bool_or: Java's FieldAggregatorTest expectations and
Java's compare order for floats."""

from __future__ import annotations

import math
from decimal import Decimal

import pytest

from lakeformat.errors import InvalidOptionError
from lakeformat.merge.aggregation.registry import create_aggregator
from lakeformat.schema.types import (
    DataField,
    DataType,
    bigint,
    binary,
    boolean,
    bytes_,
    char,
    date,
    decimal,
    double,
    float_,
    int_,
    smallint,
    timestamp,
    tinyint,
    varchar,
)

from .aggregation_model import fold1


def test_bool_and():
    assert fold1("bool_and", boolean(), [False, True]) is False
    assert fold1("bool_and", boolean(), [True, True]) is True
    assert fold1("bool_and", boolean(), [None, True, None]) is True
    assert fold1("bool_and", boolean(), [None, None]) is None


def test_bool_or():
    assert fold1("bool_or", boolean(), [False, True]) is True
    assert fold1("bool_or", boolean(), [False, False]) is False
    assert fold1("bool_or", boolean(), [None]) is None


def test_max_min():
    assert fold1("max", int_(), [1, 10]) == 10
    assert fold1("min", int_(), [1, 10]) == 1


def test_max_min_boolean():
    for acc, v, mx, mn in [(None, True, True, True), (False, None, False, False),
                           (False, False, False, False), (False, True, True, False),
                           (True, False, True, False), (True, True, True, True)]:
        assert fold1("max", boolean(), [acc, v]) is mx
        assert fold1("min", boolean(), [acc, v]) is mn


@pytest.mark.parametrize("dtype,value", [
    (boolean(), True), (tinyint(), 1), (smallint(), 1), (int_(), 1), (bigint(), 1),
    (float_(), 1.0), (double(), 1.0), (decimal(4, 2), Decimal("0.01")), (char(1), "a"),
    (varchar(1), "a"), (binary(1), b"\x01"), (bytes_(), b"\x01"),
    (date(), __import__("datetime").date(1970, 1, 2)),
    (timestamp(3), __import__("datetime").datetime(1970, 1, 1, 0, 0, 0, 1000)),
])
def test_max_min_comparable_types(dtype, value):
    assert fold1("max", dtype, [value, value]) == value
    assert fold1("min", dtype, [value, value]) == value


@pytest.mark.parametrize("dtype", [
    DataType("ARRAY", element=int_()), DataType("MAP", key=int_(False), value=int_()),
    DataType("ROW", fields=(DataField(1, "f0", int_()),)),
])
def test_max_min_refuse_incomparable(dtype):
    for name in ("max", "min"):
        with pytest.raises(InvalidOptionError, match="comparable"):
            create_aggregator(name, DataField(0, "label", dtype), {})


def test_float_max_min_follow_java_compare():
    assert math.copysign(1, fold1("max", double(), [-0.0, 0.0])) == 1
    assert math.copysign(1, fold1("min", double(), [0.0, -0.0])) == -1
    assert math.isnan(fold1("max", double(), [1.0, float("nan")]))
    assert fold1("min", double(), [float("nan"), 1.0]) == 1.0
