"""`merge-engine=first-row`: the first add record of a key wins; retracts are refused or ignored."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lakeformat.errors import LakeformatError, SchemaMismatchError
from lakeformat.merge.context import MergeContext
from lakeformat.merge.sort import DELETE, VALUE_KIND, KeyGroups, is_retract, pick_rows
from lakeformat.merge.validation import describe_retracts

_REFUSED = ("first-row merge engine cannot accept DELETE/UPDATE_BEFORE records by default; set "
            "'ignore-delete' = 'true' to ignore them")


def select(kinds: np.ndarray, groups: KeyGroups, ctx: MergeContext) -> tuple[np.ndarray,
                                                                             np.ndarray]:
    """First add row per key group (positions in merge order), and which results are DELETE."""
    retract = is_retract(kinds)
    lone = groups.sizes == 1
    if retract.any() and not ctx.options.ignore_delete:
        in_merged = np.repeat(~lone, groups.sizes)
        if (retract & in_merged).any():
            raise LakeformatError(_REFUSED)
    n = len(kinds)
    # first add position at or after each group start: reverse running minimum
    add_pos = np.where(retract, n, np.arange(n))
    first_add = np.minimum.accumulate(add_pos[::-1])[::-1][groups.starts]
    gone = ~lone & (first_add > groups.ends)
    return np.where(lone, groups.starts, np.where(gone, groups.ends, first_add)), gone


def merge(table: pa.Table, groups: KeyGroups, ctx: MergeContext) -> pa.Table:
    if len(groups) == table.num_rows:
        return table
    rows, gone = select(table[VALUE_KIND].to_numpy(), groups, ctx)
    return pick_rows(table, rows, gone, DELETE)


def check_retracts(ctx: MergeContext, rows: pa.Table, kinds: np.ndarray, table: str) -> None:
    """Write-time form of the refusal in `select` (see `validation.check_retracts`)."""
    if ctx.options.ignore_delete:
        return
    raise SchemaMismatchError(f"{table}: refused {describe_retracts(kinds)}: {_REFUSED}")

