"""The value-picking aggregate functions: last_value, last_non_null_value, first_value,
first_non_null_value (alias first_not_null_value) and primary-key.

Each keeps one of the group's values, chosen by the ops of its rows; none compares values, so
every type is accepted.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lakeformat.merge.aggregation.base import (
    FieldAggregator,
    Rows,
    first_index,
    group_last_index,
    take_or_null,
)


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
