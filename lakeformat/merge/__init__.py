"""Merge engines: records of one bucket in, one row per key out (Paimon's MergeFunction).

`merge_engine(schema)` builds the table's engine (a `MergeEngine`, see `engine`), checking its
options as Paimon does. One module per engine: `deduplicate`, `first_row`, `partial_update`,
`aggregate`; their aggregate functions live in `aggregation`, the merge order and key groups
in `sort`, and Java's comparators as int64 codes in `codes`.
"""

from __future__ import annotations

from lakeformat.errors import UnsupportedError
from lakeformat.merge.aggregate import AggregateEngine
from lakeformat.merge.deduplicate import DeduplicateEngine
from lakeformat.merge.engine import MergeEngine
from lakeformat.merge.first_row import FirstRowEngine
from lakeformat.merge.partial_update import PartialUpdateEngine
from lakeformat.options import CoreOptions
from lakeformat.schema.table_schema import TableSchema

__all__ = ["MergeEngine", "merge_engine", "ENGINES"]

ENGINES: dict[str, type[MergeEngine]] = {
    engine.name: engine
    for engine in (DeduplicateEngine, PartialUpdateEngine, AggregateEngine, FirstRowEngine)
}


def merge_engine(schema: TableSchema) -> MergeEngine:
    """The engine `merge-engine` names, built for `schema` (its options checked)."""
    name = CoreOptions(schema.options).merge_engine
    engine = ENGINES.get(name)
    if engine is None:
        raise UnsupportedError(f"merge-engine={name!r} is not supported (supported: "
                               f"{sorted(ENGINES)})")
    return engine(schema)
