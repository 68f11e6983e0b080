"""The merge-option checks Paimon does when a table is created or altered, done again on read.

Each engine module adds its own checks (`validate(schema)`); this module holds the ones that
cut across engines: the engine name, `sequence.field`, delete handling and the options that
change what rows a reader sees but that lakeformat does not implement (fail closed).
"""

from __future__ import annotations

import importlib
from types import ModuleType

import numpy as np
import pyarrow as pa

from lakeformat.errors import InvalidOptionError, UnsupportedError
from lakeformat.merge.context import MergeContext
from lakeformat.merge.sort import DELETE, UPDATE_BEFORE
from lakeformat.schema.table_schema import TableSchema

ENGINE_MODULES = {
    "deduplicate": "lakeformat.merge.deduplicate",
    "first-row": "lakeformat.merge.first_row",
    "partial-update": "lakeformat.merge.partial_update",
    "aggregation": "lakeformat.merge.aggregate",
}

# Options that change which rows a reader sees, and that lakeformat does not implement.
_UNSUPPORTED_TRUE = ("deletion-vectors.enabled", "data-evolution.enabled",
                     "sequence.snapshot-ordering")


def engine_module(engine: str) -> ModuleType:
    try:
        return importlib.import_module(ENGINE_MODULES[engine])
    except KeyError:
        raise UnsupportedError(f"merge-engine={engine!r} is not supported (supported: "
                               f"{sorted(ENGINE_MODULES)})") from None


def validate(schema: TableSchema) -> MergeContext:
    """Check the table's merge options; returns the context engines run with."""
    ctx = MergeContext.of(schema)
    opts = ctx.options
    module = engine_module(ctx.engine)
    for key in _UNSUPPORTED_TRUE:
        if opts.raw.get(key, "false").strip().lower() != "false":
            raise UnsupportedError(f"table option {key}={opts.raw[key]!r} is not supported")
    order = (opts.get("sequence.field.sort-order") or "ascending").strip().lower()
    if order not in ("ascending", "descending"):
        raise InvalidOptionError(f"option 'sequence.field.sort-order' must be ascending or "
                                 f"descending, got {opts.get('sequence.field.sort-order')!r}")
    names = schema.field_names
    _check_fields_options(schema)
    seen: set[str] = set()
    for f in ctx.sequence_fields:
        if f not in names:
            raise InvalidOptionError(f"sequence.field: column {f!r} is not in the table {names}")
        if f in seen:
            raise InvalidOptionError(f"sequence.field: column {f!r} is listed twice")
        seen.add(f)
        if opts.get(f"fields.{f}.aggregate-function"):
            raise InvalidOptionError(
                f"fields.{f}.aggregate-function: no aggregation on sequence field {f!r}")
        if schema.field(f).type.is_nested:
            raise InvalidOptionError(f"sequence.field: column {f!r} has type "
                                     f"{schema.field(f).type}, which cannot be ordered")
    if ctx.sequence_fields:
        if ctx.engine == "first-row":
            raise InvalidOptionError("sequence.field cannot be used with merge-engine=first-row")
        if not set(schema.partition_keys) <= set(schema.primary_keys):
            raise InvalidOptionError(
                "sequence.field cannot be used when the primary key does not contain every "
                "partition key (cross-partition update)")
    if ctx.engine == "first-row":
        producer = (opts.get("changelog-producer") or "none").lower()
        if producer not in ("none", "lookup"):
            raise InvalidOptionError(f"merge-engine=first-row only supports changelog-producer "
                                     f"none or lookup, got {producer!r}")
    _ = (opts.ignore_delete, opts.ignore_update_before)  # parse the flags: bad values fail here
    check = getattr(module, "validate", None)
    if check is not None:
        check(schema)
    return ctx



def _check_fields_options(schema: TableSchema) -> None:
    """Every `fields.<a>[,<b>].<option>` key must name columns of the table (as Java checks);
    a dot path into a ROW column's members is refused rather than silently ignored."""
    names = set(schema.field_names)
    for key in schema.options:
        if not key.startswith("fields."):
            continue
        segments = key.split(".")
        listed = segments[1].split(",") if len(segments) > 1 else [""]
        for name in listed:
            if name != "default-aggregate-function" and name not in names:
                raise InvalidOptionError(f"Field {name} can not be found in table schema "
                                         f"{schema.field_names} (table option {key})")
        if (len(segments) > 3 and len(listed) == 1 and listed[0] in names
                and schema.field(listed[0]).type.root == "ROW"):
            raise InvalidOptionError(f"table option {key}: paths into ROW column "
                                     f"{listed[0]!r} are not supported")


def check_retracts(schema: TableSchema, rows: pa.Table, kinds: np.ndarray, table: str) -> None:
    """Refuse -U/-D records the table's merge engine would fail on once they meet another
    record of their key: committed, they would make every read and compaction of that key
    fail until a rollback. Raises SchemaMismatchError naming the option(s) that allow them.
    `rows` and `kinds` are what the write keeps after ignore-delete/ignore-update-before."""
    retract = (kinds == UPDATE_BEFORE) | (kinds == DELETE)
    if not retract.any():
        return
    ctx = MergeContext.of(schema)
    check = getattr(engine_module(ctx.engine), "check_retracts", None)
    if check is not None:
        mask = pa.array(retract)
        check(ctx, rows.filter(mask), kinds[retract], table)


def describe_retracts(kinds: np.ndarray) -> str:
    """"3 -D and 1 -U records" for the messages of the engines' `check_retracts`."""
    parts = [f"{int(np.count_nonzero(kinds == k))} {name}"
             for k, name in ((DELETE, "-D"), (UPDATE_BEFORE, "-U")) if (kinds == k).any()]
    return " and ".join(parts) + " records"

