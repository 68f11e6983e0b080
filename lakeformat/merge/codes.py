"""Java's comparators as int64 codes, once for the whole merge package.

Paimon compares keys, sequence fields, sequence-group ordering fields and aggregated values with
Java comparators (`Double.compare`, unsigned bytes for strings, nulls lowest). Vectorized code
wants plain integers instead: every function here maps a column to int64 codes that order (or
test equality) the way the Java comparator does, so numpy can sort, take running maxima or
reduce per group. `sort.key_column`, the sequence groups of partial-update and the aggregate
functions all read their codes from here.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.schema.types import DataType

_PER_KEY_NULLS = int(pa.__version__.split(".")[0]) >= 25


def sort_indices_nulls_first(table: pa.Table, keys: list[tuple[str, str]]) -> pa.Array:
    """Nulls first for every key (pyarrow >= 25 wants the placement per key, older globally)."""
    if _PER_KEY_NULLS:
        return pc.sort_indices(table, sort_keys=[(k, o, "at_start") for k, o in keys])
    return pc.sort_indices(table, sort_keys=keys, null_placement="at_start")


# -- order: FLOAT/DOUBLE by Float.compare / Double.compare ----------------------------------------
def _combined(col: pa.ChunkedArray | pa.Array) -> pa.Array:
    if isinstance(col, pa.ChunkedArray):
        return col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    return col


def _valid(arr: pa.Array) -> np.ndarray:
    if arr.null_count == 0:
        return np.ones(len(arr), dtype=bool)
    return np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)


def float_codes(arr: pa.Array | np.ndarray) -> np.ndarray:
    """int64 codes ordered like Java's Float.compare / Double.compare (-0.0 < 0.0, every NaN
    equal and last); nulls get the code of 0.0. Serves keys, sequence fields and max/min."""
    if isinstance(arr, np.ndarray):
        values = arr
    else:
        values = np.asarray(pc.fill_null(arr, 0).to_numpy(zero_copy_only=False))
    if values.dtype == np.float32:
        bits = values.view(np.int32).astype(np.int64)
        bits = np.where(np.isnan(values), 0x7FC00000, bits)
        return bits ^ ((bits >> 31) & 0x7FFFFFFF)
    bits = values.astype(np.float64).view(np.int64)
    bits = np.where(np.isnan(values), np.int64(0x7FF8000000000000), bits)
    return bits ^ ((bits >> 63) & np.int64(0x7FFFFFFFFFFFFFFF))



def float_from_codes(codes: np.ndarray, double: bool) -> np.ndarray:
    """The floats back from `float_codes` (NaN excepted: its code is not inverted)."""
    if double:
        flip = np.int64(0x7FFFFFFFFFFFFFFF)
        return np.where(codes < 0, codes ^ flip, codes).view(np.float64)
    flip = np.int64(0x7FFFFFFF)
    return np.where(codes < 0, codes ^ flip, codes).astype(np.int32).view(np.float32)


def order_codes(values: pa.Array, dtype: DataType) -> np.ndarray:
    """int64 codes of one column in Java's InternalRowUtils.compare order (nulls: arbitrary),
    for max/min and nested sequence fields."""
    root = dtype.root
    if root in ("FLOAT", "DOUBLE"):
        return float_codes(values)
    if root == "BOOLEAN":
        return pc.fill_null(values, False).to_numpy(zero_copy_only=False).astype(np.int64)
    if root in ("TINYINT", "SMALLINT", "INT", "BIGINT"):
        return pc.fill_null(values, 0).to_numpy(zero_copy_only=False).astype(np.int64)
    if root in ("DATE", "TIME"):
        return pc.fill_null(values.cast(pa.int32()), 0).to_numpy().astype(np.int64)
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return pc.fill_null(values.cast(pa.int64()), 0).to_numpy()
    # strings and binaries (unsigned byte order, as BinaryString and byte[] compare), decimals
    ranks = pc.rank(values, sort_keys="ascending", tiebreaker="dense")
    return ranks.to_numpy().astype(np.int64)


# -- order: tuples of ordering fields, a null lowest ----------------------------------------------


_INT_LIKE = (pa.types.is_integer, pa.types.is_boolean, pa.types.is_date, pa.types.is_time,
             pa.types.is_timestamp, pa.types.is_duration)

def _int_codes(arr: pa.Array) -> np.ndarray:
    t = arr.type
    if pa.types.is_floating(t):
        return float_codes(arr)
    if pa.types.is_boolean(t):
        arr = arr.cast(pa.int8())
    elif pa.types.is_date32(t) or pa.types.is_time32(t):
        arr = arr.cast(pa.int32())
    elif not pa.types.is_integer(t):
        arr = arr.cast(pa.int64())
    return np.asarray(pc.fill_null(arr, 0).to_numpy(zero_copy_only=False)).astype(np.int64)


def ordering_codes(columns: Sequence[pa.ChunkedArray | pa.Array]) -> np.ndarray:
    """Non-negative int64 codes of the ordering tuples: 0 where every field is null, otherwise
    >= 1 and ordered like Paimon's sequence-group comparator (equal tuples, equal codes)."""
    arrays = [_combined(c) for c in columns]
    n = len(arrays[0])
    if all(any(f(a.type) for f in _INT_LIKE) for a in arrays):
        codes = _integer_codes(arrays[0])
        for a in arrays[1:]:
            if codes is None:
                break
            more = _integer_codes(a)
            if more is None:
                codes = None
                break
            # lexicographic with a null (code 0) lowest in every field, as Paimon compares
            width = int(more.max()) + 1
            if (int(codes.max()) + 1) * width >= (1 << 62):
                codes = None
                break
            codes = codes * width + more
        if codes is not None:
            return codes
    valid = [_valid(a) for a in arrays]
    nonempty = np.logical_or.reduce(valid) if len(valid) > 1 else valid[0]
    codes = np.zeros(n, dtype=np.int64)
    if n == 0 or not nonempty.any():
        return codes
    if len(arrays) == 1 and pa.types.is_floating(arrays[0].type):
        raw = float_codes(arrays[0])
        lo, hi = int(raw[nonempty].min()), int(raw[nonempty].max())
        if hi - lo < (1 << 62):
            codes[nonempty] = raw[nonempty] - lo + 1
            return codes
    return _dense_rank(arrays, valid) * nonempty


def _integer_codes(arr: pa.Array) -> np.ndarray | None:
    """Codes of one integer-like column by shifting its values (None if the range is too wide)."""
    t = arr.type
    if pa.types.is_boolean(t):
        arr = arr.cast(pa.int8())
    elif pa.types.is_date32(t) or pa.types.is_time32(t):
        arr = arr.cast(pa.int32())
    if not pa.types.is_int64(arr.type):
        arr = arr.cast(pa.int64())
    if arr.null_count == len(arr):
        return np.zeros(len(arr), dtype=np.int64)
    bounds = pc.min_max(arr)
    lo, hi = bounds["min"].as_py(), bounds["max"].as_py()
    if hi - lo >= (1 << 62) or lo == np.iinfo(np.int64).min:
        return None
    base = lo - 1  # nulls become `base`, hence code 0
    if arr.null_count:
        arr = pc.fill_null(arr, pa.scalar(base, pa.int64()))
    values = np.asarray(arr.to_numpy(zero_copy_only=False))
    return np.subtract(values, np.int64(base), dtype=np.int64)


def _dense_rank(arrays: list[pa.Array], valid: list[np.ndarray]) -> np.ndarray:
    """1-based dense rank of the tuples, nulls lowest in every field."""
    cols = []
    for a, v in zip(arrays, valid):
        if pa.types.is_floating(a.type) or pa.types.is_boolean(a.type):
            a = pa.array(_int_codes(a), mask=~v)
        cols.append(a)
    names = [f"c{i}" for i in range(len(cols))]
    table = pa.table(cols, names=names)
    order = sort_indices_nulls_first(table, [(c, "ascending") for c in names])
    order_np = np.asarray(order.to_numpy(zero_copy_only=False))
    n = len(order_np)
    new_value = np.zeros(n, dtype=bool)
    new_value[0] = True
    for col, v in zip(cols, valid):
        s = col.take(order)
        vs = v[order_np]
        prev, cur = s.slice(0, n - 1), s.slice(1)
        differs = np.asarray(pc.fill_null(pc.not_equal(cur, prev), False)
                             .to_numpy(zero_copy_only=False), dtype=bool)
        new_value[1:] |= differs | (vs[1:] != vs[:-1])
    ranks = np.empty(n, dtype=np.int64)
    ranks[order_np] = np.cumsum(new_value)
    return ranks


# -- equality: equal codes exactly for equal values (Java equals) ---------------------------------

def dense_codes(columns: list[np.ndarray]) -> np.ndarray:
    """Dense codes of the rows of a stack of int64 columns."""
    if len(columns) == 1:
        _, inv = np.unique(columns[0], return_inverse=True)
        return inv.astype(np.int64).reshape(-1)
    stacked = np.column_stack(columns)
    if len(stacked) == 0:
        return np.zeros(0, dtype=np.int64)
    _, inv = np.unique(stacked, axis=0, return_inverse=True)
    return inv.astype(np.int64).reshape(-1)


def element_codes(arr: pa.Array) -> np.ndarray:
    """int64 codes with equal codes exactly for equal values (null: -1)."""
    n = len(arr)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    valid = pc.is_valid(arr).to_numpy(zero_copy_only=False)
    t = arr.type
    if pa.types.is_struct(t):
        cols = [valid.astype(np.int64)]
        cols += [element_codes(arr.field(i)) for i in range(t.num_fields)]
        codes = dense_codes(cols)
    elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t):
        lists = as_list(arr)
        child = element_codes(pc.list_flatten(lists))
        lengths = list_lengths(arr)
        if pa.types.is_map(t) and len(child):
            # maps are equal as maps: compare their entries in a canonical order
            parent = pc.list_parent_indices(lists).to_numpy().astype(np.int64)
            child = child[np.lexsort((child, parent))]
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths * 8, out=offsets[1:])
        blob = pa.Array.from_buffers(
            pa.large_binary(), n,
            [None, pa.py_buffer(offsets.tobytes()), pa.py_buffer(child.astype("<i8").tobytes())])
        codes = dense_codes([pc.dictionary_encode(blob).indices.to_numpy().astype(np.int64)])
    elif pa.types.is_floating(t):
        raw = pc.fill_null(arr, 0).to_numpy(zero_copy_only=False)
        bits = raw.view(np.int32 if raw.dtype == np.float32 else np.int64).astype(np.int64)
        bits[np.isnan(raw)] = 0x7FF8000000000000
        codes = dense_codes([bits])
    elif pa.types.is_null(t):
        codes = np.zeros(n, dtype=np.int64)
    else:
        enc = pc.dictionary_encode(arr).indices
        codes = pc.fill_null(enc, -1).to_numpy().astype(np.int64)
    codes = np.asarray(codes, dtype=np.int64).copy()
    codes[~valid] = -1
    return codes


def as_list(arr: pa.Array) -> pa.Array:
    """A map column seen as list<struct<key, value>> (same buffers), lists unchanged."""
    t = arr.type
    if not pa.types.is_map(t):
        return arr
    entries = pa.struct([t.key_field, t.item_field])
    return arr.view(pa.list_(pa.field("entries", entries, nullable=False)))



def list_lengths(arr: pa.Array) -> np.ndarray:
    return pc.fill_null(pc.list_value_length(as_list(arr)), 0).to_numpy().astype(np.int64)



def first_occurrence(keys: np.ndarray) -> np.ndarray:
    """True at the first occurrence of each key."""
    out = np.zeros(len(keys), dtype=bool)
    if len(keys):
        _, first = np.unique(keys, return_index=True)
        out[first] = True
    return out

