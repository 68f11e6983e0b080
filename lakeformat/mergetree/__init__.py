"""The LSM runtime that reads and compactions of primary-key tables share: the levels of a
bucket and Paimon's universal compaction picks (`levels`), the merge of sorted runs through a
merge engine (`reader`), and the lookup merge that produces changelog and deletion vectors
(`lookup`).

Code here sees data files and their metadata, never snapshots or commits."""

from __future__ import annotations

from lakeformat.mergetree.levels import (
    CompactUnit,
    KeyComparator,
    Levels,
    LevelSortedRun,
    UniversalCompaction,
    interval_partition,
    pick_full_compaction,
)
from lakeformat.mergetree.lookup import (
    dedup_columns,
)
from lakeformat.mergetree.reader import (
    BUDGET_COPIES,
    MergeTreeReader,
)

__all__ = [
    "BUDGET_COPIES",
    "CompactUnit",
    "KeyComparator",
    "LevelSortedRun",
    "Levels",
    "MergeTreeReader",
    "UniversalCompaction",
    "dedup_columns",
    "interval_partition",
    "pick_full_compaction",
]
