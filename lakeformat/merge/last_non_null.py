"""Partial-update's everyday case, one pass per column: records that only add.

When no record of a batch is a retract (-U/-D) and no column belongs to a sequence group,
Paimon's partial-update fold reduces to this: each column of a key's row ends with the last
non-null value its records carried, in merge order; the row is +I and carries the sequence
number of the key's last record. A key with a single record is returned unchanged (the reducer
rule) — which, column by column, is the same thing: its own value, null or not, and its own
row kind. So no per-row flags are built: a column without nulls is taken at each key's last
record, a column with nulls at each key's last valid record.

`applies` says when this gives exactly what `partial_update._Merge` gives; anything else
(retracts, sequence groups, a null in a NOT NULL column, which must fail) goes there.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.merge.sort import INSERT, KeyGroups, is_retract
from lakeformat.schema.table_schema import VALUE_KIND

__all__ = ["applies", "merge_adds"]


def applies(table: pa.Table, has_groups: bool, not_null: list[str]) -> bool:
    """Whether `merge_adds` is the merge of `table`: no sequence group, no retract record, no
    null in a NOT NULL column (`not_null`: the table's NOT NULL value columns)."""
    if has_groups or is_retract(table[VALUE_KIND]).any():
        return False
    return not any(table[name].null_count for name in not_null if name in table.column_names)


def merge_adds(table: pa.Table, groups: KeyGroups, perm: np.ndarray | None = None) -> pa.Table:
    """One row per key group of `table` in merge order (`perm`: the rows of `table` in merge
    order, all or some; None: `table` is in merge order)."""
    ends = groups.ends
    last = ends if perm is None else perm[ends]
    at_last = pa.array(last)
    out = []
    for name in table.column_names:
        col = table[name]
        if name == VALUE_KIND:
            kinds = np.asarray(col.take(at_last).to_numpy(zero_copy_only=False))
            out.append(pa.array(np.where(groups.sizes == 1, kinds, INSERT).astype(np.int8),
                                col.type))
        elif col.null_count == 0:  # keys, the sequence number, columns without nulls
            out.append(col.take(at_last))
        else:
            valid = np.asarray(pc.is_valid(col).to_numpy(zero_copy_only=False), dtype=bool)
            if perm is not None:
                valid = valid[perm]
            pos, found = groups.last(valid)  # each key's last valid record, if any
            pos = np.where(found, pos, 0)
            rows = pos if perm is None else perm[pos]
            out.append(col.take(pa.array(rows, mask=None if found.all() else ~found)))
    return pa.Table.from_arrays(out, schema=table.schema)
