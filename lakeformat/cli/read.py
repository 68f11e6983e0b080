"""`read`: rows streamed batch by batch from `Table.read_batches`, so memory stays bounded
however large the table is.

--json writes JSON Lines (one object per row), --csv CSV with a header, --parquet FILE (or
--output FILE, by extension) a file: every row unless --limit N. Without those, a table for
people of at most --limit rows (default 50), with a note on stderr when rows were left out.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from typing import Any, BinaryIO

import pyarrow as pa

from lakeformat.cli.commands import Context
from lakeformat.cli.errors import UsageError
from lakeformat.cli.render import json_default, note, table_text
from lakeformat.expressions import parse_where

#: rows of the table printed for people when no --limit is given
HUMAN_ROWS = 50

_NESTED = (pa.types.is_struct, pa.types.is_list, pa.types.is_large_list, pa.types.is_map,
           pa.types.is_fixed_size_list)


def _limited(reader: pa.RecordBatchReader, limit: int | None) -> Iterator[pa.RecordBatch]:
    """The reader's batches, cut after `limit` rows (None: all)."""
    left = limit
    for batch in reader:
        if left is not None:
            if left <= 0:
                return
            if batch.num_rows > left:
                batch = batch.slice(0, left)
            left -= batch.num_rows
        if batch.num_rows:
            yield batch


def _check_csv(schema: pa.Schema, what: str) -> None:
    for f in schema:
        if any(test(f.type) for test in _NESTED):
            raise UsageError(f"column {f.name!r} ({f.type}) cannot be written as CSV ({what}); "
                             "use --json or --parquet FILE, or leave it out with --columns")


def _write_batches(writer: Any, batches: Iterator[pa.RecordBatch]) -> int:
    rows = 0
    with writer:
        for batch in batches:
            writer.write_batch(batch)
            rows += batch.num_rows
    return rows


def write_csv(batches: Iterator[pa.RecordBatch], schema: pa.Schema, sink: Any) -> int:
    import pyarrow.csv as pcsv

    return _write_batches(pcsv.CSVWriter(sink, schema), batches)


def write_parquet(batches: Iterator[pa.RecordBatch], schema: pa.Schema, path: str) -> int:
    import pyarrow.parquet as pq

    return _write_batches(pq.ParquetWriter(path, schema), batches)


def write_json_lines(batches: Iterator[pa.RecordBatch], out: Any) -> int:
    """One JSON object per row; a batch is converted and written at once."""
    rows = 0
    for batch in batches:
        text = "".join(json.dumps(row, default=json_default, ensure_ascii=False) + "\n"
                       for row in batch.to_pylist())
        out.write(text)
        rows += batch.num_rows
    return rows


def _stdout_bytes() -> BinaryIO:
    sys.stdout.flush()
    return sys.stdout.buffer


def _write_file(batches: Iterator[pa.RecordBatch], schema: pa.Schema, path: str,
                fmt: str) -> int:
    if fmt == "csv":
        _check_csv(schema, path)
        return write_csv(batches, schema, path)
    if fmt == "json":
        with open(path, "w", encoding="utf-8") as f:
            return write_json_lines(batches, f)
    return write_parquet(batches, schema, path)


def _format_of(path: str) -> str:
    ext = os.path.splitext(path)[1].lower()
    if ext == ".csv":
        return "csv"
    if ext in (".json", ".jsonl", ".ndjson"):
        return "json"
    return "parquet"


def _human(ctx: Context, reader: pa.RecordBatchReader, limit: int | None) -> None:
    shown = HUMAN_ROWS if limit is None else limit
    batches = list(_limited(reader, shown + 1 if limit is None else shown))
    data = (pa.Table.from_batches(batches, reader.schema) if batches
            else reader.schema.empty_table())
    more = data.num_rows > shown
    data = data.slice(0, shown)
    right = [i for i, f in enumerate(data.schema)
             if pa.types.is_integer(f.type) or pa.types.is_floating(f.type)
             or pa.types.is_decimal(f.type)]
    rows = data.to_pylist()
    names = data.schema.names
    sys.stdout.write(table_text(names, [[r[n] for n in names] for r in rows], right) + "\n")
    if more:
        note(f"({shown} rows shown, more not read; --limit N for more, --json, --csv or "
             "--parquet FILE for all)")
    else:
        note(f"({data.num_rows} rows)")


def read(ctx: Context) -> None:
    a = ctx.args
    if a.limit is not None and a.limit < 0:
        raise UsageError(f"--limit must be 0 or more, got {a.limit}")
    if a.csv and ctx.json:
        raise UsageError("--csv and --json both print the rows: give one of them")
    table = ctx.table()
    cols = [c.strip() for c in a.columns.split(",") if c.strip()] if a.columns else None
    for text in a.where or []:
        parse_where(text)  # a syntax error names the flag's own text
    # one text for the read, typed by the schema it reads (a past snapshot's for time travel)
    where = " AND ".join(f"({w})" for w in a.where) if a.where else None
    reader = table.read_batches(columns=cols, filter=where, snapshot_id=a.snapshot, tag=a.tag)
    try:
        target = a.parquet or a.output
        if target:
            fmt = "parquet" if a.parquet else _format_of(target)
            rows = _write_file(_limited(reader, a.limit), reader.schema, target, fmt)
            ctx.emit({"table": table.name, "rows": rows, "output": target, "format": fmt},
                     f"wrote {rows} rows of {table.name} to {target} ({fmt})")
        elif a.csv:
            _check_csv(reader.schema, "--csv")
            write_csv(_limited(reader, a.limit), reader.schema, _stdout_bytes())
        elif ctx.json:
            write_json_lines(_limited(reader, a.limit), sys.stdout)
        else:
            _human(ctx, reader, a.limit)
    finally:
        reader.close()
