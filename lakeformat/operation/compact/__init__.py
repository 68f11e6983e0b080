"""Compaction: the compaction job (`job`), its per-bucket tasks and their execution
(`task`), which partitions a run selects (`select`), append-table compaction (`append`) and the
picks and deletion vectors of lookup compaction (`lookup`). The LSM structures they use live in
`lakeformat.mergetree`."""

from __future__ import annotations

from lakeformat.operation.compact.job import (
    CompactJob,
    compact_after_write,
)
from lakeformat.operation.compact.select import (
    idle_before,
    select_partitions,
)
from lakeformat.operation.compact.task import (
    CompactOutcome,
    CompactTask,
    check_compactable,
    plan_from_entries,
)

__all__ = [
    "CompactJob",
    "CompactOutcome",
    "CompactTask",
    "check_compactable",
    "compact_after_write",
    "idle_before",
    "plan_from_entries",
    "select_partitions",
]
