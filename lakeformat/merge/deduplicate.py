"""`merge-engine=deduplicate`: the last record of a key wins."""

from __future__ import annotations

import pyarrow as pa

from lakeformat.merge.context import MergeContext
from lakeformat.merge.sort import KeyGroups


def merge(table: pa.Table, groups: KeyGroups, ctx: MergeContext) -> pa.Table:
    """Keep the last record of each key group (its kind decides whether the key survives)."""
    if len(groups) == table.num_rows:
        return table
    return table.take(pa.array(groups.ends))
