"""Reader of data files: a primary-key table's key-value files, an append table's rows.

Reads what `kv_file.KeyValueFileWriter` writes, and the files of Java Paimon and pypaimon: the
layout of paimon-format.md §7.1 (``_KEY_<k>`` columns, never returned; ``_SEQUENCE_NUMBER``,
``_VALUE_KIND``, then the table's columns). An append table's files hold the table's columns
alone; their sequence numbers come from the file's manifest entry. Every failure names the
file (`CorruptFileError`), and so does a file whose size or row count is not its entry's.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq

from lakeformat.data.avro_decode import avro_row_count, iter_avro
from lakeformat.errors import CorruptFileError, LakeformatError, UnsupportedError
from lakeformat.meta.data_file_meta import DataFileMeta
from lakeformat.schema.table_schema import KEY_PREFIX, SEQUENCE_NUMBER, VALUE_KIND, TableSchema
from lakeformat.schema.types import bigint, tinyint, to_arrow

__all__ = ["iter_kv_file", "read_kv_file", "verify_data_file"]

def read_kv_file(file_io: Any, path: str, file_format: str, columns: Sequence[str] | None = None,
                 *, schema: TableSchema | None = None,
                 expect: DataFileMeta | None = None, append: bool = False) -> pa.Table:
    """``_SEQUENCE_NUMBER``, ``_VALUE_KIND`` and ``columns`` (all value columns when None).

    Reads files of Java, pypaimon or lakeformat, with or without ``_KEY_`` columns (never
    returned). With ``schema`` (the schema the file was written with) columns get exactly the
    Arrow types of ``to_arrow``; casts are checked, so a value that does not fit fails instead of
    being truncated. Any failure to read raises CorruptFileError naming ``path``; so does a
    file whose size or row count differs from ``expect`` (its manifest entry).
    ``append``: a file of an append table (``expect`` required), whose sequence numbers are
    its entry's range in row order.
    """
    fmt = _readable(path, file_format)
    try:
        table = _read_raw(file_io, path, fmt, columns, expect, append, schema)
        if expect is not None:
            check_row_count(path, table.num_rows, expect)
        if append:
            table = _with_system_columns(table, _first_sequence(path, expect), 0)
        return _normalize(table, schema)
    except LakeformatError:
        raise
    except Exception as e:  # pyarrow, OS and storage errors alike
        raise CorruptFileError(f"cannot read data file {path}: {type(e).__name__}: {e}") from e


def iter_kv_file(file_io: Any, path: str, file_format: str,
                 columns: Sequence[str] | None = None, *, schema: TableSchema | None = None,
                 batch_bytes: int = 64 << 20,
                 expect: DataFileMeta | None = None, append: bool = False
                 ) -> Iterator[pa.Table]:
    """Like :func:`read_kv_file`, in pieces of about ``batch_bytes`` of Arrow memory each.

    Parquet is read a few thousand rows at a time through a small read buffer, so memory stays
    near ``batch_bytes`` whatever the size of the file's row groups.
    """
    fmt = _readable(path, file_format)
    source = None
    first = _first_sequence(path, expect) if append else 0
    try:
        source = file_io.open_input(path)
        if expect is not None:
            check_file_size(path, source.size(), expect)
        if fmt == "parquet":
            pf = pq.ParquetFile(source, buffer_size=1 << 20, pre_buffer=False)
            want = _wanted(pf.schema_arrow.names, columns, path, append)
            pieces = (pa.Table.from_batches([b]) for b in
                      pf.iter_batches(batch_size=_read_step(batch_bytes, pf.metadata),
                                      columns=want, use_threads=False))
        elif fmt == "avro":
            chosen: list[list[str]] = []

            def choose(names: list[str]) -> list[str]:
                chosen.append(_wanted(names, columns, path, append))
                return chosen[0]
            pieces = iter_avro(source, path, choose, _avro_types(schema), batch_bytes)
            pieces = itertools.chain([next(pieces)], pieces)  # reads the header: sets `want`
            want = chosen[0]
        else:
            of = orc.ORCFile(source)
            want = _wanted(of.schema.names, columns, path, append)
            pieces = (of.read_stripe(i, columns=want) for i in range(of.nstripes))
        held: list[pa.Table] = []
        size = rows = done = 0

        def gathered() -> pa.Table:
            table = pa.concat_tables(held)
            if append:
                table = _with_system_columns(table, first, done)
            return _normalize(table, schema)

        for piece in pieces:
            piece = pa.table(piece) if not isinstance(piece, pa.Table) else piece
            held.append(piece.select(want))
            size += piece.nbytes
            rows += piece.num_rows
            if size >= batch_bytes:
                yield gathered()
                held, size, done = [], 0, rows
        if expect is not None:  # before the last piece: a short file must not look complete
            check_row_count(path, rows, expect)
        if held:
            yield gathered()
    except LakeformatError:
        raise
    except Exception as e:
        raise CorruptFileError(f"cannot read data file {path}: {type(e).__name__}: {e}") from e
    finally:
        close = getattr(source, "close", None)
        if close is not None:
            close()


def _read_step(batch_bytes: int, metadata: pq.FileMetaData | None = None) -> int:
    """Rows per Parquet read step of `iter_kv_file` (steps are gathered up to the budget):
    about half a piece, by the file's own uncompressed bytes per row (all its columns, so a
    projection reads smaller steps; Arrow takes up to ~2x the encoded size, hence the 4),
    else by a 256-byte row. Small steps cost per-call overhead; large ones overshoot."""
    per_row = 256
    if metadata is not None and metadata.num_rows > 0:
        size = sum(metadata.row_group(i).total_byte_size
                   for i in range(metadata.num_row_groups))
        per_row = max(1, size // metadata.num_rows)
    return max(128, min(1 << 16, batch_bytes // (4 * per_row)))


def _first_sequence(path: str, expect: DataFileMeta | None) -> int:
    if expect is None:
        raise CorruptFileError(f"data file {path} of an append table is read without its "
                               "manifest entry (its sequence numbers come from there)")
    return expect.min_sequence_number


def _with_system_columns(table: pa.Table, first_sequence: int, offset: int) -> pa.Table:
    """A piece of an append file with `_SEQUENCE_NUMBER` (the file's numbers in row order,
    this piece starting `offset` rows in) and `_VALUE_KIND` (+I) in front."""
    n = table.num_rows
    seq = pa.array(np.arange(first_sequence + offset, first_sequence + offset + n,
                             dtype=np.int64))
    kinds = pa.array(np.zeros(n, dtype=np.int8))
    names = [n for n in table.column_names if n not in (SEQUENCE_NUMBER, VALUE_KIND)]
    return pa.Table.from_arrays([seq, kinds, *(table[c] for c in names)],
                                names=[SEQUENCE_NUMBER, VALUE_KIND, *names])


def _wanted(names: list[str], columns: Sequence[str] | None, path: str,
            append: bool = False) -> list[str]:
    """The file columns to read. An append file's columns are the table's alone (no system
    column is read even when one is there)."""
    if append:
        values = [n for n in names if n not in (SEQUENCE_NUMBER, VALUE_KIND)
                  and not n.startswith(KEY_PREFIX)] if columns is None else [
            c for c in columns if c not in (SEQUENCE_NUMBER, VALUE_KIND)]
        missing = [c for c in values if c not in names]
        if missing:
            raise CorruptFileError(f"data file {path} has no column(s) {missing}")
        return values
    for sys_col in (SEQUENCE_NUMBER, VALUE_KIND):
        if sys_col not in names:
            raise CorruptFileError(f"data file {path} has no {sys_col} column")
    if columns is None:
        values = [n for n in names
                  if not n.startswith(KEY_PREFIX) and n not in (SEQUENCE_NUMBER, VALUE_KIND)]
    else:
        missing = [c for c in columns if c not in names]
        if missing:
            raise CorruptFileError(f"data file {path} has no column(s) {missing}")
        values = [c for c in columns if c not in (SEQUENCE_NUMBER, VALUE_KIND)]
    return [SEQUENCE_NUMBER, VALUE_KIND, *values]


def _readable(path: str, file_format: str) -> str:
    fmt = file_format.lower()
    if fmt not in ("parquet", "orc", "avro"):
        raise UnsupportedError(f"cannot read data file {path}: file format {file_format!r} is "
                               "not supported (parquet, orc, avro)")
    return fmt


def _avro_types(schema: TableSchema | None) -> dict[str, Any] | None:
    """Paimon types of an Avro file's columns (Avro files carry no Paimon types of their own)."""
    if schema is None:
        return None
    return {SEQUENCE_NUMBER: bigint(False), VALUE_KIND: tinyint(False),
            **{f.name: f.type for f in schema.fields}}


def _read_raw(file_io: Any, path: str, fmt: str, columns: Sequence[str] | None,
              expect: DataFileMeta | None = None, append: bool = False,
              schema: TableSchema | None = None) -> pa.Table:
    source = file_io.open_input(path)
    try:
        if expect is not None:
            check_file_size(path, source.size(), expect)
        if fmt == "parquet":
            pf = pq.ParquetFile(source)
            want = _wanted(pf.schema_arrow.names, columns, path, append)
            table = pf.read(columns=want, use_threads=True)
        elif fmt == "avro":
            return pa.concat_tables(iter_avro(
                source, path, lambda names: _wanted(names, columns, path, append),
                _avro_types(schema), 1 << 62))
        else:
            of = orc.ORCFile(source)
            want = _wanted(of.schema.names, columns, path, append)
            table = of.read(columns=want)
        return table.select(want)
    finally:
        close = getattr(source, "close", None)
        if close is not None:
            close()


def check_file_size(path: str, size: int, meta: DataFileMeta) -> None:
    """Java locates the Parquet footer from the manifest's file size: another size is another
    (or a damaged) file, for lakeformat as for Java."""
    if size != meta.file_size:
        raise CorruptFileError(f"data file {path} is {size} bytes but its manifest entry says "
                               f"{meta.file_size}")


def check_row_count(path: str, rows: int, meta: DataFileMeta) -> None:
    if rows != meta.row_count:
        raise CorruptFileError(f"data file {path} holds {rows} rows but its manifest entry says "
                               f"{meta.row_count}")


def verify_data_file(file_io: Any, path: str, file_format: str, meta: DataFileMeta) -> None:
    """Check size and row count of a data file against its manifest entry from its footer
    alone (no data is decoded): for files compaction moves up a level without rewriting.
    Raises CorruptFileError naming the file when it is missing, unreadable or differs."""
    fmt = file_format.lower()
    try:
        size = file_io.status(path).size
        check_file_size(path, size, meta)
        if fmt == "parquet":
            rows = _parquet_footer_rows(file_io, path, size)
        else:
            fmt = _readable(path, file_format)
            source = file_io.open_input(path)
            try:
                rows = orc.ORCFile(source).nrows if fmt == "orc" else avro_row_count(source, path)
            finally:
                source.close()
        check_row_count(path, rows, meta)
    except LakeformatError:
        raise
    except Exception as e:
        raise CorruptFileError(f"cannot read data file {path}: {type(e).__name__}: {e}") from e


def _parquet_footer_rows(file_io: Any, path: str, size: int) -> int:
    """Row count from the Parquet footer: two small ranged reads, whatever the file's size."""
    if size < 12:
        raise CorruptFileError(f"data file {path} is {size} bytes: too short for Parquet")
    tail = file_io.read_range(path, size - 8, 8)
    if tail[4:] != b"PAR1":
        raise CorruptFileError(f"data file {path} does not end with the Parquet magic bytes")
    length = int.from_bytes(tail[:4], "little")
    if length + 12 > size:
        raise CorruptFileError(f"data file {path}: Parquet footer length {length} exceeds the "
                               f"file ({size} bytes)")
    footer = file_io.read_range(path, size - 8 - length, length)
    # the footer alone, framed as a file: its offsets point into the real file, never followed
    return pq.read_metadata(pa.BufferReader(b"PAR1" + footer + tail)).num_rows


def _normalize(table: pa.Table, schema: TableSchema | None) -> pa.Table:
    """Drop file-level metadata; with a schema, give every column its ``to_arrow`` type."""
    by_name = {f.name: f for f in schema.fields} if schema is not None else {}
    fields, arrays = [], []
    for name, col in zip(table.column_names, table.columns, strict=True):
        if name == SEQUENCE_NUMBER:
            target, nullable = pa.int64(), False
        elif name == VALUE_KIND:
            target, nullable = pa.int8(), False
        elif name in by_name:
            target, nullable = to_arrow(by_name[name].type), by_name[name].type.nullable
        else:
            target, nullable = col.type, table.schema.field(name).nullable
        if not col.type.equals(target, check_metadata=True):
            col = col.cast(target, safe=True)
        fields.append(pa.field(name, target, nullable))
        arrays.append(col)
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))
