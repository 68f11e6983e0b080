"""The comparing aggregate functions: max, min (Java's InternalRowUtils.compare order, read
from `codes.order_codes`), bool_and and bool_or."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.merge.aggregation.base import (
    FieldAggregator,
    Rows,
    first_index,
    group_last_index,
    numpy_dtype,
    take_or_null,
)
from lakeformat.merge.codes import float_codes, float_from_codes, order_codes


class _ExtremumAgg(FieldAggregator):
    largest = True

    def _fold(self, rows: Rows) -> pa.Array:
        tail = rows.tail()
        if tail.n == 0:
            return pa.nulls(tail.n_groups, type=self.arrow_type)
        usable = tail.valid & (tail.ops != 3)
        root = self.field.type.root
        direct = root in _DIRECT_ROOTS
        present = tail.gcount > 0
        starts = tail.gstart[present]
        if root in ("FLOAT", "DOUBLE"):
            raw = pc.fill_null(tail.values, 0).to_numpy(zero_copy_only=False)
            if np.isnan(raw).any():
                direct = False  # NaN payloads: keep Java's pick by index
            elif not (np.signbit(raw) & (raw == 0)).any():
                # no NaN, no -0.0: IEEE order is Java's order, reduce the floats themselves
                return self._floats(tail, raw, usable, present, starts)
            key = float_codes(raw)
        else:
            key = order_codes(tail.values, self.field.type)
        info = np.iinfo(np.int64)
        if self.largest:
            masked = np.where(usable, key, info.min)
            best = np.maximum.reduceat(masked, starts)
        else:
            masked = np.where(usable, key, info.max)
            best = np.minimum.reduceat(masked, starts)
        if direct:
            found = np.zeros(tail.n_groups, dtype=bool)
            found[present] = np.bincount(tail.gid[usable], minlength=tail.n_groups)[present] > 0
            return _from_key(best, present, found, root, self.arrow_type)
        best_full = np.zeros(tail.n_groups, dtype=np.int64)
        best_full[present] = best
        hit = usable & (key == best_full[tail.gid])
        # Java keeps acc on ties for max and takes the input on ties for min
        if self.largest:
            idx = first_index(hit, tail.gstart, tail)
        else:
            idx, _ = group_last_index(hit, tail)
            idx = np.where(_, idx, -1)
        found = idx >= 0
        return take_or_null(tail.values, idx, found)

    def _floats(self, tail: Rows, raw: np.ndarray, usable: np.ndarray, present: np.ndarray,
                starts: np.ndarray) -> pa.Array:
        fill = -np.inf if self.largest else np.inf
        masked = np.where(usable, raw, fill).astype(raw.dtype)
        ufunc = np.maximum if self.largest else np.minimum
        out = np.zeros(tail.n_groups, dtype=raw.dtype)
        out[present] = ufunc.reduceat(masked, starts)
        found = np.bincount(tail.gid[usable], minlength=tail.n_groups) > 0
        return pa.array(out, type=self.arrow_type, mask=~found)


_DIRECT_ROOTS = ("BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "DATE", "TIME",
                 "TIMESTAMP", "TIMESTAMP_LTZ", "FLOAT", "DOUBLE")


def _from_key(best: np.ndarray, present: np.ndarray, found: np.ndarray, root: str,
              arrow_type: pa.DataType) -> pa.Array:
    """Values back from their order keys (invertible for the fixed-width types)."""
    n_groups = len(present)
    key = np.zeros(n_groups, dtype=np.int64)
    key[present] = best
    key[~found] = 0
    if root in ("FLOAT", "DOUBLE"):
        raw = float_from_codes(key, double=root == "DOUBLE")
        return pa.array(raw, type=arrow_type, mask=~found)
    if root == "BOOLEAN":
        return pa.array(key.astype(bool), type=arrow_type, mask=~found)
    if root in ("DATE", "TIME"):
        return pa.array(key.astype(np.int32), type=pa.int32(), mask=~found).cast(arrow_type)
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return pa.array(key, type=pa.int64(), mask=~found).cast(arrow_type)
    return pa.array(key.astype(numpy_dtype(arrow_type)), type=arrow_type, mask=~found)


class MaxAgg(_ExtremumAgg):
    largest = True


class MinAgg(_ExtremumAgg):
    largest = False


class _BoolAgg(FieldAggregator):
    is_and = True

    def _fold(self, rows: Rows) -> pa.Array:
        tail = rows.tail()
        usable = tail.valid & (tail.ops != 3)
        vals = pc.fill_null(tail.values, False).to_numpy(zero_copy_only=False).astype(bool)
        g = tail.n_groups
        n_valid = np.bincount(tail.gid[usable], minlength=g)
        n_true = np.bincount(tail.gid[usable & vals], minlength=g)
        out = (n_true == n_valid) if self.is_and else (n_true > 0)
        return pa.array(out, type=pa.bool_(), mask=n_valid == 0)


class BoolAndAgg(_BoolAgg):
    is_and = True


class BoolOrAgg(_BoolAgg):
    is_and = False
