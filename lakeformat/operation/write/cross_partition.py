"""Cross-partition upsert: a dynamic-bucket primary-key table (`bucket` = -1) whose primary key
leaves out a partition column, so a key is unique across the whole table and may move between
partitions (Paimon's KEY_DYNAMIC bucket mode).

Such a table has no HASH index files. Before a write the placement of every live key is
bootstrapped from the data of the base snapshot (Java's `IndexBootstrap`): each bucket's
primary-key columns are read merged, so a key whose latest record retracts it is absent; the
result is a `KeyIndex` of numpy arrays (key hash, partition code, bucket) beside the key
columns, which settle hash collisions exactly.

Each incoming row is then routed as Java's `GlobalIndexAssigner` routes it, in arrival order,
the later rows of a key seeing where the earlier ones put it:

* a key not placed yet takes a bucket of its row's partition (`BucketAssigner`: the lowest
  bucket of the assigner holding fewer than `dynamic-bucket.target-row-num` keys, else the
  lowest bucket id the assigner owns that holds none; `dynamic-bucket.initial-buckets` N runs
  N assigners, a key going to |hash % N| and assigner j owning the buckets b with b % N = j);
* a key placed in the row's partition goes back to its bucket;
* a key placed in another partition goes by the merge engine (`ExistingProcessor`):
  deduplicate writes a -D of the row into the old partition and bucket and places the row anew
  in its own partition (`DeleteExistingProcessor`); partial-update and aggregation write the
  row into the old partition and bucket, its partition columns set to the old values
  (`UseOldExistingProcessor`); first-row drops the row (`SkipNewExistingProcessor`).

Row kinds do not change the routing (as in Java): a -D row of a key held elsewhere retracts it
there and is placed in its own partition. A delete by key (`Table.delete`) instead looks each
key up and sends its -D to wherever the key lives; keys not found are skipped (`locate`).
Everything runs over whole columns; the only loops are over partitions, assigners, buckets and
(when keys move out of and into the same partition within one write) runs of moves.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.errors import CorruptFileError, SchemaMismatchError, UnsupportedError
from lakeformat.merge.sort import DELETE
from lakeformat.meta.bucket import hash_rows
from lakeformat.meta.snapshot import Snapshot
from lakeformat.operation.read import TableRead
from lakeformat.operation.runner import ThreadRunner
from lakeformat.operation.write.dynamic_bucket import options_of
from lakeformat.options import CoreOptions
from lakeformat.schema.schema_manager import SchemaManager
from lakeformat.schema.table_schema import VALUE_KIND, TableSchema
from lakeformat.schema.types import arrow_schema
from lakeformat.storage import FileIO

INDEX_TTL = "cross-partition-upsert.index-ttl"
ENGINES = ("deduplicate", "partial-update", "aggregation", "first-row")


def is_cross_partition(schema: TableSchema) -> bool:
    """A dynamic-bucket primary-key table whose key leaves out a partition column."""
    return (bool(schema.primary_keys) and CoreOptions(schema.options).bucket == -1
            and not set(schema.partition_keys) <= set(schema.primary_keys))


@dataclass
class KeyIndex:
    """Where every live key of a snapshot is: one row per key."""

    snapshot_id: int | None
    partitions: list[bytes]  # partition code -> partition row bytes
    values: list[tuple]  # partition code -> partition values
    keys: pa.Table  # the primary-key columns
    hashes: np.ndarray  # int32 BinaryRow hash of the primary key
    part: np.ndarray  # int64 partition code
    bucket: np.ndarray  # int64 bucket


def key_columns(schema: TableSchema, table: pa.Table) -> pa.Table:
    """The full primary key of `table`'s rows, typed as the table's key columns."""
    target = arrow_schema(schema.fields_of(list(schema.primary_keys)), with_id=False)
    cols = []
    for f in target:
        col = table[f.name]
        if col.type != f.type:
            try:
                col = col.cast(f.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
                raise SchemaMismatchError(f"primary-key column {f.name!r}: {e}") from None
        cols.append(col)
    return pa.table(cols, schema=pa.schema([pa.field(f.name, f.type) for f in target]))


def key_hashes(schema: TableSchema, keys: pa.Table) -> np.ndarray:
    types = [schema.field(k).type for k in schema.primary_keys]
    return hash_rows([keys[k] for k in schema.primary_keys], types).astype(np.int32)


def bootstrap(file_io: FileIO, table_path: str, schema: TableSchema,
              latest: Snapshot | None) -> KeyIndex:
    """The key index of `latest`: every bucket's primary-key columns, read merged (retracted
    keys are not live), as Java's `IndexBootstrap` reads them."""
    pk = list(schema.primary_keys)
    empty = key_columns(schema, arrow_schema(schema.fields_of(pk), with_id=False).empty_table())
    if latest is None:
        return KeyIndex(None, [], [], empty, np.empty(0, np.int32), np.empty(0, np.int64),
                        np.empty(0, np.int64))
    reader = TableRead(file_io, table_path, schema, SchemaManager(file_io, table_path))
    plan = reader.plan(latest, columns=pk)
    workers = max(1, min(len(plan.splits), os.cpu_count() or 2))
    budget = max(64 << 10, reader.memory_budget // workers)

    def read_keys(split):  # one bucket's live keys
        parts = [t for t in reader.read_split(split, plan, budget) if t.num_rows]
        return pa.concat_tables(parts) if parts else None

    found = ThreadRunner(workers).map(read_keys, plan.splits)
    where: dict[bytes, int] = {}
    partitions, values, tables, codes, buckets = [], [], [], [], []
    for split, keys in zip(plan.splits, found):
        if keys is None:
            continue
        if split.partition not in where:
            where[split.partition] = len(partitions)
            partitions.append(split.partition)
            values.append(tuple(split.partition_values))
        tables.append(key_columns(schema, keys))
        codes.append(np.full(keys.num_rows, where[split.partition], np.int64))
        buckets.append(np.full(keys.num_rows, split.bucket, np.int64))
    if not tables:
        return KeyIndex(latest.id, [], [], empty, np.empty(0, np.int32),
                        np.empty(0, np.int64), np.empty(0, np.int64))
    keys = pa.concat_tables(tables).combine_chunks()
    hashes = key_hashes(schema, keys)
    ids = exact_ids(keys, hashes)
    if (ids != np.arange(len(ids))).any():
        dup = int(np.flatnonzero(ids != np.arange(len(ids)))[0])
        raise CorruptFileError(
            f"{table_path}: primary key {keys.slice(dup, 1).to_pylist()[0]} is live in two "
            "buckets of the cross-partition upsert table (two jobs wrote it at once?); "
            "rewrite the duplicates before writing again")
    return KeyIndex(latest.id, partitions, values, keys, hashes, np.concatenate(codes),
                    np.concatenate(buckets))


# -- exact key identity --------------------------------------------------------------------------

def _equal(a: pa.ChunkedArray | pa.Array, b: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Row-wise equality as BinaryRow bytes compare (floats by their bits; null = null)."""
    if pa.types.is_floating(a.type):
        x = pa.chunked_array([a]) if isinstance(a, pa.Array) else a
        y = pa.chunked_array([b]) if isinstance(b, pa.Array) else b
        xv = x.combine_chunks().to_numpy(zero_copy_only=False)
        yv = y.combine_chunks().to_numpy(zero_copy_only=False)
        width = np.int64 if xv.dtype.itemsize == 8 else np.int32 if xv.dtype.itemsize == 4 \
            else np.int16
        same = np.ascontiguousarray(xv).view(width) == np.ascontiguousarray(yv).view(width)
    else:
        same = pc.fill_null(pc.equal(a, b), False).to_numpy(zero_copy_only=False)
    both_null = pc.and_(pc.is_null(a), pc.is_null(b)).to_numpy(zero_copy_only=False)
    either_null = pc.or_(pc.is_null(a), pc.is_null(b)).to_numpy(zero_copy_only=False)
    return (same & ~either_null) | both_null


def _rows_equal(keys: pa.Table, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    out = np.ones(len(left), dtype=bool)
    li, ri = pa.array(left, pa.int64()), pa.array(right, pa.int64())
    for name in keys.column_names:
        col = keys[name]
        out &= _equal(col.take(li), col.take(ri))
    return out


def exact_ids(keys: pa.Table, hashes: np.ndarray) -> np.ndarray:
    """For each row, the first row (in stable hash order) holding the same key: equal keys get
    the same id, and a hash shared by different keys is told apart by comparing the columns."""
    ids = np.full(len(hashes), -1, dtype=np.int64)
    todo = np.arange(len(hashes), dtype=np.int64)
    while len(todo):
        order = np.argsort(hashes[todo], kind="stable")
        rows, h = todo[order], hashes[todo][order]
        start = np.ones(len(rows), dtype=bool)
        start[1:] = h[1:] != h[:-1]
        first = rows[np.maximum.accumulate(np.where(start, np.arange(len(rows)), 0))]
        same = start.copy()
        rest = np.flatnonzero(~start)
        if len(rest):
            same[rest] = _rows_equal(keys, rows[rest], first[rest])
        ids[rows[same]] = first[same]
        todo = rows[~same]
    return ids


def _lookup(index: KeyIndex, keys: pa.Table, hashes: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray]:
    """Per batch row: the index row holding its key (-1: not live), and a key id shared by
    the rows of one key."""
    cand = np.flatnonzero(np.isin(index.hashes, hashes))
    both = pa.concat_tables([index.keys.take(pa.array(cand, pa.int64())),
                             keys.cast(index.keys.schema)])
    ids = exact_ids(both, np.concatenate([index.hashes[cand], hashes]))
    kid = ids[len(cand):]
    if not len(cand):
        return np.full(len(kid), -1, dtype=np.int64), kid
    # an index row precedes the batch rows of its hash, so it names its key's group
    found = np.where(kid < len(cand), cand[np.minimum(kid, len(cand) - 1)], -1)
    return found, kid


# -- routing -------------------------------------------------------------------------------------

def check_options(schema: TableSchema, opts: CoreOptions, table_path: str) -> None:
    if opts.merge_engine not in ENGINES:
        raise UnsupportedError(f"{table_path}: merge-engine={opts.merge_engine} has no "
                               "cross-partition upsert rule")
    if opts.get(INDEX_TTL) not in (None, ""):
        raise UnsupportedError(f"{table_path}: {INDEX_TTL}={opts.get(INDEX_TTL)} is not "
                               "supported (keys older than the TTL could be duplicated)")


def _unify(index: KeyIndex, batch_bytes: list[bytes], batch_values: list[tuple]
           ) -> tuple[list[tuple], np.ndarray]:
    """Partition values per code over the index's and the batch's partitions, and the code
    of each batch partition."""
    where = {p: i for i, p in enumerate(index.partitions)}
    values = list(index.values)
    remap = np.empty(len(batch_bytes), dtype=np.int64)
    for j, (p, v) in enumerate(zip(batch_bytes, batch_values)):
        if p not in where:
            where[p] = len(values)
            values.append(tuple(v))
        remap[j] = where[p]
    return values, remap


def _fill(counts: dict[int, int], m: int, owner: int, n: int, target: int) -> np.ndarray:
    """Buckets of `m` new keys of one assigner, in order: its buckets holding fewer than
    `target` keys, lowest first, then the lowest ids it owns that hold none."""
    out, left = [], m
    for b in sorted(counts):
        if left == 0:
            break
        room = target - counts[b]
        if b % n == owner and room > 0:
            take = min(room, left)
            out.append(np.full(take, b, np.int64))
            counts[b] += take
            left -= take
    b = owner
    while left > 0:
        if b not in counts:
            take = min(target, left)
            out.append(np.full(take, b, np.int64))
            counts[b] = take
            left -= take
        b += n
    return np.concatenate(out) if out else np.empty(0, np.int64)


@dataclass
class Routed:
    rows: pa.Table  # the rows to write, in arrival order (moves' -D rows included)
    buckets: np.ndarray
    part_codes: np.ndarray
    part_values: list[tuple]


def route(index: KeyIndex, schema: TableSchema, rows: pa.Table, batch_codes: np.ndarray,
          batch_bytes: list[bytes], batch_values: list[tuple]) -> Routed:
    """Route conformed rows (with `_VALUE_KIND`) of a cross-partition table (module doc)."""
    opts = CoreOptions(schema.options)
    target, _, n = options_of(opts)
    engine = opts.merge_engine
    values, remap = _unify(index, batch_bytes, batch_values)
    codes = remap[batch_codes] if len(batch_codes) else np.empty(0, np.int64)
    keys = key_columns(schema, rows)
    hashes = key_hashes(schema, keys)
    found, kid = _lookup(index, keys, hashes)
    size = rows.num_rows
    owner = np.abs(np.fmod(hashes.astype(np.int64), n))
    ipart = np.where(found >= 0, index.part[np.maximum(found, 0)] if len(index.part) else -1, -1)
    ibucket = np.where(found >= 0, index.bucket[np.maximum(found, 0)] if len(index.bucket)
                       else -1, -1)
    # each row's previous row of the same key (-1: its first in the batch)
    by_key = np.argsort(kid, kind="stable")
    prev = np.full(size, -1, dtype=np.int64)
    if size > 1:
        same = kid[by_key[1:]] == kid[by_key[:-1]]
        prev[by_key[1:][same]] = by_key[:-1][same]
    seg_start = np.ones(size, dtype=bool)
    if size > 1:
        seg_start[1:] = kid[by_key[1:]] != kid[by_key[:-1]]
    assigned = np.full(size, -1, dtype=np.int64)
    if engine == "deduplicate":
        prev_part = np.where(prev >= 0, codes[np.maximum(prev, 0)], ipart)
        demand = prev_part != codes  # new key (prev_part -1) or a move
        move = demand & (prev_part >= 0)
        # the row of each key's latest placement at or before each row (-1: the index's)
        pos = np.arange(size)
        marked = np.where(demand[by_key] | seg_start, pos, -1)
        last = np.maximum.accumulate(marked) if size else marked
        placed_sorted = np.where(demand[by_key[np.maximum(last, 0)]], by_key[np.maximum(last, 0)],
                                 -1)
        placed = np.empty(size, dtype=np.int64)
        placed[by_key] = placed_sorted
        release_src = np.where(prev >= 0, placed[np.maximum(prev, 0)], -1)
        _assign(assigned, demand, codes, move, prev_part, release_src, ibucket, owner, index,
                n, target)
        own = np.where(placed >= 0, assigned[np.maximum(placed, 0)], ibucket)
        old_bucket = np.where(release_src >= 0, assigned[np.maximum(release_src, 0)], ibucket)
        moved = np.flatnonzero(move)
        take = np.concatenate([moved, np.arange(size)])
        order = np.argsort(np.concatenate([2 * moved, 2 * np.arange(size) + 1]), kind="stable")
        take = take[order]
        out_codes = np.concatenate([prev_part[moved], codes])[order]
        out_buckets = np.concatenate([old_bucket[moved], own])[order]
        retract = np.concatenate([np.ones(len(moved), bool), np.zeros(size, bool)])[order]
    else:
        first_row = by_key[np.maximum.accumulate(np.where(seg_start, np.arange(size), 0))] \
            if size else np.empty(0, np.int64)
        first = np.empty(size, dtype=np.int64)
        first[by_key] = first_row
        demand = (found < 0) & (prev < 0)
        _assign(assigned, demand, codes, np.zeros(size, bool), ipart, np.full(size, -1),
                ibucket, owner, index, n, target)
        place_part = np.where(found >= 0, ipart, codes[first] if size else ipart)
        place_bucket = np.where(found >= 0, ibucket, assigned[first] if size else ibucket)
        keep = np.arange(size) if engine != "first-row" else np.flatnonzero(place_part == codes)
        take, out_codes, out_buckets = keep, place_part[keep], place_bucket[keep]
        retract = np.zeros(len(keep), dtype=bool)
    out = rows.take(pa.array(take, pa.int64())) if len(take) != size or (
        take != np.arange(size)).any() else rows
    if retract.any():
        kinds = out[VALUE_KIND].to_numpy().astype(np.int8)
        kinds[retract] = DELETE
        out = out.set_column(out.column_names.index(VALUE_KIND), VALUE_KIND, pa.array(kinds))
    if len(take) and (out_codes != codes[take]).any():
        out = _set_partitions(out, schema, values, out_codes)
    return Routed(out, out_buckets.astype(np.int64), out_codes.astype(np.int64), values)


def _assign(assigned: np.ndarray, demand: np.ndarray, codes: np.ndarray, release: np.ndarray,
            release_part: np.ndarray, release_src: np.ndarray, ibucket: np.ndarray,
            owner: np.ndarray, index: KeyIndex, n: int, target: int) -> None:
    """Fill `assigned` at the demand rows: per (partition, assigner), demands and releases (a
    key moving out lowers its old bucket's count) are applied in arrival order."""
    d_rows = np.flatnonzero(demand)
    if not len(d_rows):
        return
    d_group = codes[d_rows] * n + owner[d_rows]
    r_rows = np.flatnonzero(release)
    r_group = release_part[r_rows] * n + owner[r_rows]
    i_group = index.part * n + np.abs(np.fmod(index.hashes.astype(np.int64), n))
    wanted = np.unique(d_group)
    sel = np.flatnonzero(np.isin(i_group, wanted))
    pairs, counts = (np.unique(np.stack([i_group[sel], index.bucket[sel]], axis=1), axis=0,
                               return_counts=True) if len(sel) else (np.empty((0, 2)), []))
    held: dict[int, dict[int, int]] = {}
    for (g, b), c in zip(pairs.tolist(), np.asarray(counts).tolist()):
        held.setdefault(int(g), {})[int(b)] = int(c)
    for g in wanted.tolist():
        state = held.get(g, {})
        mine = g % n
        times = d_rows[d_group == g]
        rel = r_rows[r_group == g]
        rel = rel[rel < times[-1]]  # releases after the last demand change nothing
        if not len(rel):
            assigned[times] = _fill(state, len(times), mine, n, target)
            continue
        events = np.concatenate([times, rel])
        is_rel = np.concatenate([np.zeros(len(times), bool), np.ones(len(rel), bool)])
        order = np.argsort(events, kind="stable")
        events, is_rel = events[order], is_rel[order]
        cuts = np.flatnonzero(is_rel[1:] != is_rel[:-1]) + 1
        for run, kind in zip(np.split(events, cuts), np.split(is_rel, cuts)):
            if not kind[0]:
                assigned[run] = _fill(state, len(run), mine, n, target)
                continue
            src = release_src[run]
            olds = np.where(src >= 0, assigned[np.maximum(src, 0)], ibucket[run])
            for b, c in zip(*np.unique(olds, return_counts=True)):
                state[int(b)] = state.get(int(b), 0) - int(c)


def _set_partitions(rows: pa.Table, schema: TableSchema, values: list[tuple],
                    codes: np.ndarray) -> pa.Table:
    """`rows` with their partition columns set to the values of each row's partition code."""
    fields = arrow_schema(schema.partition_fields(), with_id=False)
    idx = pa.array(codes, pa.int64())
    for i, f in enumerate(fields):
        col = pa.array([v[i] for v in values], type=f.type).take(idx)
        rows = rows.set_column(rows.column_names.index(f.name), f.name, col)
    return rows


def locate(index: KeyIndex, schema: TableSchema, data: pa.Table
           ) -> tuple[pa.Table, np.ndarray]:
    """Rows of a delete by key, each with its key's partition from the index, and which input
    rows they are: keys that are not live are left out (there is nothing to delete)."""
    keys = key_columns(schema, data)
    found, _ = _lookup(index, keys, key_hashes(schema, keys))
    hit = np.flatnonzero(found >= 0)
    out = data.take(pa.array(hit, pa.int64()))
    fields = arrow_schema(schema.partition_fields(), with_id=False)
    for f in fields:
        if f.name not in out.column_names:
            out = out.append_column(f.name, pa.nulls(out.num_rows, f.type))
    return _set_partitions(out, schema, index.values, index.part[found[hit]]), hit
