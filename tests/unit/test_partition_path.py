"""Partition directory names spelled as Java's InternalRowPartitionComputer + PartitionPathUtils."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lakeformat.errors import UnsupportedError
from lakeformat.meta.partition import (
    escape_path_name, java_double_str, java_float_str, partition_path, partition_value_text,
    partition_values_text, unescape_path_name,
)
from lakeformat.schema import types as T
from lakeformat.schema.types import DataField, DataType

UTC = dt.timezone.utc


def one(value: Any, t: DataType, legacy: bool = True) -> str:
    return partition_path([value], [DataField(0, "p", t)], legacy_name=legacy)


class NanoDatetime(dt.datetime):
    """Stands in for pandas.Timestamp: a datetime with a ``nanosecond`` attribute."""

    nanosecond = 0


def _with_nanos(value: dt.datetime, nanos: int) -> NanoDatetime:
    out = NanoDatetime(value.year, value.month, value.day, value.hour, value.minute,
                       value.second, value.microsecond)
    out.nanosecond = nanos
    return out


def test_string_partition_and_multiple_keys() -> None:
    fields = [DataField(0, "dt", T.string()), DataField(1, "hr", T.int_())]
    assert partition_path(["2024-01-01", 3], fields) == "dt=2024-01-01/hr=3"
    assert partition_values_text(["2024-01-01", 3], fields) == {"dt": "2024-01-01", "hr": "3"}


def test_no_partition_keys_gives_empty_path() -> None:
    assert partition_path([], []) == ""


def test_date_is_epoch_day_in_legacy_mode_and_iso_with_cast() -> None:
    assert one(dt.date(2024, 1, 1), T.date()) == "p=19723"
    assert one(dt.date(1969, 12, 31), T.date()) == "p=-1"
    assert one(dt.date(2024, 1, 1), T.date(), legacy=False) == "p=2024-01-01"
    assert one(dt.date(5, 3, 9), T.date(), legacy=False) == "p=0005-03-09"


@pytest.mark.parametrize("value,precision,expected", [
    (dt.datetime(2024, 1, 2, 3, 4, 5, 678000), 3, "2024-01-02T03%3A04%3A05.678"),
    (dt.datetime(2024, 1, 2, 3, 4), 6, "2024-01-02T03%3A04"),
    (dt.datetime(2024, 1, 2, 3, 4, 0, 1000), 6, "2024-01-02T03%3A04%3A00.001"),
    (dt.datetime(2024, 1, 2, 3, 4, 5), 6, "2024-01-02T03%3A04%3A05"),
    (dt.datetime(2024, 1, 2, 3, 4, 5, 100), 6, "2024-01-02T03%3A04%3A05.000100"),
    (dt.datetime(2024, 1, 2, 3, 4, 5, 999999), 3, "2024-01-02T03%3A04%3A05.999"),
    (_with_nanos(dt.datetime(2024, 1, 2, 3, 4, 5, 1), 5), 9,
     "2024-01-02T03%3A04%3A05.000001005"),
    (dt.datetime(1960, 6, 1, 0, 0, 0, 500000), 6, "1960-06-01T00%3A00%3A00.500"),
])
def test_timestamp_legacy_is_local_date_time_to_string(value: dt.datetime, precision: int,
                                                       expected: str) -> None:
    assert one(value, T.timestamp(precision)) == f"p={expected}"


@pytest.mark.parametrize("value,precision,expected", [
    (dt.datetime(2024, 1, 2, 3, 4, 5, 678000), 3, "2024-01-02 03:04:05.678"),
    (dt.datetime(2024, 1, 2, 3, 4, 5), 3, "2024-01-02 03:04:05.000"),
    (dt.datetime(2024, 1, 2, 3, 4, 5, 678000), 6, "2024-01-02 03:04:05.678000"),
    (dt.datetime(2024, 1, 2, 3, 4, 5, 678900), 3, "2024-01-02 03:04:05.678"),
    (dt.datetime(2024, 1, 2, 3, 4, 5, 678900), 6, "2024-01-02 03:04:05.678900"),
    (dt.datetime(2024, 1, 2, 3, 4, 5), 0, "2024-01-02 03:04:05"),
    (dt.datetime(2024, 1, 2, 3, 4, 5, 123456), 6, "2024-01-02 03:04:05.123456"),
])
def test_timestamp_cast_is_format_timestamp(value: dt.datetime, precision: int,
                                            expected: str) -> None:
    text = partition_value_text(value, T.timestamp(precision), legacy_name=False)
    assert text == expected


def test_ltz_uses_utc_wall_clock_and_optional_zone_for_cast() -> None:
    t = T.timestamp_ltz(3)
    value = dt.datetime(2024, 1, 1, 23, 30, tzinfo=dt.timezone(dt.timedelta(hours=-2)))
    assert partition_value_text(value, t) == "2024-01-02T01:30"
    assert partition_value_text(value, t, legacy_name=False) == "2024-01-02 01:30:00.000"
    tokyo = dt.timezone(dt.timedelta(hours=9))
    assert partition_value_text(value, t, legacy_name=False, time_zone=tokyo) == \
        "2024-01-02 10:30:00.000"


def test_time_legacy_is_millis_and_cast_is_format_timestamp_millis() -> None:
    t = dt.time(1, 2, 3, 450000)
    assert partition_value_text(t, T.time(3)) == "3723450"
    assert partition_value_text(t, T.time(3), legacy_name=False) == "01:02:03.45"
    assert partition_value_text(dt.time(1, 2, 3), T.time(3), legacy_name=False) == "01:02:03.0"
    assert partition_value_text(dt.time(1, 2, 3, 123000), T.time(2), legacy_name=False) == \
        "01:02:03.12"
    assert partition_value_text(dt.time(1, 2, 3), T.time(0), legacy_name=False) == "01:02:03"


def test_decimal_is_plain_string_at_type_scale() -> None:
    assert one(Decimal("1.5"), T.decimal(10, 2)) == "p=1.50"
    assert one(Decimal("-0.001"), T.decimal(38, 5)) == "p=-0.00100"
    assert one(Decimal("1E+3"), T.decimal(10, 0)) == "p=1000"
    assert one(Decimal("0"), T.decimal(5, 2), legacy=False) == "p=0.00"


def test_boolean_and_integers() -> None:
    assert one(True, T.boolean()) == "p=true"
    assert one(False, T.boolean(), legacy=False) == "p=false"
    assert one(-5, T.tinyint()) == "p=-5"
    assert one(2 ** 63 - 1, T.bigint()) == "p=9223372036854775807"


@pytest.mark.parametrize("value,expected", [
    (1.0, "1.0"), (0.1, "0.1"), (100.0, "100.0"), (1e7, "1.0E7"), (9999999.0, "9999999.0"),
    (0.001, "0.001"), (0.0001, "1.0E-4"), (-0.0, "-0.0"), (5e-324, "4.9E-324"),
    (1.7976931348623157e308, "1.7976931348623157E308"), (1e23, "1.0E23"),
    (12345678.9, "1.23456789E7"), (float("nan"), "NaN"), (float("-inf"), "-Infinity"),
    (2e-3, "0.002"), (123.456, "123.456"),
])
def test_double_to_string_follows_java(value: float, expected: str) -> None:
    assert java_double_str(value) == expected


@pytest.mark.parametrize("value,expected", [
    (1.0, "1.0"), (0.1, "0.1"), (3.4028234663852886e38, "3.4028235E38"),
    (1.401298464324817e-45, "1.4E-45"), (1e10, "1.0E10"), (0.33333334, "0.33333334"),
    (16777216.0, "1.6777216E7"), (float("inf"), "Infinity"),
])
def test_float_to_string_follows_java(value: float, expected: str) -> None:
    assert java_float_str(value) == expected


def test_float_partition_value_uses_float_digits() -> None:
    assert one(0.1, T.float_()) == "p=0.1"
    assert one(0.1, T.double()) == "p=0.1"


def test_null_and_whitespace_values_become_default_name() -> None:
    fields = [DataField(0, "a", T.string()), DataField(1, "b", T.int_()),
              DataField(2, "c", T.string()), DataField(3, "d", T.string())]
    assert partition_path([None, None, " \t\u2003", ""], fields) == (
        "a=__DEFAULT_PARTITION__/b=__DEFAULT_PARTITION__/c=__DEFAULT_PARTITION__"
        "/d=__DEFAULT_PARTITION__")
    assert partition_path([None, 1, "x", "y"], fields, default_name="NULL") == \
        "a=NULL/b=1/c=x/d=y"


def test_no_break_space_is_not_java_whitespace() -> None:
    assert one("\u00a0", T.string()) == "p=\u00a0"


def test_escaping_matches_java_char_set() -> None:
    assert escape_path_name("a b/c:d=e") == "a b%2Fc%3Ad%3De"
    specials = "\"#%'*/:=?\\{}[]^\x7f\x00\x01\n\x1f"
    assert escape_path_name(specials) == (
        "%22%23%25%27%2A%2F%3A%3D%3F%5C%7B%7D%5B%5D%5E%7F%00%01%0A%1F")
    assert escape_path_name("ünï cødé ✓ 😀 ~!@$&()+,;<>`|-_.") == "ünï cødé ✓ 😀 ~!@$&()+,;<>`|-_."
    with pytest.raises(ValueError):
        escape_path_name("")


def test_keys_are_escaped_too() -> None:
    assert partition_path(["v"], [DataField(0, "a=b", T.string())]) == "a%3Db=v"


@given(st.text(min_size=1))
def test_unescape_inverts_escape(s: str) -> None:
    assert unescape_path_name(escape_path_name(s)) == s


def test_unescape_keeps_stray_percent() -> None:
    assert unescape_path_name("100%") == "100%"
    assert unescape_path_name("a%zz%2F") == "a%zz/"


def test_binary_partition_needs_cast_mode() -> None:
    with pytest.raises(UnsupportedError):
        one(b"abc", T.bytes_())
    assert one(b"a/c", T.bytes_(), legacy=False) == "p=a%2Fc"


def test_nested_partition_keys_are_unsupported() -> None:
    with pytest.raises(UnsupportedError):
        one([1], DataType("ARRAY", element=T.int_()))


def test_value_count_must_match_fields() -> None:
    with pytest.raises(ValueError):
        partition_path([1, 2], [DataField(0, "a", T.int_())])
