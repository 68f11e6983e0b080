"""Read filters: a pyarrow Expression, or DNF tuples like pyarrow.parquet's `filters`.

DNF tuples (`[("dt", "=", "2024-01-01")]`, or a list of such lists meaning OR) can also be
evaluated on partition values alone, which is what prunes partitions before any file is read.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakeformat.errors import LakeformatError

Filter = pc.Expression | Sequence[Any] | None

_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq, "==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
    ">": operator.gt, ">=": operator.ge,
    "in": lambda a, b: a in b, "not in": lambda a, b: a not in b,
}


def _dnf(filter: Sequence[Any]) -> list[list[tuple[str, str, Any]]]:
    if not filter:
        return []
    if isinstance(filter[0], tuple):
        conjunctions = [list(filter)]
    else:
        conjunctions = [list(c) for c in filter]
    for conj in conjunctions:
        for term in conj:
            if not (isinstance(term, tuple) and len(term) == 3 and str(term[1]).lower() in _OPS):
                raise LakeformatError(f"filter term {term!r} is not (column, op, value) with op in "
                                      f"{sorted(_OPS)}")
    return [[(c, str(op).lower(), v) for c, op, v in conj] for conj in conjunctions]


def to_expression(filter: Filter) -> pc.Expression | None:
    if filter is None:
        return None
    if isinstance(filter, pc.Expression):
        return filter
    dnf = _dnf(filter)
    return pq.filters_to_expression(dnf) if dnf else None


def filter_columns(filter: Filter, all_columns: Sequence[str]) -> set[str]:
    """Columns a filter reads, so a projection still lets the filter run.

    An Expression cannot be walked with pyarrow's public API, so it reads every column.
    """
    if filter is None:
        return set()
    if isinstance(filter, pc.Expression):
        return set(all_columns)
    return {c for conj in _dnf(filter) for c, _, _ in conj}


def partition_predicate(filter: Filter, partition_keys: Sequence[str]
                        ) -> Callable[[dict[str, Any]], bool] | None:
    """A predicate on partition values implied by a DNF filter (None when nothing prunes)."""
    if filter is None or isinstance(filter, pc.Expression) or not partition_keys:
        return None
    dnf = _dnf(filter)
    if not dnf:
        return None
    parts = [[t for t in conj if t[0] in partition_keys] for conj in dnf]
    if any(not p for p in parts):
        return None  # some disjunct does not constrain partitions: nothing can be pruned

    def pred(values: dict[str, Any]) -> bool:
        for conj in parts:
            ok = True
            for col, op, v in conj:
                actual = values.get(col)
                try:
                    if actual is None or not _OPS[op](actual, v):
                        ok = False
                        break
                except TypeError:  # incomparable types: do not prune
                    break
            if ok:
                return True
        return False

    return pred
