"""`listagg`: Paimon's FieldListaggAgg on whole columns.

Java facts kept here: an input that is null or blank (Java's Character.isWhitespace only) leaves
the accumulator alone; a null or blank accumulator is replaced by the input; otherwise
acc + delimiter + v. aggReversed is Java's default agg(v, acc), so a reversed row prepends - and
while the accumulator is blank it replaces it even by a null or blank value. With
`fields.<c>.distinct=true` the accumulator string is split on the whole delimiter (an empty
delimiter splits on a space) and only tokens that are not blank and not yet present are
appended; the first value is taken as it is, duplicates inside it included.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.merge.aggregation.base import FieldAggregator, Rows, rounds
from lakeformat.options import parse_bool

# Java's Character.isWhitespace: space separators except the no-break ones, line/paragraph
# separators, and TAB, LF, VT, FF, CR, FS, GS, RS, US.
_BLANK = (r"^[\t\n\x0b\x0c\r\x1c-\x1f \x{1680}\x{2000}-\x{2006}\x{2008}-\x{200a}"
          r"\x{2028}\x{2029}\x{205f}\x{3000}]*$")


def is_blank(values: pa.Array) -> np.ndarray:
    """True where the string is null, empty or only Java whitespace."""
    if len(values) == 0:
        return np.zeros(0, dtype=bool)
    hit = pc.match_substring_regex(values, _BLANK)
    return pc.fill_null(hit, True).to_numpy(zero_copy_only=False)


def has_border(delimiter: str) -> bool:
    """A delimiter that overlaps itself can re-split differently once strings are joined."""
    return any(delimiter[:k] == delimiter[-k:] for k in range(1, len(delimiter)))


def join_groups(values: pa.Array, group: np.ndarray, order: np.ndarray, n_groups: int,
                delimiter: str) -> tuple[pa.Array, np.ndarray]:
    """Per group, its values sorted by `order` joined by `delimiter` (and which groups had any)."""
    perm = np.lexsort((order, group))
    counts = np.bincount(group, minlength=n_groups)
    offsets = np.zeros(n_groups + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    items = values.take(pa.array(perm)) if len(perm) else values
    lists = pa.LargeListArray.from_arrays(pa.array(offsets, pa.int64()), items)
    return pc.binary_join(lists, delimiter), counts > 0


class ListaggAgg(FieldAggregator):
    def __init__(self, name: str, field, options: Mapping[str, str]):
        super().__init__(name, field, options)
        self.delimiter = options.get(f"fields.{field.name}.list-agg-delimiter", ",")
        self.distinct = parse_bool(options, f"fields.{field.name}.distinct", False)
        self.split_on = self.delimiter if self.delimiter else " "

    def _fold(self, rows: Rows) -> pa.Array:
        tail = rows.tail()
        # the closed form assumes splitting the joined string gives back the joined tokens
        exact = has_border(self.split_on) or self.split_on != self.delimiter
        if self.distinct and ((tail.ops == 2).any() or exact):
            return self._rounds(tail)
        return self._closed_form(tail)

    # -- the closed form ------------------------------------------------------------------
    def _closed_form(self, rows: Rows) -> pa.Array:
        n, n_groups = rows.n, rows.n_groups
        ops = rows.ops
        blank = is_blank(rows.values)
        idx = np.arange(n, dtype=np.int64)
        # f: the row that first makes the accumulator non-blank
        starter = ~blank & ((ops == 1) | (ops == 2) | (ops == 4))
        pos = np.where(starter, idx, n)
        first = np.full(n_groups, n, dtype=np.int64)
        present = rows.gcount > 0
        if present.any():
            first[present] = np.minimum.reduceat(pos, rows.gstart[present])
        has_first = first <= rows.gend
        f = first[rows.gid]
        # groups that stay blank: the last op-2/op-4 row decides (it may be null or blank)
        setter = (ops == 2) | (ops == 4)
        pos = np.where(setter, idx, -1)
        last_set = np.full(n_groups, -1, dtype=np.int64)
        if present.any():
            last_set[present] = np.maximum.reduceat(pos, rows.gstart[present])
        blank_ok = ~has_first & (last_set >= rows.gstart)
        blank_out = rows.values.take(pa.array(np.where(blank_ok, last_set, 0),
                                              mask=~blank_ok))
        if self.distinct:
            joined, _ = self._distinct_join(rows, blank, f)
        else:
            keep = (idx == f) | ((idx > f) & ~blank & ((ops == 1) | (ops == 2)))
            order = np.where(idx == f, 0, np.where(ops == 2, -idx, idx))
            sel = np.flatnonzero(keep)
            joined, _ = join_groups(rows.values.take(pa.array(sel)), rows.gid[sel], order[sel],
                                    n_groups, self.delimiter)
        return pc.if_else(pa.array(has_first), joined, blank_out)

    def _distinct_join(self, rows: Rows, blank: np.ndarray, f: np.ndarray
                       ) -> tuple[pa.Array, np.ndarray]:
        n_groups = rows.n_groups
        idx = np.arange(rows.n, dtype=np.int64)
        later = np.flatnonzero((idx > f) & ~blank & (rows.ops == 1))
        base = np.flatnonzero(idx == f)
        sel = np.concatenate([base, later])
        sel.sort()
        values = rows.values.take(pa.array(sel))
        gid = rows.gid[sel]
        is_base = idx[sel] == f[sel]
        tokens = pc.split_pattern(values, self.split_on)
        flat = pc.list_flatten(tokens)
        parent = pc.list_parent_indices(tokens).to_numpy()
        tok_gid = gid[parent]
        tok_base = is_base[parent]
        codes = pc.dictionary_encode(flat).indices.to_numpy().astype(np.int64)
        key = tok_gid * (int(codes.max(initial=0)) + 1) + codes
        first_seen = np.zeros(len(key), dtype=bool)
        if len(key):
            _, first_at = np.unique(key, return_index=True)
            first_seen[first_at] = True
        new = first_seen & ~tok_base & ~is_blank(flat)
        new_pos = np.flatnonzero(new)
        parts = pa.concat_arrays([values.filter(pa.array(is_base)), flat.take(pa.array(new_pos))])
        part_gid = np.concatenate([gid[is_base], tok_gid[new_pos]])
        part_order = np.concatenate([np.full(int(is_base.sum()), -1, dtype=np.int64), new_pos])
        return join_groups(parts, part_gid, part_order, n_groups, self.delimiter)

    # -- row by row (vectorized across groups) ----------------------------------------------
    def _rounds(self, rows: Rows) -> pa.Array:
        n_groups = rows.n_groups
        present = np.flatnonzero(rows.gcount > 0)
        order, walk = rounds(rows.gstart[present], rows.gcount[present])
        acc = pa.nulls(len(present), pa.string())
        for _k, m, r in walk:
            v = rows.values.take(pa.array(r))
            op = rows.ops[r]
            a = acc.slice(0, m)
            new = self._step(a, v, op)
            acc = pa.concat_arrays([new, acc.slice(m)]) if m < len(acc) else new
        inv = np.empty(len(present), dtype=np.int64)
        inv[order] = np.arange(len(present))
        slot = np.full(n_groups, -1, dtype=np.int64)
        slot[present] = inv
        has = slot >= 0
        return acc.take(pa.array(np.where(has, slot, 0), mask=~has))

    def _step(self, acc: pa.Array, v: pa.Array, op: np.ndarray) -> pa.Array:
        acc_blank = is_blank(acc)
        v_blank = is_blank(v)
        rev = op == 2
        # agg(x, y) with (x, y) = (acc, v) for op 1 and (v, acc) for op 2
        x = pc.if_else(pa.array(rev), v, acc)
        y = pc.if_else(pa.array(rev), acc, v)
        x_blank = np.where(rev, v_blank, acc_blank)
        y_blank = np.where(rev, acc_blank, v_blank)
        both = ~x_blank & ~y_blank
        combined = self._combine(x, y, both)
        out = pc.if_else(pa.array(y_blank), x, pc.if_else(pa.array(x_blank), y, combined))
        return pc.if_else(pa.array(op == 4), v, out)

    def _combine(self, x: pa.Array, y: pa.Array, both: np.ndarray) -> pa.Array:
        m = len(x)
        if not self.distinct:
            return pc.binary_join_element_wise(x, y, self.delimiter)
        sel = np.flatnonzero(both)
        xs, ys = x.take(pa.array(sel)), y.take(pa.array(sel))
        xt, yt = pc.split_pattern(xs, self.split_on), pc.split_pattern(ys, self.split_on)
        x_flat, y_flat = pc.list_flatten(xt), pc.list_flatten(yt)
        x_par = pc.list_parent_indices(xt).to_numpy()
        y_par = pc.list_parent_indices(yt).to_numpy()
        codes = pc.dictionary_encode(pa.concat_arrays([x_flat, y_flat])).indices
        codes = codes.to_numpy().astype(np.int64)
        width = int(codes.max(initial=0)) + 1
        x_key = x_par * width + codes[:len(x_flat)]
        y_key = y_par * width + codes[len(x_flat):]
        fresh = ~np.isin(y_key, x_key)
        first_seen = np.zeros(len(y_key), dtype=bool)
        if len(y_key):
            _, first_at = np.unique(y_key, return_index=True)
            first_seen[first_at] = True
        new = np.flatnonzero(fresh & first_seen & ~is_blank(y_flat))
        parts = pa.concat_arrays([xs, y_flat.take(pa.array(new))])
        part_gid = np.concatenate([np.arange(len(sel)), y_par[new]])
        part_order = np.concatenate([np.full(len(sel), -1, dtype=np.int64), new])
        joined, _ = join_groups(parts, part_gid, part_order, len(sel), self.delimiter)
        slot = np.full(m, -1, dtype=np.int64)
        slot[sel] = np.arange(len(sel))
        has = slot >= 0
        return joined.take(pa.array(np.where(has, slot, 0), mask=~has)) if len(sel) else \
            pa.nulls(m, pa.string())
