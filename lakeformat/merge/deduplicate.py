"""`merge-engine=deduplicate`: the last record of a key wins (optionally ignoring retracts)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from lakeformat.merge.engine import MergeEngine
from lakeformat.merge.sort import DELETE, VALUE_KIND, KeyGroups, is_retract, pick_rows


class DeduplicateEngine(MergeEngine):
    """Java's DeduplicateMergeFunction: keeps the key's last record."""

    name = "deduplicate"
    picks_rows = True

    def required_columns(self, requested: Sequence[str]) -> list[str]:
        """One whole record wins per key: no column depends on another."""
        return self._with_order_columns(requested)

    def select(self, kinds: np.ndarray, groups: KeyGroups) -> tuple[np.ndarray, np.ndarray]:
        """Winning row per key group (positions in merge order), and which results are DELETE.

        With ignore-delete a merged key keeps its last add record; a key merged from retracts
        only has no result (Java returns null), which is reported as DELETE.
        """
        if not self.ctx.options.ignore_delete:
            return groups.ends, np.zeros(len(groups), dtype=bool)
        last_add, has_add = groups.last(~is_retract(kinds))
        lone = groups.sizes == 1
        gone = ~lone & ~has_add
        return np.where(lone | gone, groups.ends, last_add), gone

    def merge_groups(self, table: pa.Table, groups: KeyGroups) -> pa.Table:
        if len(groups) == table.num_rows:
            return table
        rows, gone = self.select(table[VALUE_KIND].to_numpy(), groups)
        return pick_rows(table, rows, gone, DELETE)
