"""`ingest(spark, table, source)`: landed files (Parquet, CSV, JSON) into a table through Spark.

The driver lists the files (`source`: paths and glob patterns, local or `s3://`); one Spark task
per file reads it through lakeformat's storage with `lakeformat.ingest.read_file` — Spark has no
S3 filesystem here, and the parse rules (exact text in STRING columns, Spark's CSV nulls, JSON
kinds, errors naming file, line and column) are then those of the in-process path, so a file
gives the same rows whichever engine ingests it. The rows are written by `write` (shuffled by
bucket, one snapshot). A merge-schema ingest reads each file's columns on the driver first, to
evolve the table before any task writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lakeformat.errors import SchemaMismatchError
from lakeformat.ingest import expand_paths, read_file, source_file_io
from lakeformat.results import CommitResult
from lakeformat.schema.types import arrow_schema
from lakeformat.spark.failures import reraise
from lakeformat.spark.write_job import write
from lakeformat.storage import FileIO

if TYPE_CHECKING:
    from lakeformat import Table


class _ReadFiles:
    """mapInArrow function: each row names one file; its rows come out in `target`."""

    def __init__(self, file_io: FileIO, format: str | None, schema: Any, target: pa.Schema,
                 allow_extra: bool):
        self.file_io = file_io
        self.format = format
        self.schema = schema
        self.target = target
        self.allow_extra = allow_extra

    def __call__(self, batches: Any) -> Any:
        for batch in batches:
            for path in batch.column(0).to_pylist():
                rows = read_file(path, self.format, schema=self.schema, file_io=self.file_io,
                                 allow_extra=self.allow_extra)
                columns = [_column(rows, f, path) for f in self.target]
                yield from pa.Table.from_arrays(columns, schema=self.target).to_batches()


def _column(rows: pa.Table, field: pa.Field, path: str) -> pa.ChunkedArray:
    """One column of a file's rows in the type the ingest declared (null when absent)."""
    if field.name not in rows.column_names:
        return pa.chunked_array([pa.nulls(rows.num_rows, field.type)])
    try:
        return rows[field.name].cast(field.type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise SchemaMismatchError(f"{path}: column {field.name!r} is "
                                  f"{rows.schema.field(field.name).type}, other files have "
                                  f"{field.type}: {e}") from None


def _spark_types(schema: pa.Schema) -> tuple[Any, pa.Schema]:
    """The Spark schema of `schema`'s columns (all nullable: a file may leave a column out),
    and the Arrow schema Spark expects batches of it in."""
    from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

    loose = pa.schema([f.with_nullable(True).remove_metadata() for f in schema])
    spark_schema = from_arrow_schema(loose, prefer_timestamp_ntz=True)
    return spark_schema, to_arrow_schema(spark_schema, timezone="UTC")


def _file_columns(paths: Sequence[str], io_: FileIO, format: str | None, table: Table
                  ) -> pa.Schema:
    """The table's columns plus every column a file adds (merge-schema ingest)."""
    known = arrow_schema(table.table_schema.fields, with_id=False)
    names = set(known.names)
    extra: list[pa.Field] = []
    for path in paths:
        rows = read_file(path, format, schema=table, file_io=io_, allow_extra=True)
        for f in rows.schema:
            if f.name not in names:
                names.add(f.name)
                extra.append(f)
    return pa.schema([*known, *extra])


def ingest(spark: Any, table: Table, source: str | Sequence[str], format: str | None = None,
           overwrite: bool = False, merge_schema: bool = False, *,
           commit_user: str | None = None, commit_identifier: int | None = None,
           memory_budget: int | None = None) -> CommitResult:
    """Write the rows of the files `source` names into `table` as one snapshot (see the module
    docstring). `format`: parquet, csv or json (default: each file's extension). The other
    arguments are those of `write`; give `commit_user`/`commit_identifier` (e.g. the DAG task
    and its logical date) to make a re-run of the same ingest land once."""
    table.refresh()
    first = source if isinstance(source, str) else (list(source) or [""])[0]
    io_ = source_file_io(table, first)  # a table's S3 FileIO pickles to a plain one
    paths = expand_paths(source, io_)
    columns = (_file_columns(paths, io_, format, table) if merge_schema
               else arrow_schema(table.table_schema.fields, with_id=False))
    spark_schema, target = _spark_types(columns)
    files = spark.createDataFrame(pa.table({"path": pa.array(paths, pa.string())}))
    files = files.repartitionByRange(len(paths), "path")
    reader = _ReadFiles(io_, format, table.table_schema, target, merge_schema)
    rows = files.mapInArrow(reader, spark_schema)
    try:
        return write(rows, table, overwrite=overwrite, merge_schema=merge_schema,
                     commit_user=commit_user, commit_identifier=commit_identifier,
                     memory_budget=memory_budget)
    except Exception as e:  # noqa: BLE001 - a file that fails to read fails the Spark job
        reraise(e)

