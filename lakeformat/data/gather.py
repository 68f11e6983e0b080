"""Row gathers (a table's rows in a given order) that move string bytes in one tight copy.

Arrow's `take` of a string or binary column appends value after value through an array
builder; for a random order over a few hundred thousand values that per-value work is most of
a write's gather time. The same gather done on the column's *views* (Arrow's string_view
layout: 16 bytes per value pointing into the unchanged data buffer) is numpy's fixed-width
gather, and the cast of the gathered views back to a plain string column copies the bytes in
one tight pass; the result is the same array `take` would give. Other columns, and short
inputs, use Arrow's `take`.

A write gathers every unit (bucket) of a batch from the same batch. `BatchViews` casts each of
the batch's string columns to views once, shared by all its units: a unit then gathers its
views straight through its positions in the batch, one random copy of its bytes (casting the
unit's strings first, per unit, copies the bytes twice).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import numpy as np
import pyarrow as pa

__all__ = ["BatchViews", "take_rows"]

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


class BatchViews:
    """The string and binary columns of one table (a planned batch) as views, each cast on
    first use and then shared: the units of a write, gathering from the batch on several
    threads, cast each column once. A thread that finds a column being cast by another goes
    on to the next one first."""

    def __init__(self, table: pa.Table):
        self.num_rows = table.num_rows
        self._columns = {name: col for name, col in zip(table.column_names, table.columns,
                                                         strict=True)
                         if _view_type(col.type) is not None}
        self._locks = {name: threading.Lock() for name in self._columns}
        self._made: dict[str, pa.Array | None] = {}

    def __contains__(self, name: str) -> bool:
        return name in self._columns

    def each(self, names: list[str]) -> Iterator[tuple[str, pa.Array | None]]:
        """(name, views) of `names` (None: a column that has no views: several chunks, or an
        Arrow without the cast), columns being cast by another thread last."""
        busy = []
        for name in names:
            lock = self._locks[name]
            if lock.acquire(blocking=False):
                try:
                    views = self._make(name)
                finally:
                    lock.release()
                yield name, views
            else:
                busy.append(name)
        for name in busy:
            with self._locks[name]:
                views = self._make(name)
            yield name, views

    def _make(self, name: str) -> pa.Array | None:
        if name not in self._made:
            self._made[name] = _as_views(self._columns[name])
        return self._made[name]


def _as_views(col: pa.ChunkedArray) -> pa.Array | None:
    if col.num_chunks != 1:
        return None
    try:
        return col.chunk(0).cast(_view_type(col.type))
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid):  # an older pyarrow
        return None


def take_rows(table: pa.Table, order: np.ndarray, within: np.ndarray | None = None,
              views: BatchViews | None = None) -> pa.Table:
    """`table.take(order)`; with `within` (row positions of `table`, best ascending),
    `table.take(within).take(order)`, `order` then holding positions in `within`. Columns are
    gathered once, through the composed positions, string and binary ones through their
    views: those of `views` when given (made from a table whose columns of those names are
    `table`'s), else cast from the rows of `within` (a streaming copy when ascending).
    Positions: int64."""
    _check_positions(order, table.num_rows if within is None else len(within))
    if within is not None:
        _check_positions(within, table.num_rows)
    composed = order if within is None else within[order]
    indices = pa.array(composed)
    first = None if within is None else pa.array(within)
    names = table.column_names
    if views is not None and len(set(names)) != len(names):
        views = None  # views are found by name
    columns: list[pa.Array | pa.ChunkedArray | None] = [None] * table.num_columns
    shared: dict[str, int] = {}
    for i, col in enumerate(table.columns):
        if _view_type(col.type) is None or len(order) < MIN_VIEW_ROWS:
            columns[i] = col.take(indices)
        elif views is not None and names[i] in views:
            if len(col) != views.num_rows:
                raise ValueError(f"views of column {names[i]!r} are of another table")
            shared[names[i]] = i
        elif first is None:
            columns[i] = _take_views(col, _as_views(col), order, indices)
        else:
            unit = col.take(first)
            columns[i] = _take_views(unit, _as_views(unit), order, None)
    if views is not None:
        for name, made in views.each(list(shared)):
            i = shared[name]
            columns[i] = _take_views(table.column(i), made, composed, indices)
    return pa.Table.from_arrays(columns, schema=table.schema)


def _check_positions(positions: np.ndarray, rows: int) -> None:
    if len(positions) and (positions.min() < 0 or positions.max() >= rows):
        raise IndexError(f"row positions out of range for a table of {rows} rows")


def _take_views(col: pa.ChunkedArray, views: pa.Array | None, order: np.ndarray,
                indices: pa.Array | None) -> pa.Array | pa.ChunkedArray:
    """A string or binary column's rows in `order` (`indices`: the same as an Arrow array,
    when at hand), gathered through `views` (the column's; None: Arrow's `take`)."""
    if views is None:
        return col.take(pa.array(order) if indices is None else indices)
    validity, slots, *data = views.buffers()
    first, n = views.offset, len(views)
    gathered = np.take(np.frombuffer(slots, dtype=_SLOT)[first:first + n], order)
    bitmap = None
    if views.null_count:
        valid = np.unpackbits(np.frombuffer(validity, dtype=np.uint8),
                              bitorder="little")[first:first + n].view(bool)
        bitmap = pa.py_buffer(np.packbits(valid[order], bitorder="little"))
    out = pa.Array.from_buffers(views.type, len(order), [bitmap, pa.py_buffer(gathered), *data])
    return out.cast(col.type)
