"""Per (partition, bucket) figures of the latest snapshot, from its live manifest entries and
its index manifest alone: a column per file attribute, then one pyarrow group-by.

Sorted runs count as `TableInspect.buckets()` counts them (each level-0 file one run, each
non-empty level above one run); a *small* file is below `compaction_file_size_of(pk)`
(target-file-size x compaction.small-file-ratio, Java's `compactionFileSize`); rows marked
deleted are the cardinalities the index manifest records for each data file's deletion vector
(a vector without one counts the file's rows, as Java's compaction treats it).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.errors import LakeformatError
from lakeformat.meta.binary_row import from_avro_bytes
from lakeformat.meta.data_file_meta import FileSource, ManifestEntry
from lakeformat.meta.deletion_vector import DeletionFile
from lakeformat.meta.partition import partition_path, partition_value_text
from lakeformat.options import CoreOptions
from lakeformat.schema.table_schema import TableSchema


@dataclass
class BucketFigures:
    """The per-bucket columns (numpy, one row per bucket, sorted by partition then bucket) and
    each bucket's partition bytes."""

    partition: list[bytes]
    bucket: np.ndarray
    files: np.ndarray
    sorted_runs: np.ndarray
    level0: np.ndarray
    max_level: np.ndarray
    rows: np.ndarray
    bytes: np.ndarray
    small_files: np.ndarray
    small_bytes: np.ndarray
    dv_rows: np.ndarray
    dv_unknown: np.ndarray
    #: newest creation time (local wall-clock millis) of a compaction output (0: none)
    last_compaction: np.ndarray
    #: newest creation time of a top-level file (Java's estimate of the last full compaction)
    last_full: np.ndarray
    #: live rows of files with a deletion vector (what the delete ratio is taken of)
    dv_file_rows: np.ndarray

    def __len__(self) -> int:
        return len(self.bucket)


def _ints(values: Sequence[Any]) -> np.ndarray:
    return np.fromiter(values, np.int64, len(values))


def bucket_figures(schema: TableSchema, opts: CoreOptions, entries: Sequence[ManifestEntry],
                   dvs: dict[tuple[bytes, int], dict[str, DeletionFile]], max_level: int
                   ) -> BucketFigures:
    """Group the live files by (partition, bucket); `max_level` is the top level of the
    table's LSM (`num-levels` - 1): files there count toward the last full compaction."""
    n = len(entries)
    files = [e.file for e in entries]
    parts = pa.array([e.partition for e in entries], pa.binary()).dictionary_encode()
    level = _ints([f.level for f in files])
    size = _ints([f.file_size for f in files])
    rows = _ints([f.row_count for f in files])
    created = _ints([f.creation_time or 0 for f in files])
    compact = np.fromiter((f.file_source == FileSource.COMPACT for f in files), np.bool_, n)
    small = size < opts.compaction_file_size_of(bool(schema.primary_keys))
    dv_rows = np.zeros(n, np.int64)
    dv_unknown = np.zeros(n, np.bool_)
    has_dv = np.zeros(n, np.bool_)
    vectors = {name: d for bucket in dvs.values() for name, d in bucket.items()}
    if vectors:
        names = pa.array([f.file_name for f in files], pa.string())
        keys = pa.array(list(vectors), pa.string())
        cards = pa.array([d.cardinality for d in vectors.values()], pa.int64())
        idx = pc.index_in(names, value_set=keys)
        has_dv = pc.is_valid(idx).to_numpy(zero_copy_only=False)
        card = cards.take(idx)  # null where no vector, or no cardinality recorded
        dv_unknown = has_dv & pc.is_null(card).to_numpy(zero_copy_only=False)
        dv_rows = np.where(dv_unknown, rows,
                           card.fill_null(0).to_numpy(zero_copy_only=False)).astype(np.int64)
        dv_rows = np.minimum(dv_rows, rows)
    run = np.where(level == 0, -np.arange(1, n + 1, dtype=np.int64), level)
    table = pa.table({
        "code": parts.indices, "bucket": pa.array([e.bucket for e in entries], pa.int32()),
        "level": level, "size": size, "rows": rows, "run": run,
        "level0": (level == 0).astype(np.int64), "small": small.astype(np.int64),
        "small_size": np.where(small, size, 0), "dv_rows": dv_rows,
        "dv_unknown": dv_unknown.astype(np.int64),
        "dv_file_rows": np.where(has_dv, rows, 0),
        "compacted": np.where(compact | (level > 0) if schema.primary_keys else compact,
                              created, 0),
        "top": np.where(level == max_level, created, 0),
    })
    aggs = [("level", "count"), ("run", "count_distinct"), ("level0", "sum"),
            ("level", "max"), ("rows", "sum"), ("size", "sum"), ("small", "sum"),
            ("small_size", "sum"), ("dv_rows", "sum"), ("dv_unknown", "sum"),
            ("compacted", "max"), ("top", "max"), ("dv_file_rows", "sum")]
    grouped = table.group_by(["code", "bucket"]).aggregate(aggs)
    dictionary = parts.dictionary.to_pylist()
    codes = grouped["code"].to_numpy()
    buckets = grouped["bucket"].to_numpy().astype(np.int64)
    order = np.lexsort((buckets, codes)) if len(codes) else np.arange(0)

    def col(name: str) -> np.ndarray:
        return grouped[name].to_numpy().astype(np.int64)[order]

    return BucketFigures(
        partition=[dictionary[c] for c in codes[order].tolist()], bucket=buckets[order],
        files=col("level_count"), sorted_runs=col("run_count_distinct"),
        level0=col("level0_sum"), max_level=col("level_max"), rows=col("rows_sum"),
        bytes=col("size_sum"), small_files=col("small_sum"), small_bytes=col("small_size_sum"),
        dv_rows=col("dv_rows_sum"), dv_unknown=col("dv_unknown_sum"),
        last_compaction=col("compacted_max"), last_full=col("top_max"),
        dv_file_rows=col("dv_file_rows_sum"))


class PartitionText:
    """Each distinct partition's path text and values, decoded once."""

    def __init__(self, schema: TableSchema, opts: CoreOptions):
        self.fields = schema.partition_fields()
        self.types = [f.type for f in self.fields]
        self.keys = list(schema.partition_keys)
        self.default = opts.partition_default_name
        self._done: dict[bytes, tuple[str, dict[str, Any], dict[str, str | None]]] = {}

    def of(self, partition: bytes) -> tuple[str, dict[str, Any], dict[str, str | None]]:
        """(path text, {key: value}, {key: value as text})."""
        hit = self._done.get(partition)
        if hit is None:
            values = from_avro_bytes(partition, self.types) if self.types else []
            try:
                spec = partition_path(values, self.fields, self.default, False)
            except LakeformatError:
                spec = "/".join(f"{k}={v}" for k, v in zip(self.keys, values, strict=True))
            texts = {}
            for k, v, t in zip(self.keys, values, self.types, strict=True):
                try:
                    texts[k] = partition_value_text(v, t, legacy_name=False)
                except LakeformatError:
                    texts[k] = None if v is None else str(v)
            hit = self._done[partition] = (spec, dict(zip(self.keys, values, strict=True)),
                                           texts)
        return hit


def local_iso(millis: int) -> str | None:
    """A stored local wall-clock time (epoch millis read as UTC) as ISO text, no zone."""
    if millis <= 0:
        return None
    return (dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=int(millis))).isoformat(
        timespec="seconds")
