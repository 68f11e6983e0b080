"""The encode floor of an ingest: what pyarrow alone needs to write the bytes of its files.

The rows of every data file lakeformat wrote in a round (its `_KEY_` and system columns
included, already split by bucket and in key order) are decoded before the clock starts;
timed is only their encoding into as many zstd Parquet files, with the encodings
lakeformat's writer picks (`parquet_encodings`: a dictionary only where values repeat, never
for the key, sequence and row-kind columns; delta for integers of close neighbours), on one
thread per core like lakeformat's writer. Nothing is hashed, sorted, gathered, fsynced or
committed: the ratio lakeformat / this floor is the price of everything but the encoder.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from _peers import ZSTD_LEVEL

from lakeformat.data.formats import (
    DICTIONARY_PAGE_LIMIT,
    WRITE_BATCH_ROWS,
    parquet_encodings,
)

#: columns lakeformat never dictionary-encodes (unique per file, or four row kinds)
_NO_DICTIONARY = {"_SEQUENCE_NUMBER", "_VALUE_KIND"}


def file_rows(paths: Sequence[str]) -> list[tuple[pa.Table, dict]]:
    """Each data file's rows and the encodings lakeformat's writer picks for them
    (untimed)."""
    out = []
    for path in paths:
        rows = pq.read_table(path)
        keys = [c for c in rows.column_names if c.startswith("_KEY_")]
        plain = _NO_DICTIONARY | set(keys)
        if len(keys) == 1:  # a single key column: its value column is unique too
            plain.add(keys[0][len("_KEY_"):])
        choice = parquet_encodings(rows, [c for c in rows.column_names if c not in plain],
                                   [c for c in rows.column_names if c != "_VALUE_KIND"])
        out.append((rows.replace_schema_metadata(None), choice))
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
