"""Lock-step folds over tables of nested entries, for the nested-row aggregate functions.

The accumulators of nested_update, nested_partial_update and merge_map_with_keytime are sets of
nested rows whose next state depends on count limits, sequence fields and key strategies. A
`RowsFold` walks the rows of all groups in lock-step (`rounds`): round k applies the k-th row
of every group at once, on a flat table of accumulator entries. Each entry is a nested row given
per field by the pool element (a flattened input element) that supplies the field, so partial
updates can assemble new rows. Subclasses define agg / retract on whole entry tables. This is
the shared base of the `nested_rows` and `keytime` families (it imports only `base` and `codes`).

`_setup` keeps arrays derived from one call's pool on the aggregator, while one engine's
aggregators serve concurrent merges (write and compaction jobs merge their buckets in a thread
pool), so every `reduce` folds on its own shallow copy of the aggregator.
"""

from __future__ import annotations

import copy

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.merge.aggregation.base import FieldAggregator, Rows, build_map, rounds
from lakeformat.merge.codes import as_list, list_lengths


class EntryPool:
    """The flattened input elements of every row: the values entries point at."""

    def __init__(self, rows: Rows):
        lists = as_list(rows.values)
        self.elems = pc.list_flatten(lists)
        self.count = list_lengths(rows.values)
        self.start = np.zeros(rows.n, dtype=np.int64)
        if rows.n:
            self.start[1:] = np.cumsum(self.count)[:-1]
        self.valid = pc.is_valid(self.elems).to_numpy(zero_copy_only=False) \
            if len(self.elems) else np.zeros(0, dtype=bool)


class Entries:
    """Accumulator entries, grouped by slot in order: `src[:, i]` is the pool element giving
    field i (-1: null field), `ok` False for a null nested row."""

    def __init__(self, slot: np.ndarray, src: np.ndarray, ok: np.ndarray):
        self.slot = slot
        self.src = src
        self.ok = ok

    @staticmethod
    def empty(width: int) -> Entries:
        return Entries(np.zeros(0, dtype=np.int64), np.zeros((0, width), dtype=np.int64),
                        np.zeros(0, dtype=bool))

    def __len__(self) -> int:
        return len(self.slot)

    def take(self, idx: np.ndarray) -> Entries:
        return Entries(self.slot[idx], self.src[idx], self.ok[idx])

    @staticmethod
    def concat(parts: list[Entries]) -> Entries:
        width = parts[0].src.shape[1] if parts else 0
        parts = [p for p in parts if len(p)]
        if not parts:
            return Entries.empty(width)
        return Entries(np.concatenate([p.slot for p in parts]),
                        np.concatenate([p.src for p in parts]),
                        np.concatenate([p.ok for p in parts]))


def operand(pool: EntryPool, rows_of_slot: np.ndarray, field_valid: np.ndarray) -> Entries:
    """The elements of the given rows as entries (slot = position in `rows_of_slot`)."""
    counts = pool.count[rows_of_slot]
    slot = np.repeat(np.arange(len(rows_of_slot), dtype=np.int64), counts)
    first = np.repeat(pool.start[rows_of_slot], counts)
    offs = np.repeat(np.cumsum(counts) - counts, counts)
    src_elem = first + np.arange(len(slot), dtype=np.int64) - offs
    src = np.where(field_valid[:, src_elem], src_elem[None, :], -1).T.copy() \
        if field_valid.shape[0] else np.zeros((len(slot), 0), dtype=np.int64)
    return Entries(slot, src.reshape(len(slot), field_valid.shape[0]), pool.valid[src_elem])


class RowsFold(FieldAggregator):
    """Lock-step fold over entry tables; subclasses define agg and retract on operands."""

    def reduce(self, values: pa.Array | pa.ChunkedArray, starts: np.ndarray, ends: np.ndarray,
               ops: np.ndarray, init: pa.Array | None = None,
               init_mask: np.ndarray | None = None) -> pa.Array:
        # a private copy per call: the state `_setup` stores must not be shared between threads
        return FieldAggregator.reduce(copy.copy(self), values, starts, ends, ops, init,
                                      init_mask)

    def _setup(self, pool: EntryPool) -> None:
        raise NotImplementedError

    def _field_valid(self, pool: EntryPool) -> np.ndarray:
        raise NotImplementedError

    def _agg(self, x: Entries, xv: np.ndarray, y: Entries, yv: np.ndarray
             ) -> tuple[Entries, np.ndarray]:
        raise NotImplementedError

    def _retract(self, x: Entries, xv: np.ndarray, y: Entries, yv: np.ndarray
                 ) -> tuple[Entries, np.ndarray]:
        raise self.retract_error()

    def _materialize(self, pool: EntryPool, entries: Entries) -> pa.Array:
        raise NotImplementedError

    def _fold(self, rows: Rows) -> pa.Array:
        rows = rows.tail() if not self._raises_before_reset() else rows
        pool = EntryPool(rows)
        self._setup(pool)
        field_valid = self._field_valid(pool)
        width = field_valid.shape[0]
        present = np.flatnonzero(rows.gcount > 0)
        order, walk = rounds(rows.gstart[present], rows.gcount[present])
        state = Entries.empty(width)
        acc_ok = np.zeros(len(present), dtype=bool)
        for _k, m, r in walk:
            cut = int(np.searchsorted(state.slot, m))
            x = state.take(np.arange(cut))
            rest = state.take(np.arange(cut, len(state)))
            xv = acc_ok[:m].copy()
            y = operand(pool, r, field_valid)
            yv = rows.valid[r]
            op = rows.ops[r]
            parts, new_ok = [], xv.copy()
            for code in (1, 2, 3, 4):
                sel = np.flatnonzero(op == code)
                if not len(sel):
                    continue
                xs, ys = _select(x, sel), _select(y, sel)
                if code == 1:
                    out, ok = self._agg(xs, xv[sel], ys, yv[sel])
                elif code == 2:
                    out, ok = self._agg(ys, yv[sel], xs, xv[sel])
                elif code == 3:
                    out, ok = self._retract(xs, xv[sel], ys, yv[sel])
                else:
                    out, ok = ys, yv[sel]
                out = Entries(sel[out.slot], out.src.reshape(len(out.slot), width), out.ok)
                parts.append(out)
                new_ok[sel] = ok
            merged = Entries.concat(parts + [Entries.empty(width)])
            merged = merged.take(np.argsort(merged.slot, kind="stable"))
            state = Entries.concat([merged, rest, Entries.empty(width)])
            acc_ok[:m] = new_ok
        # back to groups
        group_of_slot = present[order]
        entries = Entries(group_of_slot[state.slot], state.src, state.ok)
        entries = entries.take(np.argsort(entries.slot, kind="stable"))
        not_null = np.zeros(rows.n_groups, dtype=bool)
        not_null[group_of_slot] = acc_ok
        return self._lists(pool, entries, not_null, rows.n_groups)

    def _lists(self, pool: EntryPool, entries: Entries, not_null: np.ndarray,
               n_groups: int) -> pa.Array:
        """One list (or map) per group from entries sorted by group (slot = group)."""
        items = self._materialize(pool, entries)
        counts = np.bincount(entries.slot, minlength=n_groups)
        offsets = np.zeros(n_groups + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        mask = pa.array(~not_null)
        if pa.types.is_map(self.arrow_type):
            return build_map(offsets, items, mask, self.arrow_type)
        return pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), items,
                                        type=self.arrow_type, mask=mask)

    def _raises_before_reset(self) -> bool:
        return False


def _select(e: Entries, slots: np.ndarray) -> Entries:
    """Entries of the given slots, renumbered 0..len(slots)-1."""
    where = np.full(int(e.slot.max(initial=-1)) + 1, -1, dtype=np.int64)
    keep = slots[slots < len(where)]
    where[keep] = np.flatnonzero(slots < len(where))
    pos = where[e.slot] if len(e) else np.zeros(0, dtype=np.int64)
    idx = np.flatnonzero(pos >= 0)
    out = e.take(idx)
    out.slot = pos[idx]
    return out


def raw_entries(x: Entries, xv: np.ndarray, slots_mask: np.ndarray) -> Entries:
    """The entries of the slots in `slots_mask` unchanged."""
    return x.take(np.flatnonzero(slots_mask[x.slot])) if len(x) else x


def nonnull_entries(e: Entries, slot_ok: np.ndarray) -> Entries:
    if not len(e):
        return e
    return e.take(np.flatnonzero(e.ok & slot_ok[e.slot]))


def rank_in_slot(slot: np.ndarray) -> np.ndarray:
    """0, 1, 2... within each run of equal slots (slot must be sorted)."""
    n = len(slot)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    new = np.ones(n, dtype=bool)
    new[1:] = slot[1:] != slot[:-1]
    starts = np.flatnonzero(new)
    run = np.cumsum(new) - 1
    return np.arange(n, dtype=np.int64) - starts[run]
