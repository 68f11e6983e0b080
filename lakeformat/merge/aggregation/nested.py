"""`collect` and `merge_map` (Paimon's FieldCollectAgg, FieldMergeMapAgg) on whole columns.

Elements are compared through integer codes (`codes.element_codes`): equal values get equal codes,
nulls one code of their own, floats compare by bits (like Java's Float.equals). Every fold is
expressed per (group, element) over the flattened elements, so no Python loop runs per row.

collect: without `distinct` it concatenates; a retract removes, for each retracted element, the
first equal element still in the accumulator; a retract on a null accumulator stays null.
With `distinct`, elements of a plain type (Java HashSet) are all deduplicated by any agg;
elements of ROW/ARRAY/MAP/BINARY types (Java's list + equaliser) are only appended when absent,
so duplicates already in the accumulator stay. aggReversed equals agg for collect, except
behind `ignore-retract`, whose Java wrapper falls back to agg(v, acc): the row then comes first.

merge_map: agg(null, v) and agg(acc, null) return the non-null map unchanged; otherwise the
input's entries overwrite; aggReversed = agg(v, acc) only adds absent keys; a retract removes
the retracted keys (not their values) and leaves a null accumulator null.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.merge.aggregation.base import FieldAggregator, Rows, build_map, choose
from lakeformat.merge.codes import as_list, element_codes, first_occurrence, list_lengths
from lakeformat.options import parse_bool

_EQUALISER_ROOTS = ("ARRAY", "MULTISET", "MAP", "ROW", "BINARY", "VARBINARY")


def _pair_key(group: np.ndarray, code: np.ndarray) -> np.ndarray:
    """One int64 per (group, code) pair, for sorting and uniqueness."""
    width = int(code.max(initial=0)) + 2
    return group * width + (code + 1)


def _segmented_cumsum(values: np.ndarray, new_part: np.ndarray) -> np.ndarray:
    total = np.cumsum(values)
    starts = np.flatnonzero(new_part)
    base = np.where(starts > 0, total[starts - 1], 0)
    part = np.cumsum(new_part) - 1
    return total - base[part]


def _segmented_cummax(values: np.ndarray, new_part: np.ndarray) -> np.ndarray:
    part = np.cumsum(new_part) - 1
    lo = values.min(initial=0)
    span = int(values.max(initial=0) - lo) + 1
    lifted = (values - lo) + part * span
    return np.maximum.accumulate(lifted) - part * span + lo


def _assemble_lists(elems: pa.Array, pick: np.ndarray, group: np.ndarray, n_groups: int,
                    is_null: np.ndarray, list_type: pa.DataType) -> pa.Array:
    """List per group from elements `pick` (already in output order, grouped ascending)."""
    counts = np.bincount(group, minlength=n_groups)
    offsets = np.zeros(n_groups + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    items = elems.take(pa.array(pick, pa.int64())) if len(pick) else elems.slice(0, 0)
    mask = pa.array(is_null) if is_null.any() else None
    if pa.types.is_map(list_type):
        return build_map(offsets, items, mask, list_type)
    if pa.types.is_large_list(list_type):
        return pa.LargeListArray.from_arrays(pa.array(offsets), items, type=list_type,
                                             mask=mask)
    return pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), items, type=list_type,
                                    mask=mask)


class _Flat:
    """The elements of a list/map column with the row each came from."""

    def __init__(self, rows: Rows):
        lists = as_list(rows.values)
        self.elems = pc.list_flatten(lists)
        self.row = pc.list_parent_indices(lists).to_numpy().astype(np.int64)
        self.group = rows.gid[self.row]
        self.op = rows.ops[self.row]
        self.n = len(self.row)


def _acc_not_null(rows: Rows, ops: np.ndarray) -> np.ndarray:
    """Groups whose accumulator ends non-null: a value was set by a reset or an agg."""
    setter = rows.valid & ((ops == 1) | (ops == 2) | (ops == 4))
    return np.bincount(rows.gid[setter], minlength=rows.n_groups) > 0


# --------------------------------------------------------------------------------------------
# collect
# --------------------------------------------------------------------------------------------

class CollectAgg(FieldAggregator):
    supports_retract = True

    def __init__(self, name: str, field, options: Mapping[str, str]):
        super().__init__(name, field, options)
        self.distinct = parse_bool(options, f"fields.{field.name}.distinct", False)
        self.equaliser = field.type.element.root in _EQUALISER_ROOTS

    def _fold(self, rows: Rows) -> pa.Array:
        tail = rows.tail()
        ops = tail.ops
        if self.ignore_retract and (ops == 2).any():
            pick, group = self._with_prepends(tail)
        else:
            pick, group = self._queue(tail, np.where(ops == 2, 1, ops).astype(np.int8))
        flat_elems = pc.list_flatten(as_list(tail.values))
        not_null = _acc_not_null(tail, ops)
        return _assemble_lists(flat_elems, pick, group, tail.n_groups, ~not_null,
                               self.arrow_type)

    def _queue(self, rows: Rows, ops: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Appends and retracts: per (group, element) a queue whose oldest entries go first."""
        flat = _Flat(rows)
        if flat.n == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        codes = element_codes(flat.elems)
        op = ops[flat.row]
        idx = np.arange(flat.n, dtype=np.int64)
        seed = op == 4
        add = op == 1
        ret = op == 3
        keep = np.ones(flat.n, dtype=bool)
        if self.distinct:
            # a value repeated inside one input row is added once
            keep &= ~add | first_occurrence(_pair_key(flat.row, codes))
            if not self.equaliser:
                keep &= self._hashset_first_agg(rows, ops, flat, codes)
        sel = np.flatnonzero(keep)
        if len(sel) == 0:
            return sel, sel
        key = _pair_key(flat.group[sel], codes[sel])
        order = np.lexsort((idx[sel], key))
        ev = sel[order]
        k = key[order]
        new_part = np.ones(len(ev), dtype=bool)
        new_part[1:] = k[1:] != k[:-1]
        n_ev = len(ev)
        big = n_ev + 10
        plus = seed[ev] | (add[ev] & (not self.distinct))
        d = np.where(plus, 1, np.where(ret[ev], -1, 0)).astype(np.int64)
        f = np.where(plus, -big, np.where(ret[ev], 0, 1)).astype(np.int64)
        dsum = _segmented_cumsum(d, new_part)
        fmax = dsum + _segmented_cummax(f - dsum, new_part)
        count = np.maximum(dsum, fmax)
        before = np.zeros(n_ev, dtype=np.int64)
        before[1:] = count[:-1]
        before[new_part] = 0
        occurs = plus | (add[ev] & (before == 0))
        part = np.cumsum(new_part) - 1
        last_of_part = np.append(np.flatnonzero(new_part)[1:] - 1, n_ev - 1)
        final = count[last_of_part][part]
        occ_after = _segmented_cumsum(occurs[::-1].astype(np.int64),
                                      np.append(new_part[1:], True)[::-1])[::-1] - occurs
        survive = occurs & (occ_after < final)
        pick = np.sort(ev[survive])
        return pick, flat.group[pick]

    def _hashset_first_agg(self, rows: Rows, ops: np.ndarray, flat: _Flat,
                           codes: np.ndarray) -> np.ndarray:
        """Java's HashSet path dedups the whole accumulator at the first agg call; retracts
        before it act on the reset value's duplicates. Returns the elements to keep."""
        n_groups = rows.n_groups
        seed_valid = np.zeros(n_groups, dtype=bool)
        heads = rows.gstart[rows.gcount > 0]
        head_ok = (ops[heads] == 4) & rows.valid[heads]
        seed_valid[rows.gid[heads]] = head_ok
        call = (ops == 1) & (rows.valid | seed_valid[rows.gid])
        pos = np.where(call, np.arange(rows.n), rows.n)
        first_call = np.full(n_groups, rows.n, dtype=np.int64)
        present = rows.gcount > 0
        first_call[present] = np.minimum.reduceat(pos, rows.gstart[present])
        has_call = first_call <= rows.gend
        a = first_call[flat.group]
        op = flat.op
        hit = has_call[flat.group]
        seed = (op == 4) & hit
        early_ret = (op == 3) & hit & (flat.row < a)
        keep = ~early_ret
        if not seed.any():
            return keep
        key = _pair_key(flat.group, codes)
        seed_keys, seed_count = np.unique(key[seed], return_counts=True)
        ret_keys, ret_count = np.unique(key[early_ret], return_counts=True)
        removed = np.zeros(len(seed_keys), dtype=np.int64)
        at = np.searchsorted(ret_keys, seed_keys)
        ok = (at < len(ret_keys))
        ok[ok] = ret_keys[at[ok]] == seed_keys[ok]
        removed[ok] = ret_count[at[ok]]
        left = np.minimum(1, np.maximum(0, seed_count - removed))
        # keep the last seed occurrence of each value that is left
        seed_idx = np.flatnonzero(seed)
        rev = seed_idx[::-1]
        last_seen = first_occurrence(key[rev])
        allowed = left[np.searchsorted(seed_keys, key[rev])] > 0
        drop = np.zeros(len(keep), dtype=bool)
        drop[rev[~(last_seen & allowed)]] = True
        return keep & ~drop

    def _with_prepends(self, rows: Rows) -> tuple[np.ndarray, np.ndarray]:
        """ignore-retract + reversed rows (agg(v, acc)): no retracts, rows may go first."""
        flat = _Flat(rows)
        if flat.n == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        ops = rows.ops
        row_key = np.where(ops == 2, -np.arange(rows.n), np.arange(rows.n))
        row_key = np.where(ops == 4, 0, row_key)
        idx = np.arange(flat.n, dtype=np.int64)
        order = np.lexsort((idx, row_key[flat.row], flat.group))
        if not self.distinct:
            return order, flat.group[order]
        codes = element_codes(flat.elems)
        key = _pair_key(flat.group, codes)[order]
        if not self.equaliser:
            # a HashSet: deduplicated once anything was aggregated (the reset value alone is
            # returned as it is)
            calls = np.bincount(rows.gid[(ops == 1) | (ops == 2)], minlength=rows.n_groups)
            plain_seed = (calls == 0)[flat.group[order]]
            keep = first_occurrence(key) | plain_seed
            pick = order[keep]
            return pick, flat.group[pick]
        # the list + equaliser: the last reversed row (or the reset value) stays as it is at the
        # front; everything else is appended only when absent
        n_groups = rows.n_groups
        rev_pos = np.where(ops == 2, np.arange(rows.n), -1)
        last_rev = np.full(n_groups, -1, dtype=np.int64)
        present = rows.gcount > 0
        last_rev[present] = np.maximum.reduceat(rev_pos, rows.gstart[present])
        has_rev = last_rev >= rows.gstart
        block_row = np.where(has_rev, last_rev, -1)
        head_seed = np.full(n_groups, -1, dtype=np.int64)
        heads = rows.gstart[present]
        is_seed = ops[heads] == 4
        head_seed[rows.gid[heads[is_seed]]] = heads[is_seed]
        block_row = np.where(has_rev, block_row, head_seed)
        row_of = flat.row[order]
        in_block = row_of == block_row[flat.group[order]]
        block_keys = np.unique(key[in_block])
        outside = ~in_block
        fresh = outside & ~np.isin(key, block_keys)
        first_fresh = np.zeros(len(key), dtype=bool)
        fi = np.flatnonzero(fresh)
        first_fresh[fi[first_occurrence(key[fi])]] = True
        pick = order[in_block | first_fresh]
        return pick, flat.group[pick]


# --------------------------------------------------------------------------------------------
# merge_map
# --------------------------------------------------------------------------------------------

class MergeMapAgg(FieldAggregator):
    supports_retract = True

    def _fold(self, rows: Rows) -> pa.Array:
        tail = rows.tail()
        ops, valid = tail.ops, tail.valid
        n, n_groups = tail.n, tail.n_groups
        idx = np.arange(n, dtype=np.int64)
        sizes = list_lengths(tail.values)
        setter = valid & ((ops == 1) | (ops == 2) | (ops == 4))
        # is the accumulator non-null just before each row?
        pos = np.where(setter, idx, -1)
        upto = np.maximum.accumulate(pos)
        before = np.full(n, -1, dtype=np.int64)
        before[1:] = upto[:-1]
        acc_before = before >= tail.gstart[tail.gid]
        transform = acc_before & valid & (((ops == 1) | (ops == 2)) | ((ops == 3) & (sizes > 0)))
        changed = np.bincount(tail.gid[transform], minlength=n_groups) > 0
        # groups never transformed keep the single map that made them non-null, as it is
        first_set = np.full(n_groups, n, dtype=np.int64)
        present = tail.gcount > 0
        first_set[present] = np.minimum.reduceat(np.where(setter, idx, n), tail.gstart[present])
        has_set = first_set <= tail.gend
        as_is = tail.values.take(pa.array(np.where(has_set, first_set, 0), mask=~has_set))
        if not changed.any():
            return as_is
        merged = self._merged(tail, transform, acc_before)
        return choose(changed, merged, as_is)

    def _merged(self, rows: Rows, transform: np.ndarray, acc_before: np.ndarray) -> pa.Array:
        flat = _Flat(rows)
        ops = rows.ops
        n_groups = rows.n_groups
        entries = flat.elems
        codes = element_codes(entries.field(0))
        op = flat.op
        # retracts on a null accumulator do nothing
        live = ~((op == 3) & ~acc_before[flat.row])
        key = _pair_key(flat.group, codes)
        idx = np.arange(flat.n, dtype=np.int64)
        sel = np.flatnonzero(live)
        order = sel[np.lexsort((idx[sel], key[sel]))]
        k = key[order]
        new_part = np.ones(len(order), dtype=bool)
        new_part[1:] = k[1:] != k[:-1]
        part = np.cumsum(new_part) - 1
        n_part = int(part[-1]) + 1 if len(part) else 0
        o = op[order]
        decisive = (o == 1) | (o == 3) | (o == 4)
        ev = np.arange(len(order))
        last_dec = np.full(n_part, -1, dtype=np.int64)
        np.maximum.at(last_dec, part[decisive], ev[decisive])
        # a reversed row only fills an absent key; within that row its last entry counts
        row_o = flat.row[order]
        rev = o == 2
        after = ev > last_dec[part]
        cand = rev & after
        first_rev_row = np.full(n_part, np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(first_rev_row, part[cand], row_o[cand])
        in_first = cand & (row_o == first_rev_row[part])
        last_rev_ev = np.full(n_part, -1, dtype=np.int64)
        np.maximum.at(last_rev_ev, part[in_first], ev[in_first])
        dec_ok = last_dec >= 0
        dec_ok[dec_ok] = o[last_dec[dec_ok]] != 3
        winner = np.where(dec_ok, last_dec, last_rev_ev)
        exists = winner >= 0
        first_ev = np.flatnonzero(new_part)
        pick_ev = winner[exists]
        pick = order[pick_ev]
        sort_by = order[first_ev[exists]]
        pick = pick[np.argsort(sort_by, kind="stable")]
        group = flat.group[pick]
        by_group = np.argsort(group, kind="stable")
        pick = pick[by_group]
        not_null = _acc_not_null(rows, ops)
        return _assemble_lists(entries, pick, flat.group[pick], n_groups, ~not_null,
                               self.arrow_type)
