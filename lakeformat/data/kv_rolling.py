"""A key-value file writer fed chunk by chunk: what compaction writes while it merges.

`KeyValueFileWriter.write` needs a bucket's rows at once; compaction produces them a key-range
slice at a time and must not hold them. This writer appends each chunk (key-sorted, keys
increasing across chunks) to the open file as row groups, keeps footer-equivalent stats as it
goes, and rolls to a new file once the written bytes reach `target-file-size`. Memory held: the
pending chunk (at most `row_group_bytes` of Arrow data) and the file being built (at most
about `target-file-size` of encoded bytes).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as orc
import pyarrow.parquet as pq

from lakeformat import clock
from lakeformat.data.kv_file import (
    MIN_CHUNK_ROWS,
    OVERSHOOT,
    KeyValueFileWriter,
    retract_count,
)
from lakeformat.data.stats import (
    ColStats,
    StatsAccumulator,
    footer_columns,
    footer_stats,
    raw_stats,
    to_simple_stats,
)
from lakeformat.meta.binary_row import to_avro_bytes
from lakeformat.meta.data_file_meta import DataFileMeta
from lakeformat.options import CoreOptions
from lakeformat.schema.table_schema import SEQUENCE_NUMBER, VALUE_KIND, TableSchema

__all__ = ["RollingKeyValueFileWriter"]


class _OpenFile:
    """State of the file being written."""

    def __init__(self, name: str, writer: Any, sink: pa.BufferOutputStream,
                 key_stats: StatsAccumulator, value_stats: StatsAccumulator) -> None:
        self.name = name
        self.writer = writer
        self.sink = sink
        self.key_stats = key_stats
        self.value_stats = value_stats
        self.rows = 0
        self.deletes = 0
        self.min_seq: int | None = None
        self.max_seq: int | None = None
        self.min_key: list[Any] | None = None
        self.max_key: list[Any] | None = None


class RollingKeyValueFileWriter(KeyValueFileWriter):
    """`append` key-sorted chunks, `close` for the files written; `abort` deletes them."""

    def __init__(self, file_io: Any, bucket_dir: str, schema: TableSchema,
                 options: CoreOptions, *, level: int = 0, file_source: int = 0,
                 row_group_bytes: int = 32 << 20) -> None:
        super().__init__(file_io, bucket_dir, schema, options, level=level,
                         file_source=file_source)
        self._row_group_bytes = max(1 << 16, row_group_bytes)
        self._pending: list[pa.Table] = []
        self._pending_bytes = 0
        self._open: _OpenFile | None = None
        self._results: list[DataFileMeta] = []
        self._paths: list[str] = []

    def append(self, kv: pa.Table) -> None:
        if kv.num_rows == 0:
            return
        phys = self._physical_table(kv)
        self._pending.append(phys)
        self._pending_bytes += phys.nbytes
        if self._pending_bytes >= self._row_group_bytes:
            self._flush()

    def close(self) -> list[DataFileMeta]:
        self._flush()
        self._finish_file()
        return list(self._results)

    def abort(self) -> None:
        """Drop what is open and delete every file already written (best effort)."""
        self._pending = []
        if self._open is not None:
            try:
                self._open.writer.close()
            except Exception:
                pass
            self._open = None
        if self._paths:
            self._io.delete_many(list(self._paths))
        self._paths = []
        self._results = []

    # -- internals ------------------------------------------------------------------------------
    def _flush(self) -> None:
        if not self._pending:
            return
        table = pa.concat_tables(self._pending) if len(self._pending) > 1 else self._pending[0]
        self._pending = []
        self._pending_bytes = 0
        self._choose_encodings(table)
        n = table.num_rows
        mem_per_row = max(1.0, table.nbytes / n)
        pos = 0
        while pos < n:
            f = self._open or self._new_file()
            per_row = self._disk_per_row or mem_per_row
            written = f.rows * per_row if self._format == "orc" else f.sink.tell()
            left = max(0.0, self._target - written)
            rows = max(int(left * OVERSHOOT / per_row) + 1, MIN_CHUNK_ROWS)
            rows = min(rows, n - pos, self._max_rows - f.rows)
            part = table.slice(pos, rows)
            before = f.sink.tell()
            if self._format != "orc":  # Parquet row groups, Avro blocks
                f.writer.write_table(self._file_part(part), row_group_size=rows)
                self._disk_per_row = max(1.0, (f.sink.tell() - before) / rows)
            else:
                f.writer.write(self._file_part(part).cast(self._orc_schema))
            self._observe(f, part)
            pos += rows
            full = f.rows >= self._max_rows
            if self._format != "orc":
                full = full or f.sink.tell() >= self._target
            else:
                full = full or f.rows * per_row >= self._target
            if full:
                self._finish_file()

    def _new_file(self) -> _OpenFile:
        sink = pa.BufferOutputStream()
        if self._format != "orc":
            writer: Any = self._open_writer(sink)
        else:
            writer = orc.ORCWriter(sink, compression=self._orc_codec)
        self._open = _OpenFile(
            self.new_file_name(), writer, sink,
            StatsAccumulator(self._key_fields, self._key_modes, self._format),
            # Parquet: the writer computes string and binary stats while encoding (its footer)
            StatsAccumulator(self._schema.fields, self._value_modes, self._format,
                             footer_columns(self._schema.fields)
                             if self._format == "parquet" else ()))
        return self._open

    def _observe(self, f: _OpenFile, part: pa.Table) -> None:
        seq = pc.min_max(part.column(SEQUENCE_NUMBER))
        lo, hi = seq["min"].as_py(), seq["max"].as_py()
        f.min_seq = lo if f.min_seq is None else min(f.min_seq, lo)
        f.max_seq = hi if f.max_seq is None else max(f.max_seq, hi)
        f.deletes += retract_count(part.column(VALUE_KIND))
        keys = [part.column(k) for k in self._key_names]
        if f.min_key is None:
            f.min_key = [c[0].as_py() for c in keys]
        f.max_key = [c[part.num_rows - 1].as_py() for c in keys]
        f.key_stats.add(keys)
        f.value_stats.add([part.column(fd.name) for fd in self._schema.fields])
        f.rows += part.num_rows

    def _footer_stats(self, f: _OpenFile, data: bytes) -> dict[str, ColStats]:
        """Raw stats of the columns the file's footer holds; a column it leaves out (a row
        group without them) is read back from the file's bytes and computed."""
        needed = f.value_stats.needs()
        if not needed:
            return {}
        known = footer_stats(f.writer.writer.metadata, self._schema.fields)
        missing = [n for n in needed if n not in known]
        if missing:
            back = pq.read_table(pa.BufferReader(data), columns=missing)
            types = {fd.name: fd.type for fd in self._schema.fields}
            known.update({n: raw_stats(back[n], types[n], self._format) for n in missing})
        return known

    def _finish_file(self) -> None:
        f = self._open
        if f is None:
            return
        self._open = None
        f.writer.close()
        data = f.sink.getvalue().to_pybytes()
        if f.rows == 0:
            return
        if self._format == "orc":
            self._disk_per_row = max(1.0, len(data) / f.rows)
        path = self._io.join(self._dir, f.name)
        self._paths.append(path)
        self._io.write_bytes(path, data)
        key_stats, _ = to_simple_stats(f.key_stats.result(), self._key_fields)
        value_stats, cols = to_simple_stats(f.value_stats.result(self._footer_stats(f, data)),
                                            self._schema.fields, dense=self._dense)
        self._results.append(DataFileMeta(
            file_name=f.name, file_size=len(data), row_count=f.rows,
            min_key=to_avro_bytes(f.min_key, self._key_types),
            max_key=to_avro_bytes(f.max_key, self._key_types),
            key_stats=key_stats, value_stats=value_stats,
            min_sequence_number=int(f.min_seq), max_sequence_number=int(f.max_seq),
            schema_id=self._schema.id, level=self._level, extra_files=(),
            creation_time=clock.local_millis_now(), delete_row_count=f.deletes,
            file_source=self._file_source, value_stats_cols=cols))
