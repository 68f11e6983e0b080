"""Checking user data against the table schema before anything is written.

Columns are matched by name (order may differ). Only representation changes that cannot lose
data are applied silently (large/view strings, dictionary encoding, chunking); anything else is
an error naming the column and both types, raised before any file is written.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.errors import SchemaMismatchError, UnsupportedError
from lakeformat.schema.casts import cast_values, supports_cast
from lakeformat.schema.checked_casts import ValueCastError
from lakeformat.schema.merging import MergeSchemaOptions
from lakeformat.schema.projection import align_by_name
from lakeformat.schema.table_schema import TableSchema
from lakeformat.schema.types import DataField, DataType, from_arrow, to_arrow


def as_table(data: pa.Table | pa.RecordBatch | list | object) -> pa.Table:
    """Accept an Arrow table, a record batch, a RecordBatchReader, anything with
    `__arrow_c_stream__` (pandas, polars) or an iterable of record batches / tables."""
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, pa.RecordBatchReader):
        return data.read_all()
    if hasattr(data, "__arrow_c_stream__") and not isinstance(data, list):
        return pa.table(data)
    if data is None or isinstance(data, (str, bytes, dict)) or not hasattr(data, "__iter__"):
        raise SchemaMismatchError(f"cannot write {_describe(data)}: give a pyarrow Table, "
                                  "RecordBatch, RecordBatchReader or an iterable of them"
                                  + (" (read a file with lakeformat.ingest.read_file)"
                                     if isinstance(data, str) else ""))
    parts = list(data)  # type: ignore[call-overload]
    if not parts:
        raise SchemaMismatchError("no record batches to write")
    wrong = [p for p in parts if not isinstance(p, (pa.RecordBatch, pa.Table))]
    if wrong:
        raise SchemaMismatchError(f"cannot write an iterable holding {_describe(wrong[0])}: "
                                  "give pyarrow RecordBatches or Tables")
    try:
        return pa.concat_tables([p if isinstance(p, pa.Table) else pa.Table.from_batches([p])
                                 for p in parts])
    except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
        raise SchemaMismatchError(f"the batches given do not share one schema: {e}") from None


def _describe(value: object) -> str:
    if value is None:
        return "None"
    text = repr(value)
    return f"{type(value).__name__} {text[:60] + '...' if len(text) > 60 else text}"


def conform(data: pa.Table, schema: TableSchema) -> pa.Table:
    """`data` as the table's columns, in the table's order and types.

    A nullable column the input leaves out is written null (each stream of a table may write
    only its own columns, as `INSERT INTO t (id, a, b)` does); what the engine makes of those
    nulls is the engine's rule (README, `write`). Unknown columns, and missing primary-key,
    partition or NOT NULL columns, are refused by name.
    """
    names = schema.field_names
    given = data.column_names
    dupes = sorted({c for c in given if given.count(c) > 1})
    if dupes:
        raise SchemaMismatchError(f"input has duplicate columns {dupes}")
    extra = [c for c in given if c not in names]
    if extra:
        raise SchemaMismatchError(
            f"input columns do not match the table: unexpected {extra} "
            f"(table columns: {names})")
    missing = [c for c in names if c not in given]
    _check_omitted(missing, schema)
    columns = []
    for f in schema.fields:
        target = to_arrow(f.type)
        if f.name not in given:
            columns.append(pa.nulls(data.num_rows, target))
            continue
        col = data[f.name]
        if not col.type.equals(target):
            col = _cast(col, f.name, f.type, target)
        if not f.type.nullable and col.null_count:
            raise SchemaMismatchError(
                f"column {f.name!r} is {f.type} but the input has {col.null_count} null values")
        columns.append(col)
    return pa.table(columns, names=names)


def _check_omitted(missing: list[str], schema: TableSchema) -> None:
    """Only nullable value columns may be left out of a write."""
    if not missing:
        return
    for what, names in (("partition", schema.partition_keys),
                        ("primary-key", schema.primary_keys)):
        absent = [c for c in missing if c in names]
        if absent:
            raise SchemaMismatchError(
                f"input columns do not match the table: missing {what} column(s) {absent} "
                f"(table columns: {schema.field_names})")
    not_null = [f"{f.name} ({f.type})" for f in schema.fields
                if f.name in missing and not f.type.nullable]
    if not_null:
        raise SchemaMismatchError(
            f"input columns do not match the table: missing NOT NULL column(s) {not_null}; "
            "only nullable columns may be left out (they are written null)")


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


def data_fields(schema: pa.Schema) -> list[DataField]:
    """Paimon fields (ids not yet assigned) for the columns of user data."""
    names = schema.names
    dupes = sorted({c for c in names if names.count(c) > 1})
    if dupes:
        raise SchemaMismatchError(f"input has duplicate columns {dupes}")
    out = []
    for f in schema:
        try:
            out.append(DataField(-1, f.name, from_arrow(f.type, f.nullable)))
        except UnsupportedError as e:
            raise SchemaMismatchError(f"column {f.name!r}: {e}") from None
    return out


def conform_merged(data: pa.Table, schema: TableSchema, opts: MergeSchemaOptions) -> pa.Table:
    """Data of a merge-schema write shaped as `schema`: every column present (missing ones
    null), ROW fields matched by name, values cast to the (possibly widened) column types."""
    columns = []
    for f in schema.fields:
        if f.name not in data.column_names:
            if not f.type.nullable:
                raise SchemaMismatchError(f"input lacks column {f.name!r}, which is NOT NULL "
                                          f"({f.type})")
            columns.append(pa.nulls(data.num_rows, to_arrow(f.type)))
            continue
        col = data[f.name]
        if pa.types.is_dictionary(col.type):
            col = col.cast(col.type.value_type)
        given = from_arrow(col.type)
        if given.copy(True) != f.type.copy(True):
            col = _cast_merged(col, f.name, given, f.type, opts)
        columns.append(col)
    return conform(pa.table(columns, names=schema.field_names), schema)


def _cast_merged(col: pa.ChunkedArray, name: str, given: DataType, dt: DataType,
                 opts: MergeSchemaOptions) -> pa.ChunkedArray:
    target = to_arrow(dt)
    try:
        if dt.is_nested:
            return align_by_name(col, dt, name).cast(target, safe=True)
        if _same_logical(given, dt):
            return col.cast(target, safe=True)
        if not supports_cast(given.copy(True), dt.copy(True), opts.explicit_cast):
            raise SchemaMismatchError(
                f"column {name!r}: data type {given} cannot be written to table type {dt}"
                + ("" if opts.explicit_cast else " without write.merge-schema.explicit-cast"))
        return cast_values(col, given, dt)
    except ValueCastError as e:
        raise SchemaMismatchError(f"column {name!r}: cannot convert {col.type} data to {dt}: "
                                  f"value {e.value!r} does not convert") from None
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise SchemaMismatchError(f"column {name!r}: cannot convert {col.type} to {dt}: "
                                  f"{e}") from e
