"""Sequence groups of `merge-engine=partial-update`: what a group is and how it picks winners.

A group (`fields.<s1>,<s2>.sequence-group = <c1>,<c2>`) protects its columns with its ordering
fields: a record updates them only when its ordering value is >= the one stored, so the stored
value is a running maximum and "wins" is one comparison against a segmented prefix maximum
(`at_least_stored`). Paimon walks the table options in `java.util.HashMap` order when it builds
the groups, which decides some errors; `java_hash_map_order` and `java_split` reproduce the
Java behaviour that parsing depends on. The ordering values become int64 codes in `codes`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

SEQUENCE_GROUP_SUFFIX = "sequence-group"

# Types whose values Paimon's comparator can order and lakeformat can rank with Arrow.
ORDERABLE_ROOTS = ("BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE",
                   "DECIMAL", "CHAR", "VARCHAR", "BINARY", "VARBINARY", "DATE", "TIME",
                   "TIMESTAMP", "TIMESTAMP_LTZ")


# -- Java string/collection behaviour the option parsing depends on ------------------------------

def java_split(text: str, sep: str = ",") -> list[str]:
    """Java `String.split(sep)` for a one-char literal: no trimming, trailing empties dropped."""
    if sep not in text:
        return [text]
    parts = text.split(sep)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def _java_string_hash(s: str) -> int:
    """`String.hashCode()` (over UTF-16 code units) as an unsigned 32-bit number."""
    data = s.encode("utf-16-le")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] | data[i + 1] << 8)) & 0xFFFFFFFF
    return h


def java_hash_map_order(keys: Sequence[str]) -> list[str]:
    """The order a `java.util.HashMap` filled with `keys` (in this order) iterates them.

    Paimon walks table options in this order when it builds sequence groups; whether a column
    that is one group's ordering field and another group's protected field is an error depends
    on which of the two options comes first.
    """
    capacity = 16
    while len(keys) > capacity * 3 // 4:
        capacity *= 2

    def bucket(k: str) -> int:
        h = _java_string_hash(k)
        return (h ^ (h >> 16)) & (capacity - 1)

    return [k for _, _, k in sorted((bucket(k), i, k) for i, k in enumerate(keys))]


@dataclass(frozen=True)
class SequenceGroup:
    """One `fields.<ordering>.sequence-group` option after Paimon's resolution."""

    option: str
    ordering: tuple[int, ...]  # field indices of the ordering fields, in listed order
    protected: tuple[int, ...]  # field indices the group protects (ordering fields excluded)
    removes_row: bool  # a -D winning this group removes the whole row

    @property
    def first_ordering(self) -> int:
        """Where the record walk (by field index) reaches the group's ordering fields."""
        return min(self.ordering)


def is_sequence_group_candidate(key: str) -> bool:
    return key.startswith("fields") and key.endswith(SEQUENCE_GROUP_SUFFIX)


# -- winners ---------------------------------------------------------------------------------------

def at_least_stored(values: np.ndarray, key_start: np.ndarray, reset: np.ndarray,
                    segment: np.ndarray | None = None) -> np.ndarray:
    """Rows whose code (>= 1; 0 = empty) is >= the maximum of `values` over the earlier rows
    of their segment (0 if none): the rows that win a sequence group.

    Segments start at key starts and at whole-row replacements (`reset`); a replacing row is
    itself judged against the segment before it. A row is >= everything before it exactly
    when it equals the running maximum including itself, so one cumulative maximum over
    `code + segment * big` answers every row. `segment` may pass precomputed segment ids."""
    seg = np.cumsum(key_start | reset, dtype=np.int64) - 1 if segment is None else segment
    values = _fit(values, key_start, int(seg[-1]) + 1)
    big = int(values.max()) + 1
    shifted = seg * big
    shifted += values
    running = np.maximum.accumulate(shifted)
    out = running == shifted
    out &= values > 0
    back = np.flatnonzero(reset & ~key_start)
    if len(back):
        before = running[back - 1] - (seg[back] - 1) * big
        out[back] = (values[back] > 0) & (values[back] >= before)
    return out


def _fit(values: np.ndarray, key_start: np.ndarray, n_segments: int) -> np.ndarray:
    """Shrink codes so that code * segment count fits int64 (only the order within a key
    matters: shift by the key's minimum, else rank)."""
    limit = (1 << 62) // max(n_segments, 1)
    if int(values.max()) < limit:
        return values
    present = values > 0
    starts = np.flatnonzero(key_start)
    key_of_row = np.cumsum(key_start) - 1
    lowest = np.where(present, values, np.iinfo(np.int64).max)
    key_min = np.minimum.reduceat(lowest, starts)[key_of_row]
    shifted = np.where(present, values - key_min + 1, 0)
    if int(shifted.max()) < limit:
        return shifted
    out = np.zeros_like(values)
    out[present] = np.unique(values[present], return_inverse=True)[1].ravel() + 1
    return out
