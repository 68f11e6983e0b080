"""Merge engines: each takes key-sorted records with their key groups and returns one row per key.

`merge_sorted` is the single entry point readers, writers and compaction share.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

from lakeformat.errors import UnsupportedError
from lakeformat.merge import deduplicate, partial_update
from lakeformat.merge.sort import key_groups
from lakeformat.schema.table_schema import TableSchema

MergeFn = Callable[[pa.Table], pa.Table]

SUPPORTED_ENGINES = ("deduplicate", "partial-update")

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
    if engine not in SUPPORTED_ENGINES:
        raise UnsupportedError(
            f"merge-engine={engine!r} is not supported yet (supported: {SUPPORTED_ENGINES})")
    for key, value in opts.items():
        false_flag = str(value).strip().lower() == "false"
        if key in _UNSUPPORTED_EXACT and not false_flag:
            raise UnsupportedError(f"table option {key}={value!r} is not supported yet")
        if key.startswith("fields.") and key.endswith(_UNSUPPORTED_SUFFIXES) and not false_flag:
            raise UnsupportedError(f"table option {key}={value!r} is not supported yet")
    return engine


def create_merge_function(schema: TableSchema) -> MergeFn:
    """A function from key-sorted records of one bucket to one merged row per key."""
    engine = check_merge_options(schema)
    keys = list(schema.trimmed_primary_keys)

    def run(table: pa.Table) -> pa.Table:
        groups = key_groups(table, keys)
        if engine == "deduplicate":
            return deduplicate.merge(table, groups)
        return partial_update.merge(table, groups, keys)

    return run
