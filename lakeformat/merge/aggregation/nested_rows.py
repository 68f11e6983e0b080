"""`nested_update` and `nested_partial_update` (Paimon's FieldNestedUpdateAgg,
FieldNestedPartialUpdateAgg) on ARRAY<ROW> columns, folded by `rows_fold`.

Java facts kept here:
* nested_update with `fields.<c>.nested-key`: rows are upserted by key; with
  `nested-sequence-field` a row replaces its key's row only when its sequence is >= (null lowest);
  `count-limit` caps the number of keys, new keys of the input are dropped beyond it (keys of the
  accumulator always stay). A retract removes the retracted keys. Without a nested key rows are
  appended up to count-limit (an accumulator already at the limit, counting null rows, is kept
  as it is) and a retract removes every row equal to a retracted row.
* `nested-key-null-strategy`: merge (default) treats null key fields as values, ignore drops
  such rows, error raises (also on the rows of the accumulator and of a retract).
* nested_partial_update merges the rows of one key field by field: a non-null field overwrites;
  it cannot retract.
* aggReversed is Java's default agg(v, acc) for both; agg(x, null) returns x unchanged, even
  with null rows inside.
* Keyed results come in first-appearance order of the keys (Java: HashMap order).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.errors import InvalidOptionError, SchemaMismatchError
from lakeformat.merge.aggregation.base import Rows, int_option
from lakeformat.merge.aggregation.rows_fold import (
    Entries,
    EntryPool,
    RowsFold,
    nonnull_entries,
    operand,
    rank_in_slot,
    raw_entries,
)
from lakeformat.merge.codes import dense_codes, element_codes, first_occurrence, order_codes
from lakeformat.schema.types import DataField

_STRATEGIES = ("merge", "ignore", "error")
_NULL_KEY_ERROR = "Nested key contains null values. Primary key fields must not be null."


def _names(options: Mapping[str, str], key: str) -> list[str]:
    raw = options.get(key)
    if raw is None:
        return []
    return [p.strip() for p in str(raw).split(",")]


def _strategy(options: Mapping[str, str], column: str) -> str:
    key = f"fields.{column}.nested-key-null-strategy"
    raw = options.get(key)
    if raw is None:
        return "merge"
    value = str(raw).strip().lower()
    if value not in _STRATEGIES:
        raise InvalidOptionError(f"option {key!r} must be one of {_STRATEGIES}, got {raw!r}")
    return value


def check_nested_options(name: str, field: DataField, options: Mapping[str, str]) -> None:
    """The option checks of Java's nested_update / nested_partial_update factories."""
    c = field.name
    nested_key = _names(options, f"fields.{c}.nested-key")
    _strategy(options, c)
    if name == "nested_partial_update":
        if not nested_key:
            raise InvalidOptionError(
                f"nested_partial_update on column {c!r} needs option 'fields.{c}.nested-key'")
    else:
        if f"fields.{c}.nested-key-null-strategy" in options and not nested_key:
            raise InvalidOptionError(
                f"option 'fields.{c}.nested-key-null-strategy' requires "
                f"'fields.{c}.nested-key' to be configured")
        if _names(options, f"fields.{c}.nested-sequence-field") and not nested_key:
            raise InvalidOptionError(
                f"option 'fields.{c}.nested-sequence-field' requires "
                f"'fields.{c}.nested-key' to be configured")
        int_option(options, f"fields.{c}.count-limit", 2**31 - 1)
    element = field.type.element
    if field.type.root == "ARRAY" and element is not None and element.root == "ROW":
        names = [f.name for f in element.fields]
        for key in ("nested-key", "nested-sequence-field"):
            for n in _names(options, f"fields.{c}.{key}"):
                if n not in names:
                    raise InvalidOptionError(
                        f"option 'fields.{c}.{key}': {n!r} is not a field of {element}")


# --------------------------------------------------------------------------------------------
# the pool of flattened elements and the entry table


class _NestedRows(RowsFold):
    """Shared by nested_update and nested_partial_update: ARRAY<ROW> with a nested key."""

    def __init__(self, name: str, field: DataField, options: Mapping[str, str]):
        super().__init__(name, field, options)
        c = field.name
        self.row_fields = list(field.type.element.fields)
        names = [f.name for f in self.row_fields]
        self.key_idx = [names.index(n) for n in _names(options, f"fields.{c}.nested-key")]
        self.seq_idx = [names.index(n)
                        for n in _names(options, f"fields.{c}.nested-sequence-field")]
        self.strategy = _strategy(options, c)
        self.limit = int_option(options, f"fields.{c}.count-limit", 2**31 - 1)
        self.may_raise_on_agg = self.strategy == "error"

    def _raises_before_reset(self) -> bool:
        return self.strategy == "error"

    def _setup(self, pool: EntryPool) -> None:
        elems = pool.elems
        width = len(self.row_fields)
        self.children = [elems.field(i) for i in range(width)]
        self.codes = [element_codes(ch) for ch in self.children]
        if self.seq_idx:
            cols = []
            for i in self.seq_idx:
                ch = self.children[i]
                key = order_codes(ch, self.row_fields[i].type) if len(ch) else \
                    np.zeros(0, dtype=np.int64)
                valid = pc.is_valid(ch).to_numpy(zero_copy_only=False) if len(ch) else \
                    np.zeros(0, dtype=bool)
                cols.append(np.where(valid, key, np.iinfo(np.int64).min))
            self.seq_cols = cols

    def _field_valid(self, pool: EntryPool) -> np.ndarray:
        width = len(self.row_fields)
        out = np.zeros((width, len(pool.elems)), dtype=bool)
        for i in range(width):
            if len(pool.elems):
                out[i] = pc.is_valid(pool.elems.field(i)).to_numpy(zero_copy_only=False) \
                    & pool.valid
        return out

    def _field_code(self, e: Entries, i: int) -> np.ndarray:
        src = e.src[:, i]
        out = np.full(len(e), -1, dtype=np.int64)
        has = src >= 0
        out[has] = self.codes[i][src[has]]
        return out

    def _keys(self, e: Entries) -> tuple[np.ndarray, np.ndarray]:
        """Key code of every entry and whether the key has a null field."""
        if not len(e):
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool)
        cols = [self._field_code(e, i) for i in self.key_idx]
        any_null = np.zeros(len(e), dtype=bool)
        for c in cols:
            any_null |= c < 0
        return dense_codes(cols), any_null

    def _apply_strategy(self, e: Entries) -> Entries:
        """Drop (ignore) or refuse (error) rows whose nested key has a null field."""
        if self.strategy == "merge" or not len(e):
            return e
        any_null = np.zeros(len(e), dtype=bool)
        for i in self.key_idx:
            any_null |= e.src[:, i] < 0
        if not any_null.any():
            return e
        if self.strategy == "error":
            raise SchemaMismatchError(
                f"{self.name} on column {self.field.name!r}: {_NULL_KEY_ERROR} (option "
                f"'fields.{self.field.name}.nested-key-null-strategy'=error)")
        return e.take(np.flatnonzero(~any_null))

    def _joint_keys(self, a: Entries, b: Entries) -> tuple[np.ndarray, np.ndarray]:
        """Key codes of two entry sets, comparable with each other."""
        key, _ = self._keys(Entries.concat([a, b]))
        return key[:len(a)], key[len(a):]

    def _seq_rank(self, e: Entries) -> np.ndarray:
        cols = []
        for j, i in enumerate(self.seq_idx):
            src = e.src[:, i]
            col = np.full(len(e), np.iinfo(np.int64).min, dtype=np.int64)
            has = src >= 0
            col[has] = self.seq_cols[j][src[has]]
            cols.append(col)
        return dense_codes(cols) if cols else np.zeros(len(e), dtype=np.int64)

    def _materialize(self, pool: EntryPool, entries: Entries) -> pa.Array:
        children = []
        for i in range(len(self.row_fields)):
            src = entries.src[:, i]
            has = src >= 0
            children.append(self.children[i].take(pa.array(np.where(has, src, 0), mask=~has))
                            if len(self.children[i]) else pa.nulls(len(src),
                                                                   self.children[i].type))
        struct_type = self.arrow_type.value_type
        return pa.StructArray.from_arrays(children, fields=list(struct_type),
                                          mask=pa.array(~entries.ok))


class NestedUpdateAgg(_NestedRows):
    supports_retract = True

    def _fold(self, rows: Rows) -> pa.Array:
        used = rows if self._raises_before_reset() else rows.tail()
        heads = np.zeros(used.n, dtype=bool)
        heads[used.gstart[used.gcount > 0]] = True
        ops = used.ops
        if ((ops == 1) | ((ops == 4) & heads)).all():
            return self._adds_only(used)
        return super()._fold(rows)

    def _adds_only(self, rows: Rows) -> pa.Array:
        """Only adds after an optional leading reset: the whole group is one big agg call
        (re-adding the accumulator's own distinct rows changes nothing)."""
        pool = EntryPool(rows)
        self._setup(pool)
        field_valid = self._field_valid(pool)
        n_groups = rows.n_groups
        every = operand(pool, np.arange(rows.n, dtype=np.int64), field_valid)
        row_of = every.slot
        every.slot = rows.gid[row_of]
        is_seed = rows.ops[row_of] == 4
        seed_ok = np.zeros(n_groups, dtype=bool)
        seed_rows = np.flatnonzero(rows.ops == 4)
        seed_ok[rows.gid[seed_rows]] = rows.valid[seed_rows]
        calls = (rows.ops == 1) & rows.valid
        has_call = np.bincount(rows.gid[calls], minlength=n_groups) > 0
        x = every.take(np.flatnonzero(is_seed))
        y = every.take(np.flatnonzero(~is_seed & calls[row_of]))
        if self.key_idx:
            merged = self._upsert(x, seed_ok, y, has_call)
        else:
            first_call = np.full(n_groups, rows.n, dtype=np.int64)
            call_rows = np.flatnonzero(calls)
            np.minimum.at(first_call, rows.gid[call_rows], call_rows)
            merged = self._append_all(x, seed_ok, y, has_call, first_call,
                                      row_of[~is_seed & calls[row_of]])
        keep_seed = raw_entries(x, seed_ok, ~has_call)
        out = Entries.concat([keep_seed, merged, Entries.empty(field_valid.shape[0])])
        out = out.take(np.argsort(out.slot, kind="stable"))
        return self._lists(pool, out, seed_ok | has_call, n_groups)

    def _append_all(self, x, xv, y, yv, first_row, y_row) -> Entries:
        """Without a nested key: the reset value's rows, then input rows up to count-limit."""
        n = len(xv)
        size = np.bincount(x.slot, minlength=n) if len(x) else np.zeros(n, dtype=np.int64)
        frozen = xv & (size >= self.limit)  # already at the limit: kept as it is
        parts = [raw_entries(x, xv, yv & frozen)]
        grow = yv & ~frozen
        xs = nonnull_entries(x, grow & xv)
        ok_y = y.ok & grow[y.slot]
        ys, rows_y = y.take(np.flatnonzero(ok_y)), y_row[ok_y]
        # the first call (first_row: the group's first add with a non-null array) may only
        # fill `limit - size` (size counts null rows of the reset value); later calls fill up
        # to the limit
        in_first = rows_y == first_row[ys.slot]
        rank = rank_in_slot(ys.slot)
        first_room = np.where(xv, self.limit - size, self.limit)
        n_first = np.bincount(ys.slot[in_first], minlength=n)
        taken_first = np.minimum(n_first, np.maximum(first_room, 0))
        kept_x = np.bincount(xs.slot, minlength=n) if len(xs) else np.zeros(n, dtype=np.int64)
        later_room = self.limit - kept_x - taken_first
        later_rank = rank - n_first[ys.slot]
        take = np.where(in_first, rank < first_room[ys.slot], later_rank < later_room[ys.slot])
        both = Entries.concat([xs, ys.take(np.flatnonzero(take))])
        if len(both):
            parts.append(both.take(np.argsort(both.slot, kind="stable")))
        return Entries.concat(parts + [Entries.empty(x.src.shape[1])])

    def _agg(self, x, xv, y, yv):
        n = len(xv)
        keep_x = ~yv  # agg(x, null) = x
        parts = [raw_entries(x, xv, keep_x)]
        ok = np.where(yv, True, xv)
        if self.key_idx:
            parts.append(self._upsert(x, xv, y, yv))
        else:
            size = np.bincount(x.slot, minlength=n) if len(x) else np.zeros(n, dtype=np.int64)
            at_limit = yv & xv & (size >= self.limit)
            parts.append(raw_entries(x, xv, at_limit))
            grow = yv & ~at_limit
            xs = nonnull_entries(x, grow & xv)
            room = np.where(xv, self.limit - size, self.limit)
            ys = nonnull_entries(y, grow)
            take = rank_in_slot(ys.slot) < room[ys.slot]
            ys = ys.take(np.flatnonzero(take))
            both = Entries.concat([xs, ys])
            if len(both):
                parts.append(both.take(np.argsort(both.slot, kind="stable")))
        out = Entries.concat(parts)
        return out.take(np.argsort(out.slot, kind="stable")) if len(out) else \
            Entries.empty(x.src.shape[1] if x.src.ndim == 2 else 0), ok

    def _upsert(self, x, xv, y, yv) -> Entries:
        n = len(xv)
        xs = nonnull_entries(x, yv & xv)
        ys = nonnull_entries(y, yv)
        xs, ys = self._apply_strategy(xs), self._apply_strategy(ys)
        ev = Entries.concat([xs, ys])
        if not len(ev):
            return ev
        key = np.concatenate(self._joint_keys(xs, ys))
        from_y = np.concatenate([np.zeros(len(xs), dtype=bool), np.ones(len(ys), dtype=bool)])
        pos = np.concatenate([np.arange(len(xs)), np.arange(len(ys))])
        order = np.lexsort((pos, from_y, ev.slot))
        ev, key, from_y = ev.take(order), key[order], from_y[order]
        width = int(key.max(initial=0)) + 1
        pair = ev.slot * width + key
        first = first_occurrence(pair)
        x_keys = np.bincount(ev.slot[first & ~from_y], minlength=n)
        # new keys of the input enter while the map has room
        new_key = first & from_y
        new_rank = np.zeros(len(ev), dtype=np.int64)
        idx = np.flatnonzero(new_key)
        new_rank[idx] = rank_in_slot(ev.slot[idx])
        admitted_first = new_key & (new_rank < self.limit - x_keys[ev.slot])
        ok_pairs = np.unique(pair[(first & ~from_y) | admitted_first])
        live = np.isin(pair, ok_pairs)
        ev, pair = ev.take(np.flatnonzero(live)), pair[live]
        seq = self._seq_rank(ev) if self.seq_idx else np.zeros(len(ev), dtype=np.int64)
        n_ev = np.arange(len(ev))
        # winner: the last event with the highest sequence (>= replaces)
        order = np.lexsort((n_ev, seq, pair))
        last = np.ones(len(order), dtype=bool)
        last[:-1] = pair[order][1:] != pair[order][:-1]
        winners = order[last]
        # keep first-appearance order of the keys
        uniq, first_at = np.unique(pair, return_index=True)
        win_pair = pair[winners]
        first_pos = first_at[np.searchsorted(uniq, win_pair)]
        return ev.take(winners[np.argsort(first_pos, kind="stable")])

    def _retract(self, x, xv, y, yv):
        ok = xv.copy()
        passthrough = ~(xv & yv)
        parts = [raw_entries(x, xv, passthrough)]
        act = xv & yv
        xs = nonnull_entries(x, act)
        ys = nonnull_entries(y, act)
        if self.key_idx:
            xs, ys = self._apply_strategy(xs), self._apply_strategy(ys)
            xk, yk = self._joint_keys(xs, ys)
            width = int(max(xk.max(initial=0), yk.max(initial=0))) + 1
            xp = xs.slot * width + xk
            yp = ys.slot * width + yk
            # later duplicates overwrite earlier ones, in the first one's place
            rev = np.arange(len(xp))[::-1]
            last = np.zeros(len(xp), dtype=bool)
            last[rev[first_occurrence(xp[rev])]] = True
            uniq, first_at = np.unique(xp, return_index=True)
            keep = last & ~np.isin(xp, yp)
            idx = np.flatnonzero(keep)
            order = np.argsort(first_at[np.searchsorted(uniq, xp[idx])], kind="stable")
            parts.append(xs.take(idx[order]))
        else:
            both = self._row_codes(Entries.concat([xs, ys]))
            xc, yc = both[:len(xs)], both[len(xs):]
            width = int(max(xc.max(initial=0), yc.max(initial=0))) + 1
            gone = np.isin(xs.slot * width + xc, ys.slot * width + yc)
            parts.append(xs.take(np.flatnonzero(~gone)))
        out = Entries.concat(parts)
        if not len(out):
            return Entries.empty(x.src.shape[1]), ok
        return out.take(np.argsort(out.slot, kind="stable")), ok

    def _row_codes(self, e: Entries) -> np.ndarray:
        if not len(e):
            return np.zeros(0, dtype=np.int64)
        return dense_codes([self._field_code(e, i) for i in range(len(self.row_fields))])


class NestedPartialUpdateAgg(_NestedRows):
    def _agg(self, x, xv, y, yv):
        parts = [raw_entries(x, xv, ~yv)]
        ok = np.where(yv, True, xv)
        xs = nonnull_entries(x, yv & xv)
        ys = nonnull_entries(y, yv)
        xs, ys = self._apply_strategy(xs), self._apply_strategy(ys)
        ev = Entries.concat([xs, ys])
        if len(ev):
            key = np.concatenate(self._joint_keys(xs, ys))
            from_y = np.concatenate([np.zeros(len(xs), dtype=bool),
                                     np.ones(len(ys), dtype=bool)])
            pos = np.concatenate([np.arange(len(xs)), np.arange(len(ys))])
            order = np.lexsort((pos, from_y, ev.slot))
            ev, key = ev.take(order), key[order]
            width = int(key.max(initial=0)) + 1
            pair = ev.slot * width + key
            uniq, first_at, inv = np.unique(pair, return_index=True, return_inverse=True)
            inv = inv.reshape(-1)
            fields = ev.src.shape[1]
            merged = np.full((len(uniq), fields), -1, dtype=np.int64)
            n_ev = np.arange(len(ev))
            for i in range(fields):
                has = ev.src[:, i] >= 0
                last = np.full(len(uniq), -1, dtype=np.int64)
                np.maximum.at(last, inv[has], n_ev[has])
                got = last >= 0
                merged[got, i] = ev.src[last[got], i]
            order = np.argsort(first_at, kind="stable")
            parts.append(Entries(ev.slot[first_at[order]], merged[order],
                                  np.ones(len(uniq), dtype=bool)))
        out = Entries.concat(parts)
        if not len(out):
            return Entries.empty(x.src.shape[1]), ok
        return out.take(np.argsort(out.slot, kind="stable")), ok
