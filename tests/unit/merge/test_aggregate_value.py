"""last_value, last_non_null_value, first_value, first_non_null_value: Java's
FieldAggregatorTest expectations and the order-dependent rules (aggReversed, reset, init)."""

from __future__ import annotations

from lakeformat.schema.types import (
    int_,
)

from .aggregation_model import AGG, NO_INIT, RESET, RETRACT, REV, SKIP, fold, fold1


def test_last_non_null_value():
    assert fold1("last_non_null_value", int_(), [None, 1]) == 1
    assert fold1("last_non_null_value", int_(), [1, None]) == 1


def test_last_value():
    assert fold1("last_value", int_(), [None, 1]) == 1
    assert fold1("last_value", int_(), [1, None]) is None


def test_first_value_resets_between_keys():
    # agg(null, 1) = 1, agg(1, 2) = 1; reset(); agg(1, 3) = 3
    assert fold("first_value", int_(), [[(AGG, 1), (AGG, 2)], [(AGG, 3)]], init=[NO_INIT, 1]) \
        == [1, 3]


def test_first_non_null_value():
    assert fold1("first_non_null_value", int_(), [None]) is None
    assert fold1("first_non_null_value", int_(), [None, 1, 2]) == 1
    assert fold("first_non_null_value", int_(), [[(AGG, 2)], [(AGG, 3)]], init=[1, 1]) == [2, 3]


def test_first_not_null_value_legacy_name():
    assert fold1("first_not_null_value", int_(), [None, 4, 5]) == 4


def test_retract_of_last_values():
    assert fold("last_value", int_(), [[(AGG, 1), (RETRACT, 1)]]) == [None]
    assert fold("last_non_null_value", int_(), [[(AGG, 1), (RETRACT, 1)]]) == [None]
    assert fold("last_non_null_value", int_(), [[(AGG, 1), (RETRACT, None)]]) == [1]
    assert fold("sum", int_(), [[(AGG, 1), (RETRACT, 1)]]) == [0]
    assert fold("product", int_(), [[(AGG, 1), (RETRACT, 1)]]) == [1]


def test_first_value_reversed_row_overwrites_after_initialisation():
    # Java's default aggReversed is agg(v, acc): once initialised it returns v
    assert fold("first_value", int_(), [[(AGG, 1), (REV, 2), (AGG, 3)]]) == [2]
    # before initialisation the reversed row keeps acc (null) but initialises
    assert fold("first_value", int_(), [[(REV, 2), (AGG, 3)]]) == [None]


def test_first_non_null_value_reversed_rows():
    # acc null: a reversed row sets acc = v without initialising
    assert fold("first_non_null_value", int_(), [[(REV, 2), (AGG, 3)]]) == [3]
    # acc not null: a reversed row initialises and keeps acc
    assert fold("first_non_null_value", int_(), [[(REV, 2), (REV, 5), (AGG, 3)]]) == [2]
    # once initialised a reversed row returns v
    assert fold("first_non_null_value", int_(), [[(AGG, 1), (REV, 5), (AGG, 3)]]) == [5]


def test_last_values_reversed_rows():
    assert fold("last_value", int_(), [[(AGG, 1), (REV, 2)]]) == [1]
    assert fold("last_non_null_value", int_(), [[(AGG, None), (REV, 2), (REV, 3)]]) == [2]


def test_reset_replaces_the_accumulator():
    assert fold("sum", int_(), [[(AGG, 5), (RESET, 3), (AGG, 2)]]) == [5]
    assert fold("sum", int_(), [[(AGG, 5), (RESET, None)]]) == [None]
    assert fold("max", int_(), [[(AGG, 9), (RESET, 1), (AGG, 2)]]) == [2]
    # first_value stays initialised across a reset: the reset value is kept
    assert fold("first_value", int_(), [[(AGG, 1), (RESET, 7), (AGG, 2)]]) == [7]
    assert fold("first_value", int_(), [[(RESET, 7), (AGG, 2)]]) == [2]


def test_skip_rows_and_init():
    assert fold("sum", int_(), [[(SKIP, 100), (AGG, 1)], [(SKIP, 3)], []],
                init=[10, 20, NO_INIT]) == [11, 20, None]
