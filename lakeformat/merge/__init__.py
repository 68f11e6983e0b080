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
from lakeformat.merge.sort import (
    DELETE,
    VALUE_KIND,
    key_groups,
    merge_permutation,
    pick_rows,
    sort_for_merge,
)
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


def create_unsorted_merge(schema: TableSchema) -> MergeFn:
    """Like `create_merge_function`, for records in any order; `run(table, file_ranks=None)`
    (`file_ranks`: per row, the rank of the file it comes from — the tie rule of `sort`).

    Engines that only pick a row per key (`select`: deduplicate, first-row) sort the key
    columns alone and gather just the winning rows, instead of reordering every column.
    """
    ctx = validate(schema)
    module = engine_module(ctx.engine)
    select = getattr(module, "select", None)
    merge = module.merge

    def run(table: pa.Table, file_ranks=None) -> pa.Table:
        if table.num_rows <= 1:
            return table
        perm = merge_permutation(table, ctx.key_names, ctx.sequence_fields,
                                 ctx.sequence_ascending, file_ranks)
        if select is None:
            ordered = table.take(perm)
            return merge(ordered, key_groups(ordered, ctx.key_names), ctx)
        keys = table.select(ctx.key_names + [VALUE_KIND]).take(perm)
        groups = key_groups(keys, ctx.key_names)
        rows, override = select(keys[VALUE_KIND].to_numpy(), groups, ctx)
        return pick_rows(table, perm.to_numpy()[rows], override, DELETE)

    return run


def create_sorted_merge(schema: TableSchema):
    """Merge for callers that already hold the merge permutation and key groups.

    Returns `run(table, perm, groups)`: `perm` (numpy) puts `table` into merge order and
    `groups` are the key groups of that order; the result has one row per group, in order.
    Engines that only pick a row (deduplicate, first-row) gather just the winning rows.
    """
    ctx = validate(schema)
    module = engine_module(ctx.engine)
    select = getattr(module, "select", None)
    merge = module.merge

    def run(table: pa.Table, perm, groups) -> pa.Table:
        if select is None:
            ordered = table.take(pa.array(perm))
            return merge(ordered, groups, ctx)
        kinds = table[VALUE_KIND].to_numpy()[perm] if table.num_rows else perm[:0]
        rows, override = select(kinds, groups, ctx)
        return pick_rows(table, perm[rows], override, DELETE)

    return run


def sort_records(table: pa.Table, schema: TableSchema) -> pa.Table:
    """Put records of one bucket into the merge order of `schema`'s options."""
    ctx = MergeContext.of(schema)
    return sort_for_merge(table, ctx.key_names, ctx.sequence_fields, ctx.sequence_ascending)


def merge_records(table: pa.Table, schema: TableSchema) -> pa.Table:
    """Sort and merge records of one bucket; result kinds included (callers drop retracts)."""
    return create_unsorted_merge(schema)(table)
