"""The filter language of reads, deletes and compaction selection: `Filter` (DNF tuples or a
PyArrow expression), its checks against a schema and its pushdown to partitions and row groups
(`predicate`), and the `where` text users write in the CLI, Spark and DAGs (`where`).

Nothing here reads a table: a filter is checked and translated, the operations apply it."""

from __future__ import annotations

from lakeformat.expressions.predicate import (
    Filter,
    check_filter,
    dnf_terms,
    filter_columns,
    partition_predicate,
    to_expression,
)
from lakeformat.expressions.where import (
    and_filters,
    parse_where,
    resolve_filter,
    where_filter,
)

__all__ = [
    "Filter",
    "and_filters",
    "check_filter",
    "dnf_terms",
    "filter_columns",
    "parse_where",
    "partition_predicate",
    "resolve_filter",
    "to_expression",
    "where_filter",
]
