"""`merge-engine=deduplicate`: the last record of a key wins (optionally ignoring retracts)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lakeformat.merge.context import MergeContext
from lakeformat.merge.sort import DELETE, VALUE_KIND, KeyGroups, is_retract, pick_rows


def merge(table: pa.Table, groups: KeyGroups, ctx: MergeContext) -> pa.Table:
    if len(groups) == table.num_rows:
        return table
    if not ctx.options.ignore_delete:
        return table.take(pa.array(groups.ends))
    # With ignore-delete a merged key keeps its last add record; a key merged from retracts
    # only has no result (Java returns null), which we emit as a DELETE row.
    add_pos = np.where(is_retract(table[VALUE_KIND]), -1, np.arange(table.num_rows))
    last_add = np.maximum.accumulate(add_pos)[groups.ends]
    lone = groups.sizes == 1
    chosen = np.where(lone, groups.ends, last_add)
    gone = ~lone & (last_add < groups.starts)
    return pick_rows(table, np.where(gone, groups.ends, chosen), gone, DELETE)
