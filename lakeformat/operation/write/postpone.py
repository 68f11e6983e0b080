"""Writes to a postpone-bucket table (`bucket = -2`), as Java Paimon writes them.

Two ways, chosen by `postpone.batch-write-fixed-bucket` (default true) [JAVA FlinkSinkBuilder
.buildPostponeBucketSink, PaimonSparkWriter]:

* **postpone files** (the option false; what a Java streaming writer always does): each
  partition's rows go, as they came (not sorted, not merged), into `bucket-postpone` files with
  `_BUCKET = -2` and `_TOTAL_BUCKETS = -2`, level 0, Avro with `metadata.stats-mode = none`, named
  `data--u-<commit user>-s-<writer id>-w-<uuid>-<n>.avro`; their records carry no sequence number
  (-1, Java's `KeyValue.UNKNOWN_SEQUENCE`) [JAVA PostponeBucketFileStoreWrite,
  PostponeBucketWriter]. Readers do not see them until a compaction assigns them to buckets
  (`compact.postpone`).
* **fixed buckets** (a batch write with the option true): the rows go straight into real
  buckets, as a fixed-bucket table's write (sorted, merged, numbered after the bucket), with the
  partition's bucket count: the one its live files already have, else
  `postpone.default-bucket-num`, else one estimated from the batch (`postpone.target-row-num-per-
  bucket` or `postpone.target-size-per-bucket`, rounded up to a power of two and capped by
  `postpone.batch-write-fixed-bucket.max-parallelism`) [JAVA PostponeUtils.decideFixedBucketNum,
  getKnownNumBuckets]. An overwrite decides anew for the partitions it replaces. Java's writer is
  write-only here: nothing is compacted after the write.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lakeformat.data.kv_file import KeyValueFileWriter
from lakeformat.errors import UnsupportedError
from lakeformat.meta.bucket import bucket_ids
from lakeformat.meta.snapshot import Snapshot
from lakeformat.operation.commit import CommitMessage
from lakeformat.operation.postpone import (
    POSTPONE_BUCKET,
    UNKNOWN_SEQUENCE,
    decide_fixed_bucket_num,
    is_postpone,
    known_bucket_counts,
    new_writer_id,
    postpone_file_options,
    writes_fixed_buckets,
)
from lakeformat.operation.scan import FileStoreScan
from lakeformat.schema.table_schema import SEQUENCE_NUMBER, VALUE_KIND

__all__ = ["POSTPONE_BUCKET", "execute_postpone", "is_postpone", "new_writer_id",
           "plan_postpone"]


# -- plan ------------------------------------------------------------------------------------------
def plan_postpone(writer, rows: pa.Table, part_codes: np.ndarray, part_rows: list[tuple],
                  latest: Snapshot | None, overwrite: bool
                  ) -> list[tuple[bytes, tuple, int, int, int, np.ndarray]]:
    """Where the rows of a write to a postpone table go (`writer`: its `TableWrite`; `rows`:
    conformed, with `_VALUE_KIND`, in arrival order): one unit per partition in
    `bucket-postpone`, or one per (partition, real bucket) for a fixed-bucket batch write; each
    as (partition, its values, bucket, total buckets, max sequence number, row positions)."""
    fixed = writes_fixed_buckets(writer.options)
    entries = FileStoreScan(writer.file_io, writer.table_path, writer.schema).live_entries(
        latest) if fixed else []
    known = {} if overwrite else known_bucket_counts(entries, writer.table_path)
    max_seq: dict[tuple[bytes, int], int] = {}
    for e in entries:
        key = (e.partition, e.bucket)
        max_seq[key] = max(max_seq.get(key, -1), e.file.max_sequence_number)
    order = np.argsort(part_codes, kind="stable")  # each partition's rows in arrival order
    bounds = np.flatnonzero(np.diff(part_codes[order])) + 1
    bucket_types = [writer.schema.field(k).type for k in writer.schema.bucket_keys]
    units = []
    for at in np.split(order, bounds):
        if not len(at):
            continue
        values = tuple(part_rows[int(part_codes[at[0]])]) if writer.partition_fields else ()
        partition = writer.partition_bytes(values)
        if not fixed:
            units.append((partition, values, POSTPONE_BUCKET, POSTPONE_BUCKET,
                          UNKNOWN_SEQUENCE, at))
            continue
        own = rows.take(pa.array(at))
        n = known.get(partition) or decide_fixed_bucket_num(
            own.num_rows, own.nbytes, writer.options)
        buckets = bucket_ids([own[k] for k in writer.schema.bucket_keys], bucket_types, n)
        for b in np.unique(buckets).tolist():
            units.append((partition, values, int(b), n,
                          max_seq.get((partition, int(b)), -1), at[buckets == b]))
    return units


def execute_postpone(writer, unit) -> CommitMessage:
    """A postpone unit's rows, in arrival order, into `bucket-postpone` files."""
    rows = unit.rows
    seq = pa.array(np.full(rows.num_rows, UNKNOWN_SEQUENCE, dtype=np.int64))
    names = writer.schema.field_names
    kv = pa.table([seq, rows[VALUE_KIND], *(rows[n] for n in names)],
                  names=[SEQUENCE_NUMBER, VALUE_KIND, *names])
    bucket_dir = writer.paths.bucket_dir(unit.partition_values, POSTPONE_BUCKET)
    user, writer_id = writer.postpone_identity()
    try:
        out = KeyValueFileWriter(writer.file_io, bucket_dir, writer.schema,
                                 postpone_file_options(writer.options, user, writer_id),
                                 pending=writer.pending)
    except UnsupportedError:  # a type Avro cannot hold: the table's format, as Java falls back
        out = KeyValueFileWriter(writer.file_io, bucket_dir, writer.schema,
                                 postpone_file_options(writer.options, user, writer_id, False),
                                 pending=writer.pending)
    return CommitMessage(unit.partition, POSTPONE_BUCKET, POSTPONE_BUCKET,
                         new_files=out.write(kv))
