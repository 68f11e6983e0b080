"""The read side of the `lakeformat` data source: plan on the driver, merge in the tasks.

Spark creates the reader in a planning worker, calls `pushFilters` and pickles the reader into
the read function *before* it calls `partitions()`; so what the tasks need comes either from
`__init__`/`pushFilters` (the table's place, its schema and snapshot, the filters) or from the
input partition itself (one (partition, bucket) split and the plan's columns and predicate).
Nothing in a task reads the table's latest snapshot.

Filters: terms on partition columns are taken (Spark does not evaluate them again) and are
exact: they prune splits on partition values and are applied to merged rows too. Terms on
other columns are applied to merged rows in the task — after the merge, never before it,
since a filter on unmerged rows could bring back an older version of a row — and are also
left to Spark, which evaluates them again with its own semantics. Only simple types are
pushed (integers, strings, booleans, dates); everything else is Spark's.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pyspark.sql.datasource import (
    DataSourceReader,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
)
from pyspark.sql.types import StructType

from lakeformat.errors import ColumnNotFoundError, InvalidFilterError
from lakeformat.expressions import check_filter
from lakeformat.meta.snapshot import Snapshot
from lakeformat.operation.read import ReadPlan, TableRead
from lakeformat.operation.scan import Split
from lakeformat.schema.schema_manager import SchemaManager
from lakeformat.schema.table_schema import TableSchema
from lakeformat.spark.types import arrow_schema_for, spark_batches
from lakeformat.storage import get_file_io

__all__ = ["LakeformatReader", "SplitPartition", "ReadSource", "PUSHABLE_ROOTS"]

#: Paimon type roots whose filters are pushed (Spark's literal and pyarrow's compare alike)
PUSHABLE_ROOTS = frozenset({"TINYINT", "SMALLINT", "INT", "BIGINT", "CHAR", "VARCHAR",
                            "BOOLEAN", "DATE"})

_OP = {EqualTo: "=", GreaterThan: ">", GreaterThanOrEqual: ">=", LessThan: "<",
       LessThanOrEqual: "<=", In: "in"}
_NEGATED = {EqualTo: "!=", GreaterThan: "<=", GreaterThanOrEqual: "<", LessThan: ">=",
            LessThanOrEqual: ">", In: "not in"}


class SplitPartition(InputPartition):
    """One Spark input partition: one (partition, bucket) split of the pinned snapshot, with
    the plan's columns and row predicate (the plan without its list of splits)."""

    def __init__(self, index: int, split: Split, plan: ReadPlan):
        super().__init__(index)
        self.split = split
        self.plan = plan

    def __repr__(self) -> str:
        return (f"SplitPartition({self.value}, partition={self.split.partition_values}, "
                f"bucket={self.split.bucket}, files={len(self.split.files)})")


@dataclass(frozen=True)
class _NullCheck:
    """IS NULL / IS NOT NULL on a partition column: decided per split."""

    column: str
    is_null: bool


@dataclass(frozen=True)
class ReadSource:
    """What a read needs of the table, resolved once on the driver (`LakeformatDataSource`):
    where its files are and which snapshot, under which schema, is read."""

    table_name: str
    table_path: str
    warehouse: str
    catalog_options: dict[str, str]
    snapshot: Snapshot | None
    table_schema: TableSchema
    memory_budget: int | None = None


class LakeformatReader(DataSourceReader):
    """Reads the columns of `schema` (what Spark asks for) of one snapshot."""

    def __init__(self, source: ReadSource, schema: StructType):
        self.source = source
        self.table_schema = source.table_schema
        self.schema = schema
        names = self.table_schema.field_names
        self.columns = list(schema.fieldNames())
        unknown = [c for c in self.columns if c not in names]
        if unknown:
            raise ColumnNotFoundError(f"columns {unknown} are not in {source.table_name} (at "
                                      f"the snapshot read); its columns are {names}")
        self.terms: list[tuple[str, str, Any]] = []
        self.null_checks: list[_NullCheck] = []

    # -- planning (driver) ---------------------------------------------------------------------
    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:
        partition_keys = set(self.table_schema.partition_keys)
        for f in filters:
            column = _column(f)
            field = self._pushable(column)
            if field is None:
                yield f
                continue
            if isinstance(f, (IsNull, IsNotNull)):
                if column in partition_keys:
                    self.null_checks.append(_NullCheck(column, isinstance(f, IsNull)))
                    continue
                yield f
                continue
            term = _term(f)
            if term is None or not self._valid(term):
                yield f
                continue
            self.terms.append(term)
            if column not in partition_keys:
                yield f  # applied to merged rows in the task, and again by Spark

    def _pushable(self, column: str | None) -> str | None:
        if column is None or column not in self.table_schema.field_names:
            return None
        return column if self.table_schema.field(column).type.root in PUSHABLE_ROOTS else None

    def _valid(self, term: tuple[str, str, Any]) -> bool:
        try:
            check_filter([term], self.table_schema.fields, self.source.table_name)
        except InvalidFilterError:
            return False
        return True

    def _table_read(self) -> TableRead:
        src = self.source
        file_io = get_file_io(src.warehouse, src.catalog_options)
        return TableRead(file_io, src.table_path, self.table_schema,
                         SchemaManager(file_io, src.table_path), src.memory_budget)

    def partitions(self) -> list[InputPartition]:
        plan = self._table_read().plan(self.source.snapshot, self.columns, self.terms or None)
        splits = [s for s in plan.splits if self._keeps(s)]
        light = replace(plan, splits=[])
        return [SplitPartition(i, s, light) for i, s in enumerate(splits)]

    def _keeps(self, split: Split) -> bool:
        values = dict(zip(self.table_schema.partition_keys, split.partition_values))
        return all((values.get(c.column) is None) == c.is_null for c in self.null_checks)

    # -- execution (tasks) -----------------------------------------------------------------------
    def read(self, partition: InputPartition) -> Iterator[Any]:
        if not isinstance(partition, SplitPartition):
            return  # Spark's stand-in partition when the snapshot has no split
        table_read = self._table_read()
        target = arrow_schema_for(self.schema)
        for rows in table_read.read_split(partition.split, partition.plan,
                                          table_read.memory_budget):
            yield from spark_batches(rows, self.schema, target)


def _column(f: Filter) -> str | None:
    """The top-level column a filter is on (None for nested paths and composite filters)."""
    inner = f.child if isinstance(f, Not) else f
    attribute: Sequence[str] | None = getattr(inner, "attribute", None)
    if attribute is None or len(attribute) != 1:
        return None
    return attribute[0]


def _term(f: Filter) -> tuple[str, str, Any] | None:
    """A DNF term (column, op, value) with SQL's meaning, or None."""
    negated = isinstance(f, Not)
    inner = f.child if negated else f
    ops = _NEGATED if negated else _OP
    op = ops.get(type(inner))
    if op is None:
        return None
    value = inner.value  # type: ignore[attr-defined]
    if isinstance(inner, In):
        values = tuple(value)
        if not values or any(v is None for v in values):
            return None  # SQL's IN with a NULL is three-valued: left to Spark
        return (inner.attribute[0], op, values)  # type: ignore[attr-defined]
    if value is None or isinstance(value, (list, tuple, dict)):
        return None
    return (inner.attribute[0], op, value)  # type: ignore[attr-defined]
