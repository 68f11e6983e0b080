"""One data file read under a table schema: the file-level reader every merge reads through.

A file written under an older schema version is mapped by field id (`FieldIdProjection`), and
a file that disagrees with its manifest entry raises CorruptFileError, whichever reader asks.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pyarrow as pa

from lakeformat.data.kv_read import iter_kv_file, read_kv_file
from lakeformat.errors import CorruptFileError
from lakeformat.meta.data_file_meta import DataFileMeta
from lakeformat.schema.checked_casts import ValueCastError
from lakeformat.schema.projection import FieldIdProjection
from lakeformat.schema.schema_manager import SchemaManager
from lakeformat.schema.table_schema import SEQUENCE_NUMBER, VALUE_KIND, TableSchema
from lakeformat.schema.types import arrow_schema
from lakeformat.storage import FileIO

#: a row's position in its data file (added on request; never written)
ROW_POSITION = "_ROW_POSITION"


def read_data_file(file_io: FileIO, path: str, meta: DataFileMeta, schema: TableSchema,
                   schema_manager: SchemaManager, columns: Sequence[str],
                   default_format: str = "parquet") -> pa.Table:
    """`_SEQUENCE_NUMBER`, `_VALUE_KIND` and `columns` of one data file, under `schema`.

    A file written under another schema version is mapped by field id: renamed columns keep
    their values, columns added since read null, widened types are cast. A file whose size or
    row count differs from `meta` (its manifest entry) raises CorruptFileError.
    """
    fmt = format_of(meta.file_name, default_format)
    if meta.schema_id == schema.id:
        table = read_kv_file(file_io, path, fmt, columns=list(columns), schema=schema,
                             expect=meta,
                             append=not schema.primary_keys)
        return table.select([SEQUENCE_NUMBER, VALUE_KIND, *columns])
    file_schema = schema_manager.schema(meta.schema_id)
    projection = FieldIdProjection(file_schema.fields, schema.fields)
    if projection.identity:
        table = read_kv_file(file_io, path, fmt, columns=list(columns), schema=file_schema,
                             expect=meta,
                             append=not schema.primary_keys)
        return table.select([SEQUENCE_NUMBER, VALUE_KIND, *columns])
    table = read_kv_file(file_io, path, fmt, columns=projection.file_columns(columns),
                         schema=file_schema, expect=meta,
                             append=not schema.primary_keys)
    return _projected(table, projection, schema, columns, path)


def _projected(table: pa.Table, projection: FieldIdProjection, schema: TableSchema,
               columns: Sequence[str], path: str) -> pa.Table:
    """A piece of an old file with the read schema's columns, types and nullability. A
    stored value the column's new type cannot hold fails naming column, value, cast and file
    (a writer may have added old-schema files after `alter` checked the values)."""
    try:
        values = projection.project(table, columns)
    except ValueCastError as e:
        raise e.within(file=path) from None
    arrays = [table[SEQUENCE_NUMBER], table[VALUE_KIND], *values]
    fields = [table.schema.field(SEQUENCE_NUMBER), table.schema.field(VALUE_KIND),
              *arrow_schema(schema.fields_of(list(columns)), with_id=False)]
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def iter_data_file(file_io: FileIO, path: str, meta: DataFileMeta, schema: TableSchema,
                   schema_manager: SchemaManager, columns: Sequence[str],
                   default_format: str = "parquet", batch_bytes: int = 64 << 20,
                   deleted: np.ndarray | None = None, positions: bool = False
                   ) -> Iterator[pa.Table]:
    """`read_data_file` in key-ordered pieces of about `batch_bytes` each (compaction reads
    sorted runs this way, so a large file never has to fit in memory). `deleted`: the file's
    deletion vector (sorted row positions), whose rows are left out. `positions`: each row's
    position in the file is added as `ROW_POSITION` (what a deletion vector marks)."""
    pieces = _iter_data_file(file_io, path, meta, schema, schema_manager, columns,
                             default_format, batch_bytes)
    if (deleted is None or not len(deleted)) and not positions:
        yield from pieces
        return
    if deleted is not None and len(deleted) and int(deleted[-1]) >= meta.row_count:
        raise CorruptFileError(f"the deletion vector of {path} deletes row {int(deleted[-1])}; "
                               f"the file holds {meta.row_count} rows")
    start = 0
    for piece in pieces:
        end = start + piece.num_rows
        if positions:
            piece = piece.append_column(ROW_POSITION, pa.array(
                np.arange(start, end, dtype=np.int64)))
        if deleted is not None and len(deleted):
            lo, hi = np.searchsorted(deleted, [start, end])
            if hi > lo:
                keep = np.ones(piece.num_rows, dtype=bool)
                keep[deleted[lo:hi].astype(np.int64) - start] = False
                piece = piece.filter(pa.array(keep))
        start = end
        if piece.num_rows:
            yield piece
    if start != meta.row_count:
        raise CorruptFileError(f"data file {meta.file_name} holds {start} rows but its manifest "
                               f"entry says {meta.row_count}")


def _iter_data_file(file_io: FileIO, path: str, meta: DataFileMeta, schema: TableSchema,
                    schema_manager: SchemaManager, columns: Sequence[str],
                    default_format: str, batch_bytes: int) -> Iterator[pa.Table]:
    fmt = format_of(meta.file_name, default_format)
    names = [SEQUENCE_NUMBER, VALUE_KIND, *columns]
    file_schema = schema if meta.schema_id == schema.id else schema_manager.schema(meta.schema_id)
    projection = None if file_schema is schema else FieldIdProjection(file_schema.fields,
                                                                      schema.fields)
    if projection is None or projection.identity:
        for piece in iter_kv_file(file_io, path, fmt, columns=list(columns), schema=file_schema,
                                  batch_bytes=batch_bytes, expect=meta,
                             append=not schema.primary_keys):
            yield piece.select(names)
        return
    for piece in iter_kv_file(file_io, path, fmt, columns=projection.file_columns(columns),
                              schema=file_schema, batch_bytes=batch_bytes, expect=meta,
                             append=not schema.primary_keys):
        yield _projected(piece, projection, schema, columns, path)


def format_of(file_name: str, default: str) -> str:
    """Files carry their format in the extension; tables may change file.format over time."""
    ext = file_name.rsplit(".", 1)[-1].lower() if "." in file_name else ""
    return ext if ext in ("parquet", "orc", "avro") else default
