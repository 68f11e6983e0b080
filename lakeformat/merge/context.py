"""What every merge engine needs to know about its table, computed once per read or write."""

from __future__ import annotations

from dataclasses import dataclass

from lakeformat.options import CoreOptions
from lakeformat.schema.table_schema import TableSchema


@dataclass(frozen=True)
class MergeContext:
    schema: TableSchema
    key_names: list[str]  # trimmed primary key
    sequence_fields: list[str]  # `sequence.field`, in order
    sequence_ascending: bool  # `sequence.field.sort-order`
    options: CoreOptions

    @staticmethod
    def of(schema: TableSchema) -> MergeContext:
        options = CoreOptions(schema.options)
        raw = options.get("sequence.field") or ""
        fields = [f.strip() for f in raw.split(",") if f.strip()]
        order = (options.get("sequence.field.sort-order") or "ascending").strip().lower()
        return MergeContext(schema, list(schema.trimmed_primary_keys), fields,
                            order != "descending", options)

    @property
    def engine(self) -> str:
        return self.options.merge_engine
