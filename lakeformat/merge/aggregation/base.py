"""What every aggregate function builds on: `FieldAggregator` and the row layout its `_fold`
works on.

`FieldAggregator.reduce` folds every key group of a sorted column at once. Per row, `ops[i]`
says what the row does to the group's accumulator (which starts as null, or as `init[g]` where
`init_mask[g]`):

    0 skip · 1 agg(acc, v) · 2 aggReversed(acc, v) · 3 retract(acc, v) · 4 reset: acc = v

The semantics are those of Paimon's Java `FieldAggregator` subclasses, including their quirks
(documented on each class). State that Java resets per key (first_value's "initialized" flag)
starts fresh in every group and is not cleared by op 4, as Java's `reset()` runs only between
keys. Everything is computed on whole columns; functions whose fold has no closed form walk the
rows of all groups in lock-step (`rounds`: the k-th row of every group at once). Where Java
returns elements in `HashMap`/`HashSet` iteration order (collect with distinct, merge_map,
nested_update with a nested key, nested_partial_update, merge_map_with_keytime) lakeformat
returns them in first-appearance order: the same elements, a deterministic order.

`Rows` is a column of one field in fold order with ops 0 removed and, for every group with an
initial accumulator, that value inserted as a leading op-4 row ("acc = v"). So each function
only sees ops 1..4 and never needs to special-case `init`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.errors import InvalidOptionError, SchemaMismatchError
from lakeformat.schema.types import DataField, to_arrow


def as_array(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        if values.num_chunks == 1:
            return values.chunk(0)
        if values.num_chunks == 0:
            return pa.array([], type=values.type)
        return values.combine_chunks()
    return values


_NUMPY_TYPES = {pa.int8(): np.int8, pa.int16(): np.int16, pa.int32(): np.int32,
                pa.int64(): np.int64, pa.float32(): np.float32, pa.float64(): np.float64,
                pa.bool_(): np.bool_}


def numpy_dtype(arrow_type: pa.DataType) -> type:
    """numpy dtype of a fixed-width Arrow type (without pandas, which pyarrow 16 needs)."""
    return _NUMPY_TYPES[arrow_type]


def choose(mask: np.ndarray, if_true: pa.Array | pa.ChunkedArray,
           if_false: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Element-wise pick, for every type (pyarrow 16's if_else has no map kernel)."""
    a, b = as_array(if_true), as_array(if_false)
    if not mask.any():
        return b
    if mask.all():
        return a
    n = len(a)
    idx = np.where(mask, np.arange(n), np.arange(n) + n)
    return pa.concat_arrays([a, b.cast(a.type) if b.type != a.type else b]).take(pa.array(idx))


def build_map(offsets: np.ndarray, entries: pa.Array, mask: pa.Array | None,
              map_type: pa.DataType) -> pa.Array:
    """A map array from offsets and key/value entries (pyarrow 16 has no MapArray mask)."""
    as_entries = pa.struct([map_type.key_field, map_type.item_field])
    list_type = pa.list_(pa.field("entries", as_entries, nullable=False))
    if entries.type != as_entries:
        entries = pa.StructArray.from_arrays([entries.field(0), entries.field(1)],
                                             fields=[map_type.key_field, map_type.item_field])
    lists = pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), entries,
                                     type=list_type, mask=mask)
    return lists.view(map_type)


def int_option(options: Mapping[str, str], key: str, default: int) -> int:
    raw = options.get(key)
    if raw is None:
        return default
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise InvalidOptionError(f"option {key!r} must be an integer, got {raw!r}") from None
    if not -(2**31) <= value < 2**31:
        raise InvalidOptionError(f"option {key!r} must be a 32-bit integer, got {raw!r}")
    return value


class Rows:
    """One field's rows in fold order, grouped: rows gstart[g] .. gstart[g]+gcount[g]-1."""

    def __init__(self, values: pa.Array, ops: np.ndarray, gid: np.ndarray,
                 gstart: np.ndarray, gcount: np.ndarray):
        self.values = values
        self.ops = ops
        self.gid = gid
        self.gstart = gstart
        self.gcount = gcount
        self._valid: np.ndarray | None = None
        self.plain = False  # every row is op 1 (plain agg): fast paths apply

    @property
    def n(self) -> int:
        return len(self.ops)

    @property
    def n_groups(self) -> int:
        return len(self.gstart)

    @property
    def gend(self) -> np.ndarray:
        """Last row of each group (gstart - 1 for an empty group)."""
        return self.gstart + self.gcount - 1

    @property
    def valid(self) -> np.ndarray:
        if self._valid is None:
            if self.values.null_count == 0:
                self._valid = np.ones(self.n, dtype=bool)
            else:
                self._valid = pc.is_valid(self.values).to_numpy(zero_copy_only=False)
        return self._valid

    @staticmethod
    def build(values: pa.Array, starts: np.ndarray, ends: np.ndarray, ops: np.ndarray,
              init: pa.Array | None, init_mask: np.ndarray | None) -> Rows:
        n_groups = len(starts)
        sizes = ends - starts + 1
        keep = ops != 0
        seed = np.zeros(n_groups, dtype=bool)
        if init is not None:
            init = as_array(init)
            if init.type != values.type:
                init = init.cast(values.type)
            seed = np.ones(n_groups, dtype=bool) if init_mask is None else \
                np.asarray(init_mask, dtype=bool).copy()
            if init.null_count:
                seed &= pc.is_valid(init).to_numpy(zero_copy_only=False)
        gid_all = group_ids(starts, ends)
        if keep.all() and not seed.any():
            rows = Rows(values, ops, gid_all, starts, sizes)
            rows.plain = bool((ops == 1).all())
            return rows
        kept_count = np.bincount(gid_all[keep], minlength=n_groups).astype(np.int64)
        seed_count = seed.astype(np.int64)
        count = kept_count + seed_count
        new_start = np.cumsum(count) - count
        kept_before = np.cumsum(kept_count) - kept_count
        kept_gid = gid_all[keep]
        rank = np.arange(len(kept_gid), dtype=np.int64) - kept_before[kept_gid]
        kept_pos = new_start[kept_gid] + seed_count[kept_gid] + rank
        seed_groups = np.flatnonzero(seed)
        perm = np.empty(len(kept_gid) + len(seed_groups), dtype=np.int64)
        perm[kept_pos] = np.arange(len(kept_gid))
        perm[new_start[seed_groups]] = len(kept_gid) + np.arange(len(seed_groups))
        parts = [values.filter(pa.array(keep))]
        if len(seed_groups):
            parts.append(init.take(pa.array(seed_groups)))  # type: ignore[union-attr]
        combined = pa.concat_arrays(parts) if len(parts) > 1 else parts[0]
        new_values = combined.take(pa.array(perm)) if len(perm) else combined
        new_ops = np.empty(len(perm), dtype=np.int8)
        new_ops[kept_pos] = ops[keep]
        new_ops[new_start[seed_groups]] = 4
        new_gid = np.repeat(np.arange(n_groups, dtype=np.int64), count)
        return Rows(new_values, new_ops, new_gid, new_start, count)

    def subset(self, keep: np.ndarray) -> Rows:
        """The rows where `keep` (order kept; groups may become empty)."""
        if keep.all():
            return self
        count = np.bincount(self.gid[keep], minlength=self.n_groups).astype(np.int64)
        start = np.cumsum(count) - count
        out = Rows(self.values.filter(pa.array(keep)), self.ops[keep], self.gid[keep],
                   start, count)
        if self._valid is not None:
            out._valid = self._valid[keep]
        return out

    def tail(self) -> Rows:
        """Rows from the last reset (op 4) of each group on: all that decides the result of
        functions that cannot fail on the rows before it."""
        if not (self.ops == 4).any():
            return self
        last, found = group_last_index(self.ops == 4, self)
        begin = np.where(found, last, self.gstart)
        return self.subset(np.arange(self.n) >= begin[self.gid])

    def segments(self) -> Segments:
        head = self.ops == 4
        present = self.gcount > 0
        head[self.gstart[present]] = True
        return Segments(self, head)

    def result(self, idx: np.ndarray, found: np.ndarray) -> pa.Array:
        return take_or_null(self.values, idx, found)


class Segments:
    """Runs of rows that start at a group's first row or at a reset (op 4)."""

    def __init__(self, rows: Rows, head: np.ndarray):
        self.head = head
        self.start = np.flatnonzero(head).astype(np.int64)
        ends = np.empty_like(self.start)
        if len(self.start):
            ends[:-1] = self.start[1:]
            ends[-1] = rows.n
        self.length = ends - self.start
        self.id = np.cumsum(head) - 1  # segment of every row
        self.gid = rows.gid[self.start]
        self.is_reset = rows.ops[self.start] == 4
        present = rows.gcount > 0
        self.last_of_group = np.full(rows.n_groups, -1, dtype=np.int64)
        self.last_of_group[present] = self.id[rows.gend[present]]

    def __len__(self) -> int:
        return len(self.start)


_GID_CACHE: tuple = (None, None, None)


def group_ids(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Group number of every row; cached for the columns of one merge (same arrays). The cache
    is one tuple replaced whole, so a merge in another thread never sees a mixed entry."""
    global _GID_CACHE
    cached_starts, cached_ends, cached_gid = _GID_CACHE
    if cached_starts is starts and cached_ends is ends:
        return cached_gid
    gid = np.repeat(np.arange(len(starts), dtype=np.int64), ends - starts + 1)
    _GID_CACHE = (starts, ends, gid)
    return gid


def group_last_index(mask: np.ndarray, rows: Rows) -> tuple[np.ndarray, np.ndarray]:
    """Per group, the last row where `mask` (-1 and found=False when there is none)."""
    n_groups = rows.n_groups
    last = np.full(n_groups, -1, dtype=np.int64)
    if rows.n == 0:
        return last, np.zeros(n_groups, dtype=bool)
    pos = np.where(mask, np.arange(rows.n, dtype=np.int64), -1)
    upto = np.maximum.accumulate(pos)
    present = rows.gcount > 0
    last[present] = upto[rows.gend[present]]
    found = present & (last >= rows.gstart)
    last[~found] = -1
    return last, found


def first_index(mask: np.ndarray, begin: np.ndarray, rows: Rows) -> np.ndarray:
    """Per group, the first row >= begin[g] of the group where `mask`, else -1."""
    n = rows.n
    out = np.full(rows.n_groups, -1, dtype=np.int64)
    if n == 0:
        return out
    pos = np.where(mask, np.arange(n, dtype=np.int64), n)
    nxt = np.minimum.accumulate(pos[::-1])[::-1]
    end = rows.gend
    ok = (rows.gcount > 0) & (begin <= end)
    cand = nxt[np.clip(begin, 0, n - 1)]
    ok &= cand <= end
    out[ok] = cand[ok]
    return out


def take_or_null(values: pa.Array, idx: np.ndarray, found: np.ndarray) -> pa.Array:
    if len(values) == 0:
        return pa.nulls(len(idx), type=values.type)
    return values.take(pa.array(np.where(found, idx, 0), mask=~found))


def rounds(seg_start: np.ndarray, seg_len: np.ndarray
           ) -> tuple[np.ndarray, Iterator[tuple[int, int, np.ndarray]]]:
    """Walk segments in lock-step: the k-th row of every segment longer than k at once.

    Returns the segment order used (longest first) and an iterator of (k, m, rows): the first
    m segments of that order are still running and `rows` are their k-th rows.
    """
    order = np.argsort(-seg_len, kind="stable")
    lengths = seg_len[order]
    starts = seg_start[order]
    neg = -lengths

    def walk() -> Iterator[tuple[int, int, np.ndarray]]:
        top = int(lengths[0]) if len(lengths) else 0
        for k in range(top):
            m = int(np.searchsorted(neg, -k, side="left"))
            yield k, m, starts[:m] + k

    return order, walk()


class FieldAggregator:
    """One column's aggregate function. Subclasses implement `_fold(rows)`."""

    supports_retract = False
    may_raise_on_agg = False  # can agg(null, v) fail? (then lone records must skip the fold)

    def __init__(self, name: str, field: DataField, options: Mapping[str, str]):
        self.name = name
        self.field = field
        self.options = options
        self.arrow_type = to_arrow(field.type)
        self.ignore_retract = False

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, column={self.field.name!r})"

    def retract_error(self) -> SchemaMismatchError:
        return SchemaMismatchError(
            f"Aggregate function '{self.name}' does not support retraction (column "
            f"{self.field.name!r} received a -U/-D record); to ignore retract messages set "
            f"'fields.{self.field.name}.ignore-retract'='true'")

    def reduce(self, values: pa.Array | pa.ChunkedArray, starts: np.ndarray, ends: np.ndarray,
               ops: np.ndarray, init: pa.Array | None = None,
               init_mask: np.ndarray | None = None) -> pa.Array:
        """Fold each group's rows in order; one value per group (see module docs of ops)."""
        values = as_array(values)
        if values.type != self.arrow_type:
            values = values.cast(self.arrow_type)
        starts = np.asarray(starts, dtype=np.int64)
        ends = np.asarray(ends, dtype=np.int64)
        ops = np.asarray(ops, dtype=np.int8)
        if len(ops) != len(values):
            raise ValueError(f"ops has {len(ops)} entries for {len(values)} values")
        if len(ops) and (ops.min() < 0 or ops.max() > 4):
            raise ValueError("ops must be 0 (skip), 1 (agg), 2 (aggReversed), 3 (retract) "
                             "or 4 (reset)")
        if init is not None and len(init) != len(starts):
            raise ValueError(f"init has {len(init)} entries for {len(starts)} groups")
        retract = ops == 3
        if retract.any():
            if self.ignore_retract:
                ops = np.where(retract, 0, ops).astype(np.int8)
            elif not self.supports_retract:
                raise self.retract_error()
        rows = Rows.build(values, starts, ends, ops, init, init_mask)
        if rows.n == 0:
            return pa.nulls(len(starts), type=self.arrow_type)
        out = as_array(self._fold(rows))
        if out.type != self.arrow_type:
            out = out.cast(self.arrow_type)
        return out

    def _fold(self, rows: Rows) -> pa.Array:  # pragma: no cover - abstract
        raise NotImplementedError
