"""Row gathers (a table's rows in a given order) that move string bytes in one tight copy.

Arrow's `take` of a string or binary column appends value after value through an array
builder; for a random order over a few hundred thousand values that per-value work is most of
a write's gather time. The same gather done on the column's *views* (Arrow's string_view
layout: 16 bytes per value pointing into the unchanged data buffer) is numpy's fixed-width
gather, and the cast of the gathered views back to a plain string column copies the bytes in
one tight pass; the result is the same array `take` would give. Alone, a string column's
gather then takes about a third of the time; within a write, where the cast back still reads
the strings in random order, it saves a few percent of the CPU. Other columns, and short
inputs, use Arrow's `take`.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

__all__ = ["take_rows"]

#: below this many rows Arrow's `take` is as fast
MIN_VIEW_ROWS = 4096
#: one view, as an opaque 16-byte item (numpy gathers those far faster than rows of a 2-D array)
_SLOT = np.dtype("V16")


def _view_type(t: pa.DataType) -> pa.DataType | None:
    if t == pa.string():
        return pa.string_view()
    if t == pa.binary():
        return pa.binary_view()
    return None


def take_rows(table: pa.Table, order: np.ndarray) -> pa.Table:
    """`table.take(order)`: `order` holds non-negative row positions (int64)."""
    if len(order) and (order.min() < 0 or order.max() >= table.num_rows):
        raise IndexError(f"row positions out of range for a table of {table.num_rows} rows")
    indices = pa.array(order)
    columns = [_take_column(col, order, indices) for col in table.columns]
    return pa.Table.from_arrays(columns, schema=table.schema)


def _take_column(col: pa.ChunkedArray, order: np.ndarray, indices: pa.Array
                 ) -> pa.Array | pa.ChunkedArray:
    view = _view_type(col.type)
    if view is None or len(order) < MIN_VIEW_ROWS or col.num_chunks != 1:
        return col.take(indices)
    try:
        views = col.chunk(0).cast(view)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid):  # an older pyarrow
        return col.take(indices)
    validity, slots, *data = views.buffers()
    first, n = views.offset, len(views)
    gathered = np.frombuffer(slots, dtype=_SLOT)[first:first + n][order]
    bitmap = None
    if views.null_count:
        valid = np.unpackbits(np.frombuffer(validity, dtype=np.uint8),
                              bitorder="little")[first:first + n].view(bool)
        bitmap = pa.py_buffer(np.packbits(valid[order], bitorder="little"))
    out = pa.Array.from_buffers(view, len(order), [bitmap, pa.py_buffer(gathered), *data])
    return out.cast(col.type)
