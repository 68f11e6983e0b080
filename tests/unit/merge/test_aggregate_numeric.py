"""sum and product: Java's FieldAggregatorTest expectations, overflow and
decimal rules."""

from __future__ import annotations

from decimal import Decimal

import pytest

from lakeformat.errors import LakeformatError
from lakeformat.schema.types import (
    bigint,
    decimal,
    double,
    float_,
    int_,
    smallint,
    tinyint,
)

from .aggregation_model import RETRACT, f32, fold, fold1

INTS = [tinyint(), smallint(), int_(), bigint()]


@pytest.mark.parametrize("dtype", INTS + [float_(), double()])
def test_sum_and_product_basics(dtype):
    c = float if dtype.root in ("FLOAT", "DOUBLE") else int
    assert fold1("sum", dtype, [None, c(10)]) == c(10)
    assert fold1("sum", dtype, [c(1), c(10)]) == c(11)
    assert fold("sum", dtype, [[(RETRACT, c(5))]], init=[c(10)]) == [c(5)]
    assert fold("sum", dtype, [[(RETRACT, c(5))]]) == [c(-5)]
    assert fold1("product", dtype, [None, c(10)]) == c(10)
    assert fold1("product", dtype, [c(1), c(10)]) == c(10)
    assert fold("product", dtype, [[(RETRACT, c(5))]], init=[c(10)]) == [c(2)]
    assert fold("product", dtype, [[(RETRACT, c(5))]]) == [None]


def test_sum_and_product_decimal():
    d = decimal(10, 0)
    assert fold1("sum", d, [None, Decimal(10)]) == Decimal(10)
    assert fold1("sum", d, [Decimal(1), Decimal(10)]) == Decimal(11)
    assert fold("sum", d, [[(RETRACT, Decimal(5))]], init=[Decimal(10)]) == [Decimal(5)]
    assert fold("sum", d, [[(RETRACT, Decimal(5))]]) == [Decimal(-5)]
    assert fold1("product", d, [Decimal(1), Decimal(10)]) == Decimal(10)
    assert fold("product", d, [[(RETRACT, Decimal(5))]], init=[Decimal(10)]) == [Decimal(2)]
    assert fold("product", d, [[(RETRACT, Decimal(5))]]) == [None]


@pytest.mark.parametrize("dtype,bits", [(tinyint(), 8), (smallint(), 16), (int_(), 32),
                                        (bigint(), 64)])
def test_integer_overflow_is_an_error(dtype, bits):
    lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    for rows in ([hi, 1], [lo, -1]):
        with pytest.raises(LakeformatError, match="overflow"):
            fold1("sum", dtype, rows)
    for acc, v in ((lo, 1), (hi, -1)):
        with pytest.raises(LakeformatError, match="overflow"):
            fold("sum", dtype, [[(RETRACT, v)]], init=[acc])
    with pytest.raises(LakeformatError, match="overflow"):
        fold("sum", dtype, [[(RETRACT, lo)]])  # negating MIN
    with pytest.raises(LakeformatError, match="overflow"):
        fold1("product", dtype, [hi, 2])
    with pytest.raises(LakeformatError, match="overflow"):
        fold1("product", dtype, [lo, -1])
    with pytest.raises(LakeformatError, match="overflow"):
        fold("product", dtype, [[(RETRACT, -1)]], init=[lo])


def test_sum_overflow_of_an_intermediate_value_is_an_error():
    # Java checks every step: MAX + 1 fails even though a later -1 would bring it back
    with pytest.raises(LakeformatError, match="overflow"):
        fold1("sum", int_(), [2**31 - 1, 1, -1])


def test_product_examples_from_java():
    assert pytest.raises(LakeformatError, fold1, "product", tinyint(), [64, 2])
    assert pytest.raises(LakeformatError, fold1, "product", tinyint(), [-64, 4])
    assert pytest.raises(LakeformatError, fold1, "product", smallint(), [1000, 100])
    assert pytest.raises(LakeformatError, fold1, "product", int_(), [100_000, 100_000])


def test_float_sum_is_sequential():
    rows = [1e8] + [1.0] * 50
    want = 0.0
    for r in rows:
        want = f32(want + r) if want else r
    assert fold1("sum", float_(), rows) == f32(1e8)
    assert fold1("sum", float_(), rows) == want


def test_decimal_sum_overflow_nulls_the_accumulator():
    # DECIMAL(20, 0) is not compact: a sum beyond 20 digits becomes null, the next row restarts
    d = decimal(20, 0)
    big = Decimal(10**20 - 1)
    assert fold1("sum", d, [big, Decimal(1)]) is None
    assert fold1("sum", d, [big, Decimal(1), Decimal(7)]) == Decimal(7)


def test_decimal_sum_out_of_precision_is_refused():
    with pytest.raises(LakeformatError, match="digits"):
        fold1("sum", decimal(3, 0), [Decimal(999), Decimal(1)])
    # back within precision at the end: fine, as in Java
    assert fold1("sum", decimal(3, 0), [Decimal(999), Decimal(1), Decimal(-5)]) == Decimal(995)


def test_decimal_product_rounds_half_up_and_divides_exactly():
    d = decimal(5, 2)
    assert fold1("product", d, [Decimal("1.50"), Decimal("2.25")]) == Decimal("3.38")
    assert fold("product", d, [[(RETRACT, Decimal("8.00"))]], init=[Decimal("1.00")]) \
        == [Decimal("0.13")]
    with pytest.raises(LakeformatError, match="Non-terminating"):
        fold("product", d, [[(RETRACT, Decimal("3.00"))]], init=[Decimal("1.00")])
