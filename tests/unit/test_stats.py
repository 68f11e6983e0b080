"""Stats of data files: modes, truncation, Java's per-column mode rules, serialization."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest

from lakeformat.data.stats import (
    NONE_STATS,
    ColStats,
    collect_col_stats,
    collect_stats,
    column_stats,
    key_stats_modes,
    normalize_mode,
    to_simple_stats,
    truncate_max,
    truncate_min,
    value_stats_modes,
    write_row_stats_modes,
)
from lakeformat.errors import InvalidOptionError
from lakeformat.meta.binary_row import from_avro_bytes
from lakeformat.options import CoreOptions
from lakeformat.schema import types as T
from lakeformat.schema.table_schema import new_schema
from lakeformat.schema.types import DataField


def _schema(options: dict[str, str] | None = None):
    fields = [DataField(0, "dt", T.string()), DataField(1, "id", T.bigint()),
              DataField(2, "name", T.string()), DataField(3, "price", T.decimal(10, 2)),
              DataField(4, "tags", T.DataType("ARRAY", element=T.string()))]
    return new_schema(0, fields, ["dt"], ["dt", "id"], options or {}, None)


# -- truncation -------------------------------------------------------------------------------

def test_truncate_short_values_are_kept() -> None:
    assert truncate_min("abc", 16) == "abc"
    assert truncate_max("abc", 16) == "abc"
    s16 = "x" * 16
    assert truncate_max(s16, 16) == s16
    assert truncate_min(b"\x01\x02", 1) == b"\x01"
    assert truncate_max(b"\x01\x02", 2) == b"\x01\x02"


def test_truncate_max_increments_last_code_point() -> None:
    assert truncate_min("a" * 20, 16) == "a" * 16
    assert truncate_max("a" * 20, 16) == "a" * 15 + "b"
    # counts code points, not bytes or UTF-16 units
    s = "é" * 3 + "\U0001F600" * 3
    assert truncate_min(s, 4) == "ééé\U0001F600"
    assert truncate_max(s, 4) == "ééé\U0001F601"


def test_truncate_max_walks_left_on_overflow() -> None:
    top = "\U0010FFFF"
    assert truncate_max("ab" + top * 3, 4) == "ac"
    assert truncate_max(b"a\xff\xff\xff", 3) == b"b"
    # a surrogate is no code point of UTF-8 text: skip to U+E000
    assert truncate_max("\ud7ff" + "zz", 1) == "\ue000"


def test_truncate_max_without_upper_bound() -> None:
    assert truncate_max("\U0010FFFF" * 3, 2) is None
    assert truncate_max(b"\xff" * 5, 4) is None


def test_truncate_mode_without_upper_bound_nulls_min_and_max() -> None:
    col = pa.array(["\U0010FFFF" * 20, "a", None])
    s = column_stats(col, T.string(), "truncate(16)")
    assert s == ColStats(None, None, 1)
    s = column_stats(pa.array([b"\xff" * 20, b"\x00"]), T.bytes_(), "truncate(16)")
    assert s == ColStats(None, None, 0)


def test_truncate_mode_on_strings_and_binary() -> None:
    col = pa.array(["b" * 40, "a" * 40, None])
    assert column_stats(col, T.string(), "truncate(16)") == ColStats("a" * 16, "b" * 15 + "c", 1)
    assert column_stats(col, T.string(), "full") == ColStats("a" * 40, "b" * 40, 1)
    bcol = pa.array([b"\x01" * 20, b"\x02\xff" * 10])
    assert column_stats(bcol, T.bytes_(), "truncate(3)") == ColStats(
        b"\x01" * 3, b"\x02\xff\x03", 0)
    bcol = pa.array([b"\x01" * 20, b"\x02" + b"\xff" * 10])
    assert column_stats(bcol, T.bytes_(), "truncate(3)") == ColStats(b"\x01" * 3, b"\x03", 0)


# -- modes ------------------------------------------------------------------------------------

def test_modes_none_counts_full() -> None:
    col = pa.chunked_array([[3, None, 1], [7]], pa.int64())
    assert column_stats(col, T.bigint(), "none") == NONE_STATS
    assert column_stats(col, T.bigint(), "counts") == ColStats(None, None, 1)
    assert column_stats(col, T.bigint(), "full") == ColStats(1, 7, 1)
    assert column_stats(col, T.bigint(), "truncate(16)") == ColStats(1, 7, 1)


def test_mode_syntax() -> None:
    assert normalize_mode("TRUNCATE(8)") == "truncate(8)"
    assert normalize_mode(" Full ") == "full"
    for bad in ("truncate(0)", "truncate", "fast", "truncate(-1)"):
        with pytest.raises(InvalidOptionError):
            normalize_mode(bad)


@pytest.mark.parametrize("arr,dtype,expected", [
    (pa.array([True, False]), T.boolean(), (False, True)),
    (pa.array([5, -3], pa.int8()), T.tinyint(), (-3, 5)),
    (pa.array([5, -3], pa.int16()), T.smallint(), (-3, 5)),
    (pa.array([5, -3], pa.int32()), T.int_(), (-3, 5)),
    (pa.array([1.5, -2.0], pa.float32()), T.float_(), (-2.0, 1.5)),
    (pa.array([Decimal("1.10"), Decimal("-0.05")], pa.decimal128(10, 2)), T.decimal(10, 2),
     (Decimal("-0.05"), Decimal("1.10"))),
    (pa.array([Decimal("1"), Decimal("2")], pa.decimal128(30, 0)), T.decimal(30, 0),
     (Decimal("1"), Decimal("2"))),
    (pa.array([dt.date(2024, 1, 2), dt.date(2023, 5, 6)]), T.date(),
     (dt.date(2023, 5, 6), dt.date(2024, 1, 2))),
    (pa.array([1000, 5], pa.time32("ms")), T.time(3), (dt.time(0, 0, 0, 5000), dt.time(0, 0, 1))),
    (pa.array([2, 1], pa.timestamp("ms")), T.timestamp(3),
     (dt.datetime(1970, 1, 1, 0, 0, 0, 1000), dt.datetime(1970, 1, 1, 0, 0, 0, 2000))),
    (pa.array([2, 1], pa.timestamp("us", tz="UTC")), T.timestamp_ltz(6),
     (dt.datetime(1970, 1, 1, 0, 0, 0, 1, tzinfo=dt.UTC),
      dt.datetime(1970, 1, 1, 0, 0, 0, 2, tzinfo=dt.UTC))),
])
def test_full_stats_per_type_round_trip_through_binary_row(arr, dtype, expected) -> None:
    field = DataField(0, "c", dtype)
    stats = collect_stats([arr], [field], ["full"])
    assert stats.null_counts == (0,)
    assert from_avro_bytes(stats.min_values, [dtype]) == [expected[0]]
    assert from_avro_bytes(stats.max_values, [dtype]) == [expected[1]]


def test_unknown_min_max_cases() -> None:
    nan = pa.array([1.0, float("nan"), None])
    assert column_stats(nan, T.double(), "full") == ColStats(None, None, 1)
    all_null = pa.array([None, None], pa.string())
    assert column_stats(all_null, T.string(), "full") == ColStats(None, None, 2)
    ts9 = pa.array([1, 2], pa.timestamp("ns"))
    assert column_stats(ts9, T.timestamp(9), "full") == ColStats(None, None, 0)
    nested = pa.array([["a"], None])
    arr_t = T.DataType("ARRAY", element=T.string())
    # Java's Parquet footer lookup finds nothing for a group column: no stats at all
    assert column_stats(nested, arr_t, "full") == NONE_STATS
    # ORC has column statistics for it: null count only
    assert column_stats(nested, arr_t, "full", "orc") == ColStats(None, None, 1)
    assert column_stats(pa.array([b"x"]), T.bytes_(), "full", "orc") == ColStats(None, None, 0)


@pytest.mark.parametrize("values", [
    [1.5, -2.25, 3.0], [0.0, 1.0], [-0.0, 0.0, 2.5], [-1.0, -0.0], [float("inf"), 1.0],
    [float("-inf"), 7.0], [2.0, float("nan")], [5e-324, -5e-324], [4.0],
])
@pytest.mark.parametrize("arrow_type,dtype", [(pa.float64(), T.double()),
                                               (pa.float32(), T.float_())])
def test_float_min_max_as_java_reads_them(values, arrow_type, dtype) -> None:
    # whole columns (numpy's min and max), chunked and nullable ones (Arrow's): the same
    # stats; none with a NaN; a zero bound is -0.0 as a min and +0.0 as a max, whatever the
    # zeros' signs (parquet-java's statistics, which Java Paimon reads, widen them so)
    col = pa.array(values, arrow_type)
    stored = np.array(values, dtype=arrow_type.to_pandas_dtype())  # float32: rounded
    if np.isnan(stored).any():
        want = ColStats(None, None, 0)
    else:
        lo, hi = float(stored.min()), float(stored.max())
        want = ColStats(-0.0 if lo == 0 else lo, 0.0 if hi == 0 else hi, 0)
    for given in (col, pa.chunked_array([col[:1], col[1:]])):
        got = column_stats(given, dtype, "full")
        assert got == want
        assert [str(got.min), str(got.max)] == [str(want.min), str(want.max)]  # zeros' signs
    with_null = pa.array([*values, None], arrow_type)
    assert column_stats(with_null, dtype, "full") == ColStats(want.min, want.max, 1)


def test_collect_stats_all_mode_serialization() -> None:
    fields = [DataField(0, "a", T.bigint(False)), DataField(1, "s", T.string()),
              DataField(2, "n", T.int_())]
    cols = [pa.array([4, 2], pa.int64()), pa.array(["x", None]), pa.array([1, 2], pa.int32())]
    stats = collect_stats(cols, fields, ["full", "counts", "none"])
    types = [f.type.copy(True) for f in fields]
    assert from_avro_bytes(stats.min_values, types) == [2, None, None]
    assert from_avro_bytes(stats.max_values, types) == [4, None, None]
    assert stats.null_counts == (0, 1, None)


def test_dense_store_omits_columns_without_stats() -> None:
    fields = [DataField(0, "a", T.bigint()), DataField(1, "b", T.string())]
    cols = [pa.array([1, 2], pa.int64()), pa.array(["x", "y"])]
    per_col = collect_col_stats(cols, fields, ["full", "none"])
    simple, names = to_simple_stats(per_col, fields, dense=True)
    assert names == ("a",)
    assert from_avro_bytes(simple.min_values, [T.bigint()]) == [1]
    assert simple.null_counts == (0,)
    simple, names = to_simple_stats(collect_col_stats(cols, fields, ["full", "full"]), fields,
                                    dense=True)
    assert names is None and simple.null_counts == (0, 0)
    simple, names = to_simple_stats(collect_col_stats(cols, fields, ["none", "none"]), fields,
                                    dense=True)
    assert names == () and simple.null_counts == ()
    assert simple.min_values == b"\x00" * 4 + b"\x00" * 8
    simple, names = to_simple_stats(per_col, fields, dense=False)
    assert names is None and simple.null_counts == (0, None)


# -- Java's mode rules ---------------------------------------------------------------------------

def test_value_modes_default_and_overrides() -> None:
    schema = _schema()
    assert value_stats_modes(schema, CoreOptions({})) == ["truncate(16)"] * 5
    opts = CoreOptions({"metadata.stats-mode": "counts", "fields.name.stats-mode": "FULL",
                        "fields.price.stats-mode": "none"})
    assert value_stats_modes(schema, opts) == ["counts", "counts", "full", "none", "counts"]


def test_value_modes_per_level_and_keep_first_n() -> None:
    schema = _schema()
    opts = CoreOptions({"metadata.stats-mode.per.level": "0:none,3:full"})
    assert value_stats_modes(schema, opts, level=0) == ["none"] * 5
    assert value_stats_modes(schema, opts, level=3) == ["full"] * 5
    assert value_stats_modes(schema, opts, level=1) == ["truncate(16)"] * 5
    opts = CoreOptions({"metadata.stats-keep-first-n-columns": "2",
                        "fields.price.stats-mode": "full"})
    # the override counts as a kept column but always wins
    assert value_stats_modes(schema, opts) == [
        "truncate(16)", "truncate(16)", "none", "full", "none"]


def test_key_modes_are_truncate_128_unless_overridden() -> None:
    schema = _schema()
    assert key_stats_modes(schema, CoreOptions({"metadata.stats-mode": "none"})) == [
        "truncate(128)"]
    assert key_stats_modes(schema, CoreOptions({"fields._KEY_id.stats-mode": "counts"})) == [
        "counts"]


def test_thin_mode_key_columns_get_system_mode() -> None:
    schema = _schema()
    opts = CoreOptions({"data-file.thin-mode": "true", "metadata.stats-mode": "none"})
    assert value_stats_modes(schema, opts) == ["none", "truncate(128)", "none", "none", "none"]
    assert key_stats_modes(schema, opts) == ["truncate(128)"]
    opts = CoreOptions({"data-file.thin-mode": "true", "fields.id.stats-mode": "full"})
    assert key_stats_modes(schema, opts) == ["full"]


def test_system_columns_do_not_count_for_keep_first_n() -> None:
    names = ["_KEY_id", "_SEQUENCE_NUMBER", "_VALUE_KIND", "a", "b"]
    opts = CoreOptions({"metadata.stats-keep-first-n-columns": "1"})
    assert write_row_stats_modes(names, opts) == [
        "truncate(128)", "truncate(128)", "truncate(128)", "truncate(16)", "none"]


def test_bad_mode_option_is_reported_with_its_key() -> None:
    with pytest.raises(InvalidOptionError, match="fields.name.stats-mode"):
        value_stats_modes(_schema(), CoreOptions({"fields.name.stats-mode": "some"}))
    with pytest.raises(InvalidOptionError, match="per.level"):
        value_stats_modes(_schema(), CoreOptions({"metadata.stats-mode.per.level": "x"}))
