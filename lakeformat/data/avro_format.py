"""Avro data files (``file.format=avro``): writer schema, codecs, a vectorized encoder, a reader.

What Java Paimon writes and so what we write [JAVA AvroSchemaConverter, FieldWriterFactory,
AvroFileFormat]: one record ``org.apache.paimon.avro.generated.record`` of the file's columns, a
nested ROW named ``<parent record>_<field>`` (array items and map values keep the parent's name),
a nullable type as ``["null", T]`` with ``"default": null``, no field ids (fields are read by
name). TINYINT / SMALLINT are ints; DATE, TIME(p <= 3), TIMESTAMP(p <= 6), DECIMAL carry Avro
logical types (the LTZ timestamps the ``local-`` ones; a decimal is its unscaled value in the
shortest big-endian two's complement); a MAP with a non-string key is an array of
``{key, value}`` records tagged ``"logicalType": "map"``. TIMESTAMP(p > 6) and TIME(p > 3) are
refused, as Java refuses them. Blocks close once they hold 64000 bytes (Java's sync interval).

Rows are encoded column by column with numpy (zigzag varints, union bytes, length prefixes) into
per-row byte strings that pyarrow concatenates row-wise; decoding is fastavro's, handed a copy
of the header whose schema has no logical types (values stay plain numbers), and the columns
become lakeformat's Arrow types through whole-column casts.
"""

from __future__ import annotations

import bz2
import io
import itertools
import json
import lzma
import os
import zlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import cramjam
import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.errors import CorruptFileError, SchemaMismatchError, UnsupportedError
from lakeformat.schema.types import STRING_ROOTS, DataField, DataType, parse_atomic, to_arrow

__all__ = ["AvroFileWriter", "avro_codec", "avro_row_count", "avro_schema", "encode_rows",
           "iter_avro", "writer_schema_json"]

RECORD_NAME = "record"
NAMESPACE = "org.apache.paimon.avro.generated"
MAGIC = b"Obj\x01"
#: Java's DataFileWriter default sync interval: a block closes once it holds this many bytes.
SYNC_INTERVAL = 64000
#: rows per decode step and Arrow bytes per encode step (both bound memory, not results)
_MAX_READ_ROWS = 65536
_ENCODE_BYTES = 16 << 20
_CODECS = ("null", "deflate", "snappy", "zstandard", "bzip2", "xz")
#: Avro's own default levels when a codec is named without one [Avro CodecFactory]
_DEFAULT_LEVEL = {"deflate": -1, "zstandard": 3, "xz": 6, "bzip2": 9}
_BIN = pa.large_binary()
_EMPTY = pa.scalar(b"", _BIN)


# -- schema -------------------------------------------------------------------------------------

_PRIMITIVE = {"BOOLEAN": "boolean", "TINYINT": "int", "SMALLINT": "int", "INT": "int",
              "BIGINT": "long", "FLOAT": "float", "DOUBLE": "double", "CHAR": "string",
              "VARCHAR": "string", "BINARY": "bytes", "VARBINARY": "bytes",
              "DATE": {"type": "int", "logicalType": "date"}}


def _avro_type(dt: DataType, record: str) -> Any:
    """Java's ``AvroSchemaConverter.convertToSchema`` of one type (``record``: the name a ROW
    here gets)."""
    r = dt.root
    t: Any = _PRIMITIVE.get(r)
    if t is not None:
        pass
    elif r in ("TIMESTAMP", "TIMESTAMP_LTZ", "TIME"):
        p = dt.precision if dt.precision is not None else (6 if r != "TIME" else 0)
        if p > (3 if r == "TIME" else 6):
            raise UnsupportedError(f"Avro data files cannot hold {dt}: Paimon writes {r} to "
                                   f"Avro only up to precision {3 if r == 'TIME' else 6}")
        local = "local-" if r == "TIMESTAMP_LTZ" else ""
        t = {"type": "int", "logicalType": "time-millis"} if r == "TIME" else {
            "type": "long", "logicalType": f"{local}timestamp-{'millis' if p <= 3 else 'micros'}"}
    elif r == "DECIMAL":
        t = {"type": "bytes", "logicalType": "decimal", "precision": dt.precision,
             "scale": dt.scale}
    elif r == "ROW":
        t = {"type": "record", "name": record,
             "fields": [_avro_field(f.name, f.type, f"{record}_{f.name}") for f in dt.fields]}
    elif r == "MAP" and dt.key.root in STRING_ROOTS:  # type: ignore[union-attr]
        t = {"type": "map", "values": _avro_type(dt.value, record)}  # type: ignore[arg-type]
    elif r == "MAP":
        entry = {"type": "record", "name": record, "fields": [
            _avro_field("key", dt.key, f"{record}_key"),  # type: ignore[arg-type]
            _avro_field("value", dt.value, f"{record}_value")]}  # type: ignore[arg-type]
        t = {"type": "array", "items": entry, "logicalType": "map"}
    elif r == "ARRAY":
        t = {"type": "array", "items": _avro_type(dt.element, record)}  # type: ignore[arg-type]
    else:
        raise UnsupportedError(f"type {dt} cannot be written to an Avro data file by lakeformat")
    return ["null", t] if dt.nullable else t


def _avro_field(name: str, dt: DataType, record: str) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "type": _avro_type(dt, record)}
    if dt.nullable:
        out["default"] = None
    return out


def avro_schema(fields: Sequence[DataField]) -> dict[str, Any]:
    """The writer schema of a file with these columns, keys in the order Java prints them."""
    return {"type": "record", "name": RECORD_NAME, "namespace": NAMESPACE,
            "fields": [_avro_field(f.name, f.type, f"{RECORD_NAME}_{f.name}") for f in fields]}


def writer_schema_json(fields: Sequence[DataField]) -> str:
    return json.dumps(avro_schema(fields), separators=(",", ":"))


# -- codecs -------------------------------------------------------------------------------------

def avro_codec(compression: str, zstd_level: int, avro_codec_option: str | None = None
               ) -> tuple[str, int]:
    """(Avro codec name, level) as Java's ``AvroFileFormat`` picks it."""
    if avro_codec_option:
        name = str(avro_codec_option).strip()
        if name not in _CODECS:
            raise UnsupportedError(f"avro.codec {name!r} is not an Avro codec lakeformat writes "
                                   f"(supported: {', '.join(_CODECS)})")
        return name, _DEFAULT_LEVEL.get(name, 0)
    name = compression.strip()
    if name.lower() == "zstd":
        return "zstandard", zstd_level
    if name not in _CODECS:
        raise UnsupportedError(
            f"file.compression {compression!r} is not an Avro codec, so Paimon cannot write it "
            f"to Avro data files (supported: zstd, {', '.join(_CODECS)})")
    return name, _DEFAULT_LEVEL.get(name, 0)


def _compress(codec: str, level: int, data: memoryview) -> bytes:
    if codec == "null":
        return bytes(data)
    if codec == "zstandard":
        return bytes(cramjam.zstd.compress(data, level=level))
    if codec == "deflate":
        c = zlib.compressobj(level, zlib.DEFLATED, -15)
        return c.compress(data) + c.flush()
    if codec == "snappy":  # raw snappy, then the CRC32 of the input, big-endian
        return bytes(cramjam.snappy.compress_raw(data)) + zlib.crc32(data).to_bytes(4, "big")
    if codec == "bzip2":
        return bz2.compress(data, level)
    return lzma.compress(data, format=lzma.FORMAT_XZ, preset=level)


# -- vectorized encoding ------------------------------------------------------------------------

def _varint(value: int) -> bytes:
    """Zigzag varint of one number (headers and block framing, never rows)."""
    z = (value << 1) ^ (value >> 63)
    out = bytearray()
    while z > 0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def _from_matrix(mat: np.ndarray, lens: np.ndarray) -> pa.Array:
    """Per-row byte strings: the first ``lens[i]`` bytes of row ``i`` of ``mat``."""
    n = len(lens)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lens, out=offsets[1:])
    data = mat[np.arange(mat.shape[1]) < lens[:, None]]
    return pa.Array.from_buffers(_BIN, n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def _varint_matrix(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Zigzag varint bytes of int64 ``values``: a (n, width) matrix and each row's length."""
    z = ((values << 1) ^ (values >> 63)).view(np.uint64)
    lens = np.ones(len(z), np.int64)
    for k in range(1, 10):
        more = z >= np.uint64(1 << (7 * k))
        if not more.any():
            break
        lens += more
    width = int(lens.max()) if len(z) else 1
    mat = np.empty((len(z), width), np.uint8)
    for k in range(width):
        byte = ((z >> np.uint64(7 * k)) & np.uint64(0x7F)).astype(np.uint8)
        mat[:, k] = byte | np.where(lens > k + 1, 0x80, 0).astype(np.uint8)
    return mat, lens


def _tagged(mat: np.ndarray, lens: np.ndarray, valid: np.ndarray | None) -> pa.Array:
    """``mat``/``lens`` behind the union index of ``["null", T]`` when ``valid`` is given
    (0 alone for a null row, 1 (zigzag 2) before a value)."""
    if valid is None:
        return _from_matrix(mat, lens)
    tag = np.where(valid, 2, 0).astype(np.uint8)[:, None]
    return _from_matrix(np.hstack([tag, mat]), np.where(valid, lens + 1, 1))


def _valid(arr: pa.Array) -> np.ndarray:
    if arr.null_count == 0:
        return np.ones(len(arr), bool)
    return arr.is_valid().to_numpy(zero_copy_only=False)


def _ints(arr: pa.Array, width: int) -> np.ndarray:
    view = arr.view(pa.int64() if width == 8 else pa.int32()) if not pa.types.is_integer(
        arr.type) else arr
    return view.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)


def _decimal_matrix(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Length byte plus the shortest big-endian two's complement of each unscaled value."""
    n = len(arr)
    raw = np.frombuffer(arr.buffers()[1], np.uint8, count=16 * (arr.offset + n))
    be = raw.reshape(-1, 16)[arr.offset:, ::-1]
    lead = be[:, :15]
    nxt = be[:, 1:] >= 0x80
    redundant = ((lead == 0) & ~nxt) | ((lead == 0xFF) & nxt)
    skip = np.logical_and.accumulate(redundant, axis=1).sum(axis=1)
    size = 16 - skip
    # left-align the kept bytes behind their length (zigzag(size) < 128: one byte)
    cols = np.arange(16)[None, :] + skip[:, None]
    body = np.take_along_axis(be, np.minimum(cols, 15), axis=1)
    mat = np.hstack([(2 * size).astype(np.uint8)[:, None], body])
    return mat, size + 1


def _join(pieces: list[pa.Array]) -> pa.Array:
    if len(pieces) == 1 and pieces[0].null_count == 0:
        return pieces[0]
    return pc.binary_join_element_wise(*pieces, _EMPTY, null_handling="replace",
                                       null_replacement=b"")


def _masked(arr: pa.Array, valid: np.ndarray) -> pa.Array:
    """``arr`` (offset 0) with the rows where ``valid`` is false made null (they encode to
    nothing)."""
    bits = pa.py_buffer(np.packbits(valid, bitorder="little"))
    b = arr.buffers()
    return pa.Array.from_buffers(_BIN, len(arr), [bits, b[1], b[2]])


def _grouped(elements: pa.Array, offsets: np.ndarray, valid: np.ndarray) -> pa.Array:
    """Per-row concatenation of consecutive element encodings (``offsets`` into them)."""
    b = elements.buffers()
    e_off = np.frombuffer(b[1], np.int64, count=len(elements) + 1)
    return pa.Array.from_buffers(_BIN, len(offsets) - 1,
                                 [pa.py_buffer(np.packbits(valid, bitorder="little")),
                                  pa.py_buffer(np.ascontiguousarray(e_off[offsets])),
                                  b[2] if b[2] is not None else pa.py_buffer(b"")])


def _pieces(arr: pa.Array, dt: DataType, name: str,
            parent_valid: np.ndarray | None = None) -> list[pa.Array]:
    """Arrays of per-row byte strings whose row-wise concatenation is each value's Avro
    encoding under ``dt`` (nulls in a piece stand for nothing)."""
    n = len(arr)
    valid = _valid(arr)
    if not dt.nullable and arr.null_count:
        bad = ~valid if parent_valid is None else (~valid & parent_valid)
        if bad.any():
            raise SchemaMismatchError(f"field {name!r} is NOT NULL but holds "
                                      f"{int(bad.sum())} null value(s)")
    tag = valid if dt.nullable else None
    r = dt.root
    if r == "BOOLEAN":
        vals = arr.fill_null(False).to_numpy(zero_copy_only=False).astype(np.uint8)
        return [_tagged(vals[:, None], np.ones(n, np.int64), tag)]
    if r in ("TINYINT", "SMALLINT", "INT", "BIGINT", "DATE", "TIME", "TIMESTAMP",
             "TIMESTAMP_LTZ"):
        width = 8 if r in ("BIGINT", "TIMESTAMP", "TIMESTAMP_LTZ") else 4
        return [_tagged(*_varint_matrix(_ints(arr, width)), tag)]
    if r in ("FLOAT", "DOUBLE"):
        fmt = "<f4" if r == "FLOAT" else "<f8"
        vals = arr.fill_null(0).to_numpy(zero_copy_only=False).astype(fmt)
        mat = vals.view(np.uint8).reshape(n, -1)
        return [_tagged(mat, np.full(n, mat.shape[1], np.int64), tag)]
    if r == "DECIMAL":
        return [_tagged(*_decimal_matrix(arr), tag)]
    if r in STRING_ROOTS or r in ("BINARY", "VARBINARY"):
        sizes = pc.binary_length(arr).fill_null(0).to_numpy(zero_copy_only=False)
        head = _tagged(*_varint_matrix(sizes.astype(np.int64)), tag)
        return [head, arr.cast(pa.large_binary() if r not in STRING_ROOTS else pa.large_string())
                .view(_BIN)]
    if r == "ROW":
        body = [p for i, f in enumerate(dt.fields)
                for p in _pieces(arr.field(i), f.type, f"{name}.{f.name}", valid)]
        joined = _join(body) if body else pa.array([b""] * n, _BIN)
        if tag is None:
            return [joined]
        return [_tagged(np.zeros((n, 0), np.uint8), np.zeros(n, np.int64), tag),
                _masked(joined, valid)]
    if r in ("ARRAY", "MAP"):
        offsets = arr.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
        if r == "ARRAY":
            items = _pieces(arr.values, dt.element, f"{name}[]")  # type: ignore[arg-type]
        else:
            key_type = dt.key if dt.key.root not in STRING_ROOTS else dt.key.copy(False)  # type: ignore[union-attr]
            items = (_pieces(arr.keys, key_type, f"{name}.key")  # type: ignore[arg-type]
                     + _pieces(arr.items, dt.value, f"{name}.value"))  # type: ignore[arg-type]
        elements = _join(items) if len(items) else pa.array([], _BIN)
        counts = np.where(valid, np.diff(offsets), 0)
        mat, lens = _varint_matrix(counts)
        head = _tagged(mat, np.where(counts > 0, lens, 0), tag)
        end = _from_matrix(np.zeros((n, 1), np.uint8), valid.astype(np.int64))
        return [head, _grouped(elements, offsets, valid), end]
    raise UnsupportedError(f"column {name!r}: type {dt} cannot be written to Avro by lakeformat")


def encode_rows(table: pa.Table, fields: Sequence[DataField]) -> pa.Array:
    """Each row of ``table`` (columns as ``fields``) as the bytes of one Avro record."""
    pieces = []
    for col, f in zip(table.columns, fields, strict=True):
        arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
        pieces.extend(_pieces(arr, f.type, f.name))
    return _join(pieces) if pieces else pa.array([b""] * table.num_rows, _BIN)


# -- writing ------------------------------------------------------------------------------------

class AvroFileWriter:
    """An Avro object container file written into ``sink`` (a ``pa.BufferOutputStream``),
    block by block, with ``write_table`` / ``close`` like pyarrow's Parquet writer."""

    def __init__(self, sink: Any, fields: Sequence[DataField], codec: str, level: int) -> None:
        self._sink = sink
        self._fields = list(fields)
        self._codec, self._level = codec, level
        self._sync = os.urandom(16)
        self._pending: list[bytes] = []
        self._pending_bytes = self._pending_rows = 0
        meta = {"avro.codec": codec.encode(), "avro.schema": writer_schema_json(fields).encode()}
        head = bytearray(MAGIC) + _varint(len(meta))
        for k, v in meta.items():
            head += _varint(len(k)) + k.encode() + _varint(len(v)) + v
        sink.write(bytes(head + b"\x00" + self._sync))

    def write_table(self, table: pa.Table, row_group_size: int | None = None) -> None:
        n = table.num_rows
        step = max(1024, int(_ENCODE_BYTES / max(1.0, table.nbytes / max(n, 1))))
        for pos in range(0, n, step):
            self._add(encode_rows(table.slice(pos, step), self._fields))

    def _add(self, records: pa.Array) -> None:
        n = len(records)
        offs = np.frombuffer(records.buffers()[1], np.int64, count=n + 1)
        data = memoryview(records.buffers()[2] or b"")
        start = 0
        while start < n:
            want = offs[start] + SYNC_INTERVAL - self._pending_bytes
            end = min(n, max(start + 1, int(np.searchsorted(offs, want, "left"))))
            self._pending.append(bytes(data[offs[start]:offs[end]]))
            self._pending_bytes += int(offs[end] - offs[start])
            self._pending_rows += end - start
            start = end
            if self._pending_bytes >= SYNC_INTERVAL:
                self._flush_block()

    def _flush_block(self) -> None:
        if not self._pending_rows:
            return
        raw = b"".join(self._pending)
        body = _compress(self._codec, self._level, memoryview(raw))
        self._sink.write(_varint(self._pending_rows) + _varint(len(body)) + body + self._sync)
        self._pending, self._pending_bytes, self._pending_rows = [], 0, 0

    def close(self) -> None:
        self._flush_block()


# -- reading ------------------------------------------------------------------------------------

class _Header:
    """An Avro container's header, read from ``stream`` (left at the first block)."""

    def __init__(self, stream: Any, path: str) -> None:
        try:
            head = fastavro.schemaless_reader(stream, fastavro.read.HEADER_SCHEMA, None)
        except Exception as e:
            raise CorruptFileError(f"data file {path}: damaged Avro header: {type(e).__name__}: "
                                   f"{e}") from e
        if head["magic"] != MAGIC:
            raise CorruptFileError(f"data file {path} is not an Avro file (bad magic bytes)")
        self.sync = head["sync"]
        self.codec = head["meta"].get("avro.codec", b"null").decode()
        if self.codec not in _CODECS:
            raise UnsupportedError(f"data file {path}: Avro codec {self.codec!r} is not supported "
                                   f"(supported: {', '.join(_CODECS)})")
        self.schema = json.loads(head["meta"]["avro.schema"])
        if not isinstance(self.schema, dict) or self.schema.get("type") != "record":
            raise CorruptFileError(f"data file {path}: its Avro schema is not a record")

    def plain(self) -> bytes:
        """This header with every logical type dropped from its schema."""
        meta = [(b"avro.codec", self.codec.encode()),
                (b"avro.schema", json.dumps(_plain(self.schema)).encode())]
        out = bytearray(MAGIC) + _varint(len(meta))
        for k, v in meta:
            out += _varint(len(k)) + k + _varint(len(v)) + v
        return bytes(out + b"\x00" + self.sync)


def _plain(t: Any) -> Any:
    if isinstance(t, list):
        return [_plain(x) for x in t]
    if isinstance(t, dict):
        return {k: _plain(v) for k, v in t.items()
                if k not in ("logicalType", "precision", "scale")}
    return t


class _Stream(io.RawIOBase):
    """``head``, then what ``source`` (anything with ``read(n)``) holds."""

    def __init__(self, source: Any, head: bytes = b"") -> None:
        self._head = head
        self._source = source

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        if self._head:
            data, self._head = self._head[:len(b)], self._head[len(b):]
        else:
            data = self._source.read(len(b))
        b[:len(data)] = data
        return len(data)


def _buffered(source: Any, head: bytes = b"") -> io.BufferedReader:
    return io.BufferedReader(_Stream(source, head), 1 << 20)


def _shape_branch(union: list[Any]) -> Any:
    branches = [b for b in union if b != "null"]
    if len(branches) != 1:
        raise UnsupportedError(f"Avro union {union} is not supported (only [null, T])")
    return branches[0]


def _shape(t: Any) -> Any:
    """An Avro type without names, defaults and null branches: what must match."""
    if isinstance(t, list):
        return _shape(_shape_branch(t))
    if isinstance(t, str):
        return t
    kind = t["type"]
    if isinstance(kind, (dict, list)):
        return _shape(kind)
    if kind == "record":
        return ("record", {f["name"]: _shape(f["type"]) for f in t["fields"]})
    if kind == "array":
        return ("array", _shape(t["items"]), t.get("logicalType"))
    if kind == "map":
        return ("map", _shape(t["values"]))
    logical = t.get("logicalType")
    return kind if logical is None else (kind, logical, t.get("precision"), t.get("scale"))


def _same(found: Any, expected: Any) -> bool:
    """Shapes match; records only in the fields both have (Java reads fields by name,
    skipping the file's others and reading null for its missing ones)."""
    if isinstance(found, tuple) and isinstance(expected, tuple) and found[0] == expected[0]:
        if found[0] == "record":
            common = found[1].keys() & expected[1].keys()
            return all(_same(found[1][k], expected[1][k]) for k in common)
        if found[0] in ("array", "map"):
            return all(_same(a, b) for a, b in zip(found[1:], expected[1:], strict=True))
    return found == expected


_SIMPLE = {"boolean": "BOOLEAN", "int": "INT", "long": "BIGINT", "float": "FLOAT",
           "double": "DOUBLE", "string": "STRING", "bytes": "BYTES"}


def _type_of(t: Any) -> DataType:
    """A Paimon type for an Avro type, for files read without their table schema."""
    if isinstance(t, list):
        return _type_of(_shape_branch(t)).copy(True)
    if isinstance(t, dict) and not isinstance(t["type"], str):
        return _type_of(t["type"])
    kind, logical = (t, None) if isinstance(t, str) else (t["type"], t.get("logicalType"))
    if kind in _SIMPLE and logical is None:
        return parse_atomic(_SIMPLE[kind]).copy(False)
    if logical in ("date", "time-millis") or (logical or "").endswith(("millis", "micros")):
        text = {"date": "DATE", "time-millis": "TIME(3)"}.get(logical) or "TIMESTAMP({}){}".format(
            3 if logical.endswith("millis") else 6,
            " WITH LOCAL TIME ZONE" if logical.startswith("local") else "")
        return parse_atomic(text).copy(False)
    if logical == "decimal":
        return DataType("DECIMAL", False, precision=t["precision"], scale=t.get("scale", 0))
    if kind == "record":
        return DataType("ROW", False, fields=tuple(
            DataField(i, f["name"], _type_of(f["type"])) for i, f in enumerate(t["fields"])))
    if kind == "map":
        return DataType("MAP", False, key=parse_atomic("STRING").copy(False),
                        value=_type_of(t["values"]))
    if kind == "array" and logical == "map":
        entry = {f["name"]: f["type"] for f in t["items"]["fields"]}
        return DataType("MAP", False, key=_type_of(entry["key"]), value=_type_of(entry["value"]))
    if kind == "array":
        return DataType("ARRAY", False, element=_type_of(t["items"]))
    raise UnsupportedError(f"Avro type {t} is not supported by lakeformat")


def _raw_type(dt: DataType) -> pa.DataType:
    """The Arrow type fastavro's plain values (no logical types) go into."""
    r = dt.root
    if r in ("TINYINT", "SMALLINT", "INT", "DATE", "TIME"):
        return pa.int32()
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return pa.int64()
    if r == "DECIMAL":
        return pa.binary()
    if r == "ARRAY":
        return pa.list_(_raw_type(dt.element))  # type: ignore[arg-type]
    if r == "MAP" and dt.key.root in STRING_ROOTS:  # type: ignore[union-attr]
        return pa.map_(pa.string(), _raw_type(dt.value))  # type: ignore[arg-type]
    if r == "MAP":
        return pa.list_(pa.struct([("key", _raw_type(dt.key)),  # type: ignore[arg-type]
                                   ("value", _raw_type(dt.value))]))  # type: ignore[arg-type]
    if r == "ROW":
        return pa.struct([(f.name, _raw_type(f.type)) for f in dt.fields])
    return to_arrow(dt)


def _decimals(arr: pa.Array, target: pa.DataType) -> pa.Array:
    """Big-endian two's complement unscaled values (at most 16 bytes) as decimal128."""
    n = len(arr)
    offs = np.frombuffer(arr.buffers()[1], np.int32, count=arr.offset + n + 1)[arr.offset:]
    data = np.frombuffer(arr.buffers()[2] or b"\x00", np.uint8)
    lens = np.diff(offs).astype(np.int64)
    if n and lens.max() > 16:
        raise CorruptFileError(f"a decimal value of {int(lens.max())} bytes does not fit "
                               f"{target}")
    first = data[np.minimum(offs[:-1], max(len(data) - 1, 0))] if len(data) else np.zeros(n)
    negative = (lens > 0) & (first >= 0x80)
    mat = np.where(negative, 0xFF, 0).astype(np.uint8)[:, None].repeat(16, axis=1)
    rows = np.repeat(np.arange(n), lens)
    within = np.arange(int(lens.sum())) - np.repeat(offs[:-1] - offs[0], lens)
    mat[rows, 16 - lens[rows] + within] = data[offs[0]:offs[-1]]
    le = np.ascontiguousarray(mat[:, ::-1])
    validity = arr.buffers()[0] if arr.offset == 0 else None
    if arr.offset and arr.null_count:
        validity = pa.py_buffer(np.packbits(_valid(arr), bitorder="little"))
    return pa.Array.from_buffers(target, n, [validity, pa.py_buffer(le)],
                                 null_count=arr.null_count)


def _finish(arr: pa.Array, dt: DataType) -> pa.Array:
    """Raw decoded values as the Arrow type lakeformat uses for ``dt``."""
    target = to_arrow(dt)
    r = dt.root
    mask = arr.is_null() if arr.null_count else None
    if r == "DECIMAL":
        return _decimals(arr, target)
    if r == "ROW":
        children = [_finish(arr.field(i), f.type) for i, f in enumerate(dt.fields)]
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    if r == "ARRAY":
        return pa.ListArray.from_arrays(arr.offsets, _finish(arr.values, dt.element),  # type: ignore[arg-type]
                                        type=target, mask=mask)
    if r == "MAP":
        if dt.key.root in STRING_ROOTS:  # type: ignore[union-attr]
            keys, items = arr.keys, arr.items
        else:
            keys, items = arr.values.field("key"), arr.values.field("value")
        return pa.MapArray.from_arrays(arr.offsets, _finish(keys, dt.key.copy(False)),  # type: ignore[union-attr]
                                       _finish(items, dt.value), type=target, mask=mask)  # type: ignore[arg-type]
    if r == "TIMESTAMP_LTZ":
        return arr.cast(pa.timestamp(target.unit)).cast(target)
    return arr if arr.type.equals(target) else arr.cast(target)


def iter_avro(source: Any, path: str, choose: Callable[[list[str]], list[str]],
              types: dict[str, DataType] | None, batch_bytes: int = 64 << 20
              ) -> Iterator[pa.Table]:
    """Tables of an Avro data file's columns picked by ``choose`` (given the file's column
    names), each about ``batch_bytes`` of Arrow memory at most: rows are decoded a bounded
    number at a time. ``types``: the Paimon type of columns (the schema the file was written
    with); a column without one gets the type its Avro schema says."""
    stream = _buffered(source)
    header = _Header(stream, path)
    by_name = {f["name"]: f["type"] for f in header.schema["fields"]}
    wanted = choose(list(by_name))
    dts = []
    for c in wanted:
        dt = (types or {}).get(c)
        if dt is None:
            dt = _type_of(by_name[c])
        elif not _same(_shape(by_name[c]), _shape(_avro_type(dt, "r"))):
            raise CorruptFileError(f"data file {path}: column {c!r} is Avro "
                                   f"{json.dumps(by_name[c])}, which does not hold {dt}")
        dts.append(dt)
    raw = pa.schema([(c, _raw_type(dt)) for c, dt in zip(wanted, dts, strict=True)])
    reader = fastavro.reader(_buffered(stream, header.plain()))
    step, first = 8192, True
    while True:
        records = list(itertools.islice(reader, step))
        if not records and not first:
            return
        first = False
        table = pa.Table.from_pylist(records, schema=raw)
        del records
        cols = [_finish(c.combine_chunks(), dt) for c, dt in zip(table.columns, dts, strict=True)]
        out = pa.Table.from_arrays(cols, names=list(wanted))
        per_row = max(1.0, (out.nbytes + table.nbytes) / max(1, out.num_rows))
        step = max(1024, min(_MAX_READ_ROWS, int(batch_bytes / 2 / per_row)))
        yield out
        if not out.num_rows:
            return


def avro_row_count(source: Any, path: str) -> int:
    """Rows of an Avro data file from its block headers (block data is skipped, not decoded)."""
    stream = _buffered(source)
    header = _Header(stream, path)
    rows = 0

    def long() -> int | None:
        shift = z = 0
        while True:
            b = stream.read(1)
            if not b:
                if shift:
                    raise CorruptFileError(f"data file {path} ends inside an Avro block header")
                return None
            z |= (b[0] & 0x7F) << shift
            shift += 7
            if b[0] < 0x80:
                return (z >> 1) ^ -(z & 1)

    while (count := long()) is not None:
        size = long()
        if size is None or count < 0 or size < 0:
            raise CorruptFileError(f"data file {path}: damaged Avro block header")
        if len(stream.read(size)) != size or stream.read(16) != header.sync:
            raise CorruptFileError(f"data file {path}: an Avro block is cut short or its sync "
                                   "marker is wrong")
        rows += count
    return rows
