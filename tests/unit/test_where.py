"""`--where` text to DNF tuples (`lakeformat.expressions.where`), and the IS NULL ops it adds to
the read filter's Expression and partition-pruning paths (`predicate.py`)."""

from __future__ import annotations

import datetime
from decimal import Decimal

import pyarrow as pa
import pytest

from lakeformat.errors import InvalidFilterError
from lakeformat.expressions import (
    and_filters,
    check_filter,
    parse_where,
    partition_predicate,
    resolve_filter,
    to_expression,
    where_filter,
)
from lakeformat.schema.type_text import parse_type
from lakeformat.schema.types import DataField

FIELDS = [DataField(i, name, parse_type(t)) for i, (name, t) in enumerate([
    ("id", "BIGINT NOT NULL"), ("code", "STRING"), ("day", "DATE"), ("price", "DECIMAL(10, 2)"),
    ("ts", "TIMESTAMP(3)"), ("ok", "BOOLEAN"), ("score", "DOUBLE")])]


@pytest.mark.parametrize("op, want", [("=", "="), ("==", "="), ("!=", "!="), ("<>", "!="),
                                      ("<", "<"), ("<=", "<="), (">", ">"), (">=", ">=")])
def test_each_comparison_operator(op, want):
    assert parse_where(f"id {op} 5") == [[("id", want, 5)]]
    assert parse_where(f"id{op}5") == [[("id", want, 5)]]


def test_literals_quoted_numbers_booleans_and_bare_words():
    assert parse_where("a = 'x y' AND b = 'it''s' AND c = -1.5e2 AND d = TRUE AND e = false "
                       "AND f = 2024-01-01 AND g = ''") == [[
                           ("a", "=", "x y"), ("b", "=", "it's"), ("c", "=", -150.0),
                           ("d", "=", True), ("e", "=", False), ("f", "=", "2024-01-01"),
                           ("g", "=", "")]]


def test_in_not_in_is_null_between():
    assert parse_where("id IN (1, 2, 'x')") == [[("id", "in", [1, 2, "x"])]]
    assert parse_where("id not in (3)") == [[("id", "not in", [3])]]
    assert parse_where("code IS NULL") == [[("code", "is null", None)]]
    assert parse_where("code is not null") == [[("code", "is not null", None)]]
    assert parse_where("id BETWEEN 1 AND 5") == [[("id", ">=", 1), ("id", "<=", 5)]]
    assert parse_where("id NOT BETWEEN 1 AND 5") == [[("id", "<", 1)], [("id", ">", 5)]]


def test_and_binds_tighter_than_or_and_parentheses_regroup():
    a, b, c = ("a", "=", 1), ("b", "=", 2), ("c", "=", 3)
    assert parse_where("a = 1 OR b = 2 AND c = 3") == [[a], [b, c]]
    assert parse_where("(a = 1 OR b = 2) AND c = 3") == [[a, c], [b, c]]
    assert parse_where("((a = 1))") == [[a]]
    assert and_filters([[[a], [b]], [[c]]]) == [[a, c], [b, c]]


def test_quoted_column_names():
    assert parse_where('`my col` = 1 AND "x.y" = 2') == [[("my col", "=", 1), ("x.y", "=", 2)]]


@pytest.mark.parametrize("text, words", [
    ("", ["expected a condition"]),
    ("id", ["expected an operator", "'id'"]),
    ("id = ", ["expected a value"]),
    ("(id = 1", ["expected ')'"]),
    ("id = 1 id = 2", ["expected AND, OR"]),
    ("id = NULL", ["IS NULL"]),
    ("NOT id = 1", ["NOT goes after the column"]),
    ("code = 'abc", ["unterminated"]),
    ("id IN 1", ["expected '('"]),
    ("id BETWEEN 1 5", ["AND"]),
    ("id ; 1", ["';'"]),
])
def test_syntax_errors_name_the_text_and_what_was_expected(text, words):
    with pytest.raises(InvalidFilterError) as e:
        parse_where(text)
    for w in words:
        assert w in str(e.value), (w, str(e.value))


def test_where_filter_converts_values_to_the_column_types():
    got = where_filter(["code = 01234 AND day <= 2024-01-02", "price > 1.5 OR ok = TRUE",
                        "ts < '2024-01-01 10:00:00' AND id IN (1, '2') AND score = 1"],
                       FIELDS, "db.t")
    day, ts = datetime.date(2024, 1, 2), datetime.datetime(2024, 1, 1, 10)
    common = [("code", "=", "01234"), ("day", "<=", day)]
    tail = [("ts", "<", ts), ("id", "in", [1, 2]), ("score", "=", 1.0)]
    assert got == [[*common, ("price", ">", Decimal("1.50")), *tail],
                   [*common, ("ok", "=", True), *tail]]


@pytest.mark.parametrize("text, words", [
    ("id = abc", ["'abc'", "'id'", "BIGINT", "db.t"]),
    ("day = 2024-13-01", ["'2024-13-01'", "'day'", "DATE"]),
    ("ok = 1", ["'1'", "'ok'", "BOOLEAN"]),
    ("id = TRUE", ["'TRUE'", "'id'"]),
    ("zzz = 1", ["unknown column 'zzz'", "db.t", "id, code"]),
    ("id IN (1, x)", ["'x'", "'id'"]),
])
def test_where_filter_errors_name_column_value_and_type(text, words):
    with pytest.raises(InvalidFilterError) as e:
        where_filter(text, FIELDS, "db.t")
    for w in words:
        assert w in str(e.value), (w, str(e.value))


def test_resolve_filter_leaves_tuples_and_expressions_alone():
    dnf = [("id", "=", 1)]
    assert resolve_filter(dnf, FIELDS) is dnf
    assert resolve_filter(None, FIELDS) is None
    assert resolve_filter("id = 1", FIELDS) == [[("id", "=", 1)]]


def test_is_null_ops_filter_rows_and_not_in_drops_nulls():
    rows = pa.table({"a": [1, None, 3], "b": ["x", "y", None]})

    def ids(text: str) -> list:
        return rows.filter(to_expression(parse_where(text)))["a"].to_pylist()

    assert ids("a IS NULL") == [None]
    assert ids("a IS NOT NULL") == [1, 3]
    assert ids("b IS NULL OR a = 1") == [1, 3]
    assert ids("a NOT IN (1)") == [3]  # SQL: a null is neither in nor not in
    assert ids("a IN (1, 3) AND b IS NOT NULL") == [1]


def test_partition_pruning_takes_is_null_ops():
    pred = partition_predicate(parse_where("dt IS NULL OR dt = 'x'"), ["dt"])
    assert pred({"dt": None}) and pred({"dt": "x"}) and not pred({"dt": "y"})
    pred = partition_predicate(parse_where("dt IS NOT NULL"), ["dt"])
    assert pred({"dt": "y"}) and not pred({"dt": None})


@pytest.mark.parametrize("term, message", [
    (("name", "in", ["x", None]), "use \\('name', 'is null', None\\)"),
    (("name", "not in", [None]), "matches nothing in SQL"),
    (("name", "in", []), "needs at least one value"),
    (("id", "not in", []), "needs at least one value"),
])
def test_in_lists_with_null_or_nothing_are_refused_by_name(term, message):
    """pyarrow's isin would match a null to a null; SQL's IN never does."""
    fields = [DataField(0, "id", parse_type("BIGINT")),
              DataField(1, "name", parse_type("STRING"))]
    with pytest.raises(InvalidFilterError, match=message):
        check_filter([term], fields, "db.t")


def test_time_columns_take_time_text_and_the_filter_applies():
    fields = [DataField(0, "t", parse_type("TIME(3)"))]
    dnf = where_filter("t >= '10:00:00.5'", fields)
    assert dnf == [[("t", ">=", datetime.time(10, 0, 0, 500000))]]
    col = pa.array([datetime.time(9), datetime.time(10, 0, 1)], pa.time32("ms"))
    assert pa.table({"t": col}).filter(to_expression(dnf))["t"].to_pylist() == \
        [datetime.time(10, 0, 1)]
    with pytest.raises(InvalidFilterError, match="'25:00'"):
        where_filter("t = '25:00'", fields)
