"""BinaryRow codec: byte-exact worked examples (format notes §5.3), Java quirks, round trips."""

from __future__ import annotations

import datetime as dt
import math
import struct
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakeformat.errors import CorruptFileError, UnsupportedError
from lakeformat.meta.binary_row import (
    EMPTY_ROW, deserialize, from_avro_bytes, java_unscaled_bytes, null_bits_width, serialize,
    to_avro_bytes,
)
from lakeformat.schema import types as T
from lakeformat.schema.types import DataType

UTC = dt.timezone.utc


class NanoDatetime(dt.datetime):
    """Stands in for pandas.Timestamp: a datetime with a ``nanosecond`` attribute."""

    nanosecond = 0

    @classmethod
    def with_nanos(cls, value: dt.datetime, nanos: int) -> "NanoDatetime":
        out = cls(value.year, value.month, value.day, value.hour, value.minute, value.second,
                  value.microsecond, value.tzinfo)
        out.nanosecond = nanos
        return out


# -- worked examples ---------------------------------------------------------------------------

def test_string_partition_example_is_byte_exact() -> None:
    expected = bytes.fromhex("00000001" "0000000000000000" "0a00000010000000"
                             "323032342d30312d3031000000000000")
    assert to_avro_bytes(["2024-01-01"], [T.string()]) == expected


def test_bigint_key_example_is_byte_exact() -> None:
    assert to_avro_bytes([1], [T.bigint()]) == bytes.fromhex(
        "00000001" "0000000000000000" "0100000000000000")


def test_empty_row_is_arity_zero_and_eight_zero_bytes() -> None:
    assert EMPTY_ROW == bytes.fromhex("000000000000000000000000")
    assert to_avro_bytes([], []) == EMPTY_ROW
    assert from_avro_bytes(EMPTY_ROW, []) == []


def test_mixed_row_example_matches_every_documented_slot() -> None:
    ts6 = dt.datetime(2024, 1, 2, 3, 4, 5, 123901)  # nano-of-milli 901000
    ts3 = dt.datetime(2024, 1, 2, 3, 4, 5, 123000)
    types = [T.int_(), T.string(), T.string(), T.bigint(), T.decimal(10, 2),
             T.decimal(38, 10), T.timestamp(3), T.timestamp(6), T.date(), T.boolean()]
    values = [5, "abc", "abcdefghijkl", None, Decimal("1.23"), Decimal("-1.5"), ts3, ts6,
              dt.date(2024, 1, 1), True]
    row = serialize(values, types)
    assert len(row) == 8 + 80 + 16 + 16 + 8

    def slot(i: int) -> str:
        return row[8 + 8 * i: 16 + 8 * i].hex()

    assert row[0] == 0 and row[1] == 0x08  # RowKind +I; null bit 11 = field 3
    assert slot(0) == "0500000000000000"
    assert slot(1) == "6162630000000083"
    assert slot(2) == "0c00000058000000"
    assert row[88:104] == b"abcdefghijkl" + bytes(4)
    assert slot(3) == "0000000000000000"
    assert slot(4) == "7b00000000000000"
    assert slot(5) == "0500000068000000"
    assert row[104:120].hex() == "fc81ee2a00" + "00" * 11
    millis = int((ts3 - dt.datetime(1970, 1, 1)).total_seconds() * 1000)
    assert slot(6) == struct.pack("<q", millis).hex()
    assert slot(7) == "88bf0d0078000000"
    assert row[120:128] == struct.pack("<q", millis)
    assert slot(8) == "0b4d000000000000"
    assert slot(9) == "0100000000000000"
    assert deserialize(row, types) == values


# -- Java quirks ---------------------------------------------------------------------------

def test_null_non_compact_decimal_reserves_sixteen_bytes_like_java() -> None:
    row = serialize([None, 7], [T.decimal(38, 2), T.int_()])
    assert row.hex() == ("0001000000000000" "0000000018000000" "0700000000000000"
                         + "00" * 16)
    assert deserialize(row, [T.decimal(38, 2), T.int_()]) == [None, 7]


def test_null_non_compact_timestamp_reserves_eight_bytes_like_java() -> None:
    for t in (T.timestamp(6), T.timestamp_ltz(9), T.timestamp(4)):
        row = serialize([None], [t])
        assert row.hex() == "0001000000000000" "0000000010000000" + "00" * 8


def test_null_compact_decimal_and_timestamp_have_zero_slot_and_no_var_part() -> None:
    assert serialize([None], [T.decimal(18, 2)]).hex() == "0001000000000000" + "00" * 8
    assert serialize([None], [T.timestamp(3)]).hex() == "0001000000000000" + "00" * 8


@pytest.mark.parametrize("unscaled,expected", [
    (0, "00"), (1, "01"), (-1, "ff"), (127, "7f"), (128, "0080"), (-128, "80"),
    (-129, "ff7f"), (-32768, "8000"), (-(2 ** 63), "8000000000000000"), (255, "00ff"),
])
def test_decimal_bytes_are_java_biginteger_to_byte_array(unscaled: int, expected: str) -> None:
    assert java_unscaled_bytes(unscaled).hex() == expected


def test_seven_byte_string_is_inline_and_eight_byte_string_is_not() -> None:
    assert serialize(["abcdefg"], [T.string()])[8:].hex() == "6162636465666787"
    row = serialize(["abcdefgh"], [T.string()])
    assert row[8:16].hex() == "0800000010000000" and row[16:] == b"abcdefgh"
    assert serialize([b""], [T.bytes_()])[8:].hex() == "0000000000000080"


def test_null_bit_set_grows_at_57_fields() -> None:
    assert null_bits_width(56) == 8 and null_bits_width(57) == 16 and null_bits_width(121) == 24
    types = [T.int_()] * 57
    values: list[Any] = list(range(57))
    values[56] = None
    row = serialize(values, types)
    assert len(row) == 16 + 8 * 57
    assert row[(56 + 8) // 8] == 1 << ((56 + 8) % 8)
    assert deserialize(row, types) == values


def test_decimal_is_rounded_half_up_and_overflow_raises() -> None:
    row = serialize([Decimal("1.005")], [T.decimal(10, 2)])
    assert deserialize(row, [T.decimal(10, 2)]) == [Decimal("1.01")]
    with pytest.raises(ValueError):
        serialize([Decimal("123.4")], [T.decimal(3, 1)])


def test_decimal_comes_back_with_the_type_scale() -> None:
    (value,) = deserialize(serialize([Decimal("1.5")], [T.decimal(38, 4)]), [T.decimal(38, 4)])
    assert value.as_tuple().exponent == -4 and value == Decimal("1.5")


def test_ltz_accepts_naive_as_utc_and_aware_in_any_zone() -> None:
    t = T.timestamp_ltz(6)
    aware = dt.datetime(2024, 1, 1, 2, 0, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    naive_utc = dt.datetime(2024, 1, 1, 0, 0)
    assert serialize([aware], [t]) == serialize([naive_utc], [t])
    assert deserialize(serialize([aware], [t]), [t]) == [naive_utc.replace(tzinfo=UTC)]


def test_timestamp_without_zone_refuses_aware_values() -> None:
    with pytest.raises(ValueError):
        serialize([dt.datetime(2024, 1, 1, tzinfo=UTC)], [T.timestamp(6)])


def test_nanosecond_timestamps_keep_nanos_and_read_back_truncated() -> None:
    value = NanoDatetime.with_nanos(dt.datetime(2024, 1, 1, 0, 0, 0, 123456), 789)
    row = serialize([value], [T.timestamp(9)])
    assert struct.unpack_from("<q", row, 8)[0] & 0xFFFFFFFF == 456789
    assert deserialize(row, [T.timestamp(9)]) == [dt.datetime(2024, 1, 1, 0, 0, 0, 123456)]


def test_compact_timestamp_keeps_only_millis() -> None:
    row = serialize([dt.datetime(1969, 12, 31, 23, 59, 59, 999999)], [T.timestamp(3)])
    assert struct.unpack_from("<q", row, 8)[0] == -1
    assert deserialize(row, [T.timestamp(3)]) == [dt.datetime(1969, 12, 31, 23, 59, 59, 999000)]


def test_nested_types_support_null_only() -> None:
    arr = DataType("ARRAY", element=T.int_())
    assert deserialize(serialize([None, 1], [arr, T.int_()]), [arr, T.int_()]) == [None, 1]
    with pytest.raises(UnsupportedError):
        serialize([[1]], [arr])


def test_variant_round_trips() -> None:
    t = DataType("VARIANT")
    value = {"value": b"\x01\x02\x03", "metadata": b"\x09" * 6}
    row = serialize([value], [t])
    assert row[8:16].hex() == "0d00000010000000" and len(row) == 32
    assert deserialize(row, [t]) == [value]


def test_wrong_python_types_are_refused() -> None:
    with pytest.raises(ValueError):
        serialize([1.5], [T.int_()])
    with pytest.raises(ValueError):
        serialize([5], [T.bytes_()])
    with pytest.raises(ValueError):
        serialize([b"x"], [T.string()])
    with pytest.raises(ValueError):
        serialize([1, 2], [T.int_()])


# -- corrupt input ---------------------------------------------------------------------------

def test_arity_mismatch_is_corrupt() -> None:
    with pytest.raises(CorruptFileError):
        from_avro_bytes(to_avro_bytes([1], [T.int_()]), [T.int_(), T.int_()])


def test_truncated_rows_are_corrupt() -> None:
    data = to_avro_bytes(["a long string value"], [T.string()])
    with pytest.raises(CorruptFileError):
        from_avro_bytes(data[:3], [T.string()])
    with pytest.raises(CorruptFileError):
        from_avro_bytes(data[:14], [T.string()])
    with pytest.raises(CorruptFileError):
        from_avro_bytes(data[:24], [T.string()])


# -- round trips -----------------------------------------------------------------------------

def _millis(t: dt.time) -> dt.time:
    return t.replace(microsecond=t.microsecond // 1000 * 1000)


def _type_and_values() -> st.SearchStrategy[tuple[DataType, st.SearchStrategy[Any]]]:
    dates = st.datetimes(min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30))
    ms_dates = dates.map(lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000))

    def decimals(p: int, s: int) -> st.SearchStrategy[Decimal]:
        bound = 10 ** p - 1
        return st.integers(-bound, bound).map(lambda u: Decimal(f"{u}E-{s}"))

    pool: list[tuple[DataType, st.SearchStrategy[Any]]] = [
        (T.boolean(), st.booleans()),
        (T.tinyint(), st.integers(-128, 127)),
        (T.smallint(), st.integers(-(2 ** 15), 2 ** 15 - 1)),
        (T.int_(), st.integers(-(2 ** 31), 2 ** 31 - 1)),
        (T.bigint(), st.integers(-(2 ** 63), 2 ** 63 - 1)),
        (T.float_(), st.floats(width=32, allow_nan=False)),
        (T.double(), st.floats(allow_nan=False)),
        (T.decimal(10, 2), decimals(10, 2)),
        (T.decimal(18, 0), decimals(18, 0)),
        (T.decimal(19, 3), decimals(19, 3)),
        (T.decimal(38, 10), decimals(38, 10)),
        (T.string(), st.text()),
        (T.varchar(5), st.text(max_size=5)),
        (T.char(3), st.text(min_size=3, max_size=3)),
        (T.bytes_(), st.binary()),
        (T.binary(4), st.binary(min_size=4, max_size=4)),
        (T.date(), st.dates()),
        (T.time(0), st.times().map(lambda t: t.replace(microsecond=0))),
        (T.time(3), st.times().map(_millis)),
        (T.timestamp(0), ms_dates.map(lambda d: d.replace(microsecond=0))),
        (T.timestamp(3), ms_dates),
        (T.timestamp(6), dates),
        (T.timestamp(9), dates),
        (T.timestamp_ltz(3), ms_dates.map(lambda d: d.replace(tzinfo=UTC))),
        (T.timestamp_ltz(6), dates.map(lambda d: d.replace(tzinfo=UTC))),
    ]
    return st.sampled_from(pool)


@st.composite
def rows(draw: st.DrawFn) -> tuple[list[DataType], list[Any]]:
    chosen = draw(st.lists(_type_and_values(), min_size=0, max_size=12))
    types = [t for t, _ in chosen]
    values = [draw(st.none() | strategy) for _, strategy in chosen]
    return types, values


@settings(max_examples=400, deadline=None)
@given(rows())
def test_round_trip_every_atomic_type_with_nulls(row: tuple[list[DataType], list[Any]]) -> None:
    types, values = row
    data = to_avro_bytes(values, types)
    assert len(data) % 8 == 4
    back = from_avro_bytes(data, types)
    for got, want, t in zip(back, values, types):
        if isinstance(want, float) and t.root == "FLOAT":
            assert got == want or (math.isnan(got) and math.isnan(want))
        else:
            assert got == want and type(got) is type(want), (t, got, want)
    assert to_avro_bytes(back, types) == data
