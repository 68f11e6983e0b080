"""Merge-schema writes: the table schema widened to accept the columns of incoming data.

Paimon's `SchemaMergingUtils` rules: columns the data has and the table lacks are appended
(nested ROW fields too) as nullable columns with fresh field ids above `highestFieldId` (a new
column's nested fields are numbered before the column itself); columns the data lacks stay and
are written as null; existing columns keep their nullability, id and comment. With type
widening (lakeformat's default, `write.merge-schema.type-widening`), a leaf type changes only by
an implicit cast (INT -> BIGINT, FLOAT -> DOUBLE, DECIMAL of the same scale and larger
precision, longer CHAR/VARCHAR/BINARY, higher TIMESTAMP precision, ...), or by an explicit one
with `write.merge-schema.explicit-cast=true`. Without widening, leaf types stay the table's and
the data is cast to them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from lakeformat.errors import SchemaMismatchError, UnsupportedError
from lakeformat.options import parse_bool
from lakeformat.schema.casts import check_value_cast, merged_leaf, supports_cast
from lakeformat.schema.table_schema import KEY_PREFIX, SYSTEM_FIELD_NAMES, TableSchema
from lakeformat.schema.types import DataField, DataType, reassign_field_ids

MERGE_SCHEMA = "write.merge-schema"
TYPE_WIDENING = "write.merge-schema.type-widening"
EXPLICIT_CAST = "write.merge-schema.explicit-cast"


@dataclass(frozen=True)
class MergeSchemaOptions:
    type_widening: bool = True
    explicit_cast: bool = False

    @staticmethod
    def of(options: dict[str, str]) -> MergeSchemaOptions:
        return MergeSchemaOptions(parse_bool(options, TYPE_WIDENING, True),
                                  parse_bool(options, EXPLICIT_CAST, False))


def merge_schemas(current: TableSchema, data_fields: list[DataField],
                  opts: MergeSchemaOptions = MergeSchemaOptions()) -> TableSchema:
    """`current` when nothing changes, else schema `current.id + 1` accepting `data_fields`.

    Raises SchemaMismatchError naming the column and both types when a type cannot merge.
    """
    counter = [current.highest_field_id]
    keys = set(current.primary_keys) | set(current.partition_keys)
    data_fields = [_keep_key_type(current, f) if f.name in keys else f for f in data_fields]
    fields = _merge_fields(list(current.fields), data_fields, counter, opts, ())
    if tuple(fields) == current.fields:
        return current
    return replace(current, id=current.id + 1, fields=tuple(fields),
                   highest_field_id=counter[0])


def _keep_key_type(schema: TableSchema, given: DataField) -> DataField:
    """Key columns never change type (their bytes decide buckets and partitions): data of a
    type that casts implicitly to the key's is written as the key's type, anything else is
    refused naming the column and both types."""
    key = schema.field(given.name)
    if given.type.copy(True) == key.type.copy(True):
        return given
    if not key.type.is_nested and supports_cast(given.type.copy(True), key.type.copy(True),
                                                False):
        return replace(given, type=key.type)
    kind = "partition" if given.name in schema.partition_keys else "primary-key"
    raise SchemaMismatchError(f"{kind} column {given.name!r} is {key.type}; data of type "
                              f"{given.type} cannot be written to it, and a key's type never "
                              "changes")


def _merge_fields(base: list[DataField], update: list[DataField], counter: list[int],
                  opts: MergeSchemaOptions, path: tuple[str, ...]) -> list[DataField]:
    by_name = {f.name: f for f in update}
    out = []
    for f in base:
        u = by_name.get(f.name)
        out.append(f if u is None else replace(
            f, type=_merge_type(f.type, u.type, counter, opts, path + (f.name,))))
    known = {f.name for f in base}
    for u in update:
        if u.name not in known:
            if not path and (u.name in SYSTEM_FIELD_NAMES or u.name.startswith(KEY_PREFIX)):
                raise SchemaMismatchError(f"cannot add column {u.name!r}: the name is reserved "
                                          "by Paimon")
            out.append(_new_field(u, counter))
    return out


def _merge_type(base: DataType, update: DataType, counter: list[int], opts: MergeSchemaOptions,
                path: tuple[str, ...]) -> DataType:
    if base.copy(True) == update.copy(True):
        return base
    if base.root == "ROW" and update.root == "ROW":
        fields = _merge_fields(list(base.fields), list(update.fields), counter, opts, path)
        return replace(base, fields=tuple(fields))
    if base.root in ("ARRAY", "MULTISET") and update.root == base.root:
        return replace(base, element=_merge_type(base.element, update.element,  # type: ignore[arg-type]
                                                 counter, opts, path + ("element",)))
    if base.root == "MAP" and update.root == "MAP":
        return replace(base,
                       key=_merge_type(base.key, update.key, counter, opts,  # type: ignore[arg-type]
                                       path + ("key",)),
                       value=_merge_type(base.value, update.value,  # type: ignore[arg-type]
                                         counter, opts, path + ("value",)))
    where = ".".join(path)
    if base.is_nested or update.is_nested:
        raise SchemaMismatchError(f"column {where!r}: table type {base} and data type {update} "
                                  "cannot merge")
    if not opts.type_widening:
        return base  # the data is cast to the table's type on write
    try:
        merged = merged_leaf(base, update, opts.explicit_cast)
        check_value_cast(base, merged, where)
    except UnsupportedError as e:
        raise SchemaMismatchError(f"column {where!r}: table type {base} and data type {update} "
                                  f"cannot merge: {e}") from None
    return merged


def _new_field(field: DataField, counter: list[int]) -> DataField:
    """A new column: nested ids first, then the column's own id; always nullable."""
    dt, counter[0] = reassign_field_ids(field.type, counter[0])
    counter[0] += 1
    return DataField(counter[0], field.name, dt.copy(True), field.description,
                     field.default_value)
