"""`merge-engine=first-row`: the first add record of a key wins; retracts are refused or ignored."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from lakeformat.errors import InvalidOptionError, SchemaMismatchError
from lakeformat.merge.engine import MergeEngine, describe_retracts
from lakeformat.merge.sort import DELETE, VALUE_KIND, KeyGroups, is_retract, pick_rows

_REFUSED = ("first-row merge engine cannot accept DELETE/UPDATE_BEFORE records by default; set "
            "'ignore-delete' = 'true' to ignore them")


class FirstRowEngine(MergeEngine):
    """Java's FirstRowMergeFunction: keeps the key's first add record."""

    name = "first-row"
    picks_rows = True

    def required_columns(self, requested: Sequence[str]) -> list[str]:
        """One whole record wins per key: no column depends on another."""
        return self._with_order_columns(requested)

    def validate(self) -> None:
        opts = self.ctx.options
        if self.ctx.sequence_fields:
            raise InvalidOptionError("sequence.field cannot be used with merge-engine=first-row")
        producer = (opts.get("changelog-producer") or "none").lower()
        if producer not in ("none", "lookup"):
            raise InvalidOptionError(f"merge-engine=first-row only supports changelog-producer "
                                     f"none or lookup, got {producer!r}")

    def select(self, kinds: np.ndarray, groups: KeyGroups) -> tuple[np.ndarray, np.ndarray]:
        """First add row per key group (positions in merge order), and which results are
        DELETE."""
        retract = is_retract(kinds)
        lone = groups.sizes == 1
        if retract.any() and not self.ctx.options.ignore_delete:
            in_merged = np.repeat(~lone, groups.sizes)
            if (retract & in_merged).any():
                raise SchemaMismatchError(_REFUSED)
        n = len(kinds)
        # first add position at or after each group start: reverse running minimum
        add_pos = np.where(retract, n, np.arange(n))
        first_add = np.minimum.accumulate(add_pos[::-1])[::-1][groups.starts]
        gone = ~lone & (first_add > groups.ends)
        return np.where(lone, groups.starts, np.where(gone, groups.ends, first_add)), gone

    def merge_groups(self, table: pa.Table, groups: KeyGroups) -> pa.Table:
        if len(groups) == table.num_rows:
            return table
        rows, gone = self.select(table[VALUE_KIND].to_numpy(), groups)
        return pick_rows(table, rows, gone, DELETE)

    def refuse_retracts(self, rows: pa.Table, kinds: np.ndarray, table: str) -> None:
        """Write-time form of the refusal in `select`."""
        if self.ctx.options.ignore_delete:
            return
        raise SchemaMismatchError(f"{table}: refused {describe_retracts(kinds)}: {_REFUSED}")
