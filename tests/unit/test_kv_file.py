"""Key-value data files: Java's physical layout, rolling, metadata, stats, reading foreign files."""

from __future__ import annotations

import datetime as dt
import inspect
import os
import re
import time
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest

from lakeformat.clock import local_millis_now
from lakeformat.data.formats import parquet_delta_columns
from lakeformat.data.kv_file import KeyValueFileWriter, retract_count
from lakeformat.data.kv_read import read_kv_file
from lakeformat.data.kv_rolling import RollingKeyValueFileWriter
from lakeformat.errors import (
    CorruptFileError,
    InvalidOptionError,
    SchemaMismatchError,
    UnsupportedError,
)
from lakeformat.meta.binary_row import from_avro_bytes
from lakeformat.options import CoreOptions
from lakeformat.schema import types as T
from lakeformat.schema.table_schema import new_schema
from lakeformat.schema.types import DataField, DataType, to_arrow
from lakeformat.storage.local import LocalFileIO

DECIMAL_AS_INT = "store_decimal_as_integer" in inspect.signature(
    pq.ParquetWriter.__init__).parameters
NAME_RE = re.compile(r"^data-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-(\d+)\.")


def _simple_schema(options: dict[str, str] | None = None, key_type: DataType | None = None):
    fields = [DataField(0, "dt", T.string()), DataField(1, "id", key_type or T.bigint()),
              DataField(2, "name", T.string()), DataField(3, "price", T.decimal(10, 2)),
              DataField(4, "ts", T.timestamp(3))]
    return new_schema(0, fields, ["dt"], ["dt", "id"], options or {}, None)


def _kv(schema, rows: list[dict], seq_start: int = 0, kinds: list[int] | None = None) -> pa.Table:
    n = len(rows)
    cols = {"_SEQUENCE_NUMBER": pa.array(range(seq_start, seq_start + n), pa.int64()),
            "_VALUE_KIND": pa.array(kinds or [0] * n, pa.int8())}
    for f in schema.fields:
        cols[f.name] = pa.array([r.get(f.name) for r in rows], to_arrow(f.type))
    return pa.table(cols)


def _rows(n: int, name_len: int = 12) -> list[dict]:
    return [{"dt": "2024-01-01", "id": i, "name": f"{i:0{name_len}d}",
             "price": Decimal(i) / 100, "ts": dt.datetime(2024, 1, 2, 3, 4, 5, 678000)}
            for i in range(n)]


def _writer(tmp_path: Path, schema, options: dict[str, str] | None = None, **kw):
    opts = CoreOptions({**schema.options, **(options or {})})
    return KeyValueFileWriter(LocalFileIO(), str(tmp_path), schema, opts, **kw)


def _schema_lines(path: Path) -> list[str]:
    text = str(pq.ParquetFile(path).schema)
    return [re.sub(r", is_from_converted_type=\w+, force_set_converted_type=\w+", "", ln.strip())
            for ln in text.splitlines()
            if ln.strip() not in ("}", "") and not ln.startswith("<pyarrow")
            and "field_id=-1 schema" not in ln]


# -- physical layout --------------------------------------------------------------------------

def test_parquet_schema_is_javas(tmp_path: Path) -> None:
    fields = [
        DataField(0, "k", T.string()), DataField(1, "b", T.boolean()),
        DataField(2, "i8", T.tinyint()), DataField(3, "i16", T.smallint()),
        DataField(4, "i32", T.int_(False)), DataField(5, "i64", T.bigint()),
        DataField(6, "f", T.float_()), DataField(7, "d", T.double()),
        DataField(8, "dec5", T.decimal(5, 2)), DataField(9, "dec18", T.decimal(18, 3)),
        DataField(10, "dec30", T.decimal(30, 4)), DataField(11, "c", T.char(3)),
        DataField(12, "bin", T.binary(4)), DataField(13, "vb", T.bytes_()),
        DataField(14, "day", T.date()), DataField(15, "tm", T.time(3)),
        DataField(16, "ts3", T.timestamp(3)), DataField(17, "ts6", T.timestamp(6)),
        DataField(18, "ltz3", T.timestamp_ltz(3)), DataField(19, "ltz6", T.timestamp_ltz(6)),
        DataField(20, "arr", DataType("ARRAY", element=T.int_())),
        DataField(21, "m", DataType("MAP", key=T.string(), value=T.bigint(False))),
        DataField(22, "r", DataType("ROW", fields=(DataField(23, "x", T.int_()),
                                                   DataField(24, "y", T.string(False))))),
    ]
    schema = new_schema(0, fields, [], ["k"], {}, None)
    row = {"k": "a", "i32": 1}
    metas = _writer(tmp_path, schema).write(_kv(schema, [row]))
    lines = _schema_lines(tmp_path / metas[0].file_name)
    dec = (["optional int32 field_id=8 dec5 (Decimal(precision=5, scale=2));",
            "optional int64 field_id=9 dec18 (Decimal(precision=18, scale=3));"]
           if DECIMAL_AS_INT else
           ["optional fixed_len_byte_array(3) field_id=8 dec5 (Decimal(precision=5, scale=2));",
            "optional fixed_len_byte_array(8) field_id=9 dec18 (Decimal(precision=18, scale=3));"])
    # Java annotates TIME with isAdjustedToUTC=true; pyarrow >= 20 writes false (readers ignore it)
    lines = [ln.replace("isAdjustedToUTC=true, timeUnit=milliseconds));", "ADJ")
             .replace("isAdjustedToUTC=false, timeUnit=milliseconds));", "ADJ")
             if " tm (" in ln else ln for ln in lines]
    assert lines == [
        "required binary field_id=1073741823 _KEY_k (String);",
        "required int64 field_id=2147483646 _SEQUENCE_NUMBER;",
        "required int32 field_id=2147483645 _VALUE_KIND (Int(bitWidth=8, isSigned=true));",
        "required binary field_id=0 k (String);",
        "optional boolean field_id=1 b;",
        "optional int32 field_id=2 i8 (Int(bitWidth=8, isSigned=true));",
        "optional int32 field_id=3 i16 (Int(bitWidth=16, isSigned=true));",
        "required int32 field_id=4 i32;",
        "optional int64 field_id=5 i64;",
        "optional float field_id=6 f;",
        "optional double field_id=7 d;",
        *dec,
        "optional fixed_len_byte_array(13) field_id=10 dec30 (Decimal(precision=30, scale=4));",
        "optional binary field_id=11 c (String);",
        "optional binary field_id=12 bin;",
        "optional binary field_id=13 vb;",
        "optional int32 field_id=14 day (Date);",
        "optional int32 field_id=15 tm (Time(ADJ",
        "optional int64 field_id=16 ts3 (Timestamp(isAdjustedToUTC=false, timeUnit=milliseconds));",
        "optional int64 field_id=17 ts6 (Timestamp(isAdjustedToUTC=false, timeUnit=microseconds));",
        "optional int64 field_id=18 ltz3 (Timestamp(isAdjustedToUTC=true, timeUnit=milliseconds));",
        "optional int64 field_id=19 ltz6 (Timestamp(isAdjustedToUTC=true, timeUnit=microseconds));",
        "optional group field_id=20 arr (List) {",
        "repeated group field_id=-1 list {",
        f"optional int32 field_id={536870911 + 20 * 1024 + 1} element;",
        "optional group field_id=21 m (Map) {",
        "repeated group field_id=-1 key_value {",
        f"required binary field_id={536870911 - 21 * 1024 - 1} key (String);",
        f"required int64 field_id={536870911 + 21 * 1024 + 1} value;",
        "optional group field_id=22 r {",
        "optional int32 field_id=23 x;",
        "required binary field_id=24 y (String);",
    ]
    meta = pq.ParquetFile(tmp_path / metas[0].file_name).metadata
    assert meta.row_group(0).column(0).compression == "ZSTD"


def test_timestamp_9_is_int96_unless_mixed_with_lower_precisions(tmp_path: Path) -> None:
    only9 = new_schema(0, [DataField(0, "k", T.int_()), DataField(1, "t", T.timestamp(9))],
                       [], ["k"], {}, None)
    rows = [{"k": 1, "t": 1_700_000_000_123_456_789}]
    m = _writer(tmp_path / "a", only9).write(_kv(only9, rows))[0]
    assert "optional int96 field_id=1 t;" in _schema_lines(tmp_path / "a" / m.file_name)
    back = read_kv_file(LocalFileIO(), str(tmp_path / "a" / m.file_name), "parquet", schema=only9)
    assert back.column("t").cast(pa.int64()).to_pylist() == [1_700_000_000_123_456_789]

    mixed = new_schema(0, [DataField(0, "k", T.int_()), DataField(1, "t", T.timestamp(9)),
                           DataField(2, "u", T.timestamp(3))], [], ["k"], {}, None)
    m = _writer(tmp_path / "b", mixed).write(_kv(mixed, rows))[0]
    lines = _schema_lines(tmp_path / "b" / m.file_name)
    assert "optional int64 field_id=1 t (Timestamp(isAdjustedToUTC=false, timeUnit=nanoseconds));" \
        in lines


def test_thin_mode_has_no_key_columns(tmp_path: Path) -> None:
    schema = _simple_schema({"data-file.thin-mode": "true", "metadata.stats-mode": "none"})
    m = _writer(tmp_path, schema).write(_kv(schema, _rows(3)))[0]
    names = pq.ParquetFile(tmp_path / m.file_name).schema_arrow.names
    assert names == ["_SEQUENCE_NUMBER", "_VALUE_KIND", "dt", "id", "name", "price", "ts"]
    # key stats are the key column's value stats, which use truncate(128) in thin mode
    assert m.value_stats_cols == ("id",)
    assert from_avro_bytes(m.key_stats.min_values, [T.bigint()]) == [0]
    assert from_avro_bytes(m.key_stats.max_values, [T.bigint()]) == [2]
    assert m.key_stats.null_counts == (0,)
    assert from_avro_bytes(m.min_key, [T.bigint()]) == [0]
    back = read_kv_file(LocalFileIO(), str(tmp_path / m.file_name), "parquet")
    assert back.column("id").to_pylist() == [0, 1, 2]


# -- names, metadata, rolling -------------------------------------------------------------------

def test_file_names_and_metadata(tmp_path: Path) -> None:
    schema = _simple_schema()
    w = _writer(tmp_path, schema, level=2, file_source=1)
    before = local_millis_now()
    rows = _rows(4)
    m1 = w.write(_kv(schema, rows, seq_start=10, kinds=[0, 1, 2, 3]))
    m2 = w.write(_kv(schema, rows[:1], seq_start=20))
    assert len(m1) == 1 and len(m2) == 1
    a, b = NAME_RE.match(m1[0].file_name), NAME_RE.match(m2[0].file_name)
    assert a and b and a.group(1) == "0" and b.group(1) == "1"
    assert m1[0].file_name.endswith(".parquet")
    assert m1[0].file_name.rsplit("-", 1)[0] == m2[0].file_name.rsplit("-", 1)[0]  # one uuid
    m = m1[0]
    assert (m.row_count, m.min_sequence_number, m.max_sequence_number) == (4, 10, 13)
    assert m.delete_row_count == 2
    assert (m.level, m.file_source, m.schema_id, m.extra_files) == (2, 1, 0, ())
    assert m.file_size == os.path.getsize(tmp_path / m.file_name)
    assert before - 1000 <= m.creation_time <= local_millis_now() + 1000
    # local wall clock stored as if UTC
    offset = dt.datetime.now().astimezone().utcoffset().total_seconds() * 1000
    assert abs(m.creation_time - (time.time() * 1000 + offset)) < 60_000
    assert from_avro_bytes(m.min_key, [T.bigint()]) == [0]
    assert from_avro_bytes(m.max_key, [T.bigint()]) == [3]
    assert m.value_stats_cols is None  # every column has stats
    vt = [f.type.copy(True) for f in schema.fields]
    assert from_avro_bytes(m.value_stats.min_values, vt) == [
        "2024-01-01", 0, "000000000000", Decimal("0.00"), dt.datetime(2024, 1, 2, 3, 4, 5, 678000)]
    assert m.value_stats.null_counts == (0, 0, 0, 0, 0)


def test_retract_count_of_whole_and_chunked_kinds() -> None:
    codes = [0, 1, 2, 3, 3, 0, 1]
    assert retract_count(pa.chunked_array([pa.array(codes, pa.int8())])) == 4
    assert retract_count(pa.chunked_array([pa.array(codes[:3], pa.int8()),
                                           pa.array(codes[3:], pa.int8())])) == 4
    assert retract_count(pa.chunked_array([pa.array([], pa.int8())])) == 0


def test_name_options(tmp_path: Path) -> None:
    schema = _simple_schema()
    opts = {"file.suffix.include.compression": "true", "data-file.prefix": "part-"}
    m = _writer(tmp_path, schema, opts).write(_kv(schema, _rows(1)))[0]
    assert m.file_name.startswith("part-") and m.file_name.endswith("-0.zst.parquet")
    opts = {"file.suffix.include.compression": "true", "file.compression": "none"}
    m = _writer(tmp_path, schema, opts).write(_kv(schema, _rows(1)))[0]
    assert m.file_name.endswith("-0.parquet")


@pytest.mark.parametrize("name,codec", [("zstd", "ZSTD"), ("snappy", "SNAPPY"), ("gzip", "GZIP"),
                                        ("lz4", "LZ4_RAW"), ("none", "UNCOMPRESSED"),
                                        ("uncompressed", "UNCOMPRESSED")])
def test_compression_names(tmp_path: Path, name: str, codec: str) -> None:
    schema = _simple_schema()
    m = _writer(tmp_path, schema, {"file.compression": name}).write(_kv(schema, _rows(2)))[0]
    col = pq.ParquetFile(tmp_path / m.file_name).metadata.row_group(0).column(0)
    assert col.compression in ({codec, "LZ4"} if codec == "LZ4_RAW" else {codec})


def test_unsupported_format_and_codec(tmp_path: Path) -> None:
    schema = _simple_schema()
    for opts, word in (({"file.format": "lance"}, "lance"), ({"file.compression": "lzo"}, "lzo"),
                       ({"file.format": "avro", "file.compression": "lz4"}, "lz4"),
                       ({"file.format.per.level": "0:csv"}, "csv")):
        with pytest.raises(UnsupportedError, match=word):
            KeyValueFileWriter(LocalFileIO(), str(tmp_path), schema, CoreOptions(opts))


def test_rolling_partitions_input(tmp_path: Path) -> None:
    schema = _simple_schema()
    n = 150_000
    kv = _kv(schema, _rows(n, name_len=30), seq_start=100)
    metas = _writer(tmp_path, schema, {"target-file-size": "64 kb"}).write(kv)
    assert len(metas) >= 3
    expected_start, seq = 0, 100
    for m in metas:
        path = tmp_path / m.file_name
        assert m.file_size == os.path.getsize(path)
        lo = from_avro_bytes(m.min_key, [T.bigint()])[0]
        hi = from_avro_bytes(m.max_key, [T.bigint()])[0]
        assert lo == expected_start and hi == lo + m.row_count - 1
        assert (m.min_sequence_number, m.max_sequence_number) == (seq, seq + m.row_count - 1)
        back = read_kv_file(LocalFileIO(), str(path), "parquet", schema=schema)
        assert back.equals(kv.slice(lo, m.row_count).cast(back.schema))
        expected_start, seq = hi + 1, seq + m.row_count
    assert expected_start == n
    # every file but the last reached the target; none overshoots by more than ~one row group
    for m in metas[:-1]:
        assert 64 * 1024 <= m.file_size < 3 * 64 * 1024


def test_target_file_row_num_only_for_writes(tmp_path: Path) -> None:
    schema = _simple_schema()
    kv = _kv(schema, _rows(2500))
    metas = _writer(tmp_path, schema, {"target-file-row-num": "1000"}).write(kv)
    assert [m.row_count for m in metas] == [1000, 1000, 500]
    metas = _writer(tmp_path, schema, {"target-file-row-num": "1000"}, file_source=1).write(kv)
    assert [m.row_count for m in metas] == [2500]
    with pytest.raises(InvalidOptionError, match="target-file-row-num"):
        _writer(tmp_path, schema, {"target-file-row-num": "-1"})


def _dictionary_columns(path: Path) -> set[str]:
    rg = pq.ParquetFile(path).metadata.row_group(0)
    return {rg.column(i).path_in_schema for i in range(rg.num_columns)
            if any("DICTIONARY" in e for e in rg.column(i).encodings)}


def test_unique_columns_are_not_dictionary_encoded(tmp_path: Path) -> None:
    # keys and sequence numbers never; name and price hold a distinct value per row; the row
    # kind is PLAIN (four codes: zstd shrinks them as well, faster)
    schema = _simple_schema()
    m = _writer(tmp_path, schema).write(_kv(schema, _rows(50)))[0]
    assert _dictionary_columns(tmp_path / m.file_name) == {"dt", "ts"}


def test_dictionary_where_values_repeat(tmp_path: Path) -> None:
    schema = _simple_schema()
    rows = _rows(20_000)
    for i, r in enumerate(rows):
        r["name"] = f"city-{i % 37}"
        r["price"] = Decimal(i % 1000) / 100
    kv = _kv(schema, rows)
    m = _writer(tmp_path, schema).write(kv)[0]
    assert _dictionary_columns(tmp_path / m.file_name) == {"dt", "name", "price", "ts"}
    back = read_kv_file(LocalFileIO(), str(tmp_path / m.file_name), "parquet", schema=schema)
    assert back.equals(kv.cast(back.schema))
    # values from a pool too large for one dictionary page: PLAIN from the start
    for i, r in enumerate(rows):
        r["name"] = f"{(i * 7919) % 15_000:0100d}"
    m = _writer(tmp_path, schema).write(_kv(schema, rows))[0]
    assert "name" not in _dictionary_columns(tmp_path / m.file_name)


def test_writers_sharing_encodings_take_the_first_ones_choice(tmp_path: Path) -> None:
    # the buckets of one partition in one write: the first writer samples its rows, the
    # others write with its choice (here: a dictionary for names that repeat in its rows,
    # kept for a later writer's distinct names), and read back the same
    schema = _simple_schema()
    rows = _rows(20_000)
    for i, r in enumerate(rows):
        r["name"] = f"city-{i % 37}"
    shared: dict = {}
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = _writer(tmp_path / "a", schema, encodings=shared).write(_kv(schema, rows))[0]
    assert "name" in _dictionary_columns(tmp_path / "a" / first.file_name)
    assert "name" in shared["parquet"]["use_dictionary"]
    kv = _kv(schema, _rows(20_000))  # names all distinct: a writer of its own drops them
    second = _writer(tmp_path / "b", schema, encodings=shared).write(kv)[0]
    assert "name" in _dictionary_columns(tmp_path / "b" / second.file_name)
    alone = _writer(tmp_path, schema).write(kv)[0]
    assert "name" not in _dictionary_columns(tmp_path / alone.file_name)
    back = read_kv_file(LocalFileIO(), str(tmp_path / "b" / second.file_name), "parquet",
                        schema=schema)
    assert back.equals(kv.cast(back.schema))


def test_dictionary_past_arrows_default_page_size(tmp_path: Path) -> None:
    # 12,000 names of 100 letters (a 1.25 MB dictionary page, past pyarrow's 1 MB default)
    # repeated 5 times each: the whole chunk stays dictionary-encoded, not PLAIN after 1 MB
    schema = _simple_schema()
    rng = np.random.default_rng(5)
    pool = ["".join(chr(97 + c) for c in rng.integers(0, 26, 100)) for _ in range(12_000)]
    rows = _rows(60_000)
    for r, pick in zip(rows, rng.integers(0, len(pool), len(rows)).tolist()):
        r["name"] = pool[pick]
    kv = _kv(schema, rows)
    m = _writer(tmp_path, schema).write(kv)[0]
    path = tmp_path / m.file_name
    assert "name" in _dictionary_columns(path)
    rg = pq.ParquetFile(path).metadata.row_group(0)
    name = next(rg.column(i) for i in range(rg.num_columns)
                if rg.column(i).path_in_schema == "name")
    # PLAIN + zstd keeps ~60% of random letters (3.6 MB); the dictionary's chunk is its page
    # (~0.8 MB compressed) and 14-bit codes (~0.1 MB)
    assert name.total_compressed_size < 1_200_000
    back = read_kv_file(LocalFileIO(), str(path), "parquet", schema=schema)
    assert back.equals(kv.cast(back.schema))


def _delta_columns(path: Path) -> set[str]:
    meta = pq.ParquetFile(path).metadata
    return {meta.row_group(g).column(i).path_in_schema for g in range(meta.num_row_groups)
            for i in range(meta.num_columns)
            if "DELTA_BINARY_PACKED" in meta.row_group(g).column(i).encodings}


def test_delta_encoding_for_close_integers(tmp_path: Path) -> None:
    # sorted keys and sequence numbers: DELTA_BINARY_PACKED; strings, decimals, timestamps
    # and the dictionary-encoded columns keep theirs
    schema = _simple_schema()
    kv = _kv(schema, _rows(20_000), seq_start=7)
    m = _writer(tmp_path, schema).write(kv)[0]
    path = tmp_path / m.file_name
    assert _delta_columns(path) == {"_KEY_id", "_SEQUENCE_NUMBER", "id"}
    assert "_VALUE_KIND" not in _dictionary_columns(path)
    back = read_kv_file(LocalFileIO(), str(path), "parquet", schema=schema)
    assert back.equals(kv.cast(back.schema))
    assert (m.min_sequence_number, m.max_sequence_number) == (7, 20_006)


def test_delta_encoding_left_to_wide_integers(tmp_path: Path) -> None:
    # neighbours ~2^60 apart (hashes as keys) encode faster PLAIN; the extremes round-trip
    schema = _simple_schema()
    rows = _rows(5000)
    wide = sorted((i * 0x9E3779B97F4A7C15) % (1 << 64) - (1 << 63) for i in range(5000))
    wide[0], wide[-1] = -(1 << 63), (1 << 63) - 1
    for r, v in zip(rows, wide):
        r["id"] = v
    kv = _kv(schema, rows)
    m = _writer(tmp_path, schema).write(kv)[0]
    assert _delta_columns(tmp_path / m.file_name) == {"_SEQUENCE_NUMBER"}
    back = read_kv_file(LocalFileIO(), str(tmp_path / m.file_name), "parquet", schema=schema)
    assert back.equals(kv.cast(back.schema))


def test_parquet_delta_columns_judges_each_column() -> None:
    rng = np.random.default_rng(3)
    n = 10_000
    table = pa.table({
        "sorted": np.sort(rng.integers(0, 10**9, n)),
        "small": rng.integers(-500, 500, n).astype(np.int32),
        "tiny": pa.array(rng.integers(0, 3, n).astype(np.int8)),
        "wide": rng.integers(-(1 << 62), 1 << 62, n),
        "gappy": pa.array([None if i % 3 else i for i in range(n)], pa.int64()),
        "nulls": pa.nulls(n, pa.int64()),
        "floats": np.arange(n, dtype=np.float64),
        "text": pa.array([str(i) for i in range(n)]),
        "a.b": np.arange(n),
    })
    assert parquet_delta_columns(table, table.column_names) == ["sorted", "small", "tiny",
                                                                "gappy"]
    assert parquet_delta_columns(table.slice(0, 1), ["sorted"]) == []


def test_input_types_are_cast_checked(tmp_path: Path) -> None:
    fields = [DataField(0, "id", T.int_()), DataField(1, "ts", T.timestamp(3)),
              DataField(2, "arr", DataType("ARRAY", element=T.bigint()))]
    schema = new_schema(0, fields, [], ["id"], {}, None)
    kv = pa.table({"_SEQUENCE_NUMBER": pa.array([0, 1]), "_VALUE_KIND": pa.array([0, 0]),
                   "id": pa.array([1, 2], pa.int64()),
                   "ts": pa.array([1000, 2000], pa.timestamp("us")),
                   "arr": pa.array([[1], None], pa.list_(pa.int64()))})
    m = _writer(tmp_path, schema).write(kv)[0]
    back = read_kv_file(LocalFileIO(), str(tmp_path / m.file_name), "parquet")
    assert back.schema.field("ts").type == pa.timestamp("ms")
    assert back.column("arr").to_pylist() == [[1], None]
    assert from_avro_bytes(m.value_stats.max_values, [T.int_(), T.timestamp(3)]) == [
        2, dt.datetime(1970, 1, 1, 0, 0, 0, 2000)]
    assert m.value_stats_cols == ("id", "ts")
    lossy = kv.set_column(3, "ts", pa.array([1001, 2000], pa.timestamp("us")))
    with pytest.raises(SchemaMismatchError, match="ts"):
        _writer(tmp_path, schema).write(lossy)


def test_not_null_violation_and_missing_column(tmp_path: Path) -> None:
    schema = _simple_schema()
    kv = _kv(schema, _rows(2))
    bad = kv.set_column(kv.column_names.index("dt"), "dt", pa.array([None, "x"], pa.string()))
    with pytest.raises(SchemaMismatchError, match="dt"):
        _writer(tmp_path, schema).write(bad)
    with pytest.raises(SchemaMismatchError, match="name"):
        _writer(tmp_path, schema).write(kv.drop(["name"]))
    assert _writer(tmp_path, schema).write(kv.slice(0, 0)) == []


# -- stats through the writer -----------------------------------------------------------------

def test_default_truncate16_value_stats_and_truncate128_key_stats(tmp_path: Path) -> None:
    schema = _simple_schema(key_type=T.string())
    long_key = "k" * 200
    rows = [{"dt": "d", "id": "a" + long_key, "name": "x" * 20 + "1", "price": Decimal("1.5")},
            {"dt": "d", "id": "b" + long_key, "name": "\U0010FFFF" * 17, "price": None}]
    m = _writer(tmp_path, schema).write(_kv(schema, rows))[0]
    vt = [f.type.copy(True) for f in schema.fields]
    mins = from_avro_bytes(m.value_stats.min_values, vt)
    maxs = from_avro_bytes(m.value_stats.max_values, vt)
    assert mins[1] == ("a" + long_key)[:16] and maxs[1] == "b" + "k" * 14 + "l"
    assert mins[2] is None and maxs[2] is None  # no upper bound for U+10FFFF...
    assert mins[3] == Decimal("1.5") and maxs[3] == Decimal("1.5")
    assert m.value_stats.null_counts == (0, 0, 0, 1, 2)
    kmin = from_avro_bytes(m.key_stats.min_values, [T.string()])[0]
    kmax = from_avro_bytes(m.key_stats.max_values, [T.string()])[0]
    assert kmin == ("a" + long_key)[:128] and kmax == "b" + "k" * 126 + "l"
    assert from_avro_bytes(m.max_key, [T.string(False)]) == ["b" + long_key]  # keys untruncated


def test_counts_none_full_and_field_overrides(tmp_path: Path) -> None:
    schema = _simple_schema()
    opts = {"metadata.stats-mode": "counts", "fields.name.stats-mode": "full",
            "fields.price.stats-mode": "none"}
    m = _writer(tmp_path, schema, opts).write(_kv(schema, _rows(3, name_len=20)))[0]
    assert m.value_stats_cols == ("dt", "id", "name", "ts")
    types = [schema.field(c).type.copy(True) for c in m.value_stats_cols]
    assert from_avro_bytes(m.value_stats.min_values, types) == [None, None, "0" * 20, None]
    assert from_avro_bytes(m.value_stats.max_values, types) == [None, None, "0" * 19 + "2", None]
    assert m.value_stats.null_counts == (0, 0, 0, 0)
    # key stats keep truncate(128) whatever the value mode
    assert from_avro_bytes(m.key_stats.max_values, [T.bigint()]) == [2]

    opts = {"metadata.stats-mode": "none"}
    m = _writer(tmp_path, schema, opts).write(_kv(schema, _rows(3)))[0]
    assert m.value_stats_cols == () and m.value_stats.null_counts == ()

    opts = {"metadata.stats-mode": "none", "metadata.stats-dense-store": "false",
            "fields.id.stats-mode": "full"}
    m = _writer(tmp_path, schema, opts).write(_kv(schema, _rows(3)))[0]
    assert m.value_stats_cols is None
    vt = [f.type.copy(True) for f in schema.fields]
    assert from_avro_bytes(m.value_stats.max_values, vt) == [None, 2, None, None, None]
    assert m.value_stats.null_counts == (None, 0, None, None, None)


@pytest.mark.parametrize("rolling", [False, True])
def test_footer_stats_match_the_values(tmp_path: Path, rolling: bool) -> None:
    """String, binary and integer min/max come from the Parquet footer the writer filled;
    where the footer has none (a value over 4 KB, an all-null row group) or the name is
    dotted, they are computed: either way they are the values' own (strings in byte order),
    with null counts, for value and key columns alike. `rolling`: compaction's writer, fed
    chunk by chunk, files of several row groups."""
    fields = [DataField(0, "id", T.bigint(False)), DataField(1, "s", T.string()),
              DataField(2, "b", T.bytes_()), DataField(3, "big", T.string()),
              DataField(4, "none", T.string()), DataField(5, "a.b", T.string()),
              DataField(6, "i8", T.tinyint()), DataField(7, "i16", T.smallint()),
              DataField(8, "i32", T.int_()), DataField(9, "inone", T.int_())]
    schema = new_schema(0, fields, [], ["id"], {"metadata.stats-mode": "full"}, None)
    n = 20_000
    rows = [{"id": i - 7_000_000_000 * (i % 3), "s": None if i % 7 == 0
             else f"v{(i * 7919) % n:05d}\u00e9",
             "b": None if i % 5 == 0 else bytes([(i * 31) % 256, 255 - i % 256]),
             "big": ("z" * 5000 if i == 4321 else f"x{i}"), "none": None,
             "a.b": f"d{n - i}", "i8": (i * 37) % 256 - 128,
             "i16": None if i % 3 == 0 else (i * 7919) % 65536 - 32768,
             "i32": -(i * 104729) % 1_000_003, "inone": None} for i in range(n)]
    rows.sort(key=lambda r: r["id"])
    kv = _kv(schema, rows)
    if rolling:
        opts = CoreOptions({**schema.options, "target-file-size": "64kb"})
        w = RollingKeyValueFileWriter(LocalFileIO(), str(tmp_path), schema, opts,
                                      row_group_bytes=1 << 16)
        for start in range(0, n, 3000):
            w.append(kv.slice(start, 3000))
        metas = w.close()
        groups = [pq.ParquetFile(tmp_path / m.file_name).metadata.num_row_groups
                  for m in metas]
        assert max(groups) > 1, groups
    else:
        metas = _writer(tmp_path, schema, {"target-file-size": "16kb"}).write(kv)
    assert len(metas) > 1  # several files, each with its own footer
    pos = 0
    vt = [f.type.copy(True) for f in schema.fields]
    for m in metas:
        part = rows[pos:pos + m.row_count]
        pos += m.row_count
        mins = from_avro_bytes(m.value_stats.min_values, vt)
        maxs = from_avro_bytes(m.value_stats.max_values, vt)
        for j, f in enumerate(fields):
            present = [r[f.name] for r in part if r[f.name] is not None]
            assert m.value_stats.null_counts[j] == len(part) - len(present), f.name
            assert mins[j] == (min(present) if present else None), f.name
            assert maxs[j] == (max(present) if present else None), f.name
        keys = [r["id"] for r in part]
        kt = [T.bigint(False)]
        assert from_avro_bytes(m.key_stats.min_values, kt) == [min(keys)]
        assert from_avro_bytes(m.key_stats.max_values, kt) == [max(keys)]
        assert m.key_stats.null_counts == (0,)
    assert pos == n


# -- ORC ---------------------------------------------------------------------------------------

def test_orc_round_trip(tmp_path: Path) -> None:
    fields = [DataField(0, "id", T.bigint()), DataField(1, "s", T.string()),
              DataField(2, "dec", T.decimal(12, 3)), DataField(3, "tm", T.time(3)),
              DataField(4, "ts", T.timestamp(3)), DataField(5, "ltz", T.timestamp_ltz(6)),
              DataField(6, "day", T.date()), DataField(7, "b", T.bytes_()),
              DataField(8, "arr", DataType("ARRAY", element=T.int_()))]
    schema = new_schema(0, fields, [], ["id"], {"file.format": "orc"}, None)
    n = 20_000
    rows = [{"id": i, "s": f"s{i}", "dec": Decimal(i) / 1000, "tm": dt.time(1, 2, 3, 4000),
             "ts": dt.datetime(2024, 1, 1, 0, 0, i % 60, 123000),
             "ltz": dt.datetime(2024, 1, 1, 0, 0, 0, i, tzinfo=dt.UTC),
             "day": dt.date(2024, 2, 3), "b": b"\x00\x01", "arr": [i, None]} for i in range(n)]
    kv = _kv(schema, rows)
    metas = _writer(tmp_path, schema, {"target-file-size": "16 kb"}).write(kv)
    assert len(metas) >= 2 and all(m.file_name.endswith(".orc") for m in metas)
    parts = []
    for m in metas:
        assert m.file_size == os.path.getsize(tmp_path / m.file_name)
        parts.append(read_kv_file(LocalFileIO(), str(tmp_path / m.file_name), "orc",
                                  schema=schema))
        names = orc.ORCFile(str(tmp_path / m.file_name)).schema.names
        assert names[:3] == ["_KEY_id", "_SEQUENCE_NUMBER", "_VALUE_KIND"]
    back = pa.concat_tables(parts)
    assert back.equals(kv.cast(back.schema))
    m = metas[0]
    # ORC: no binary min/max, nested columns carry a null count
    assert m.value_stats_cols is None
    vt = [f.type.copy(True) for f in schema.fields]
    mins = from_avro_bytes(m.value_stats.min_values, vt)
    assert mins[0] == 0 and mins[3] == dt.time(1, 2, 3, 4000)
    assert mins[7] is None and mins[8] is None
    assert m.value_stats.null_counts[8] == 0


# -- reading foreign files -------------------------------------------------------------------

def _sample_table() -> pa.Table:
    """The layout of paimon-format-samples/data-files-pk-table.json (pypaimon 2.1 output)."""
    fields = [
        pa.field("_KEY_id", pa.int64(), False), pa.field("_SEQUENCE_NUMBER", pa.int64(), False),
        pa.field("_VALUE_KIND", pa.int8(), False), pa.field("dt", pa.string(), False),
        pa.field("id", pa.int64(), False), pa.field("name", pa.string()),
        pa.field("price", pa.decimal128(10, 2)), pa.field("ts", pa.timestamp("ms")),
        pa.field("rk", pa.string())]
    ts = dt.datetime(2024, 1, 2, 3, 4, 5, 678000)
    return pa.table([[1, 2], [0, 1], [0, 0], ["2024-01-01"] * 2, [1, 2], ["a", "bbbbbbbbbbbb"],
                     [Decimal("1.10"), Decimal("2.20")], [ts, ts], ["+I", "+I"]],
                    schema=pa.schema(fields))


def _sample_schema():
    fields = [DataField(0, "dt", T.string()), DataField(1, "id", T.bigint()),
              DataField(2, "name", T.string()), DataField(3, "price", T.decimal(10, 2)),
              DataField(4, "ts", T.timestamp(3)), DataField(5, "rk", T.string())]
    return new_schema(0, fields, ["dt"], ["dt", "id"], {}, None)


def test_read_sample_layout(tmp_path: Path) -> None:
    path = tmp_path / "data-d1e981d3-43db-403c-9cdf-d89db8ca8a95-0.parquet"
    pq.write_table(_sample_table(), path, compression="zstd")
    assert "fixed_len_byte_array(5)" in str(pq.ParquetFile(path).schema)
    io = LocalFileIO()
    t = read_kv_file(io, str(path), "parquet")
    assert t.column_names == ["_SEQUENCE_NUMBER", "_VALUE_KIND", "dt", "id", "name", "price",
                              "ts", "rk"]
    assert t.column("price").to_pylist() == [Decimal("1.10"), Decimal("2.20")]
    t = read_kv_file(io, str(path), "parquet", ["name", "price"], schema=_sample_schema())
    assert t.column_names == ["_SEQUENCE_NUMBER", "_VALUE_KIND", "name", "price"]
    assert t.schema.field("price").type == pa.decimal128(10, 2)
    assert t.column("name").to_pylist() == ["a", "bbbbbbbbbbbb"]
    t = read_kv_file(io, f"file://{path}", "parquet", ["rk"])
    assert t.column("rk").to_pylist() == ["+I", "+I"]


def test_read_pypaimon_nanos_and_no_silent_truncation(tmp_path: Path) -> None:
    table = pa.table({"_SEQUENCE_NUMBER": pa.array([0], pa.int64()),
                      "_VALUE_KIND": pa.array([0], pa.int8()), "id": [1],
                      "t": pa.array([1_700_000_000_123_456_789], pa.timestamp("ns"))})
    path = tmp_path / "f.parquet"
    pq.write_table(table, path)
    s9 = new_schema(0, [DataField(0, "id", T.bigint()), DataField(1, "t", T.timestamp(9))],
                    [], ["id"], {}, None)
    t = read_kv_file(LocalFileIO(), str(path), "parquet", schema=s9)
    assert t.schema.field("t").type == pa.timestamp("ns")
    s6 = new_schema(0, [DataField(0, "id", T.bigint()), DataField(1, "t", T.timestamp(6))],
                    [], ["id"], {}, None)
    with pytest.raises(CorruptFileError, match="f.parquet"):
        read_kv_file(LocalFileIO(), str(path), "parquet", schema=s6)


def test_read_failures_name_the_path(tmp_path: Path) -> None:
    io = LocalFileIO()
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"PAR1 definitely not parquet")
    for path in (bad, tmp_path / "missing.parquet"):
        with pytest.raises(CorruptFileError, match=path.name):
            read_kv_file(io, str(path), "parquet")
    good = tmp_path / "good.parquet"
    pq.write_table(_sample_table(), good)
    with pytest.raises(CorruptFileError, match="nope"):
        read_kv_file(io, str(good), "parquet", ["nope"])
    with pytest.raises(UnsupportedError, match="lance"):
        read_kv_file(io, str(good), "lance")
    with pytest.raises(CorruptFileError, match="good.parquet"):  # not an Avro file
        read_kv_file(io, str(good), "avro")
