"""Field aggregators of Paimon's `aggregation` engine (and of partial-update's aggregated fields).

`create_aggregator(name, field, options)` returns a `FieldAggregator` whose `reduce` folds every
key group of a sorted column at once. Per row, `ops[i]` says what the row does to the group's
accumulator (which starts as null, or as `init[g]` where `init_mask[g]`):

    0 skip · 1 agg(acc, v) · 2 aggReversed(acc, v) · 3 retract(acc, v) · 4 reset: acc = v

The semantics are those of Paimon's Java `FieldAggregator` subclasses, including their quirks
(documented on each class). State that Java resets per key (first_value's "initialized" flag)
starts fresh in every group and is not cleared by op 4, as Java's `reset()` runs only between
keys. Everything is computed on whole columns; functions whose fold has no closed form walk the
rows of all groups in lock-step ("rounds": the k-th row of every group at once).

Where Java returns elements in `HashMap`/`HashSet` iteration order (collect with distinct,
merge_map, nested_update with a nested key, nested_partial_update, merge_map_with_keytime)
lakeformat returns them in first-appearance order: the same elements, a deterministic order.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.errors import InvalidOptionError, UnsupportedError
from lakeformat.merge.aggregators_base import (
    FieldAggregator,
    Rows,
    first_index,
    group_last_index,
    numpy_dtype,
    take_or_null,
)
from lakeformat.options import parse_bool
from lakeformat.schema.types import DataField, DataType

__all__ = ["FieldAggregator", "create_aggregator", "AGGREGATE_FUNCTIONS", "UNSUPPORTED_FUNCTIONS"]

NUMERIC_ROOTS = ("TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL")
# Types Java's TypeCheckUtils.isComparable rejects (max/min): the nested and opaque ones.
_INCOMPARABLE_ROOTS = ("ARRAY", "MULTISET", "MAP", "ROW", "VARIANT", "BLOB")


# --------------------------------------------------------------------------------------------
# last_value / last_non_null_value / first_value / first_non_null_value / primary-key
# --------------------------------------------------------------------------------------------

class LastValueAgg(FieldAggregator):
    """acc = v (even null); aggReversed keeps acc; retract -> null."""

    supports_retract = True

    def _fold(self, rows: Rows) -> pa.Array:
        ops = rows.ops
        sets = (ops == 1) | (ops == 3) | (ops == 4)
        last, found = group_last_index(sets, rows)
        found &= ops[np.where(found, last, 0)] != 3
        return take_or_null(rows.values, last, found)


class LastNonNullValueAgg(FieldAggregator):
    """acc = v when v is not null; aggReversed = agg(v, acc) fills only a null acc;
    retract of a non-null value -> null, of a null value -> acc."""

    supports_retract = True

    def _fold(self, rows: Rows) -> pa.Array:
        ops, valid = rows.ops, rows.valid
        if rows.plain:
            last, found = group_last_index(valid, rows)
            return take_or_null(rows.values, last, found)
        # rows that decide acc regardless of its current value
        decisive = ((ops == 1) & valid) | ((ops == 3) & valid) | (ops == 4)
        last, found = group_last_index(decisive, rows)
        safe = np.where(found, last, 0)
        acc_valid = found & (ops[safe] != 3) & valid[safe]
        # a null acc after `last` is filled by the first later reversed row with a value
        fill = first_index((ops == 2) & valid, np.where(found, last + 1, rows.gstart), rows)
        filled = ~acc_valid & (fill >= 0)
        idx = np.where(acc_valid, last, fill)
        return take_or_null(rows.values, idx, acc_valid | filled)


class FirstValueAgg(FieldAggregator):
    """The first agg of a key group sets acc (even to null), later ones keep it.

    aggReversed is Java's default agg(v, acc): before initialisation it keeps acc (and marks
    the aggregator initialised); afterwards it returns v, so a reversed row overwrites acc.
    """

    def _fold(self, rows: Rows) -> pa.Array:
        ops = rows.ops
        first = first_index((ops == 1) | (ops == 2), rows.gstart, rows)
        f = np.where(first >= 0, first, rows.n)[rows.gid]
        idx = np.arange(rows.n)
        sets = (ops == 4) | ((idx == f) & (ops == 1)) | ((idx > f) & (ops == 2))
        last, found = group_last_index(sets, rows)
        return take_or_null(rows.values, last, found)


class FirstNonNullValueAgg(FieldAggregator):
    """The first non-null agg of a key group sets acc, later ones keep it.

    aggReversed = agg(v, acc): while uninitialised it initialises (keeping acc) when acc is
    not null, and otherwise sets acc = v without initialising; once initialised it returns v.
    """

    def _fold(self, rows: Rows) -> pa.Array:
        ops, valid = rows.ops, rows.valid
        n = rows.n
        idx = np.arange(n)
        # acc before row r (while uninitialised) is the value of the last op-2/op-4 row before r
        setter = np.where((ops == 2) | (ops == 4), idx, -1)
        before = np.empty(n, dtype=np.int64)
        before[0] = -1
        if n > 1:
            before[1:] = np.maximum.accumulate(setter)[:-1]
        in_group = before >= rows.gstart[rows.gid]
        acc_nonnull = in_group & valid[np.where(in_group, before, 0)]
        trigger = ((ops == 1) & valid) | ((ops == 2) & acc_nonnull)
        first = first_index(trigger, rows.gstart, rows)
        f = np.where(first >= 0, first, n)[rows.gid]
        sets = (ops == 4) | ((ops == 2) & (idx != f)) | ((idx == f) & (ops == 1))
        last, found = group_last_index(sets, rows)
        return take_or_null(rows.values, last, found)


class PrimaryKeyAgg(FieldAggregator):
    """Key columns: every record carries the key, the last one is kept (retract too)."""

    supports_retract = True

    def _fold(self, rows: Rows) -> pa.Array:
        last, found = group_last_index(np.ones(rows.n, dtype=bool), rows)
        return take_or_null(rows.values, last, found)


# --------------------------------------------------------------------------------------------
# max / min / bool_and / bool_or
# --------------------------------------------------------------------------------------------

def _float_order_key(arr: np.ndarray) -> np.ndarray:
    """int64 keys ordering floats as Java's Float/Double.compare: -0.0 < 0.0, NaN largest."""
    if arr.dtype == np.float32:
        bits = arr.view(np.int32).astype(np.int64)
        flip = np.int64(0x7FFFFFFF)
    else:
        bits = arr.view(np.int64).copy()
        flip = np.int64(0x7FFFFFFFFFFFFFFF)
    key = np.where(bits < 0, bits ^ flip, bits)
    key[np.isnan(arr)] = np.iinfo(np.int64).max
    return key


def order_key(values: pa.Array, dtype: DataType) -> np.ndarray:
    """int64 keys whose order is Java's InternalRowUtils.compare order (nulls: arbitrary)."""
    root = dtype.root
    if root in ("FLOAT", "DOUBLE"):
        return _float_order_key(pc.fill_null(values, 0).to_numpy(zero_copy_only=False))
    if root == "BOOLEAN":
        return pc.fill_null(values, False).to_numpy(zero_copy_only=False).astype(np.int64)
    if root in ("TINYINT", "SMALLINT", "INT", "BIGINT"):
        return pc.fill_null(values, 0).to_numpy(zero_copy_only=False).astype(np.int64)
    if root in ("DATE", "TIME"):
        return pc.fill_null(values.cast(pa.int32()), 0).to_numpy().astype(np.int64)
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return pc.fill_null(values.cast(pa.int64()), 0).to_numpy()
    # strings and binaries (unsigned byte order, as BinaryString and byte[] compare), decimals
    ranks = pc.rank(values, sort_keys="ascending", tiebreaker="dense")
    return ranks.to_numpy().astype(np.int64)


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
            key = _float_order_key(raw)
        else:
            key = order_key(tail.values, self.field.type)
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
        if root == "FLOAT":
            flip = np.int64(0x7FFFFFFF)
            bits = np.where(key < 0, key ^ flip, key).astype(np.int32)
            raw = bits.view(np.float32)
        else:
            flip = np.int64(0x7FFFFFFFFFFFFFFF)
            raw = np.where(key < 0, key ^ flip, key).view(np.float64)
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


# --------------------------------------------------------------------------------------------
# factory
# --------------------------------------------------------------------------------------------

UNSUPPORTED_FUNCTIONS = ("hll_sketch", "theta_sketch", "rbm32", "rbm64")


def _require(ok: bool, field: DataField, name: str, what: str) -> None:
    if not ok:
        raise InvalidOptionError(
            f"option 'fields.{field.name}.aggregate-function'={name!r}: column {field.name!r} "
            f"has type {field.type}, but {name} needs {what}")


def _is_nested_rows(dt: DataType) -> bool:
    return dt.root == "ARRAY" and dt.element is not None and dt.element.root == "ROW"


def _build(name: str, field: DataField, options: Mapping[str, str]) -> FieldAggregator:
    from lakeformat.merge import aggregators_nested as nested
    from lakeformat.merge import aggregators_numeric as numeric
    from lakeformat.merge import aggregators_text as text

    dt = field.type
    if name == "primary-key":
        return PrimaryKeyAgg(name, field, options)
    if name in ("sum", "product"):
        _require(dt.root in NUMERIC_ROOTS, field, name, "a numeric type "
                 "(TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, DECIMAL)")
        cls = numeric.SumAgg if name == "sum" else numeric.ProductAgg
        return cls(name, field, options)
    if name in ("max", "min"):
        _require(dt.root not in _INCOMPARABLE_ROOTS, field, name, "a comparable type")
        return (MaxAgg if name == "max" else MinAgg)(name, field, options)
    if name == "last_value":
        return LastValueAgg(name, field, options)
    if name == "last_non_null_value":
        return LastNonNullValueAgg(name, field, options)
    if name == "first_value":
        return FirstValueAgg(name, field, options)
    if name in ("first_non_null_value", "first_not_null_value"):
        return FirstNonNullValueAgg(name, field, options)
    if name in ("bool_and", "bool_or"):
        _require(dt.root == "BOOLEAN", field, name, "BOOLEAN")
        return (BoolAndAgg if name == "bool_and" else BoolOrAgg)(name, field, options)
    if name == "listagg":
        _require(dt.root == "VARCHAR", field, name, "STRING")
        _require(dt.length == 2147483647, field, name,
                 f"STRING (unbounded VARCHAR), not VARCHAR({dt.length})")
        return text.ListaggAgg(name, field, options)
    if name == "collect":
        _require(dt.root == "ARRAY", field, name, "an ARRAY type")
        return nested.CollectAgg(name, field, options)
    if name == "merge_map":
        _require(dt.root == "MAP", field, name, "a MAP type")
        return nested.MergeMapAgg(name, field, options)
    if name == "merge_map_with_keytime":
        return nested.MergeMapWithKeyTimeAgg.create(name, field, options)
    if name == "nested_update":
        nested.check_nested_options(name, field, options)
        _require(_is_nested_rows(dt), field, name, "ARRAY<ROW<...>>")
        return nested.NestedUpdateAgg(name, field, options)
    if name == "nested_partial_update":
        nested.check_nested_options(name, field, options)
        _require(_is_nested_rows(dt), field, name, "ARRAY<ROW<...>>")
        return nested.NestedPartialUpdateAgg(name, field, options)
    if name in UNSUPPORTED_FUNCTIONS:
        raise UnsupportedError(
            f"aggregate function {name!r} (option 'fields.{field.name}.aggregate-function') "
            "is not supported by lakeformat: it needs Java's sketch/bitmap serialisation")
    raise UnsupportedError(
        f"unknown aggregate function {name!r} for column {field.name!r} (Paimon: 'Use "
        f"unsupported aggregation or spell aggregate function incorrectly'); known functions: "
        f"{', '.join(AGGREGATE_FUNCTIONS)}")


AGGREGATE_FUNCTIONS = (
    "sum", "product", "max", "min", "last_value", "last_non_null_value", "first_value",
    "first_non_null_value", "first_not_null_value", "bool_and", "bool_or", "listagg", "collect",
    "merge_map", "merge_map_with_keytime", "nested_update", "nested_partial_update",
    "primary-key",
)


def create_aggregator(name: str, field: DataField,
                      options: Mapping[str, str]) -> FieldAggregator:
    """The aggregator `name` for column `field` under table options `options`.

    Raises UnsupportedError for sketch/bitmap functions and unknown names, InvalidOptionError
    when the function does not accept the column's type or an option value is malformed.
    `fields.<c>.ignore-retract=true` makes retract (op 3) a no-op, as Java's wrapper does.
    """
    if not isinstance(name, str):
        raise UnsupportedError(f"aggregate function name must be a string, got {name!r}")
    agg = _build(name, field, options)
    if parse_bool(options, f"fields.{field.name}.ignore-retract", False):
        agg.ignore_retract = True
        agg.supports_retract = True
    return agg

