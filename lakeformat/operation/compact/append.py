"""Compaction of an append table (no primary key): which small files to rewrite, and the rewrite.

Nothing is merged: compaction only turns many small files into few large ones, picking them by
Java's rules (sizes from `target-file-size`, 256 MB by default for append tables, and
`compaction.small-file-ratio`; a file below `target-file-size` x ratio is *small*):

* **bucketed** (`bucket` > 0), per bucket, files in sequence order [JAVA
  BucketedAppendCompactManager]. *Minor*: a window slides over the files in sequence order and
  is picked once it holds `compaction.min.file-num` files, its first file dropped whenever the
  window reaches twice the target size. *Full*: with at least 3 files, the large files at the
  head are kept and the rest rewritten when small files outnumber large ones there
  (`compaction.force-rewrite-all-files` rewrites every file).
* **bucket-unaware** (`bucket` = -1, every file in bucket 0), per partition, small files only
  [JAVA AppendCompactCoordinator]: sorted by size and packed into bins, a bin closing once it
  has two or more files and reaches twice the target size (each file counted with
  `source.split.open-file-cost` on top); the last bin is compacted when it holds
  `compaction.min.file-num` files. *Full* also compacts a last bin of two or more files (what
  Java's coordinator does to small files that stayed unpacked for a few rounds).

A task's files are rewritten one after the other, in the picked order, into files rolled at the
target size and numbered from the first file's smallest sequence number up (Java's rewriter), so
a bucketed table keeps its rows in write order. Outputs are level 0, marked compaction output.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from lakeformat.data.file_read import iter_data_file
from lakeformat.data.kv_rolling import RollingKeyValueFileWriter
from lakeformat.meta.data_file_meta import DataFileMeta, FileSource
from lakeformat.options import CoreOptions
from lakeformat.schema.table_schema import SEQUENCE_NUMBER, TableSchema

#: Java's FULL_COMPACT_MIN_FILE: a bucketed full compaction needs at least this many files
FULL_COMPACT_MIN_FILES = 3


def pick_bucketed(files: Sequence[DataFileMeta], opts: CoreOptions, full: bool
                  ) -> list[DataFileMeta]:
    """The files of one bucket of a bucketed append table to rewrite (empty: none)."""
    ordered = sorted(files, key=lambda f: f.min_sequence_number)
    force = opts.compaction_force_rewrite_all_files
    target = opts.target_file_size_of(False)
    small_size = opts.compaction_file_size_of(False)
    if full:
        if not ordered or (not force and len(ordered) < FULL_COMPACT_MIN_FILES):
            return []
        if force:
            return ordered
        start = 0
        while start < len(ordered) and ordered[start].file_size >= small_size:
            start += 1  # large files at the head stay
        rest = ordered[start:]
        small = sum(1 for f in rest if f.file_size < small_size)
        return rest if small > len(rest) - small and len(rest) >= FULL_COMPACT_MIN_FILES else []
    window: list[DataFileMeta] = []
    total = 0
    for f in ordered:
        window.append(f)
        total += f.file_size
        if len(window) >= opts.compaction_min_file_num:
            return window
        if total >= target * 2:
            total -= window.pop(0).file_size
    return []


def pick_unaware(files: Sequence[DataFileMeta], opts: CoreOptions, full: bool
                 ) -> list[list[DataFileMeta]]:
    """The groups of small files of one partition of a bucket-unaware append table."""
    target = opts.target_file_size_of(False)
    small_size = opts.compaction_file_size_of(False)
    open_cost = opts.split_open_file_cost
    small = sorted((f for f in files if f.file_size < small_size), key=lambda f: f.file_size)
    groups: list[list[DataFileMeta]] = []
    bin_: list[DataFileMeta] = []
    size = 0
    for f in small:
        bin_.append(f)
        size += f.file_size + open_cost
        if len(bin_) > 1 and size >= target * 2:
            groups.append(bin_)
            bin_, size = [], 0
    if len(bin_) >= opts.compaction_min_file_num or (full and len(bin_) > 1):
        groups.append(bin_)
    return groups


class AppendRewrite:
    """Rewrites one task's files (see the module docstring); `abort` deletes what it wrote."""

    def __init__(self, file_io, schema: TableSchema, schema_manager, options: CoreOptions,
                 bucket_dir: str, path_of, memory_budget: int):
        self.file_io = file_io
        self.schema = schema
        self.schema_manager = schema_manager
        self.options = options
        self.path_of = path_of
        self.piece_bytes = max(1 << 20, memory_budget // 4)
        self.writer = RollingKeyValueFileWriter(
            file_io, bucket_dir, schema, options, level=0,
            file_source=int(FileSource.COMPACT), row_group_bytes=max(1 << 20, memory_budget // 4))

    def run(self, files: Sequence[DataFileMeta], deleted_of=None) -> list[DataFileMeta]:
        """`deleted_of`: data file name -> its deletion vector's positions, rows left out."""
        if not files:
            return []
        names = self.schema.field_names
        next_seq = files[0].min_sequence_number
        held: list[pa.Table] = []
        size = 0

        def hand_over() -> None:
            # small files' pieces go to the writer together (one conversion, not one each)
            nonlocal next_seq, held, size
            rows = pa.concat_tables(held) if len(held) > 1 else held[0]
            n = rows.num_rows
            seq = pa.array(np.arange(next_seq, next_seq + n, dtype=np.int64))
            next_seq += n
            self.writer.append(rows.set_column(0, SEQUENCE_NUMBER, seq))
            held, size = [], 0

        for meta in files:
            for piece in iter_data_file(self.file_io, self.path_of(meta), meta, self.schema,
                                        self.schema_manager, names, self.options.file_format,
                                        self.piece_bytes,
                                        deleted=deleted_of(meta.file_name) if deleted_of
                                        else None):
                held.append(piece)
                size += piece.nbytes
                if size >= self.piece_bytes:
                    hand_over()
        if held:
            hand_over()
        return self.writer.close()

    def abort(self) -> None:
        self.writer.abort()
