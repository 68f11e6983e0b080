"""Writer of data files: a primary-key table's key-value files, an append table's rows.

Layout [paimon-format.md §7.1]: ``_KEY_<k>`` for each trimmed primary-key column (left out with
``data-file.thin-mode``), ``_SEQUENCE_NUMBER``, ``_VALUE_KIND``, then every table column. A file
of an append table (no primary key) holds the table columns only: writers still take
``_SEQUENCE_NUMBER`` (and ``_VALUE_KIND``) beside the rows, for the file's sequence range, and
readers give them back (the range's numbers in row order, every row +I). The writer rolls to a
new file once the bytes actually written reach ``target-file-size`` and returns one
:class:`DataFileMeta` per file, with stats computed the way Java computes them.
`kv_read` reads them back.
"""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as orc
import pyarrow.parquet as pq

from lakeformat import clock
from lakeformat.data.avro_encode import AvroFileWriter
from lakeformat.data.avro_schema import avro_codec, writer_schema_json
from lakeformat.data.formats import (
    SUPPORTED_WRITE_FORMATS,
    compression_extension,
    orc_compression,
    orc_write_schema,
    parquet_encodings,
    parquet_leaf_paths,
    parquet_write_options,
    parquet_write_schema,
    physical_fields,
)
from lakeformat.data.stats import (
    ColStats,
    collect_col_stats,
    footer_stats,
    key_stats_modes,
    per_level,
    to_simple_stats,
    value_stats_modes,
)
from lakeformat.errors import InvalidOptionError, SchemaMismatchError, UnsupportedError
from lakeformat.meta.binary_row import to_avro_bytes
from lakeformat.meta.data_file_meta import DataFileMeta
from lakeformat.options import CoreOptions
from lakeformat.schema.table_schema import SEQUENCE_NUMBER, VALUE_KIND, TableSchema
from lakeformat.storage.fileio import PendingFiles

__all__ = ["KeyValueFileWriter", "retract_count"]

#: Java checks the rolling condition every 1000 records; we never write smaller row groups
#: (except the input's tail), which bounds the per-row-group overhead the same way.
MIN_CHUNK_ROWS = 1000
#: Upper bound of one row group in Arrow memory (Java's Parquet block size is 128 MB).
MAX_ROW_GROUP_BYTES = 128 << 20
#: Row groups aim this much past what is left of the target, so the size check after them
#: trips instead of a tiny extra row group being needed.
OVERSHOOT = 1.02
#: _VALUE_KIND values that retract a row (-U, -D): counted in ``_DELETE_ROW_COUNT``.
RETRACT_KINDS = (1, 3)


def null_in_not_null_column(column: str, nulls: int) -> SchemaMismatchError:
    """Paimon's file writers refuse a null in a NOT NULL column ("Field '<c>' expected not null
    but found null value"): merged rows can hold one, as a partial-update sequence group that no
    merged record updated (its ordering fields null in each) is left null — Paimon's merge
    checks nullability only outside sequence groups — or an aggregate function gives null when
    retracting. Writing such rows fails, and so does reading them (see `TableRead`)."""
    return SchemaMismatchError(
        f"column {column!r} is NOT NULL but has {nulls} null value(s) after the merge; a "
        "possible cause is a partial-update sequence group that no merged record of the key "
        "updated (its ordering fields all null), or an aggregate function that produced null "
        "when retracting")


def _positive_int(options: CoreOptions, key: str) -> int | None:
    raw = options.get(key)
    if raw is None:
        return None
    try:
        value = int(str(raw).strip())
    except ValueError:
        value = 0
    if value <= 0:
        raise InvalidOptionError(f"option {key!r} must be a positive integer, got {raw!r}")
    return value


class KeyValueFileWriter:
    """Writes sorted key-value rows of one bucket into rolling data files.

    One random UUID per writer and a counter per file give Java's names
    ``<data-file.prefix><uuid>-<n>.<format>`` [JAVA DataFilePathFactory].
    """

    def __init__(self, file_io: Any, bucket_dir: str, schema: TableSchema,
                 options: CoreOptions, *, level: int = 0, file_source: int = 0,
                 pending: PendingFiles | None = None,
                 encodings: dict[str, Any] | None = None) -> None:
        """`pending`: files may finish in the background (`FileIO.open_output`); the caller
        waits for it before anything names them. `encodings`: a dict shared by writers of
        like rows (the buckets of one partition in one write): the Parquet encodings the
        first of them chose, which the others take instead of sampling their own rows."""
        self._io = file_io
        self._pending = pending
        self._shared_encodings = encodings
        self._dir = bucket_dir
        self._schema = schema
        self._level = level
        self._file_source = file_source
        fmt = (per_level(options, "file.format.per.level", level) or options.file_format).lower()
        if fmt not in SUPPORTED_WRITE_FORMATS:
            raise UnsupportedError(
                f"file.format {fmt!r} is not supported for writing data files by lakeformat "
                f"(supported: {', '.join(SUPPORTED_WRITE_FORMATS)})")
        self._format = fmt
        comp = (per_level(options, "file.compression.per.level", level)
                or options.file_compression).lower()
        self._thin = options.thin_mode
        # append table: only the columns go to the file; sequence and kind ride alongside
        self._append = not schema.primary_keys
        self._fields = list(schema.fields) if self._append else physical_fields(schema,
                                                                                 self._thin)
        self._key_names = list(schema.trimmed_primary_keys)
        self._key_fields = schema.key_fields()
        self._key_types = [f.type for f in self._key_fields]
        # Java collects Avro stats row by row, with its own modes for key-value files
        avro_kv = fmt == "avro" and not self._append
        self._key_modes = key_stats_modes(schema, options, level, avro_kv)
        self._value_modes = value_stats_modes(schema, options, level, avro_kv)
        self._dense = options.stats_dense_store
        self._target = max(1, options.target_file_size_of(bool(schema.primary_keys)))
        # Java (2.1+) also rolls on a row count, for files written by writers, not compaction
        row_num = _positive_int(options, "target-file-row-num")
        self._max_rows = row_num if row_num and file_source != 1 else 1 << 62
        self._prefix = options.data_file_prefix
        ext = compression_extension(comp) if options.file_suffix_include_compression else None
        self._ext = f".{ext}.{fmt}" if ext else f".{fmt}"
        self._uuid = str(uuid.uuid4())
        self._counter = 0
        self._disk_per_row: float | None = None  # learnt from files written so far
        self._encodings_chosen = fmt != "parquet"  # `_choose_encodings` decides once
        # to_arrow types plus Parquet field ids; ORC files get their own cast at write time
        self._arrow_schema = parquet_write_schema(self._fields)
        if fmt == "parquet":
            self._pq_options = parquet_write_options(self._fields, comp, options.zstd_level)
            self._dict_candidates = self._dictionary_columns()
            self._pq_options["use_dictionary"] = self._dict_candidates
            # DELTA for close integers; the row kind stays PLAIN (see `_dictionary_columns`)
            self._delta_candidates = [n for n in self._arrow_schema.names if n != VALUE_KIND]
        elif fmt == "avro":
            self._avro_codec = avro_codec(comp, options.zstd_level, options.get("avro.codec"))
            writer_schema_json(self._fields)  # refuses a type Avro files cannot hold
        else:
            self._orc_schema = orc_write_schema(self._fields)
            self._orc_codec = orc_compression(comp)
        keys = [] if self._thin else self._key_names
        self._sources = [*keys, SEQUENCE_NUMBER, VALUE_KIND, *schema.field_names]
        self._carried = pa.schema([pa.field(SEQUENCE_NUMBER, pa.int64(), False),
                                   pa.field(VALUE_KIND, pa.int8(), False)])
        if self._append:
            self._sources = list(schema.field_names)

    def _dictionary_columns(self) -> list[str]:
        """Columns worth dictionary encoding: all but those unique within a file (the sequence
        number, ``_KEY_*`` and a single-column key), where it only costs time and space, and
        the row kind: four codes, which PLAIN + zstd shrinks to a few KB per 250k rows too,
        15-40% faster than through a dictionary whatever the share of retracts."""
        unique = {SEQUENCE_NUMBER, VALUE_KIND, *(f.name for f in self._key_fields)}
        if len(self._key_names) == 1:
            unique.add(self._key_names[0])
        return [path for f in self._fields if f.name not in unique
                for path in parquet_leaf_paths(f.name, f.type)]

    def _choose_encodings(self, phys: pa.Table) -> None:
        """Once per writer, from the first rows it writes (`parquet_encodings`), or what a
        writer sharing `encodings` chose."""
        if self._encodings_chosen:
            return
        self._encodings_chosen = True
        shared = self._shared_encodings
        choice = None if shared is None else shared.get("parquet")
        if choice is None:
            choice = parquet_encodings(phys, self._dict_candidates, self._delta_candidates)
            if shared is not None:
                shared.setdefault("parquet", choice)
        self._pq_options.update(choice)

    @property
    def file_format(self) -> str:
        return self._format

    def _open_writer(self, sink: Any) -> Any:
        """A writer of row groups (Parquet) or blocks (Avro) into ``sink``."""
        if self._format == "avro":
            return AvroFileWriter(sink, self._fields, *self._avro_codec)
        return pq.ParquetWriter(sink, self._arrow_schema, **self._pq_options)

    def new_file_name(self) -> str:
        name = f"{self._prefix}{self._uuid}-{self._counter}{self._ext}"
        self._counter += 1
        return name

    # -- writing ----------------------------------------------------------------------------
    def write(self, kv: pa.Table) -> list[DataFileMeta]:
        """Write ``kv`` (sorted by key, one row per key) and describe every file written.
        Each file streams into storage (`FileIO.open_output`) as it is encoded."""
        if kv.num_rows == 0:
            return []
        phys = self._physical_table(kv)
        fill = self._orc_file if self._format == "orc" else self._parquet_file
        self._choose_encodings(phys)
        metas: list[DataFileMeta] = []
        pos = 0
        while pos < phys.num_rows:
            name = self.new_file_name()
            with self._io.open_output(self._io.join(self._dir, name), self._pending) as out:
                stop, footer = fill(out, phys, pos)
                size = out.tell()
            known = footer_stats(footer, self._schema.fields) if footer is not None else None
            metas.append(self._file_meta(name, size, phys.slice(pos, stop - pos), known))
            pos = stop
        return metas

    def _physical_table(self, kv: pa.Table) -> pa.Table:
        """The file's columns with their ``to_arrow`` types (and ids); checks NOT NULL columns.
        For an append table, ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND`` lead, not to be written
        (`_file_part` leaves them out)."""
        arrays = []
        if self._append:
            for src in (SEQUENCE_NUMBER, VALUE_KIND):
                if src not in kv.column_names:
                    raise SchemaMismatchError(f"append input has no column {src!r}")
            kinds = kv.column(VALUE_KIND)
            if pc.any(pc.not_equal(kinds, 0)).as_py():
                raise SchemaMismatchError("an append table (no primary key) takes +I rows only")
            arrays = [kv.column(SEQUENCE_NUMBER).cast(pa.int64()), kinds.cast(pa.int8())]
        for src, field, target in zip(self._sources, self._fields, self._arrow_schema,
                                      strict=True):
            if src not in kv.column_names:
                raise SchemaMismatchError(f"key-value input has no column {src!r}")
            col = kv.column(src)
            if not field.type.nullable and col.null_count:
                raise null_in_not_null_column(src, col.null_count)
            if not col.type.equals(target.type):
                try:
                    col = col.cast(target.type)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                    raise SchemaMismatchError(
                        f"column {src!r} of type {col.type} cannot be written as {target.type}: {e}"
                    ) from e
            arrays.append(col)
        if self._append:
            schema = pa.schema([*self._carried, *self._arrow_schema])
            return pa.Table.from_arrays(arrays, schema=schema)
        return pa.Table.from_arrays(arrays, schema=self._arrow_schema)

    def _file_part(self, phys: pa.Table) -> pa.Table:
        """What goes into the file of a slice of `_physical_table`."""
        return phys.drop_columns([SEQUENCE_NUMBER, VALUE_KIND]) if self._append else phys

    def _parquet_file(self, out: Any, phys: pa.Table, pos: int) -> tuple[int, Any]:
        """Row groups (Avro: blocks) of ``phys`` from row ``pos`` on into ``out`` until its
        real size reaches the target; returns the row the next file starts at and the Parquet
        footer written (None for Avro).

        Each row group is sized from the on-disk bytes per row seen so far (Arrow bytes before
        anything was written), aiming a little past the target so a file usually is one or two
        row groups and never needs a tiny extra one; the size check itself is exact.
        """
        n = phys.num_rows
        mem_per_row = max(1.0, phys.nbytes / n)
        cap_rows = max(MIN_CHUNK_ROWS, int(MAX_ROW_GROUP_BYTES / mem_per_row))
        start = pos
        writer = self._open_writer(out)
        try:
            while pos < n:
                per_row = self._disk_per_row or mem_per_row
                left = self._target - out.tell()
                rows = int(left * OVERSHOOT / per_row) + 1
                rows = min(max(rows, MIN_CHUNK_ROWS), cap_rows, n - pos,
                           self._max_rows - (pos - start))
                before = out.tell()
                writer.write_table(self._file_part(phys.slice(pos, rows)), row_group_size=rows)
                pos += rows
                self._disk_per_row = max(1.0, (out.tell() - before) / rows)
                if out.tell() >= self._target or pos - start >= self._max_rows:
                    break
        finally:
            writer.close()
        return pos, writer.writer.metadata if self._format == "parquet" else None

    def _orc_file(self, out: Any, phys: pa.Table, pos: int) -> tuple[int, None]:
        """ORC stripes are buffered until close, so each file's row count is predicted from the
        bytes per row of earlier files (Arrow bytes for the first); sizes are still real."""
        n = phys.num_rows
        per_row = self._disk_per_row or max(1.0, phys.nbytes / n)
        rows = min(max(int(self._target * OVERSHOOT / per_row) + 1, MIN_CHUNK_ROWS), n - pos,
                   self._max_rows)
        part = self._file_part(phys.slice(pos, rows)).cast(self._orc_schema)
        orc.write_table(part, out, compression=self._orc_codec)
        self._disk_per_row = max(1.0, out.tell() / rows)
        return pos + rows, None

    def _file_meta(self, name: str, size: int, part: pa.Table,
                   known: dict[str, ColStats] | None = None) -> DataFileMeta:
        """The file's entry; `known`: value columns' raw stats read off its footer."""
        seq = pc.min_max(part.column(SEQUENCE_NUMBER))
        kind = part.column(VALUE_KIND)
        retract = retract_count(kind)
        keys = [part.column(k) for k in self._key_names]
        last = part.num_rows - 1
        min_key = to_avro_bytes([c[0].as_py() for c in keys], self._key_types)
        max_key = to_avro_bytes([c[last].as_py() for c in keys], self._key_types)
        # a key column holds the same values as its value column: the same footer stats
        key_known = None if known is None else {
            kf.name: known[k] for kf, k in zip(self._key_fields, self._key_names) if k in known}
        key_stats, _ = to_simple_stats(
            collect_col_stats(keys, self._key_fields, self._key_modes, self._format, key_known),
            self._key_fields)
        value_cols = [part.column(f.name) for f in self._schema.fields]
        value_stats, stats_cols = to_simple_stats(
            collect_col_stats(value_cols, self._schema.fields, self._value_modes, self._format,
                              known),
            self._schema.fields, dense=self._dense)
        return DataFileMeta(
            file_name=name,
            file_size=size,
            row_count=part.num_rows,
            min_key=min_key,
            max_key=max_key,
            key_stats=key_stats,
            value_stats=value_stats,
            min_sequence_number=seq["min"].as_py(),
            max_sequence_number=seq["max"].as_py(),
            schema_id=self._schema.id,
            level=self._level,
            extra_files=(),
            creation_time=clock.local_millis_now(),
            delete_row_count=0 if self._append else retract,
            file_source=self._file_source,
            value_stats_cols=stats_cols,
        )


def retract_count(kinds: pa.ChunkedArray) -> int:
    """Rows of -U or -D among `kinds` (a row kind column)."""
    if kinds.num_chunks == 1 and not kinds.null_count:
        codes = kinds.chunk(0).to_numpy()
        retract = np.zeros(len(codes), dtype=bool)
        for code in RETRACT_KINDS:  # np.isin is ~20x slower on int8 codes
            retract |= codes == code
        return int(np.count_nonzero(retract))
    return int(pc.sum(pc.is_in(kinds, value_set=pa.array(RETRACT_KINDS, kinds.type))).as_py()
               or 0)
