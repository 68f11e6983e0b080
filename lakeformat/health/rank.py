"""Ranking due actions across tables, and choosing them within a budget.

Order: urgent actions first (a bucket at `num-sorted-run.stop-trigger` - 1 sorted runs, where
writers are about to stall), then by `benefit` (expected score points per MiB of work, the
work floored at 1 MiB), then by expected gain, then table name and kind (stable). A budget of
`max_actions` and/or `max_bytes` is filled greedily in that order, skipping an action that
would pass the bytes left (a later, smaller one may still fit). Within one table the actions
keep their dependency order (`ACTION_KINDS`: compaction, partition expiry, manifest
compaction, snapshot expiry, schema files, orphans) and an action whose table's earlier action
was left out is left out too: what it would free depends on it.
"""

from __future__ import annotations

from collections.abc import Sequence

from lakeformat.errors import InvalidArgumentError
from lakeformat.health.results import ACTION_KINDS, DueAction, DueReport


def rank_key(a: DueAction) -> tuple:
    return (not a.urgent, -a.benefit, -a.expected_gain, a.table, ACTION_KINDS.index(a.kind)
            if a.kind in ACTION_KINDS else len(ACTION_KINDS))


def order_within_table(actions: Sequence[DueAction]) -> list[DueAction]:
    """One table's actions in the order they must run."""
    return sorted(actions, key=lambda a: ACTION_KINDS.index(a.kind)
                  if a.kind in ACTION_KINDS else len(ACTION_KINDS))


def rank_actions(reports: Sequence[DueReport], max_actions: int | None = None,
                 max_bytes: int | None = None) -> list[DueAction]:
    """The due actions of `reports`, most valuable first, within the budget."""
    for name, value in (("max_actions", max_actions), ("max_bytes", max_bytes)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < 0):
            raise InvalidArgumentError(f"{name} must be a non-negative integer, got {value!r}")
    ranked = sorted((a for r in reports for a in r.actions), key=rank_key)
    chosen: list[DueAction] = []
    cut: dict[str, int] = {}  # table -> position in ACTION_KINDS of its first action left out
    left = max_bytes
    for a in ranked:
        step = ACTION_KINDS.index(a.kind) if a.kind in ACTION_KINDS else len(ACTION_KINDS)
        if a.table in cut and step > cut[a.table]:
            continue  # depends on an action of its table left out
        fits = (max_actions is None or len(chosen) < max_actions) and (
            left is None or a.work_bytes <= left)
        if not fits:
            cut[a.table] = min(cut.get(a.table, step), step)
            continue
        chosen.append(a)
        if left is not None:
            left -= a.work_bytes
    chosen = [a for a in chosen if not (a.table in cut and _step(a) > cut[a.table])]
    # the same table's actions run in dependency order, wherever the first one ranked
    return _dependency_order(chosen)


def _step(a: DueAction) -> int:
    return ACTION_KINDS.index(a.kind) if a.kind in ACTION_KINDS else len(ACTION_KINDS)


def _dependency_order(chosen: list[DueAction]) -> list[DueAction]:
    by_table: dict[str, list[DueAction]] = {}
    for a in chosen:
        by_table.setdefault(a.table, []).append(a)
    queues = {t: order_within_table(acts) for t, acts in by_table.items()}
    return [queues[a.table].pop(0) for a in chosen]
