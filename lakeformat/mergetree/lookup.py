"""Java's lookup merge, over whole key groups: which records a lookup table merges, which
older rows a compaction's result replaces, and the changelog the lookup producer writes.

Tables whose writers look keys up (`changelog-producer=lookup`, `deletion-vectors.enabled`,
`force-lookup`; first-row has its own rule) keep a merged result at every level above 0, so a
key's merge takes its level-0 records plus only the *one* record of the lowest level above 0,
the newest result; older results are not merged again (an aggregate would count twice)
[JAVA LookupMergeFunction, used for reads and compaction of such tables].

A compaction of level-0 files also reads the levels above its output ("lookup runs"): a key
with no record above level 0 in the compaction takes its newest record there as the one it
merges with (`LookupChangelogMergeFunctionWrapper`): in a deletion-vector table that row is
marked deleted (the result replaces it); with the lookup producer the changelog compares it
with the result: +I (nothing before), -D (the result retracts), -U/+U (changed; with
`changelog-producer.row-deduplicate` nothing when the values are equal) — for keys with a
level-0 record only. Keys found only in lookup runs are not part of the compaction.

first-row looks keys up too (every first-row table does, whatever its changelog producer):
only whether a key is present above the output, which drops a later record of a key seen
before and leaves each key at most once above level 0 (`select_first_row`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.merge.sort import DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE, KeyGroups, is_retract
from lakeformat.schema.table_schema import SEQUENCE_NUMBER, VALUE_KIND

#: per row, the index of its lookup file (-1: a file of the compaction itself); never written
LOOKUP_FILE = "_LOOKUP_FILE"
_NONE = np.iinfo(np.int64).max


@dataclass(frozen=True)
class LookupSelection:
    emit: np.ndarray  # rows (of the slice) merged, in merge order
    groups: KeyGroups  # their key groups
    before: np.ndarray  # per group: the row of the high-level record it merged with, or -1
    level_0: np.ndarray  # per group: whether it holds a level-0 record
    replaced: np.ndarray  # rows of lookup runs the results replace (their positions get marked)


def select(emit: np.ndarray, groups: KeyGroups, level: np.ndarray, lookup: np.ndarray,
           expired: np.ndarray | None = None) -> LookupSelection:
    """The records each key group merges. `level`/`lookup` are per row of the slice (the
    rows `emit` orders): its file's level, and whether it comes from a lookup run.
    `expired`: per row, whether record-level expiry drops it (given for the lookup runs of a
    deletion-vector table): such a lookup row is never merged with nor compared against — as
    Java's lookup, which reads through the expiry, never finds it — but a key of the
    compaction marks it deleted, so that no stale copy stays visible beside its result."""
    n_groups = len(groups)
    sizes = groups.sizes
    gid = np.repeat(np.arange(n_groups, dtype=np.int64), sizes)
    lv = level[emit].astype(np.int64)
    from_lookup = lookup[emit]
    stale = from_lookup & expired[emit] if expired is not None else np.zeros(len(emit), bool)
    lk = from_lookup & ~stale
    own = ~from_lookup
    has_own = np.bincount(gid[own], minlength=n_groups) > 0
    level_0 = np.bincount(gid[own & (lv == 0)], minlength=n_groups) > 0
    starts = groups.starts
    own_high = np.minimum.reduceat(np.where(own & (lv > 0), lv, _NONE), starts) \
        if n_groups else np.zeros(0, np.int64)
    looked = np.minimum.reduceat(np.where(lk, lv, _NONE), starts) \
        if n_groups else np.zeros(0, np.int64)
    use_lookup = has_own & (own_high == _NONE) & (looked != _NONE)
    high = own & (lv > 0) & (lv == own_high[gid])
    found = lk & use_lookup[gid] & (lv == looked[gid])
    keep = has_own[gid] & ((own & (lv == 0)) | high | found)
    before = np.full(n_groups, -1, dtype=np.int64)
    before[gid[high | found]] = emit[high | found]
    kept = emit[keep]
    new_sizes = np.bincount(gid[keep], minlength=n_groups)[has_own]
    new_ends = np.cumsum(new_sizes) - 1
    replaced = emit[found | (stale & has_own[gid])]
    return LookupSelection(kept, KeyGroups(new_ends - new_sizes + 1, new_ends),
                           before[has_own], level_0[has_own], replaced)


def select_first_row(emit: np.ndarray, groups: KeyGroups, level: np.ndarray,
                     lookup: np.ndarray) -> LookupSelection:
    """first-row's lookup rule [JAVA FirstRowMergeFunctionWrapper]: a key with a record above
    level 0 in the compaction merges its own records (the first stays, no changelog); a key
    with level-0 records only is dropped when a lookup run holds the key (it was seen first
    there), and is new otherwise (its result is the changelog's +I). Only key presence is
    looked up: lookup rows never enter the merge, and nothing is replaced."""
    n_groups = len(groups)
    gid = np.repeat(np.arange(n_groups, dtype=np.int64), groups.sizes)
    lv = level[emit]
    lk = lookup[emit]
    own = ~lk
    has_own = np.bincount(gid[own], minlength=n_groups) > 0
    high = np.bincount(gid[own & (lv > 0)], minlength=n_groups) > 0
    seen = np.bincount(gid[lk], minlength=n_groups) > 0
    taken = has_own & (high | ~seen)
    keep = own & taken[gid]
    new_sizes = np.bincount(gid[keep], minlength=n_groups)[taken]
    new_ends = np.cumsum(new_sizes) - 1
    return LookupSelection(emit[keep], KeyGroups(new_ends - new_sizes + 1, new_ends),
                           np.full(len(new_sizes), -1, dtype=np.int64), ~high[taken],
                           np.zeros(0, dtype=np.int64))


def changelog(records: pa.Table, sel: LookupSelection, merged: pa.Table, names: Sequence[str],
              compare: Sequence[str] | None) -> pa.Table:
    """The lookup producer's changelog of one slice (key order; before then after per key).
    `compare`: the value columns `row-deduplicate` compares (None: it is off)."""
    has_before = sel.before >= 0
    before_add = np.zeros(len(sel.before), dtype=bool)
    if has_before.any():
        kinds = records[VALUE_KIND].take(pa.array(sel.before[has_before]))
        before_add[has_before] = ~is_retract(kinds)
    after_add = ~is_retract(merged[VALUE_KIND])
    insert = sel.level_0 & ~before_add & after_add
    delete = sel.level_0 & before_add & ~after_add
    update = sel.level_0 & before_add & after_add
    if compare is not None and update.any():
        g = np.flatnonzero(update)
        same = equal_rows(records.take(pa.array(sel.before[g])), merged.take(pa.array(g)),
                           compare)
        update[g[same]] = False
    g_ins, g_del, g_upd = (np.flatnonzero(m) for m in (insert, delete, update))
    old_groups = np.concatenate([g_del, g_upd])
    old = records.take(pa.array(sel.before[old_groups])).select(list(names))
    new = merged.take(pa.array(np.concatenate([g_ins, g_upd]))).select(list(names))
    old = _with_kinds(old, np.concatenate([np.full(len(g_del), DELETE),
                                           np.full(len(g_upd), UPDATE_BEFORE)]))
    new = _with_kinds(new.cast(old.schema), np.concatenate([np.full(len(g_ins), INSERT),
                                                            np.full(len(g_upd), UPDATE_AFTER)]))
    group_of = np.concatenate([old_groups, g_ins, g_upd])
    after = np.concatenate([np.zeros(len(old_groups), np.int64),
                            np.ones(len(g_ins) + len(g_upd), np.int64)])
    return pa.concat_tables([old, new]).take(pa.array(np.lexsort((after, group_of))))


def equal_rows(a: pa.Table, b: pa.Table, columns: Sequence[str]) -> np.ndarray:
    """Per row, whether `a` and `b` hold the same values in `columns` (null equals null)."""
    same = np.ones(a.num_rows, dtype=bool)
    for name in columns:
        x, y = a[name], b[name].cast(a[name].type)
        try:
            eq = pc.fill_null(pc.equal(x, y), False)
            both_null = pc.and_(pc.is_null(x), pc.is_null(y))
            same &= np.asarray(pc.or_(eq, both_null).to_numpy(zero_copy_only=False), dtype=bool)
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid):  # nested values: compare as Python
            same &= np.array([u == v for u, v in zip(x.to_pylist(), y.to_pylist())], dtype=bool)
    return same


def dedup_columns(value_names: Sequence[str], ignored: Sequence[str]) -> list[str]:
    """The columns `changelog-producer.row-deduplicate` compares: every value column but the
    ignored ones (`changelog-producer.row-deduplicate-ignore-fields`)."""
    skip = {SEQUENCE_NUMBER, VALUE_KIND, *ignored}
    return [n for n in value_names if n not in skip]


def _with_kinds(table: pa.Table, kinds: np.ndarray) -> pa.Table:
    i = table.schema.get_field_index(VALUE_KIND)
    return table.set_column(i, table.schema.field(i), pa.array(kinds.astype(np.int8)))
