"""`compact(spark, table)`: the library's compaction with its execute step on Spark.

Plan (the existing `CompactTask`s of the latest snapshot) and commit (one COMPACT snapshot per
group of partitions, conflicts retried partition by partition) stay on the driver exactly as
`Table.compact` runs them, under the table's maintenance lock; each bucket's merge
(`CompactTaskExecutor.execute`) runs in its own Spark task through `SparkRunner`, the biggest
buckets first. A task that fails hands its error back as a value: the files of the tasks that
succeeded are deleted and the error raised, so no snapshot and no referenced file is left.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from lakeformat.expressions import Filter
from lakeformat.operation.compact import CompactTask
from lakeformat.results import CompactResult
from lakeformat.spark.runner import SparkRunner

if TYPE_CHECKING:
    from lakeformat import Table


def _task_bytes(task: CompactTask) -> float:
    return float(sum(f.file_size for f in task.files))


def compact(spark: Any, table: Table, full: bool = True,
            partitions: Sequence[dict[str, Any]] | None = None, where: Filter = None,
            partition_idle_time: Any = None, memory_budget: int | str | None = None,
            partitions_per_commit: int = 16, progress: Callable[[str], Any] | None = None, *,
            commit_user: str | None = None, commit_identifier: int | None = None
            ) -> CompactResult:
    """Compact `table` (a `lakeformat.Table`) with one Spark task per bucket; the arguments
    and the result are those of `Table.compact`. `memory_budget` bounds each task (one bucket's
    merge on one executor core; default the table's `write-buffer-size`)."""
    return table.compact(full=full, partitions=partitions, where=where,
                         partition_idle_time=partition_idle_time, memory_budget=memory_budget,
                         workers=1, partitions_per_commit=partitions_per_commit,
                         progress=progress, commit_user=commit_user,
                         commit_identifier=commit_identifier,
                         runner=SparkRunner(spark, weight=_task_bytes))
