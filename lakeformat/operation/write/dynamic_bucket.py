"""Bucket assignment of a dynamic-bucket primary-key table (`bucket` = -1), as Java's
`HashBucketAssigner` does it, over whole columns.

Each partition keeps a HASH index per bucket: the hashes of the keys (trimmed primary key's
`BinaryRow.hashCode`) the bucket holds. A key whose hash is indexed goes to that bucket; a new
hash fills the non-full buckets in ascending order up to `dynamic-bucket.target-row-num`
hashes each, then opens the smallest unused bucket id (up to `dynamic-bucket.max-buckets`;
past it, a random existing bucket, as Java does) [JAVA PartitionIndex.assign].
`dynamic-bucket.initial-buckets` = N runs N assigners, as Java's writers do with N assigner
tasks: a key goes to assigner (|partition hash % N| + |key hash % N|) % N, and assigner j owns
the buckets b with b % N = j [JAVA BucketAssigner]. Keys of one write are taken in arrival
order. After the write every bucket that gained hashes gets a new index file holding all its
hashes (`DynamicBucketIndexMaintainer`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from lakeformat.errors import InvalidOptionError, UnsupportedError
from lakeformat.meta.bucket import hash_row_bytes
from lakeformat.meta.index_manifest import HASH_INDEX, IndexManifestEntry, IndexManifestFile
from lakeformat.options import CoreOptions

MAX_BUCKETS = 32767  # Java's Short.MAX_VALUE: bucket ids are stored as shorts


@dataclass
class PartitionHashes:
    """One partition's HASH index: per bucket the hashes it holds."""

    buckets: dict[int, np.ndarray] = field(default_factory=dict)
    changed: set[int] = field(default_factory=set)


def options_of(opts: CoreOptions) -> tuple[int, int, int]:
    """(target rows per bucket, max buckets or -1, number of assigners), checked."""
    target = opts.dynamic_bucket_target_row_num
    max_buckets = opts.dynamic_bucket_max_buckets
    assigners = opts.dynamic_bucket_initial_buckets
    if target < 1:
        raise InvalidOptionError(f"dynamic-bucket.target-row-num must be > 0, got {target}")
    if max_buckets != -1 and not 1 <= max_buckets <= MAX_BUCKETS + 1:
        raise InvalidOptionError("dynamic-bucket.max-buckets must be -1 or between 1 and "
                                 f"{MAX_BUCKETS + 1}, got {max_buckets}")
    if assigners < 1:
        raise InvalidOptionError(f"dynamic-bucket.initial-buckets must be > 0, got {assigners}")
    return target, max_buckets, assigners


def load_partition(index_file: IndexManifestFile, entries: list[IndexManifestEntry]
                   ) -> PartitionHashes:
    out = PartitionHashes()
    for e in entries:
        if e.index_type == HASH_INDEX:
            out.buckets[e.bucket] = index_file.read_hashes(e)
    return out


def _java_rem(values: np.ndarray, n: int) -> np.ndarray:
    return np.abs(np.fmod(values.astype(np.int64), n))


def assign(index: PartitionHashes, partition_row: bytes, key_hashes: np.ndarray,
           opts: CoreOptions, rng: np.random.Generator | None = None) -> np.ndarray:
    """The bucket of each row (int32, arrival order); `index` gains the new hashes."""
    target, max_buckets, n = options_of(opts)
    out = np.empty(len(key_hashes), dtype=np.int32)
    if n == 1:
        owners = np.zeros(len(key_hashes), dtype=np.int64)
    else:
        start = int(np.abs(np.fmod(np.int64(hash_row_bytes(partition_row[4:])), n)))
        owners = (start + _java_rem(key_hashes, n)) % n
    for j in range(n):
        rows = np.flatnonzero(owners == j)
        if len(rows):
            out[rows] = _assign_one(index, key_hashes[rows], j, n, target, max_buckets, rng)
    return out


def _assign_one(index: PartitionHashes, hashes: np.ndarray, assigner: int, n: int,
                target: int, max_buckets: int, rng: np.random.Generator | None) -> np.ndarray:
    mine = sorted(b for b in index.buckets if b % n == assigner)
    known_h = np.concatenate([index.buckets[b] for b in mine] or [np.empty(0, np.int32)])
    known_b = np.concatenate([np.full(len(index.buckets[b]), b, np.int32) for b in mine]
                             or [np.empty(0, np.int32)])
    order = np.argsort(known_h, kind="stable")
    known_h, known_b = known_h[order], known_b[order]
    pos = np.searchsorted(known_h, hashes)
    pos_c = np.minimum(pos, max(len(known_h) - 1, 0))
    found = (pos < len(known_h)) & (known_h[pos_c] == hashes) if len(known_h) else \
        np.zeros(len(hashes), dtype=bool)
    result = np.empty(len(hashes), dtype=np.int32)
    result[found] = known_b[pos_c[found]]
    if found.all():
        return result
    fresh = hashes[~found]
    uniq, first = np.unique(fresh, return_index=True)
    new_hashes = uniq[np.argsort(first, kind="stable")]  # in order of first arrival
    slots = _slots(index, mine, len(new_hashes), assigner, n, target, max_buckets, rng)
    by_hash = np.argsort(new_hashes)
    sorted_new = new_hashes[by_hash]
    result[~found] = slots[by_hash[np.searchsorted(sorted_new, fresh)]]
    for b in np.unique(slots).tolist():
        gained = new_hashes[slots == b]
        held = index.buckets.get(b, np.empty(0, np.int32))
        index.buckets[b] = np.concatenate([held, gained]).astype(np.int32)
        index.changed.add(int(b))
    return result


def _slots(index: PartitionHashes, mine: list[int], count: int, assigner: int, n: int,
           target: int, max_buckets: int, rng: np.random.Generator | None) -> np.ndarray:
    """The bucket of each of `count` new hashes, in arrival order."""
    ids: list[np.ndarray] = []
    left = count
    for b in mine:  # non-full buckets first, ascending
        room = target - len(index.buckets[b])
        if room > 0 and left > 0:
            take = min(room, left)
            ids.append(np.full(take, b, np.int32))
            left -= take
    limit = (MAX_BUCKETS + 1 if max_buckets == -1 else max_buckets) - 1
    used = set(index.buckets)
    b = 0
    while left > 0:
        while b <= limit and (b % n != assigner or b in used):
            b += 1
        if b > limit:
            break
        take = min(target, left)
        ids.append(np.full(take, b, np.int32))
        used.add(b)
        mine.append(b)
        left -= take
    if left > 0:
        if max_buckets == -1:
            raise UnsupportedError(
                f"a partition would need more than {MAX_BUCKETS} dynamic buckets; increase "
                f"dynamic-bucket.target-row-num (now {target})")
        pool = np.array(sorted(set(mine)), dtype=np.int32)
        rng = rng or np.random.default_rng()
        ids.append(pool[rng.integers(0, len(pool), left)])
    return np.concatenate(ids) if ids else np.empty(0, np.int32)
