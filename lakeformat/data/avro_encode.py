"""Avro data files: the vectorized encoder of rows and the container writer.

Rows are encoded column by column with numpy (zigzag varints, union bytes, length prefixes) into
per-row byte strings that pyarrow concatenates row-wise; no row is encoded by Python code. The
writer frames them into blocks of about ``SYNC_INTERVAL`` bytes, as Java's ``DataFileWriter``
does. The schema written (Java's) and the codecs are in ``avro_schema``.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.data.avro_schema import MAGIC, SYNC_INTERVAL, compress, varint, writer_schema_json
from lakeformat.errors import SchemaMismatchError, UnsupportedError
from lakeformat.schema.types import STRING_ROOTS, DataField, DataType

__all__ = ["AvroFileWriter", "encode_rows"]

#: Arrow bytes per encode step (bounds memory, not results)
_ENCODE_BYTES = 16 << 20
_BIN = pa.large_binary()


@functools.cache
def _empty() -> pa.Scalar:
    """The empty separator of `_join`, made on first use: building a scalar from a Python
    value imports pandas (~0.5 s), which a process that only reads never needs."""
    return pa.scalar(b"", _BIN)


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
    return pc.binary_join_element_wise(*pieces, _empty(), null_handling="replace",
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
    """An Avro object container file written into ``sink`` (a writable pyarrow stream),
    block by block, with ``write_table`` / ``close`` like pyarrow's Parquet writer."""

    def __init__(self, sink: Any, fields: Sequence[DataField], codec: str, level: int) -> None:
        self._sink = sink
        self._fields = list(fields)
        self._codec, self._level = codec, level
        self._sync = os.urandom(16)
        self._pending: list[bytes] = []
        self._pending_bytes = self._pending_rows = 0
        meta = {"avro.codec": codec.encode(), "avro.schema": writer_schema_json(fields).encode()}
        head = bytearray(MAGIC) + varint(len(meta))
        for k, v in meta.items():
            head += varint(len(k)) + k.encode() + varint(len(v)) + v
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
        body = compress(self._codec, self._level, memoryview(raw))
        self._sink.write(varint(self._pending_rows) + varint(len(body)) + body + self._sync)
        self._pending, self._pending_bytes, self._pending_rows = [], 0, 0

    def close(self) -> None:
        self._flush_block()
