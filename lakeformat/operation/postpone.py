"""Postpone-bucket tables (`bucket = -2`): the rules writers and compaction share.

A postpone table's primary-key writers put records in `bucket-postpone` files (`_BUCKET = -2`)
that readers do not see until a compaction assigns them to real buckets; a batch write may
instead write real buckets directly (`postpone.batch-write-fixed-bucket`). Here: how many
buckets a partition gets, the partitions' known bucket counts, and how postpone files are named
and written [JAVA PostponeUtils, PostponeBucketFileStoreWrite, CoreOptions postpone.*].
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from lakeformat.errors import InvalidOptionError, UnsupportedError
from lakeformat.layout import POSTPONE_BUCKET
from lakeformat.meta.data_file_meta import ManifestEntry
from lakeformat.options import CoreOptions, parse_bool, parse_memory_size

__all__ = ["POSTPONE_BUCKET", "UNKNOWN_SEQUENCE", "compaction_bucket_num",
           "decide_fixed_bucket_num", "default_bucket_num", "is_postpone", "known_bucket_counts",
           "new_writer_id", "postpone_file_options", "writes_fixed_buckets"]

#: Java's `KeyValue.UNKNOWN_SEQUENCE`: what a postpone writer's records carry
UNKNOWN_SEQUENCE = -1


def is_postpone(options: CoreOptions) -> bool:
    return options.bucket == POSTPONE_BUCKET


def writes_fixed_buckets(options: CoreOptions) -> bool:
    """A batch write of a postpone table writes real buckets (`postpone.batch-write-fixed-
    bucket`, default true)."""
    return parse_bool(options.raw, "postpone.batch-write-fixed-bucket", True)


def _positive(options: CoreOptions, key: str, default: int | None) -> int | None:
    raw = options.get(key)
    if raw is None:
        return default
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise InvalidOptionError(f"option {key!r} must be an integer, got {raw!r}") from None
    if value <= 0:
        raise InvalidOptionError(f"option {key!r} must be greater than 0, got {value}")
    return value


def default_bucket_num(options: CoreOptions) -> int | None:
    return _positive(options, "postpone.default-bucket-num", None)


def _target(options: CoreOptions) -> tuple[int | None, int]:
    """(`postpone.target-row-num-per-bucket` or None, `postpone.target-size-per-bucket`)."""
    rows = _positive(options, "postpone.target-row-num-per-bucket", None)
    size = parse_memory_size(options.get("postpone.target-size-per-bucket", "1 gb"),
                             "postpone.target-size-per-bucket")
    if size <= 0:
        raise InvalidOptionError("option 'postpone.target-size-per-bucket' must be greater "
                                 "than 0")
    return rows, size


def _ceil_div(value: int, divisor: int) -> int:
    return 0 if value <= 0 else (value - 1) // divisor + 1


def decide_fixed_bucket_num(rows: int, size: int, options: CoreOptions) -> int:
    """Bucket count of a partition a fixed-bucket batch write creates: Java's
    `decideFixedBucketNum` for a partition without real buckets (`rows`/`size`: the batch's
    rows and bytes for that partition)."""
    configured = default_bucket_num(options)
    if configured is not None:
        return configured
    cap = _positive(options, "postpone.batch-write-fixed-bucket.max-parallelism", 2048)
    target_rows, target_size = _target(options)
    need = max(1, _ceil_div(rows, target_rows) if target_rows else _ceil_div(size, target_size))
    power = 1 << (need - 1).bit_length()
    return min(power, cap)  # type: ignore[type-var]


def compaction_bucket_num(rows: int, size: int, options: CoreOptions) -> int:
    """Bucket count a postpone compaction gives a partition without real buckets: Java's
    `PostponeBucketNumResolver` (`postpone.default-bucket-num`, else the postpone files' rows
    or bytes over the target per bucket, at least one)."""
    configured = default_bucket_num(options)
    if configured is not None:
        return configured
    target_rows, target_size = _target(options)
    n = _ceil_div(rows, target_rows) if target_rows else _ceil_div(size, target_size)
    if n > 2**31 - 1:
        key = ("postpone.target-row-num-per-bucket" if target_rows
               else "postpone.target-size-per-bucket")
        raise InvalidOptionError(f"postpone bucket number {n} exceeds the largest integer; "
                                 f"raise {key}")
    return max(1, n)


def known_bucket_counts(entries: Sequence[ManifestEntry], table_path: str) -> dict[bytes, int]:
    """Partition -> bucket count of its real-bucket files (postpone files have none)
    [JAVA PostponeUtils.getKnownNumBuckets]."""
    known: dict[bytes, int] = {}
    for e in entries:
        if e.bucket < 0 or e.total_buckets <= 0:
            continue
        had = known.setdefault(e.partition, e.total_buckets)
        if had != e.total_buckets:
            raise UnsupportedError(f"{table_path}: a partition has files of {had} and of "
                                   f"{e.total_buckets} buckets")
    return known


def postpone_file_options(options: CoreOptions, commit_user: str, writer_id: int,
                          avro: bool = True) -> CoreOptions:
    """A postpone writer's file options: Avro without value stats, and the prefix that names
    its commit user and writer id [JAVA PostponeBucketFileStoreWrite]."""
    raw = dict(options.raw)
    if avro:
        raw["file.format"] = "avro"
        raw["metadata.stats-mode"] = "none"
    raw["data-file.prefix"] = f"{options.data_file_prefix}-u-{commit_user}-s-{writer_id}-w-"
    return CoreOptions(raw)


def new_writer_id() -> int:
    """A postpone writer's id, as Java's `ThreadLocalRandom.nextInt(Integer.MAX_VALUE)`."""
    return random.randrange(2**31 - 1)


