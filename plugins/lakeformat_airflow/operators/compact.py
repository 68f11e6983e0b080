"""`LakeformatCompactOperator`: full or minor compaction of a table's buckets."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from lakeformat.errors import InvalidArgumentError
from lakeformat_airflow.operators.base import (
    DEFAULT_SPARK_CONN_ID,
    ENGINES,
    CommitIdentityMixin,
    EngineMixin,
    LakeformatBaseOperator,
    choice,
    no_value,
    templated,
    to_budget,
    to_duration,
    to_flag,
    to_partitions,
    to_required_count,
    to_structure,
    to_text,
)

if TYPE_CHECKING:
    from lakeformat import Table


def to_where(name: str, value: Any) -> Any:
    """Partition filter: DNF tuples (or the text of a list of them, which a rendered template
    gives), or where text such as "dt < '2024-06-01'" for the library to parse."""
    if no_value(value):
        return None
    if isinstance(value, str) and not value.strip().startswith(("[", "(")):
        return value.strip()
    return _dnf(to_structure(name, value, list, "DNF tuples such as [('dt', '<', "
                                                "'2024-06-01')] or where text"))


class LakeformatCompactOperator(CommitIdentityMixin, EngineMixin, LakeformatBaseOperator):
    """Compact the latest snapshot's buckets (`Table.compact`).

    `full=True` merges every sorted run of a bucket into the top level (the nightly job);
    `full=False` runs Paimon's universal-compaction picks. `partitions` (a list of
    `{key: value}`) or `where` (DNF tuples on partition columns, e.g. `[("dt", "<", "2024-06-01")]`,
    or where text) select partitions; `partition_idle_time` (`"1 h"`, a timedelta) keeps only
    partitions not written for that long, so a partition still being written is left alone.
    `memory_budget` (bytes or `"512 mb"`) bounds the job's memory. Idempotent per logical date:
    a retry reports what the earlier run committed. `engine="spark"` runs one Spark task per
    bucket. Every argument but `spark_conn_id` may be a template.
    """

    arguments = {"full": to_flag, "partitions": to_partitions, "where": to_where,
                 "partition_idle_time": to_duration, "memory_budget": to_budget,
                 "partitions_per_commit": to_required_count, "engine": choice(*ENGINES),
                 "commit_user": to_text}
    template_fields: Sequence[str] = ("table", *arguments, "commit_identifier")
    writes_table = True

    def __init__(self, *, table: str, full: bool = True,
                 partitions: Sequence[dict[str, Any]] | None = None, where: Any = None,
                 partition_idle_time: Any = None, memory_budget: int | str | None = None,
                 partitions_per_commit: int = 16, engine: str = "local",
                 spark_conn_id: str = DEFAULT_SPARK_CONN_ID, commit_user: str | None = None,
                 commit_identifier: int | str | None = None, **kwargs: Any):
        super().__init__(table=table, **kwargs)
        self.full = full
        self.partitions = partitions
        self.where = where
        self.partition_idle_time = partition_idle_time
        self.memory_budget = memory_budget
        self.partitions_per_commit = partitions_per_commit
        self.engine = engine
        self.spark_conn_id = spark_conn_id
        self.commit_user = commit_user
        self.commit_identifier = commit_identifier
        self.convert_arguments(rendered=False)

    def check_arguments(self) -> None:
        given = [v for v in (self.partitions, self.where) if v is not None]
        if len(given) == 2 and not templated(given):  # a template may render to nothing
            raise InvalidArgumentError("give partitions or where, not both")

    def changed(self, result: Any) -> bool:
        return bool(result.snapshot_ids)

    def run(self, table: Table, context: Any) -> Any:
        user, identifier = self.commit_identity(context)
        kwargs = dict(full=self.full, partitions=self.partitions, where=self.where,
                      partition_idle_time=self.partition_idle_time,
                      memory_budget=self.memory_budget,
                      partitions_per_commit=self.partitions_per_commit,
                      progress=self.log.info, commit_user=user, commit_identifier=identifier)
        if self.use_spark():
            from lakeformat.spark.compaction import compact

            return compact(self.spark(context), table, **kwargs)
        return table.compact(**kwargs)


def _dnf(where: Any) -> Any:
    """Filter tuples come back from a rendered template or XCom as lists: tuples again."""
    if isinstance(where, list):
        if len(where) == 3 and isinstance(where[0], str) and isinstance(where[1], str):
            return tuple(where)
        return [_dnf(w) for w in where]
    return where
