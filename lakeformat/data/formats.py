"""Parquet and ORC specifics of data files: physical schemas, codecs, in-memory file sinks
(Avro's are in `avro_schema`, `avro_encode` and `avro_decode`).

The physical types follow what Java Paimon writes [JAVA ParquetSchemaConverter, OrcTypeUtil], so
files we write look like Java's to every reader; pyarrow options that only newer versions have
(``store_decimal_as_integer``) are feature-detected so pyarrow 16+ keeps working.
"""

from __future__ import annotations

import inspect
import math
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakeformat.errors import UnsupportedError
from lakeformat.schema.table_schema import (
    SEQUENCE_NUMBER,
    SEQUENCE_NUMBER_ID,
    VALUE_KIND,
    VALUE_KIND_ID,
    TableSchema,
)
from lakeformat.schema.types import FIELD_ID_KEY, DataField, DataType, bigint, tinyint, to_arrow

__all__ = [
    "SUPPORTED_WRITE_FORMATS",
    "compression_extension",
    "leaf_types",
    "orc_compression",
    "orc_write_schema",
    "parquet_compression",
    "parquet_delta_columns",
    "parquet_encodings",
    "parquet_dictionary_columns",
    "parquet_leaf_paths",
    "parquet_write_options",
    "parquet_write_schema",
    "physical_fields",
]

SUPPORTED_WRITE_FORMATS = ("parquet", "orc", "avro")

#: Java's ``SpecialFields.STRUCTURED_TYPE_FIELD_ID_BASE`` and depth limit for ids of list
#: elements and map keys/values.
_NESTED_ID_BASE = 2147483647 // 4
_NESTED_DEPTH_LIMIT = 1 << 10

_DECIMAL_AS_INT = (
    "store_decimal_as_integer" in inspect.signature(pq.ParquetWriter.__init__).parameters)

# file.compression -> (pyarrow parquet codec); None = not writable by pyarrow.
_PARQUET_CODECS = {
    "zstd": "zstd", "snappy": "snappy", "gzip": "gzip", "lz4": "lz4", "lz4_raw": "lz4",
    "brotli": "brotli", "none": "none", "uncompressed": "none", "": "none",
}
_ORC_CODECS = {
    "zstd": "zstd", "snappy": "snappy", "lz4": "lz4", "zlib": "zlib", "gzip": "zlib",
    "deflate": "zlib", "none": "uncompressed", "uncompressed": "uncompressed", "": "uncompressed",
}
# Hadoop codec file extensions Java (>= 1.3) puts in names [JAVA HadoopCompressionType].
_HADOOP_EXT = {"none": None, "gzip": "gz", "bzip2": "bz2", "deflate": "deflate",
               "snappy": "snappy", "lz4": "lz4", "zstd": "zst"}


def _int32(v: int) -> int:
    """Java int arithmetic (wraps around)."""
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


def physical_fields(schema: TableSchema, thin: bool) -> list[DataField]:
    """Columns of a key-value file: ``_KEY_*`` (unless thin), sequence, kind, all columns."""
    keys = [] if thin else schema.key_fields()
    return [*keys, DataField(SEQUENCE_NUMBER_ID, SEQUENCE_NUMBER, bigint(False)),
            DataField(VALUE_KIND_ID, VALUE_KIND, tinyint(False)), *schema.fields]


def leaf_types(dt: DataType) -> list[DataType]:
    """Atomic types inside ``dt`` (itself when atomic)."""
    if dt.root in ("ARRAY", "MULTISET"):
        return leaf_types(dt.element)  # type: ignore[arg-type]
    if dt.root == "MAP":
        return leaf_types(dt.key) + leaf_types(dt.value)  # type: ignore[arg-type]
    if dt.root == "ROW":
        return [t for f in dt.fields for t in leaf_types(f.type)]
    return [dt]


def parquet_leaf_paths(name: str, dt: DataType) -> list[str]:
    """Dotted Parquet column paths of a column's leaves (as pyarrow names them in options)."""
    if dt.root == "ARRAY":
        return parquet_leaf_paths(f"{name}.list.element", dt.element)  # type: ignore[arg-type]
    if dt.root == "MAP":
        return (parquet_leaf_paths(f"{name}.key_value.key", dt.key)  # type: ignore[arg-type]
                + parquet_leaf_paths(f"{name}.key_value.value", dt.value))  # type: ignore[arg-type]
    if dt.root == "ROW":
        return [p for f in dt.fields for p in parquet_leaf_paths(f"{name}.{f.name}", f.type)]
    return [name]


def _meta(field_id: int) -> dict[bytes, bytes]:
    return {FIELD_ID_KEY: str(field_id).encode()}


def _parquet_field(name: str, dt: DataType, field_id: int, depth: int) -> pa.Field:
    """Arrow field whose Parquet rendering is Java's, ids included (nested ids derived)."""
    if dt.root == "ARRAY":
        elem = _parquet_field("element", dt.element, field_id, depth + 1)  # type: ignore[arg-type]
        elem = elem.with_metadata(_meta(_int32(
            _NESTED_ID_BASE + field_id * _NESTED_DEPTH_LIMIT + depth + 1)))
        typ: pa.DataType = pa.list_(elem)
    elif dt.root == "MAP":
        key = _parquet_field("key", dt.key.copy(False), field_id, depth + 1)  # type: ignore[union-attr]
        key = key.with_metadata(_meta(_int32(
            _NESTED_ID_BASE - field_id * _NESTED_DEPTH_LIMIT - depth - 1)))
        val = _parquet_field("value", dt.value, field_id, depth + 1)  # type: ignore[arg-type]
        val = val.with_metadata(_meta(_int32(
            _NESTED_ID_BASE + field_id * _NESTED_DEPTH_LIMIT + depth + 1)))
        typ = pa.map_(key, val)
    elif dt.root == "ROW":
        typ = pa.struct([_parquet_field(f.name, f.type, f.id, 0) for f in dt.fields])
    else:
        typ = to_arrow(dt)
    return pa.field(name, typ, dt.nullable, metadata=_meta(field_id))


def parquet_write_schema(fields: list[DataField]) -> pa.Schema:
    """Arrow schema to hand pyarrow's Parquet writer (field ids, required flags, names)."""
    return pa.schema([_parquet_field(f.name, f.type, f.id, 0) for f in fields])


def _orc_type(dt: DataType) -> pa.DataType:
    """pyarrow cannot write time32 to ORC; Java stores TIME as an ORC int (ms of day) anyway."""
    if dt.root == "TIME":
        return pa.int32()
    if dt.root == "ARRAY":
        return pa.list_(pa.field("element", _orc_type(dt.element), True))  # type: ignore[arg-type]
    if dt.root == "MAP":
        return pa.map_(pa.field("key", _orc_type(dt.key), False),  # type: ignore[arg-type]
                       pa.field("value", _orc_type(dt.value), True))  # type: ignore[arg-type]
    if dt.root == "ROW":
        return pa.struct([pa.field(f.name, _orc_type(f.type), True) for f in dt.fields])
    return to_arrow(dt)


def orc_write_schema(fields: list[DataField]) -> pa.Schema:
    """Arrow schema for pyarrow's ORC writer (ORC has no required flags or field ids there)."""
    return pa.schema([pa.field(f.name, _orc_type(f.type), True) for f in fields])


def parquet_compression(name: str, zstd_level: int) -> dict[str, Any]:
    """pyarrow ``compression`` / ``compression_level`` for a Paimon ``file.compression``."""
    key = name.strip().lower()
    codec = _PARQUET_CODECS.get(key)
    if codec is None:
        raise UnsupportedError(
            f"file.compression {name!r} is not supported for Parquet by lakeformat "
            f"(supported: {sorted(k for k in _PARQUET_CODECS if k)})")
    out: dict[str, Any] = {"compression": codec}
    if codec == "zstd":
        out["compression_level"] = zstd_level
    return out


def orc_compression(name: str) -> str:
    key = name.strip().lower()
    codec = _ORC_CODECS.get(key)
    if codec is None:
        raise UnsupportedError(
            f"file.compression {name!r} is not supported for ORC by lakeformat "
            f"(supported: {sorted(k for k in _ORC_CODECS if k)})")
    return codec


def compression_extension(name: str) -> str | None:
    """Compression part of a data file name (``file.suffix.include.compression``), Java >= 1.3."""
    key = name.strip().lower()
    if not key:
        return None
    return _HADOOP_EXT.get(key, key)


def parquet_write_options(fields: list[DataField], compression: str,
                          zstd_level: int) -> dict[str, Any]:
    """Keyword arguments of ``pq.ParquetWriter`` reproducing Java's physical types.

    TIMESTAMP(p > 6) is INT96 in Java. pyarrow can only switch INT96 on for *all* timestamps, so
    it is used when every timestamp in the file has p > 6; otherwise those columns are written
    as INT64 nanos (what pypaimon writes; Java >= 1.3 reads it).
    """
    leaves = [t for f in fields for t in leaf_types(f.type)]
    ts = [t.precision or 0 for t in leaves if t.root in ("TIMESTAMP", "TIMESTAMP_LTZ")]
    opts: dict[str, Any] = dict(parquet_compression(compression, zstd_level))
    opts.update(version="2.6", write_statistics=True, use_dictionary=True,
                dictionary_pagesize_limit=DICTIONARY_PAGE_LIMIT, use_compliant_nested_type=True,
                coerce_timestamps=None, write_batch_size=WRITE_BATCH_ROWS)
    opts["use_deprecated_int96_timestamps"] = bool(ts) and min(ts) > 6
    if _DECIMAL_AS_INT:
        opts["store_decimal_as_integer"] = True
    return opts


#: A column keeps a dictionary whose estimated page is at most this size. Measured here on
#: strings of ~20 bytes: up to ~1.2 MB the dictionary encodes as fast as PLAIN + zstd and the
#: column comes out ~3x smaller (less to write, fsync, upload and read); beyond, its hash table
#: outgrows the core's cache: 1.45x PLAIN's time at 1.4 MB, 2.3x at 1.8 MB.
DICTIONARY_BYTES = 3 << 19
#: The writer's `dictionary_pagesize_limit`: it gives up a column chunk's dictionary (and
#: writes the rest PLAIN) once the page passes this size, kept above `DICTIONARY_BYTES` so an
#: estimate a little short does not cost the dictionary (pyarrow's default is 1 MB).
DICTIONARY_PAGE_LIMIT = 2 << 20
#: Values the writer's column writers take at a time (pyarrow's default 1024): each batch
#: pays for its levels, statistics update and page-size check; 8192 encodes ~4% faster, same
#: bytes (a page may pass `data_page_size` by up to one batch).
WRITE_BATCH_ROWS = 8192
#: Values sampled per column to judge its dictionary.
DICTIONARY_SAMPLE = 4096
#: A dictionary is worth its hashing when each value repeats about 4 times or more: with
#: fewer repeats zstd shrinks the PLAIN values as well as the indices (measured on doubles of
#: 2 decimals, 37% distinct: dictionary 45% slower to write and no smaller). parquet-mr
#: likewise drops a dictionary that does not pay for itself in the first page.
DICTIONARY_MAX_SHARE = 0.25


def parquet_dictionary_columns(table: pa.Table, candidates: list[str]) -> list[str]:
    """The `candidates` (top-level flat columns of `table`) worth dictionary encoding.

    Dictionary encoding hashes every value until the dictionary page overflows, then the
    writer falls back to PLAIN: for a column of mostly distinct values (random doubles,
    names) that hashing is pure cost. A strided sample of each column estimates the number of
    distinct values in `table` (values drawn from a pool: the pool size that explains the
    sample's distinct count). A column keeps its dictionary when that estimate fits the
    dictionary page and stays under `DICTIONARY_MAX_SHARE` of its values."""
    n = table.num_rows
    keep = []
    for name in candidates:
        col = table[name]
        if n == 0 or _dictionary_pays(col, n):
            keep.append(name)
    return keep


def _dictionary_pays(col: pa.ChunkedArray, n: int) -> bool:
    t = col.type
    byte_array = (pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t)
                  or pa.types.is_large_binary(t))
    if not (pa.types.is_primitive(t) or byte_array or pa.types.is_decimal(t)):
        return True  # nested or other: left as the writer does it
    present = n - col.null_count
    if present <= 0:
        return True
    step = max(1, n // DICTIONARY_SAMPLE)
    sample = col.take(pa.array(np.arange(0, n, step, dtype=np.int64)[:DICTIONARY_SAMPLE]))
    sample = pc.drop_null(sample)
    s = len(sample)
    if s == 0:
        return True
    distinct = len(pc.unique(sample))  # nulls dropped above; unique beats count_distinct
    estimate = present if distinct >= s else _pool_size(s, distinct, present)
    if estimate > DICTIONARY_MAX_SHARE * present:
        return False
    if byte_array:  # PLAIN byte arrays: 4-byte length + bytes
        width = 4 + pc.sum(pc.binary_length(sample)).as_py() / s
    else:
        width = max(1, t.bit_width // 8)
    return estimate * width <= DICTIONARY_BYTES


def parquet_encodings(table: pa.Table, candidates: list[str], columns: list[str]
                      ) -> dict[str, Any]:
    """``use_dictionary`` and ``column_encoding`` of ``pq.ParquetWriter`` for files like
    `table`: a dictionary for the `candidates` (leaf paths) whose values repeat enough
    (`parquet_dictionary_columns`; nested ones are left to the writer), DELTA_BINARY_PACKED
    for the file's other `columns` that are integers of close neighbours
    (`parquet_delta_columns`)."""
    flat = [c for c in candidates if c in table.column_names]
    dictionary = parquet_dictionary_columns(table, flat)
    nested = [c for c in candidates if c not in table.column_names]
    delta = parquet_delta_columns(table, [c for c in columns if c not in dictionary])
    return {"use_dictionary": dictionary + nested,
            "column_encoding": dict.fromkeys(delta, "DELTA_BINARY_PACKED")}


#: Contiguous windows of this many values, spread over an integer column, judge its deltas.
DELTA_WINDOW = 1024
DELTA_WINDOWS = 4
#: DELTA_BINARY_PACKED pays when neighbouring values mostly differ by less than this: sorted
#: keys, sequence numbers, small codes encode 2-5x faster than PLAIN + zstd, decode 2-3x
#: faster and come out smaller; differences near 64 bits (random wide keys) encode slower.
DELTA_MAX_STEP = float(1 << 32)


def parquet_delta_columns(table: pa.Table, candidates: list[str]) -> list[str]:
    """The `candidates` (top-level columns of `table`) worth DELTA_BINARY_PACKED: integer
    columns (Parquet INT32/INT64) whose neighbouring values differ by less than
    `DELTA_MAX_STEP` in at least 90% of a few sampled windows. Java Paimon reads the encoding
    since 1.0 (its vectorized Parquet reader), pyarrow (pypaimon) always."""
    return [name for name in candidates
            if "." not in name and pa.types.is_integer(table[name].type)
            and table.num_rows > 1 and _delta_pays(table[name])]


def _delta_pays(col: pa.ChunkedArray) -> bool:
    n = len(col)
    last = max(0, n - DELTA_WINDOW)
    starts = sorted({last * i // max(1, DELTA_WINDOWS - 1) for i in range(DELTA_WINDOWS)})
    steps = []
    for start in starts:
        window = col.slice(start, DELTA_WINDOW)
        if window.null_count:
            window = pc.drop_null(window)
        values = window.to_numpy()
        if len(values) > 1:  # float differences: no wrap-around on wide int64 values
            steps.append(np.abs(np.diff(values.astype(np.float64))))
    if not steps:
        return False
    close = np.concatenate(steps) < DELTA_MAX_STEP
    return bool(np.count_nonzero(close) >= 0.9 * len(close))


def _pool_size(sampled: int, distinct: int, rows: int) -> float:
    """Distinct values expected among `rows` draws from the pool whose `sampled` draws
    show `distinct` values (uniform draws: E[distinct] = P (1 - exp(-draws / P)))."""
    lo, hi = float(distinct), float(distinct)
    while hi * -math.expm1(-sampled / hi) < distinct and hi < 1e18:
        hi *= 2
    for _ in range(60):  # the expectation grows with P: bisect
        mid = (lo + hi) / 2
        if mid * -math.expm1(-sampled / mid) < distinct:
            lo = mid
        else:
            hi = mid
    return hi * -math.expm1(-rows / hi)
