"""The LSM runtime that reads and compactions of primary-key tables share: the levels of a
bucket and Paimon's universal compaction picks (`levels`), the merge of sorted runs through a
merge engine (`reader`), the lookup merge that produces changelog and deletion vectors
(`lookup`), and the record-level expiry compactions apply (`record_expire`).

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
from lakeformat.mergetree.record_expire import (
    RecordLevelExpire,
    check_record_level_expire,
)

__all__ = [
    "BUDGET_COPIES",
    "CompactUnit",
    "KeyComparator",
    "LevelSortedRun",
    "Levels",
    "MergeTreeReader",
    "RecordLevelExpire",
    "UniversalCompaction",
    "check_record_level_expire",
    "dedup_columns",
    "interval_partition",
    "pick_full_compaction",
]
