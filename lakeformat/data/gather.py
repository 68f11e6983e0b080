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


def take_rows(table: pa.Table, order: np.ndarray, within: np.ndarray | None = None
              ) -> pa.Table:
    """`table.take(order)`; with `within` (row positions of `table`, best ascending),
    `table.take(within).take(order)`, `order` then holding positions in `within`. Fixed-width
    columns are gathered once, through the composed positions; string and binary columns first
    take `within` (a streaming copy of their bytes when ascending) and then gather their views
    by `order`, so that the cast back reads bytes from that smaller copy. Positions: int64."""
    _check_positions(order, table.num_rows if within is None else len(within))
    if within is not None:
        _check_positions(within, table.num_rows)
    indices = pa.array(order if within is None else within[order])
    first = None if within is None else pa.array(within)
    columns = []
    for col in table.columns:
        if _view_type(col.type) is None:
            columns.append(col.take(indices))
        elif first is None:
            columns.append(_take_column(col, order, indices))
        else:
            columns.append(_take_column(col.take(first), order, None))
    return pa.Table.from_arrays(columns, schema=table.schema)


def _check_positions(positions: np.ndarray, rows: int) -> None:
    if len(positions) and (positions.min() < 0 or positions.max() >= rows):
        raise IndexError(f"row positions out of range for a table of {rows} rows")


def _take_column(col: pa.ChunkedArray, order: np.ndarray, indices: pa.Array | None
                 ) -> pa.Array | pa.ChunkedArray:
    """A string or binary column's rows in `order` (`indices`: the same as an Arrow array,
    when at hand) through its views."""
    view = _view_type(col.type)
    if view is None or len(order) < MIN_VIEW_ROWS or col.num_chunks != 1:
        return col.take(pa.array(order) if indices is None else indices)
    try:
        views = col.chunk(0).cast(view)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid):  # an older pyarrow
        return col.take(pa.array(order) if indices is None else indices)
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
