"""Merge-on-read: every bucket's sorted runs merged with the table's merge engine.

Plan (driver): the splits of one snapshot. Execute (anywhere): `read_split`, a pure function of
a split. Buckets are independent, so they run in a thread pool; pyarrow and numpy release the
GIL for the heavy parts.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa

from lakeformat.data.kv_file import iter_kv_file, read_kv_file
from lakeformat.errors import ColumnNotFoundError
from lakeformat.merge import merge_engine
from lakeformat.merge.context import MergeContext
from lakeformat.merge.sort import is_retract
from lakeformat.meta.data_file_meta import DataFileMeta
from lakeformat.meta.snapshot import Snapshot
from lakeformat.operation.compact_levels import may_tie, tie_ranks
from lakeformat.operation.paths import PathFactory
from lakeformat.operation.predicate import (
    Filter,
    check_filter,
    filter_columns,
    partition_predicate,
    to_expression,
)
from lakeformat.operation.scan import FileStoreScan, Split
from lakeformat.operation.support import READ, check_supported
from lakeformat.options import CoreOptions
from lakeformat.schema.checked_casts import ValueCastError
from lakeformat.schema.projection import FieldIdProjection
from lakeformat.schema.schema_manager import SchemaManager
from lakeformat.schema.table_schema import SEQUENCE_NUMBER, VALUE_KIND, TableSchema
from lakeformat.schema.types import arrow_schema
from lakeformat.storage import FileIO


class TableRead:
    """Reads rows of one snapshot under that snapshot's schema."""

    def __init__(self, file_io: FileIO, table_path: str, schema: TableSchema,
                 schema_manager: SchemaManager):
        check_supported(schema, READ, table_path)
        self.file_io = file_io
        self.table_path = table_path
        self.schema = schema
        self.schema_manager = schema_manager
        self.options = CoreOptions(schema.options)
        self.merge = merge_engine(schema).merge
        self.ctx = MergeContext.of(schema)
        self.paths = PathFactory(file_io, table_path, schema)
        self.keys = list(schema.trimmed_primary_keys)

    def read(self, snapshot: Snapshot | None, columns: Sequence[str] | None = None,
             filter: Filter = None, max_workers: int | None = None) -> pa.Table:
        check_filter(filter, self.schema.fields, self.table_path)
        names = self.schema.field_names
        wanted = list(columns) if columns is not None else names
        unknown = [c for c in wanted if c not in names]
        if unknown:
            raise ColumnNotFoundError(f"unknown columns {unknown}; table columns are {names}")
        needed = set(wanted) | set(self.keys) | filter_columns(filter, names)
        needed |= set(self.ctx.sequence_fields)
        if self.ctx.engine in ("partial-update", "aggregation"):
            needed = set(names)  # sequence groups and remove-on-delete rules span columns
        read_cols = [n for n in names if n in needed]
        out_schema = arrow_schema([self.schema.field(c) for c in wanted], with_id=False)
        scan = FileStoreScan(self.file_io, self.table_path, self.schema)
        splits = scan.splits(snapshot, partition_predicate(filter, self.schema.partition_keys))
        workers = max_workers or min(len(splits), os.cpu_count() or 2) or 1
        if workers <= 1 or len(splits) <= 1:
            parts = [self.read_split(s, read_cols) for s in splits]
        else:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                parts = list(pool.map(lambda s: self.read_split(s, read_cols), splits))
        parts = [p for p in parts if p.num_rows]
        if not parts:
            return out_schema.empty_table()
        result = pa.concat_tables(parts)
        expr = to_expression(filter)
        if expr is not None:
            result = result.filter(expr)
        return result.select(wanted).cast(out_schema)

    def read_split(self, split: Split, read_cols: list[str]) -> pa.Table:
        """Merged, visible rows of one bucket: one row per key, retracted keys dropped."""
        tables = [self._read_file(split, f, read_cols) for f in split.files]
        if not tables:
            return pa.schema([]).empty_table()
        if len(tables) == 1:
            # a data file holds each key once and lone records are never merged (Paimon's
            # reducer rule, every engine): read it as is, as Java's raw-convertible splits do
            merged = tables[0]
        else:
            # ties on sequence number are broken by the files' ranks, as compaction does
            ranks = None
            if may_tie(split.files):
                ranks = np.repeat(tie_ranks(split.files), [t.num_rows for t in tables])
            merged = self.merge(pa.concat_tables(tables), ranks)
        return drop_retracts(merged).select(read_cols)

    def _read_file(self, split: Split, meta: DataFileMeta, read_cols: list[str]) -> pa.Table:
        return read_data_file(self.file_io, self.paths.data_file(split.partition_values,
                                                                 split.bucket, meta),
                              meta, self.schema, self.schema_manager, read_cols,
                              self.options.file_format)


def read_data_file(file_io: FileIO, path: str, meta: DataFileMeta, schema: TableSchema,
                   schema_manager: SchemaManager, columns: Sequence[str],
                   default_format: str = "parquet") -> pa.Table:
    """`_SEQUENCE_NUMBER`, `_VALUE_KIND` and `columns` of one data file, under `schema`.

    A file written under another schema version is mapped by field id: renamed columns keep
    their values, columns added since read null, widened types are cast. A file whose size or
    row count differs from `meta` (its manifest entry) raises CorruptFileError.
    """
    fmt = _format_of(meta.file_name, default_format)
    if meta.schema_id == schema.id:
        table = read_kv_file(file_io, path, fmt, columns=list(columns), schema=schema,
                             expect=meta)
        return table.select([SEQUENCE_NUMBER, VALUE_KIND, *columns])
    file_schema = schema_manager.schema(meta.schema_id)
    projection = FieldIdProjection(file_schema.fields, schema.fields)
    if projection.identity:
        table = read_kv_file(file_io, path, fmt, columns=list(columns), schema=file_schema,
                             expect=meta)
        return table.select([SEQUENCE_NUMBER, VALUE_KIND, *columns])
    table = read_kv_file(file_io, path, fmt, columns=projection.file_columns(columns),
                         schema=file_schema, expect=meta)
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
                   default_format: str = "parquet", batch_bytes: int = 64 << 20
                   ) -> Iterator[pa.Table]:
    """`read_data_file` in key-ordered pieces of about `batch_bytes` each (compaction reads
    sorted runs this way, so a large file never has to fit in memory)."""
    fmt = _format_of(meta.file_name, default_format)
    names = [SEQUENCE_NUMBER, VALUE_KIND, *columns]
    file_schema = schema if meta.schema_id == schema.id else schema_manager.schema(meta.schema_id)
    projection = None if file_schema is schema else FieldIdProjection(file_schema.fields,
                                                                      schema.fields)
    if projection is None or projection.identity:
        for piece in iter_kv_file(file_io, path, fmt, columns=list(columns), schema=file_schema,
                                  batch_bytes=batch_bytes, expect=meta):
            yield piece.select(names)
        return
    for piece in iter_kv_file(file_io, path, fmt, columns=projection.file_columns(columns),
                              schema=file_schema, batch_bytes=batch_bytes, expect=meta):
        yield _projected(piece, projection, schema, columns, path)


def _format_of(file_name: str, default: str) -> str:
    """Files carry their format in the extension; tables may change file.format over time."""
    ext = file_name.rsplit(".", 1)[-1].lower() if "." in file_name else ""
    return ext if ext in ("parquet", "orc", "avro") else default


def drop_retracts(table: pa.Table) -> pa.Table:
    mask = is_retract(table[VALUE_KIND])
    return table.filter(pa.array(~mask)) if np.any(mask) else table
