"""Reading a data file written under an older schema, by field id (as Paimon and Iceberg do).

Field ids never change and are never reused, so a column is found in an old file by its id,
never by its name or position: a renamed column keeps its values, a dropped column vanishes, a
column dropped and added again under the same name is a new column (null in old files), added
columns read null, widened types are cast, and columns come out in the new order. ROW columns
are matched field by field the same way.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from lakeformat.schema.casts import cast_values, check_value_cast
from lakeformat.schema.checked_casts import ValueCastError
from lakeformat.schema.types import DataField, DataType, to_arrow


class FieldIdProjection:
    """Maps columns of the read schema onto the columns of one older file schema."""

    def __init__(self, file_fields: Sequence[DataField], read_fields: Sequence[DataField]):
        self.file_fields = tuple(file_fields)
        self.read_fields = tuple(read_fields)
        by_id = {f.id: f for f in self.file_fields}
        self.sources: dict[str, DataField | None] = {}
        for f in self.read_fields:
            src = by_id.get(f.id)
            if src is not None:
                check_value_cast(src.type, f.type, f.name)
            self.sources[f.name] = src

    @property
    def identity(self) -> bool:
        return self.file_fields == self.read_fields

    def file_columns(self, names: Sequence[str]) -> list[str]:
        """Names to read from the file for these read-schema columns (absent ones skipped)."""
        out = []
        for n in names:
            src = self.sources[n]
            if src is not None:
                out.append(src.name)
        return out

    def project(self, table: pa.Table, names: Sequence[str]) -> list[pa.ChunkedArray]:
        """Columns `names` (read-schema names) from a table read with the file's column names."""
        out = []
        by_name = {f.name: f for f in self.read_fields}
        for n in names:
            dst = by_name[n]
            src = self.sources[n]
            if src is None:
                out.append(pa.chunked_array([pa.nulls(table.num_rows, to_arrow(dst.type))]))
            else:
                try:
                    out.append(evolve_column(table[src.name], src.type, dst.type))
                except ValueCastError as e:
                    raise e.within(column=n) from None
        return out


def evolve_column(col: pa.ChunkedArray | pa.Array, src: DataType, dst: DataType
                  ) -> pa.ChunkedArray | pa.Array:
    """Values stored as `src` seen as `dst` (ROW fields matched by id, leaves cast)."""
    if src.copy(True) == dst.copy(True):
        return col
    if isinstance(col, pa.ChunkedArray):
        chunks = [evolve_column(c, src, dst) for c in col.chunks]
        return pa.chunked_array(chunks, type=to_arrow(dst))
    if dst.root == "ROW" and src.root == "ROW":
        by_id = {f.id: (i, f) for i, f in enumerate(src.fields)}
        children = []
        for f in dst.fields:
            hit = by_id.get(f.id)
            if hit is None:
                children.append(pa.nulls(len(col), to_arrow(f.type)))
            else:
                children.append(evolve_column(col.field(hit[0]), hit[1].type, f.type))
        return _struct(children, dst, col.is_null() if col.null_count else None)
    if dst.root in ("ARRAY", "MULTISET") and src.root == dst.root:
        offsets, lo, hi = _offsets(col)
        values = evolve_column(col.values.slice(lo, hi - lo), src.element,
                               dst.element)  # type: ignore[arg-type]
        return pa.ListArray.from_arrays(offsets, values, type=to_arrow(dst),
                                        mask=col.is_null() if col.null_count else None)
    if dst.root == "MAP" and src.root == "MAP":
        offsets, lo, hi = _offsets(col)
        keys = evolve_column(col.keys.slice(lo, hi - lo), src.key, dst.key)  # type: ignore[arg-type]
        items = evolve_column(col.items.slice(lo, hi - lo), src.value,
                              dst.value)  # type: ignore[arg-type]
        return pa.MapArray.from_arrays(offsets, keys, items, type=to_arrow(dst),
                                       mask=col.is_null() if col.null_count else None)
    return cast_values(col, src, dst)


def _offsets(col: pa.Array) -> tuple[pa.Array, int, int]:
    """Offsets of a (possibly sliced) list/map array rebased to 0, and its values' range."""
    raw = np.asarray(col.offsets.to_numpy(zero_copy_only=False))
    lo, hi = int(raw[0]), int(raw[-1])
    return pa.array(raw - lo, pa.int32()), lo, hi


def _struct(children: list[pa.Array], dst: DataType, mask: pa.Array | None) -> pa.StructArray:
    fields = list(to_arrow(dst))
    return pa.StructArray.from_arrays(children, fields=fields, mask=mask)


# -- writes: user data onto the table's (merged) types, by name ------------------------------

def align_by_name(col: pa.ChunkedArray | pa.Array, dst: DataType, column: str
                  ) -> pa.ChunkedArray | pa.Array:
    """User data shaped as `dst`: ROW fields matched by name, missing ones null, order fixed.

    Leaf values are left as given (the caller casts them); only structure is rebuilt.
    """
    if isinstance(col, pa.ChunkedArray):
        chunks = [align_by_name(c, dst, column) for c in col.chunks]
        if not chunks:
            return pa.chunked_array([], type=to_arrow(dst))
        return pa.chunked_array(chunks)
    t = col.type
    if dst.root == "ROW" and pa.types.is_struct(t):
        names = [t.field(i).name for i in range(t.num_fields)]
        children, fields = [], []
        for f in dst.fields:
            if f.name in names:
                child = align_by_name(col.field(names.index(f.name)), f.type,
                                      f"{column}.{f.name}")
            else:
                child = pa.nulls(len(col), to_arrow(f.type))
            children.append(child)
            fields.append(pa.field(f.name, child.type, f.type.nullable))
        return pa.StructArray.from_arrays(children, fields=fields,
                                          mask=col.is_null() if col.null_count else None)
    if dst.root in ("ARRAY", "MULTISET") and (pa.types.is_list(t) or pa.types.is_large_list(t)):
        offsets, lo, hi = _offsets(col)
        values = align_by_name(col.values.slice(lo, hi - lo), dst.element,
                               column)  # type: ignore[arg-type]
        return pa.ListArray.from_arrays(offsets, values,
                                        mask=col.is_null() if col.null_count else None)
    return col
