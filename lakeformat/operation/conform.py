"""Checking user data against the table schema before anything is written.

Columns are matched by name (order may differ). Only representation changes that cannot lose
data are applied silently (large/view strings, dictionary encoding, chunking); anything else is
an error naming the column and both types, raised before any file is written.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.errors import SchemaMismatchError
from lakeformat.schema.table_schema import TableSchema
from lakeformat.schema.types import DataType, from_arrow, to_arrow


def as_table(data: pa.Table | pa.RecordBatch | list | object) -> pa.Table:
    """Accept an Arrow table, a record batch, a RecordBatchReader or an iterable of batches."""
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, pa.RecordBatchReader):
        return data.read_all()
    if hasattr(data, "__arrow_c_stream__") and not isinstance(data, list):
        return pa.table(data)
    batches = list(data)  # type: ignore[call-overload]
    if not batches:
        raise SchemaMismatchError("no record batches to write")
    return pa.Table.from_batches(batches)


def conform(data: pa.Table, schema: TableSchema) -> pa.Table:
    names = schema.field_names
    given = data.column_names
    dupes = sorted({c for c in given if given.count(c) > 1})
    if dupes:
        raise SchemaMismatchError(f"input has duplicate columns {dupes}")
    missing = [c for c in names if c not in given]
    extra = [c for c in given if c not in names]
    if missing or extra:
        raise SchemaMismatchError(
            f"input columns do not match the table: missing {missing}, unexpected {extra} "
            f"(table columns: {names})")
    columns = []
    for f in schema.fields:
        col = data[f.name]
        target = to_arrow(f.type)
        if not col.type.equals(target):
            col = _cast(col, f.name, f.type, target)
        if not f.type.nullable and col.null_count:
            raise SchemaMismatchError(
                f"column {f.name!r} is {f.type} but the input has {col.null_count} null values")
        columns.append(col)
    return pa.table(columns, names=names)


def _cast(col: pa.ChunkedArray, name: str, dt: DataType, target: pa.DataType) -> pa.ChunkedArray:
    """Cast only when the input's Paimon type is the table's type (representation change)."""
    src = col.type
    if pa.types.is_dictionary(src):
        src = src.value_type
    try:
        same = _same_logical(from_arrow(src), dt)
    except Exception:
        same = False
    if not same:
        raise SchemaMismatchError(
            f"column {name!r}: input type {col.type} does not match table type {dt} "
            f"(Arrow {target})")
    try:
        return pc.cast(col, target, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise SchemaMismatchError(f"column {name!r}: cannot convert {col.type} to {dt}: {e}") from e


def _same_logical(a: DataType, b: DataType) -> bool:
    """Equal ignoring nullability and string/binary lengths (Arrow has no lengths)."""
    if a.root in ("CHAR", "VARCHAR") and b.root in ("CHAR", "VARCHAR"):
        return True
    if a.root in ("BINARY", "VARBINARY") and b.root in ("BINARY", "VARBINARY"):
        return True
    if a.root != b.root:
        return False
    if a.root in ("ARRAY", "MULTISET"):
        return _same_logical(a.element, b.element)  # type: ignore[arg-type]
    if a.root == "MAP":
        return _same_logical(a.key, b.key) and _same_logical(a.value, b.value)  # type: ignore[arg-type]
    if a.root == "ROW":
        return len(a.fields) == len(b.fields) and all(
            x.name == y.name and _same_logical(x.type, y.type) for x, y in zip(a.fields, b.fields))
    if a.root == "TIME":
        return True
    return a.precision == b.precision and a.scale == b.scale
