"""Merge engines: each takes key-sorted records with their key groups and returns one row per key.

`create_merge_function` (records already in merge order) and `merge_records` (any order) are the
entry points readers, writers and compaction share. Every engine module has one function,
`merge(table, groups, ctx)` (see `context.MergeContext` and `sort.sort_for_merge`), and may have
a `validate(schema)` with its option checks.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

from lakeformat.merge.context import MergeContext
from lakeformat.merge.sort import key_groups, sort_for_merge
from lakeformat.merge.validation import engine_module, validate
from lakeformat.schema.table_schema import TableSchema

MergeFn = Callable[[pa.Table], pa.Table]


def check_merge_options(schema: TableSchema) -> str:
    """Validate the table's merge options as Paimon does; returns the merge engine."""
    return validate(schema).engine


def create_merge_function(schema: TableSchema) -> MergeFn:
    """A function from records of one bucket IN MERGE ORDER to one merged row per key."""
    ctx = validate(schema)
    merge = engine_module(ctx.engine).merge

    def run(table: pa.Table) -> pa.Table:
        return merge(table, key_groups(table, ctx.key_names), ctx)

    return run


def sort_records(table: pa.Table, schema: TableSchema) -> pa.Table:
    """Put records of one bucket into the merge order of `schema`'s options."""
    ctx = MergeContext.of(schema)
    return sort_for_merge(table, ctx.key_names, ctx.sequence_fields, ctx.sequence_ascending)


def merge_records(table: pa.Table, schema: TableSchema) -> pa.Table:
    """Sort and merge records of one bucket; result kinds included (callers drop retracts)."""
    return create_merge_function(schema)(sort_records(table, schema))
