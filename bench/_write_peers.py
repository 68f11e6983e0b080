"""The result record of `write_read.py` and its two pyarrow floors.

* the floor (`ParquetFloor`): pyarrow writing the batches as plain zstd Parquet files (no
  keys, no sort) and reading them back;
* the encode floor (`EncodeFloor`): what pyarrow alone needs to write the bytes of an
  ingest's files. The rows of every data file lakeformat wrote in a round (its `_KEY_` and
  system columns included, already split by bucket and in key order) are decoded before the
  clock starts; timed is only their encoding into as many zstd Parquet files, each with the
  encodings lakeformat's writer chose for it (read off its footer: which columns have a
  dictionary, which are DELTA_BINARY_PACKED), on one thread per core like lakeformat's
  writer. Nothing is hashed, sorted,
  gathered, fsynced or committed: lakeformat / this floor is the price of everything but
  the encoder.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from _peers import ZSTD_LEVEL

from lakeformat.data.formats import DICTIONARY_PAGE_LIMIT, WRITE_BATCH_ROWS

_DICTIONARY_ENCODINGS = {"RLE_DICTIONARY", "PLAIN_DICTIONARY"}


@dataclass
class PeerResult:
    """Timings of one peer; rates are computed from them."""

    name: str
    rows_per_commit: int = 0
    rows_written: int = 0
    write_s: float | None = None
    read_s: float | None = None
    check: str = ""
    notes: list[str] = field(default_factory=list)
    error: str | None = None

    @property
    def write_rate(self) -> float | None:
        return self.rows_written / self.write_s if self.write_s else None

    @property
    def read_rate(self) -> float | None:
        return self.rows_written / self.read_s if self.read_s else None


def fmt_rate(rate: float | None) -> str:
    return "-" if rate is None else f"{rate:,.0f}"


def fmt_ratio(ours: float | None, theirs: float | None) -> str:
    if not ours or not theirs:
        return "-"
    r = ours / theirs
    return f"{r:,.1f}x" if r >= 10 else f"{r:.2f}x"


def say(msg: str) -> None:
    print(msg, flush=True)


def keep_best(res: PeerResult, write_s: float, read_s: float | None = None) -> None:
    res.write_s = write_s if res.write_s is None else min(res.write_s, write_s)
    if read_s is not None:
        res.read_s = read_s if res.read_s is None else min(res.read_s, read_s)


class ParquetFloor:
    """pyarrow alone: each batch as one zstd Parquet file, then all files read back."""

    def __init__(self, tables: Sequence[pa.Table], base: Path):
        self.tables, self.base = tables, base
        self.res = PeerResult(f"pyarrow {pa.__version__} parquet zstd (floor)",
                              tables[0].num_rows, sum(t.num_rows for t in tables))

    def round(self, i: int) -> None:
        folder = self.base / f"parquet-{i}"
        folder.mkdir(parents=True)
        paths = [folder / f"commit-{j}.parquet" for j in range(len(self.tables))]
        start = time.perf_counter()
        for path, batch in zip(paths, self.tables, strict=True):
            pq.write_table(batch, path, compression="zstd")
        write_s = time.perf_counter() - start
        start = time.perf_counter()
        back = pa.concat_tables([pq.read_table(p) for p in paths])
        read_s = time.perf_counter() - start
        keep_best(self.res, write_s, read_s)
        say(f"  parquet run {i + 1}: write {write_s:.2f}s, read {read_s:.2f}s")
        self.res.check = ("OK (row count; no merge)" if back.num_rows == self.res.rows_written
                          else f"MISMATCH: {back.num_rows:,} rows read back")
        shutil.rmtree(folder, ignore_errors=True)


class EncodeFloor:
    """The encode floor (see the module): lakeformat's data files of a round re-encoded."""

    def __init__(self, tables: Sequence[pa.Table], base: Path):
        self.base = base
        self.res = PeerResult(f"pyarrow {pa.__version__} encode floor", tables[0].num_rows,
                              sum(t.num_rows for t in tables))

    def round(self, i: int, data_files: Sequence[str]) -> None:
        files = file_rows(data_files)
        rows = sum(t.num_rows for t, _ in files)
        write_s = encode(files, self.base / f"encode-{i}")
        keep_best(self.res, write_s)
        say(f"  encode floor run {i + 1}: {len(files)} files, {rows:,} rows in {write_s:.2f}s")
        self.res.check = ("OK (lakeformat's files; no sort, no merge)"
                          if rows == self.res.rows_written else
                          f"MISMATCH: {rows:,} rows in lakeformat's files")


def file_rows(paths: Sequence[str]) -> list[tuple[pa.Table, dict]]:
    """Each data file's rows and the encodings lakeformat's writer chose for it, read off
    its footer (untimed)."""
    out = []
    for path in paths:
        pf = pq.ParquetFile(path)
        group = pf.metadata.row_group(0)
        chunks = [group.column(i) for i in range(group.num_columns)]
        choice = {
            "use_dictionary": [c.path_in_schema for c in chunks
                               if _DICTIONARY_ENCODINGS & set(c.encodings)],
            "column_encoding": {c.path_in_schema: "DELTA_BINARY_PACKED" for c in chunks
                                if "DELTA_BINARY_PACKED" in c.encodings}}
        out.append((pf.read().replace_schema_metadata(None), choice))
    return out


def encode(files: Sequence[tuple[pa.Table, dict]], out_dir: Path) -> float:
    """Seconds to write `files` (rows, encodings) as zstd Parquet on one thread per core."""
    out_dir.mkdir(parents=True, exist_ok=True)

    def write(item: tuple[int, tuple[pa.Table, dict]]) -> None:
        i, (rows, choice) = item
        pq.write_table(rows, out_dir / f"file-{i}.parquet", compression="zstd",
                       compression_level=ZSTD_LEVEL, row_group_size=rows.num_rows,
                       write_batch_size=WRITE_BATCH_ROWS,
                       dictionary_pagesize_limit=DICTIONARY_PAGE_LIMIT, **choice)

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        start = time.perf_counter()
        list(pool.map(write, enumerate(files)))
        seconds = time.perf_counter() - start
    shutil.rmtree(out_dir, ignore_errors=True)
    return seconds
