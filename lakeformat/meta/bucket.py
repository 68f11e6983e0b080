"""Fixed-bucket assignment exactly as Java's ``DefaultBucketFunction``, vectorized with numpy.

Java hashes the ``BinaryRow`` of the bucket-key columns with Paimon's word-wise Murmur3
(``MurmurHashUtils.hashBytesByWords``, seed 42) and takes ``abs(hash % n)``.  Serializing every
row in Python would cost microseconds per row, so :func:`hash_rows` builds the row words column
by column from the Arrow buffers and runs Murmur over word positions, vectorized over rows.

Rows of different byte lengths (long strings) are sorted by length and cut into *bands* whose
lengths differ by at most 25%; each band gets its own zero-padded word matrix, and at word
position ``j`` only the rows still that long are mixed.  Memory stays close to the real row
bytes however skewed the lengths are.  Bands of very few long rows finish row by row.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
from numpy.lib.stride_tricks import sliding_window_view

from lakeformat.errors import UnsupportedError
from lakeformat.meta.binary_row import (
    BINARY_ROOTS,
    COMPACT_DECIMAL_PRECISION,
    HEADER_BITS,
    STRING_ROOTS,
    null_bits_width,
    serialize,
    var_reserve,
)
from lakeformat.schema.types import DataType, to_arrow

SEED = 42
C1 = 0xCC9E2D51
C2 = 0x1B873593
C3 = 0xE6546B64
M32 = 0xFFFFFFFF
_SMALL_BAND_ROWS = 16  # below this, long rows finish in a per-row Python loop
_BAND_RATIO = 0.8  # a band holds rows whose word count is >= 80% of its longest row

_U64 = np.uint64
_INLINE_MASK = np.array([(1 << (8 * i)) - 1 for i in range(8)], dtype=np.uint64)


# -- scalar reference ------------------------------------------------------------------------

def hash_row_bytes(row: bytes) -> int:
    """Java ``BinaryRow.hashCode()`` of row bytes (length a multiple of 4), as signed int32."""
    if len(row) % 4:
        raise ValueError(f"BinaryRow length {len(row)} is not a multiple of 4")
    h = SEED
    for (w,) in struct.iter_unpack("<I", row):
        h = _mix_h1_int(h, _mix_k1_int(w))
    h = _fmix_int(h ^ len(row))
    return h - (1 << 32) if h & 0x80000000 else h


def bucket_of_row(values: Sequence[Any], types: Sequence[DataType], num_buckets: int) -> int:
    """Bucket of one key row (Python values), the scalar twin of :func:`bucket_ids`."""
    return java_bucket(hash_row_bytes(serialize(values, types)), num_buckets)


def java_bucket(hash_code: int, num_buckets: int) -> int:
    """``Math.abs(hash % n)`` with Java's remainder (sign of the dividend)."""
    if num_buckets <= 0:
        raise ValueError(f"num_buckets must be > 0, got {num_buckets}")
    return abs(hash_code) % num_buckets


def _mix_k1_int(k: int) -> int:
    k = (k * C1) & M32
    k = ((k << 15) | (k >> 17)) & M32
    return (k * C2) & M32


def _mix_h1_int(h: int, k: int) -> int:
    h ^= k
    h = ((h << 13) | (h >> 19)) & M32
    return (h * 5 + C3) & M32


def _fmix_int(h: int) -> int:
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & M32
    return h ^ (h >> 16)


# -- vectorized Murmur -----------------------------------------------------------------------

def _mix_word(h: Any, w: Any) -> Any:
    """One Murmur round; stays a Python int while both sides are constant across rows."""
    if isinstance(w, int):
        k: Any = _mix_k1_int(w)
    else:
        k = np.multiply(w, np.uint32(C1))
        t = k >> np.uint32(17)
        k <<= np.uint32(15)
        k |= t
        k *= np.uint32(C2)
    if isinstance(h, int) and isinstance(k, int):
        return _mix_h1_int(h, k)
    if isinstance(h, int):
        h = np.full(len(k), h, dtype=np.uint32)
    h ^= k if not isinstance(k, int) else np.uint32(k)
    t = h >> np.uint32(19)
    h <<= np.uint32(13)
    h |= t
    h *= np.uint32(5)
    h += np.uint32(C3)
    return h


def _fmix_arr(h: np.ndarray) -> np.ndarray:
    h ^= h >> np.uint32(16)
    h *= np.uint32(0x85EBCA6B)
    h ^= h >> np.uint32(13)
    h *= np.uint32(0xC2B2AE35)
    h ^= h >> np.uint32(16)
    return h


# -- columns -> slots and variable parts -----------------------------------------------------

Fill = Callable[["np.ndarray | None", np.ndarray], None]


@dataclass
class _Col:
    """One key column as BinaryRow pieces for all rows."""

    slot: np.ndarray  # uint64 slot; for pointer rows only the low 32 bits (size / nanos)
    valid: np.ndarray | None  # None when the column has no nulls
    pointer: np.ndarray | bool = False  # rows whose slot needs (cursor << 32)
    varlen: np.ndarray | int = 0  # padded variable-part bytes per row
    fill: Fill | None = None  # writes the variable bytes of some rows into a (k, varlen) block


def _single_array(col: pa.Array | pa.ChunkedArray, binary_like: bool) -> pa.Array:
    if isinstance(col, pa.ChunkedArray):
        if binary_like:  # int64 offsets so combining many chunks cannot overflow
            col = col.cast(pa.large_binary())
        col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    if pa.types.is_dictionary(col.type):
        col = col.dictionary_decode()
    return col


def _validity(arr: pa.Array) -> np.ndarray | None:
    if arr.null_count == 0:
        return None
    n = len(arr)
    if arr.null_count == n:
        return np.zeros(n, dtype=bool)
    bits = np.frombuffer(arr.buffers()[0], dtype=np.uint8)
    return np.unpackbits(bits, bitorder="little", count=arr.offset + n)[arr.offset:].astype(bool)


def _values(arr: pa.Array, dtype: Any) -> np.ndarray:
    """Zero-copy view of a fixed-width array's values (slice offset respected, nulls garbage)."""
    buf = arr.buffers()[1]
    return np.frombuffer(buf, dtype=dtype, count=arr.offset + len(arr))[arr.offset:]


def _to_slot(values: np.ndarray, valid: np.ndarray | None) -> np.ndarray:
    unsigned = values.view(np.dtype(f"u{values.dtype.itemsize}"))
    slot = unsigned if unsigned.dtype == np.uint64 else unsigned.astype(np.uint64)
    if valid is not None:
        slot = np.where(valid, slot, _U64(0))
    return slot


def _prepare(col: pa.Array | pa.ChunkedArray, dt: DataType) -> _Col:
    root = dt.root
    binary_like = root in STRING_ROOTS or root in BINARY_ROOTS
    arr = _single_array(col, binary_like)
    n = len(arr)
    if arr.null_count == n:  # also covers nested types, whose only supported value is null
        reserve = var_reserve(dt)
        nulls = np.zeros(n, dtype=bool)
        if reserve:
            zeros = np.zeros((n, reserve), dtype=np.uint8)
            return _Col(np.zeros(n, dtype=np.uint64), nulls, True, reserve, _block_fill(zeros))
        return _Col(np.zeros(n, dtype=np.uint64), nulls)
    if dt.is_nested or root == "VARIANT":
        raise UnsupportedError(f"bucket key of type {dt} is not supported")
    if binary_like:
        return _prepare_bytes(arr if arr.type == pa.large_binary() else arr.cast(pa.large_binary()))
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return _prepare_timestamp(arr, dt)
    if root == "TIME":
        valid = _validity(arr)
        unit = arr.type.unit
        raw = _values(arr, np.int32 if pa.types.is_time32(arr.type) else np.int64).astype(np.int64)
        millis = {"s": raw * 1000, "ms": raw, "us": raw // 1000, "ns": raw // 1_000_000}[unit]
        return _Col(_to_slot(millis.astype(np.int32), valid), valid)
    if root == "DATE" and pa.types.is_date64(arr.type):
        valid = _validity(arr)
        days = (_values(arr, np.int64) // 86_400_000).astype(np.int32)
        return _Col(_to_slot(days, valid), valid)
    target = to_arrow(dt)
    if arr.type != target:
        arr = arr.cast(target)
    valid = _validity(arr)
    if root == "BOOLEAN":
        bits = np.frombuffer(arr.buffers()[1], dtype=np.uint8)
        vals = np.unpackbits(bits, bitorder="little", count=arr.offset + n)[arr.offset:]
        return _Col(_to_slot(vals, valid), valid)
    if root == "DECIMAL":
        return _prepare_decimal(arr, dt, valid)
    dtype = {"TINYINT": np.int8, "SMALLINT": np.int16, "INT": np.int32, "BIGINT": np.int64,
             "DATE": np.int32, "FLOAT": np.float32, "DOUBLE": np.float64}[root]
    return _Col(_to_slot(_values(arr, dtype), valid), valid)


def _prepare_timestamp(arr: pa.Array, dt: DataType) -> _Col:
    if not pa.types.is_timestamp(arr.type):
        arr = arr.cast(to_arrow(dt))
    valid = _validity(arr)
    raw = _values(arr, np.int64)
    per_milli = {"s": 0, "ms": 1, "us": 1000, "ns": 1_000_000}[arr.type.unit]
    if per_milli == 0:
        millis, nanos = raw * 1000, np.zeros(len(raw), dtype=np.int64)
    else:
        millis, rest = np.divmod(raw, per_milli)
        nanos = rest * (1_000_000 // per_milli)
    if not var_reserve(dt):
        return _Col(_to_slot(millis, valid), valid)
    if valid is not None:
        millis = np.where(valid, millis, 0)
    var = np.ascontiguousarray(millis, dtype="<i8").view(np.uint8).reshape(-1, 8)
    return _Col(_to_slot(nanos, valid), valid, True, 8, _block_fill(var))


def _prepare_decimal(arr: pa.Array, dt: DataType, valid: np.ndarray | None) -> _Col:
    raw = np.frombuffer(arr.buffers()[1], dtype=np.uint8, count=16 * (arr.offset + len(arr)))
    raw = raw[16 * arr.offset:].reshape(-1, 16)
    if (dt.precision or 10) <= COMPACT_DECIMAL_PRECISION:
        low = np.ascontiguousarray(raw[:, :8]).view("<i8").reshape(-1)
        return _Col(_to_slot(low, valid), valid)
    # Java's BigInteger.toByteArray(): minimal big-endian two's complement bytes
    negative = raw[:, 15] >= 0x80
    magnitude = np.where(negative[:, None], ~raw, raw)  # ~x has the same bit length rule
    nonzero = magnitude != 0
    top = np.where(nonzero.any(axis=1), 15 - np.argmax(nonzero[:, ::-1], axis=1), -1)
    top_byte = magnitude[np.arange(len(raw)), np.maximum(top, 0)]
    size = np.where(top < 0, 1, top + 1 + (top_byte >= 0x80)).astype(np.int64)
    big_endian = raw[:, ::-1]
    var = np.zeros((len(raw), 16), dtype=np.uint8)
    for s in np.unique(size):
        rows = np.nonzero(size == s)[0]
        var[rows, :s] = big_endian[rows, 16 - s:]
    if valid is not None:
        var[~valid] = 0
        size = np.where(valid, size, 0)
    return _Col(size.astype(np.uint64), valid, True, 16, _block_fill(var))


def _block_fill(var: np.ndarray) -> Fill:
    def fill(rows: np.ndarray | None, out: np.ndarray) -> None:
        out[...] = var if rows is None else var[rows]
    return fill


def _prepare_bytes(arr: pa.Array) -> _Col:
    n = len(arr)
    valid = _validity(arr)
    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], dtype=np.int64, count=arr.offset + n + 1)[arr.offset:]
    lo, hi = int(offsets[0]), int(offsets[-1])
    data = np.frombuffer(bufs[2], dtype=np.uint8, count=hi)[lo:] if bufs[2] is not None and hi \
        else np.zeros(0, dtype=np.uint8)
    padded = np.concatenate([data, np.zeros(8, dtype=np.uint8)])  # windows may read past end
    starts = offsets[:-1] - lo
    lengths = np.diff(offsets)
    if valid is not None:
        lengths = np.where(valid, lengths, 0)
    long_rows = lengths > 7
    slot = np.zeros(n, dtype=np.uint64)
    inline = ~long_rows if valid is None else (~long_rows & valid)
    idx = np.nonzero(inline)[0]
    if len(idx):
        words = sliding_window_view(padded, 8)[starts[idx]].copy().view("<u8").reshape(-1)
        ln = lengths[idx]
        slot[idx] = (words & _INLINE_MASK[ln]) | ((ln.astype(np.uint64) | _U64(0x80)) << _U64(56))
    slot[long_rows] = lengths[long_rows].astype(np.uint64)
    varlen = np.where(long_rows, (lengths + 7) & ~7, 0)

    def fill(rows: np.ndarray | None, out: np.ndarray) -> None:
        # ``out`` is zeroed; copy each row's real bytes, one exact length at a time
        width = out.shape[1]
        ln = lengths if rows is None else lengths[rows]
        st = starts if rows is None else starts[rows]
        counts = np.bincount(ln - (width - 7), minlength=8)
        for extra in np.nonzero(counts)[0].tolist():
            size = width - 7 + extra
            windows = sliding_window_view(padded, size)
            if counts[extra] == len(ln):
                out[:, :size] = windows[st]
            else:
                sel = np.nonzero(ln == size)[0]
                out[sel, :size] = windows[st[sel]]

    if not long_rows.any():
        return _Col(slot, valid)
    return _Col(slot, valid, long_rows, varlen, fill)


# -- public API ------------------------------------------------------------------------------

def hash_rows(columns: Sequence[pa.Array | pa.ChunkedArray],
              types: Sequence[DataType]) -> np.ndarray:
    """int32 ``BinaryRow.hashCode()`` of each row built from ``columns`` (RowKind +I).

    Columns may be chunked or sliced; strings may be string / large_string / string_view (or
    dictionary-encoded), timestamps any unit (values are not truncated to the type precision,
    like :func:`~lakeformat.meta.binary_row.serialize`).  Other columns are cast to
    ``to_arrow(type)`` when their Arrow type differs.
    """
    if len(columns) != len(types):
        raise ValueError(f"{len(columns)} columns for {len(types)} types")
    if not columns:
        raise ValueError("hash_rows needs at least one key column")
    n = len(columns[0])
    if any(len(c) != n for c in columns):
        raise ValueError("key columns have different lengths")
    if n == 0:
        return np.zeros(0, dtype=np.int32)
    cols = [_prepare(c, dt) for c, dt in zip(columns, types, strict=True)]
    arity = len(cols)
    width = null_bits_width(arity)
    fixed = width + 8 * arity

    null_words: list[Any] = [0] * (width // 4)
    for i, c in enumerate(cols):
        if c.valid is not None:
            bit = i + HEADER_BITS
            flag = (~c.valid).astype(np.uint32) << np.uint32(bit % 32)
            null_words[bit // 32] = null_words[bit // 32] | flag

    var_cols = [c for c in cols if c.fill is not None]
    total: Any = 0
    for c in var_cols:  # pointer slots get the row-relative offset of their variable bytes
        shifted = np.asarray(fixed + total, dtype=np.uint64) << _U64(32)
        if isinstance(c.pointer, bool):
            c.slot = c.slot | shifted
        else:
            c.slot = np.where(c.pointer, c.slot | shifted, c.slot)
        total = total + c.varlen
    fixed_words: list[Any] = list(null_words)
    for c in cols:
        pair = np.ascontiguousarray(c.slot).view(np.uint32).reshape(-1, 2)
        fixed_words += [pair[:, 0], pair[:, 1]]

    out = np.empty(n, dtype=np.uint32)
    if not var_cols:
        _hash_band(fixed_words, None, np.zeros((n, 0), np.uint8), np.zeros(n, np.int64),
                   fixed, out)
        return out.view(np.int32)
    lens = np.stack([np.broadcast_to(np.asarray(c.varlen, dtype=np.int64), (n,))
                     for c in var_cols])
    if (lens == lens[:, :1]).all():  # one layout for every row: no sorting, one matrix
        sizes = lens[:, 0].tolist()
        mat = np.zeros((n, sum(sizes)), dtype=np.uint8)
        pos = 0
        for c, size in zip(var_cols, sizes, strict=True):
            c.fill(None, mat[:, pos:pos + size])  # type: ignore[misc]
            pos += size
        _hash_band(fixed_words, None, mat, np.full(n, pos // 4), fixed, out)
        return out.view(np.int32)

    row_total = lens.sum(axis=0)
    if len(lens) == 1:
        order = np.argsort(-row_total, kind="stable")
    else:
        order = np.lexsort(tuple(lens[::-1]) + (-row_total,))
    sorted_lens = lens[:, order]
    sorted_total = row_total[order]
    change = np.nonzero(np.any(sorted_lens[:, 1:] != sorted_lens[:, :-1], axis=0))[0] + 1
    group_starts = [0] + change.tolist()
    group_ends = group_starts[1:] + [n]
    band: list[tuple[int, int]] = []
    for gs, ge in zip(group_starts, group_ends, strict=True):
        if band and sorted_total[gs] >= _BAND_RATIO * sorted_total[band[0][0]]:
            band.append((gs, ge))
            continue
        if band:
            _run_band(band, order, sorted_lens, sorted_total, var_cols, fixed_words, fixed, out)
        band = [(gs, ge)]
    _run_band(band, order, sorted_lens, sorted_total, var_cols, fixed_words, fixed, out)
    return out.view(np.int32)


def _run_band(groups: list[tuple[int, int]], order: np.ndarray, sorted_lens: np.ndarray,
              sorted_total: np.ndarray, var_cols: list[_Col], fixed_words: list[Any],
              fixed: int, out: np.ndarray) -> None:
    start, end = groups[0][0], groups[-1][1]
    rows = order[start:end]
    mat = np.zeros((end - start, int(sorted_total[start])), dtype=np.uint8)
    for gs, ge in groups:
        pos = 0
        for j, c in enumerate(var_cols):
            size = int(sorted_lens[j, gs])
            if size:
                c.fill(order[gs:ge], mat[gs - start:ge - start, pos:pos + size])  # type: ignore[misc]
                pos += size
    _hash_band(fixed_words, rows, mat, sorted_total[start:end] // 4, fixed, out)


def _hash_band(fixed_words: list[Any], rows: np.ndarray | None, mat: np.ndarray,
               var_words: np.ndarray, fixed: int, out: np.ndarray) -> None:
    """Murmur over fixed words then the var matrix; ``var_words`` sorted descending."""
    k = len(mat)
    h: Any = SEED
    for w in fixed_words:
        h = _mix_word(h, w if isinstance(w, int) or rows is None else w[rows])
    if isinstance(h, int):
        h = np.full(k, h, dtype=np.uint32)
    words = mat.view("<u4")
    max_words = words.shape[1]
    if max_words:
        if k < _SMALL_BAND_ROWS and max_words > 32:
            for r in range(k):
                h[r] = _finish_row(int(h[r]), words[r, :int(var_words[r])])
        else:
            counts = np.searchsorted(-var_words, -np.arange(max_words), side="left")
            for j in range(max_words):
                m = int(counts[j])
                if m == k:
                    h = _mix_word(h, words[:, j])
                else:
                    h[:m] = _mix_word(h[:m], words[:m, j])
    h ^= (fixed + 4 * var_words).astype(np.uint32)
    h = _fmix_arr(h)
    if rows is None:
        out[:] = h
    else:
        out[rows] = h


def _finish_row(h: int, words: np.ndarray) -> int:
    k = words * np.uint32(C1)
    k = (k << np.uint32(15)) | (k >> np.uint32(17))
    k *= np.uint32(C2)
    for kk in k.tolist():
        h ^= kk
        h = ((h << 13) | (h >> 19)) & M32
        h = (h * 5 + C3) & M32
    return h


def bucket_ids(columns: Sequence[pa.Array | pa.ChunkedArray], types: Sequence[DataType],
               num_buckets: int) -> np.ndarray:
    """int32 bucket of each row: Java ``Math.abs(hashCode % numBuckets)``."""
    if num_buckets <= 0:
        raise ValueError(f"num_buckets must be > 0, got {num_buckets}")
    if num_buckets >= 1 << 31:
        raise ValueError(f"num_buckets must fit a Java int, got {num_buckets}")
    return buckets_of_hashes(hash_rows(columns, types), num_buckets)


def buckets_of_hashes(hashes: np.ndarray, num_buckets: int) -> np.ndarray:
    """int32 ``Math.abs(hash % numBuckets)`` of int32 hashes (`hashes` is overwritten).

    Java's remainder takes the dividend's sign, so the result is ``|hash| mod n``; |hash| as
    uint32 holds |MIN_VALUE| = 2^31. A power-of-two n is a mask, ~10x cheaper than dividing."""
    magnitude = np.abs(hashes, out=hashes).view(np.uint32)
    if num_buckets & (num_buckets - 1) == 0:
        magnitude &= np.uint32(num_buckets - 1)
    else:
        magnitude %= np.uint32(num_buckets)
    return magnitude.view(np.int32)
