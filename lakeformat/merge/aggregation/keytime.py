"""`merge_map_with_keytime` (Paimon's FieldMergeMapWithKeyTimeAgg) on whole columns.

MAP<K, ROW<...>>: agg(null, v) and agg(acc, null) return the non-null map unchanged; otherwise the
accumulator's entries are put (a repeated key: the last wins), then each input entry in order:
a null value removes its key, a null time field is ignored, else it replaces an absent or null
entry, one with a null time, or one whose time string is smaller (Java String.compareTo, i.e.
UTF-16 order). The time field is `fields.<c>.ts-field`, else the ROW's last field; Java reads it
with getString, so lakeformat requires CHAR/VARCHAR. No retraction; aggReversed = agg(v, acc).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.errors import InvalidOptionError, UnsupportedError
from lakeformat.merge.aggregation.rows_fold import (
    Entries,
    EntryPool,
    RowsFold,
    rank_in_slot,
    raw_entries,
)
from lakeformat.merge.codes import element_codes
from lakeformat.schema.types import DataField


class MergeMapWithKeyTimeAgg(RowsFold):
    """MAP<K, ROW<...>>: per key keep the entry with the newer time field (a string)."""

    @staticmethod
    def create(name: str, field: DataField, options: Mapping[str, str]) -> MergeMapWithKeyTimeAgg:
        dt = field.type
        c = field.name
        where = f"option 'fields.{c}.aggregate-function'={name!r}: column {c!r} ({dt})"
        if dt.root != "MAP":
            raise InvalidOptionError(f"{where} must be a MAP")
        if dt.value is None or dt.value.root != "ROW":
            raise InvalidOptionError(f"{where}: the MAP value must be a ROW")
        if len(dt.value.fields) < 2:
            raise InvalidOptionError(f"{where}: the ROW value needs at least 2 fields")
        ts = options.get(f"fields.{c}.ts-field")
        names = [f.name for f in dt.value.fields]
        if ts is None:
            idx = len(names) - 1
        elif ts in names:
            idx = names.index(ts)
        else:
            raise InvalidOptionError(
                f"option 'fields.{c}.ts-field': timestamp field {ts!r} not found in {names}")
        if dt.value.fields[idx].type.root not in ("CHAR", "VARCHAR"):
            raise UnsupportedError(
                f"{where}: its time field {names[idx]!r} is {dt.value.fields[idx].type}; Java "
                "compares it with getString and fails on other types, lakeformat refuses it")
        agg = MergeMapWithKeyTimeAgg(name, field, options)
        agg.ts_idx = idx
        return agg

    def _setup(self, pool: EntryPool) -> None:
        entries = pool.elems
        if len(entries):
            self.key_codes = element_codes(entries.field(0))
            values = entries.field(1)
            self.value_ok = pc.is_valid(values).to_numpy(zero_copy_only=False)
            ts = values.field(self.ts_idx)
            self.ts_ok = self.value_ok & pc.is_valid(ts).to_numpy(zero_copy_only=False)
            # Java String.compareTo: UTF-16 code units, i.e. the order of UTF-16BE bytes
            utf16 = pa.array([s.encode("utf-16-be") if s is not None else None
                              for s in ts.to_pylist()], pa.binary())
            self.ts_rank = pc.rank(utf16, sort_keys="ascending", tiebreaker="dense"
                                   ).to_numpy().astype(np.int64)
        else:
            self.key_codes = self.ts_rank = np.zeros(0, dtype=np.int64)
            self.value_ok = self.ts_ok = np.zeros(0, dtype=bool)

    def _field_valid(self, pool: EntryPool) -> np.ndarray:
        return pool.valid[None, :].copy()

    def _agg(self, x, xv, y, yv):
        ok = xv | yv
        # agg(acc, null) = acc and agg(null, v) = v, both unchanged
        parts = [raw_entries(x, xv, ~yv), raw_entries(y, yv, yv & ~xv)]
        act = xv & yv
        xs = x.take(np.flatnonzero(act[x.slot])) if len(x) else x
        ys = y.take(np.flatnonzero(act[y.slot])) if len(y) else y
        if len(xs) or len(ys):
            parts.append(self._merge(xs, ys))
        out = Entries.concat(parts)
        if not len(out):
            return Entries.empty(1), ok
        return out.take(np.argsort(out.slot, kind="stable")), ok

    def _merge(self, xs: Entries, ys: Entries) -> Entries:
        ev = Entries.concat([xs, ys])
        src = ev.src[:, 0]
        from_y = np.concatenate([np.zeros(len(xs), dtype=bool), np.ones(len(ys), dtype=bool)])
        key = self.key_codes[src]
        width = int(key.max(initial=0)) + 1
        pair = ev.slot * width + key
        n = len(ev)
        order = np.lexsort((np.arange(n), from_y, ev.slot))
        ev, pair, from_y, src = ev.take(order), pair[order], from_y[order], src[order]
        uniq, first_at, inv = np.unique(pair, return_index=True, return_inverse=True)
        inv = inv.reshape(-1)
        # accumulator entries: plain puts, the last one of a key wins
        cur = np.full(len(uniq), -1, dtype=np.int64)
        xi = np.flatnonzero(~from_y)
        np.maximum.at(cur, inv[xi], xi)
        present = cur >= 0
        # input entries one occurrence at a time (a key repeated inside one map is rare)
        yi = np.flatnonzero(from_y)
        occ = np.zeros(len(yi), dtype=np.int64)
        if len(yi):
            s = np.lexsort((yi, inv[yi]))
            occ[s] = rank_in_slot(inv[yi][s])
        for k in range(int(occ.max(initial=-1)) + 1):
            step = yi[occ == k]
            p = inv[step]
            e_src = src[step]
            removes = ~self.value_ok[e_src]
            skip = ~removes & ~self.ts_ok[e_src]
            cur_ev = cur[p]
            cur_src = np.where(cur_ev >= 0, src[np.clip(cur_ev, 0, None)], -1)
            has_cur = present[p] & (cur_ev >= 0)
            cur_value_ok = has_cur & self.value_ok[np.clip(cur_src, 0, None)]
            cur_ts_ok = cur_value_ok & self.ts_ok[np.clip(cur_src, 0, None)]
            newer = self.ts_rank[e_src] > np.where(cur_ts_ok,
                                                   self.ts_rank[np.clip(cur_src, 0, None)], 0)
            put = ~removes & ~skip & (~cur_value_ok | ~cur_ts_ok | newer)
            present[p[removes]] = False
            cur[p[removes]] = -1
            cur[p[put]] = step[put]
            present[p[put]] = True
        keep = np.flatnonzero(present)
        keep = keep[np.argsort(first_at[keep], kind="stable")]
        return ev.take(cur[keep])

    def _materialize(self, pool: EntryPool, entries: Entries) -> pa.Array:
        src = entries.src[:, 0] if len(entries) else np.zeros(0, dtype=np.int64)
        if not len(pool.elems):
            t = self.arrow_type
            return pa.StructArray.from_arrays(
                [pa.array([], t.key_type), pa.array([], t.item_type)], names=["key", "value"])
        return pool.elems.take(pa.array(src))
