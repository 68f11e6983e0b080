"""Merge engines: each takes key-sorted records with their key groups and returns one row per key.

`create_merge_function` (records already in merge order) and `merge_records` (any order) are the
entry points readers, writers and compaction share. Every engine module has one function,
`merge(table, groups, ctx)`; see `context.MergeContext` and `sort.sort_for_merge`.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

from lakeformat.errors import UnsupportedError
from lakeformat.merge import deduplicate, partial_update
from lakeformat.merge.context import MergeContext
from lakeformat.merge.sort import key_groups, sort_for_merge
from lakeformat.schema.table_schema import TableSchema

MergeFn = Callable[[pa.Table], pa.Table]

_ENGINES = {
    "deduplicate": deduplicate.merge,
    "partial-update": partial_update.merge,
}

# Options that change how records merge and that this version does not implement yet.
_UNSUPPORTED_EXACT = (
    "sequence.field", "ignore-delete", "deduplicate.ignore-delete",
    "partial-update.ignore-delete", "first-row.ignore-delete",
    "partial-update.remove-record-on-delete", "partial-update.remove-record-on-sequence-group",
    "fields.default-aggregate-function", "aggregation.remove-record-on-delete",
    "deletion-vectors.enabled",
)
_UNSUPPORTED_SUFFIXES = (".sequence-group", ".aggregate-function", ".ignore-retract")


def check_merge_options(schema: TableSchema) -> str:
    """Return the merge engine, or raise naming the first option lakeformat cannot honour."""
    opts = schema.options
    engine = opts.get("merge-engine", "deduplicate").lower()
    if engine not in _ENGINES:
        raise UnsupportedError(
            f"merge-engine={engine!r} is not supported yet (supported: {sorted(_ENGINES)})")
    for key, value in opts.items():
        false_flag = str(value).strip().lower() == "false"
        if key in _UNSUPPORTED_EXACT and not false_flag:
            raise UnsupportedError(f"table option {key}={value!r} is not supported yet")
        if key.startswith("fields.") and key.endswith(_UNSUPPORTED_SUFFIXES) and not false_flag:
            raise UnsupportedError(f"table option {key}={value!r} is not supported yet")
    return engine


def create_merge_function(schema: TableSchema) -> MergeFn:
    """A function from records of one bucket IN MERGE ORDER to one merged row per key."""
    engine = check_merge_options(schema)
    ctx = MergeContext.of(schema)
    merge = _ENGINES[engine]

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
