"""`merge-engine=partial-update` without sequence groups: the last non-null value per column.

Paimon's reducer rule applies: a key with a single record is emitted unchanged; only keys with
two or more records are merged (result kind INSERT, sequence number of the last record).
Retract records are refused, as Paimon refuses them unless a delete option is set.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.errors import LakeformatError
from lakeformat.merge.context import MergeContext
from lakeformat.merge.sort import INSERT, KeyGroups, is_retract
from lakeformat.schema.table_schema import SEQUENCE_NUMBER, VALUE_KIND


def merge(table: pa.Table, groups: KeyGroups, ctx: MergeContext) -> pa.Table:
    key_names = ctx.key_names
    n_groups = len(groups)
    if n_groups == table.num_rows:
        return table
    sizes = groups.sizes
    multi = sizes > 1
    retract = is_retract(table[VALUE_KIND])
    if retract.any():
        group_of_row = np.repeat(np.arange(n_groups), sizes)
        if multi[group_of_row[retract]].any():
            raise LakeformatError(
                "partial-update received a retract record (-U/-D) for a key with other records;"
                " Paimon refuses deletes for partial-update unless 'ignore-delete' or "
                "'partial-update.remove-record-on-delete' is set (not supported yet)")
    ends = groups.ends
    columns = []
    for name in table.column_names:
        col = table[name]
        if name == VALUE_KIND:
            kinds = col.take(pa.array(ends)).to_numpy()
            columns.append(pa.array(np.where(multi, INSERT, kinds).astype(np.int8)))
        elif name in key_names or name == SEQUENCE_NUMBER or col.null_count == 0:
            columns.append(col.take(pa.array(ends)))
        else:
            columns.append(_last_non_null(col, groups))
    return pa.table(columns, schema=table.schema)


def _last_non_null(col: pa.ChunkedArray | pa.Array, groups: KeyGroups) -> pa.Array:
    """For each group, the value of its last row whose value is not null (null if none)."""
    valid = np.asarray(pc.is_valid(col).to_numpy(zero_copy_only=False), dtype=bool)
    pos = np.where(valid, np.arange(len(valid), dtype=np.int64), -1)
    last_valid = np.maximum.accumulate(pos)[groups.ends]
    found = last_valid >= groups.starts
    take_idx = pa.array(np.where(found, last_valid, 0), mask=~found)
    return col.take(take_idx)
