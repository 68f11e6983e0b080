"""Which columns a merge-on-read must read to produce the requested ones.

Reading a wide table for one column should not decode every column: most engines merge column
by column, so a column nobody asked for changes nothing in the others. What does cross columns:

* every engine: the trimmed primary key and the `sequence.field` columns (merge order);
* partial-update: a sequence group's ordering fields decide every field the group protects,
  and the merge walks each group whole, so every column of every group is read; a NOT NULL
  column is read so the engine's null checks fail as they would on a full read;
* aggregation: a function that cannot retract fails on a retract record, so its column is read
  (the read fails as a full read would); NOT NULL columns for the same reason;
* any other engine (or option combination not listed): every column — fail closed.

`_SEQUENCE_NUMBER` and `_VALUE_KIND` are always read by the file readers; they are not named here.
"""

from __future__ import annotations

from collections.abc import Sequence

from lakeformat.merge.aggregate import function_name
from lakeformat.merge.aggregators import create_aggregator
from lakeformat.merge.context import MergeContext
from lakeformat.merge.sequence_group import PartialUpdateConfig
from lakeformat.schema.table_schema import TableSchema

#: engines that pick one whole record per key: no column depends on another
_ROW_PICKING = ("deduplicate", "first-row")


def required_columns(schema: TableSchema, requested: Sequence[str]) -> list[str]:
    """The table columns (in schema order) a merge must read to produce `requested`."""
    ctx = MergeContext.of(schema)
    names = schema.field_names
    needed = set(requested) | set(ctx.key_names) | set(ctx.sequence_fields)
    engine = ctx.engine
    if engine in _ROW_PICKING:
        pass
    elif engine == "partial-update":
        cfg = PartialUpdateConfig.of(schema)
        for group in cfg.groups:
            needed |= {cfg.names[i] for i in (*group.ordering, *group.protected)}
        needed |= _not_null(schema)
    elif engine == "aggregation":
        needed |= _not_null(schema) | _cannot_retract(schema, ctx.sequence_fields)
    else:
        return list(names)
    return [n for n in names if n in needed]


def _not_null(schema: TableSchema) -> set[str]:
    return {f.name for f in schema.fields if not f.type.nullable}


def _cannot_retract(schema: TableSchema, sequence_fields: list[str]) -> set[str]:
    """Aggregated columns whose function raises on a retract record."""
    out = set()
    for f in schema.fields:
        name = function_name(f.name, schema.options, schema.primary_keys, sequence_fields)
        if name == "primary-key":
            continue
        if not create_aggregator(name, f, schema.options).supports_retract:
            out.add(f.name)
    return out
