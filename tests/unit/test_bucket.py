"""Vectorized bucket hashing equals the scalar BinaryRow + Murmur reference for every key type."""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakeformat.errors import UnsupportedError
from lakeformat.meta.binary_row import serialize
from lakeformat.meta.bucket import (
    bucket_ids,
    bucket_of_row,
    buckets_of_hashes,
    hash_row_bytes,
    hash_rows,
    java_bucket,
)
from lakeformat.schema import types as T
from lakeformat.schema.types import DataType, to_arrow

UTC = dt.UTC


def reference(columns: list[pa.Array | pa.ChunkedArray], types: list[DataType]) -> list[int]:
    py = [c.to_pylist() for c in columns]
    n = len(py[0]) if py else 0
    return [hash_row_bytes(serialize([c[i] for c in py], types)) for i in range(n)]


def assert_matches(columns: list[Any], types: list[DataType]) -> None:
    got = hash_rows(columns, types)
    assert got.dtype == np.int32
    assert got.tolist() == reference(columns, types)


# -- spec examples -----------------------------------------------------------------------------

def test_ids_1_2_5_go_to_bucket_0_and_3_to_bucket_1_with_two_buckets() -> None:
    assert bucket_ids([pa.array([1, 2, 5, 3])], [T.bigint()], 2).tolist() == [0, 0, 0, 1]
    for key, bucket in ((1, 0), (2, 0), (5, 0), (3, 1)):
        assert bucket_of_row([key], [T.bigint()], 2) == bucket


def test_scalar_murmur_matches_known_value_for_empty_row() -> None:
    # arity 0 row = 8 zero bytes; value pinned from the Java algorithm computed by hand below
    h = 42
    for _ in range(2):
        k = (0 * 0xCC9E2D51) & 0xFFFFFFFF
        h ^= k
        h = ((h << 13) | (h >> 19)) & 0xFFFFFFFF
        h = (h * 5 + 0xE6546B64) & 0xFFFFFFFF
    h ^= 8
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    h ^= h >> 16
    expected = h - (1 << 32) if h >= 1 << 31 else h
    assert hash_row_bytes(bytes(8)) == expected


def test_java_remainder_semantics_for_negative_hashes() -> None:
    assert java_bucket(-7, 3) == 1 and java_bucket(7, 3) == 1
    assert java_bucket(-(2 ** 31), 7) == 2  # Java: -2147483648 % 7 == -2
    hashes = hash_rows([pa.array(range(2000))], [T.bigint()])
    assert (hashes < 0).any()
    got = bucket_ids([pa.array(range(2000))], [T.bigint()], 7)
    assert got.tolist() == [java_bucket(int(h), 7) for h in hashes]


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7, 16, 1 << 30, (1 << 31) - 1])
def test_bucket_of_extreme_hashes_is_javas_remainder(n: int) -> None:
    edges = [-(2 ** 31), -(2 ** 31) + 1, -n - 1, -n, -1, 0, 1, n - 1, n, 2 ** 31 - 1]
    hashes = np.array(edges + list(range(-70, 70)), dtype=np.int32)
    assert buckets_of_hashes(hashes.copy(), n).tolist() == [java_bucket(int(h), n)
                                                            for h in hashes]


def test_bucket_count_must_be_positive() -> None:
    with pytest.raises(ValueError):
        bucket_ids([pa.array([1])], [T.bigint()], 0)


def test_empty_input_gives_empty_result() -> None:
    assert hash_rows([pa.array([], pa.int64())], [T.bigint()]).tolist() == []
    assert bucket_ids([pa.array([], pa.string())], [T.string()], 3).tolist() == []


# -- every key type, random rows -------------------------------------------------------------

def _decimals(p: int, s: int) -> st.SearchStrategy[Decimal]:
    bound = 10 ** p - 1
    edge = st.sampled_from([0, 1, -1, 127, 128, -128, -129, -32768, bound, -bound, -(2 ** 63)])
    ints = st.integers(-bound, bound) | edge.filter(lambda u: abs(u) <= bound)
    return ints.map(lambda u: Decimal(f"{u}E-{s}"))


_DATES = st.datetimes(min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30))
_NS_DATES = st.datetimes(min_value=dt.datetime(1678, 1, 1), max_value=dt.datetime(2262, 1, 1))
_MS_DATES = _DATES.map(lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000))
_TEXT = st.text(max_size=3) | st.text(min_size=6, max_size=40) | st.sampled_from(
    ["", "1234567", "12345678", "é" * 4, "a" * 100])

KEY_TYPES: list[tuple[DataType, st.SearchStrategy[Any]]] = [
    (T.boolean(), st.booleans()),
    (T.tinyint(), st.integers(-128, 127)),
    (T.smallint(), st.integers(-(2 ** 15), 2 ** 15 - 1)),
    (T.int_(), st.integers(-(2 ** 31), 2 ** 31 - 1)),
    (T.bigint(), st.integers(-(2 ** 63), 2 ** 63 - 1)),
    (T.float_(), st.floats(width=32, allow_nan=False)),
    (T.double(), st.floats(allow_nan=False)),
    (T.decimal(10, 2), _decimals(10, 2)),
    (T.decimal(18, 4), _decimals(18, 4)),
    (T.decimal(20, 0), _decimals(20, 0)),
    (T.decimal(38, 10), _decimals(38, 10)),
    (T.string(), _TEXT),
    (T.varchar(10), st.text(max_size=10)),
    (T.char(8), st.text(min_size=8, max_size=8)),
    (T.bytes_(), st.binary(max_size=30)),
    (T.binary(9), st.binary(min_size=9, max_size=9)),
    (T.date(), st.dates()),
    (T.time(3), st.times().map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000))),
    (T.timestamp(3), _MS_DATES),
    (T.timestamp(6), _DATES),
    (T.timestamp(9), _NS_DATES),  # Arrow nanoseconds cover 1677..2262
    (T.timestamp_ltz(3), _MS_DATES.map(lambda d: d.replace(tzinfo=UTC))),
    (T.timestamp_ltz(6), _DATES.map(lambda d: d.replace(tzinfo=UTC))),
]


@st.composite
def key_table(draw: st.DrawFn) -> tuple[list[DataType], list[list[Any]]]:
    chosen = draw(st.lists(st.sampled_from(KEY_TYPES), min_size=1, max_size=4))
    n = draw(st.integers(1, 25))
    types = [t for t, _ in chosen]
    cols = [draw(st.lists(st.none() | strategy, min_size=n, max_size=n)) for _, strategy in chosen]
    return types, cols


def _arrays(types: list[DataType], cols: list[list[Any]]) -> list[pa.Array]:
    return [pa.array(c, type=to_arrow(t)) for t, c in zip(types, cols, strict=True)]


@settings(max_examples=300, deadline=None)
@given(key_table())
def test_vectorized_hash_equals_scalar_reference(
        table: tuple[list[DataType], list[list[Any]]]) -> None:
    types, cols = table
    assert_matches(_arrays(types, cols), types)


@settings(max_examples=150, deadline=None)
@given(key_table(), st.data())
def test_sliced_and_chunked_inputs_hash_like_their_rows(
        table: tuple[list[DataType], list[list[Any]]], data: st.DataObject) -> None:
    types, cols = table
    n = len(cols[0])
    start = data.draw(st.integers(0, n - 1))
    stop = data.draw(st.integers(start + 1, n))
    sliced = [a.slice(start, stop - start) for a in _arrays(types, cols)]
    assert_matches(sliced, types)
    cut = data.draw(st.integers(0, n))
    chunked = [pa.chunked_array([a.slice(0, cut), a.slice(cut)], type=a.type)
               for a in _arrays(types, cols)]
    assert_matches(chunked, types)


@pytest.mark.parametrize("arrow_type", [pa.string(), pa.large_string(), pa.string_view()])
def test_string_layouts_hash_identically(arrow_type: pa.DataType) -> None:
    values = ["", None, "abc", "1234567", "12345678", "x" * 33, "é" * 9]
    arr = pa.array(values, type=arrow_type)
    expected = reference([pa.array(values)], [T.string()])
    assert hash_rows([arr], [T.string()]).tolist() == expected
    assert hash_rows([arr.slice(2)], [T.string()]).tolist() == expected[2:]


def test_binary_layouts_hash_identically() -> None:
    values = [b"", None, b"abcdefgh", b"\x00\xff" * 5]
    expected = reference([pa.array(values)], [T.bytes_()])
    for t in (pa.binary(), pa.large_binary(), pa.binary_view()):
        assert hash_rows([pa.array(values, type=t)], [T.bytes_()]).tolist() == expected
    fixed = pa.array([b"abcdefghi", None], type=pa.binary(9))
    assert_matches([fixed], [T.binary(9)])


def test_dictionary_encoded_strings_hash_like_plain_ones() -> None:
    plain = pa.array(["a", "bbbbbbbbbbbbbbb", None, "a"])
    assert hash_rows([plain.dictionary_encode()], [T.string()]).tolist() == reference(
        [plain], [T.string()])


def test_timestamp_and_time_units_are_normalized_like_java() -> None:
    base = dt.datetime(1969, 12, 31, 23, 59, 58, 999000)
    for unit in ("s", "ms", "us", "ns"):
        value = base.replace(microsecond=0) if unit == "s" else base
        arr = pa.array([value, None], type=pa.timestamp(unit))
        expected = reference([pa.array([value, None], pa.timestamp("us"))], [T.timestamp(6)])
        assert hash_rows([arr], [T.timestamp(6)]).tolist() == expected
    t = dt.time(13, 14, 15, 16000)
    expected = reference([pa.array([t], pa.time32("ms"))], [T.time(3)])
    for typ in (pa.time32("ms"), pa.time64("us"), pa.time64("ns")):
        assert hash_rows([pa.array([t], typ)], [T.time(3)]).tolist() == expected


def test_nanosecond_timestamps_hash_with_their_nanos() -> None:
    arr = pa.array([1_700_000_000_123_456_789, -1], type=pa.timestamp("ns"))
    got = hash_rows([arr], [T.timestamp(9)]).tolist()
    row0 = bytes(8) + ((16 << 32) | 456_789).to_bytes(8, "little") + (
        1_700_000_000_123).to_bytes(8, "little", signed=True)
    row1 = bytes(8) + ((16 << 32) | 999_999).to_bytes(8, "little") + (-1).to_bytes(
        8, "little", signed=True)
    assert got == [hash_row_bytes(row0), hash_row_bytes(row1)]


def test_null_non_compact_decimal_and_timestamp_hash_with_java_reservation() -> None:
    for t in (T.decimal(38, 2), T.timestamp(6), T.timestamp_ltz(9)):
        for arr in (pa.array([None, None], to_arrow(t)), pa.nulls(2, to_arrow(t))):
            assert hash_rows([arr], [t]).tolist() == [hash_row_bytes(serialize([None], [t]))] * 2


def test_wide_rows_use_two_null_bit_words() -> None:
    rng = random.Random(7)
    types = [T.int_()] * 40 + [T.string()] * 20
    cols = [pa.array([None if rng.random() < 0.3 else rng.randint(-9, 9) for _ in range(30)],
                     pa.int32()) for _ in range(40)]
    cols += [pa.array([None if rng.random() < 0.3 else "s" * rng.randint(0, 20)
                       for _ in range(30)]) for _ in range(20)]
    assert_matches(cols, types)


def test_skewed_string_lengths_use_bands_and_row_path() -> None:
    rng = random.Random(11)
    values = ["x" * rng.choice([0, 5, 9, 17, 40, 41, 300, 2000]) + str(i) for i in range(3000)]
    values += ["y" * 50_000, "z" * 50_001, None]  # a band of very few very long rows
    ints = pa.array([i % 5 for i in range(len(values))], pa.int32())
    assert_matches([pa.array(values), ints, pa.array(values[::-1])],
                   [T.string(), T.int_(), T.string()])


def test_nested_key_columns_must_be_null() -> None:
    arr_type = DataType("ARRAY", element=T.int_())
    nulls = pa.array([None, None], type=to_arrow(arr_type))
    assert_matches([nulls, pa.array([1, 2])], [arr_type, T.bigint()])
    with pytest.raises(UnsupportedError):
        hash_rows([pa.array([[1]], type=to_arrow(arr_type))], [arr_type])


def test_mismatched_inputs_are_rejected() -> None:
    with pytest.raises(ValueError):
        hash_rows([pa.array([1])], [T.bigint(), T.bigint()])
    with pytest.raises(ValueError):
        hash_rows([pa.array([1]), pa.array([1, 2])], [T.bigint(), T.bigint()])
