"""The next schema version from a list of schema changes, with Paimon's rules.

Changes apply in order to a copy of the latest schema. The rules are Java Paimon's
(`SchemaManager.generateTableSchema`): partition columns cannot be renamed or changed, primary
keys cannot be dropped, change type, or become nullable, immutable options (merge engine,
bucket key, ...) cannot change once the table has snapshots, `bucket` cannot move to or from
-1, new columns are nullable and take field ids above `highestFieldId`, type changes follow
Paimon's cast rules. Renaming a column also renames it in the options that name columns.
"""

from __future__ import annotations

from dataclasses import replace

from lakeformat import clock
from lakeformat.errors import InvalidOptionError, UnsupportedError
from lakeformat.options import parse_bool
from lakeformat.schema.casts import check_value_cast, supports_cast
from lakeformat.schema.schema_change import (
    AddColumn,
    Change,
    DropColumn,
    Move,
    MoveType,
    RemoveOption,
    RenameColumn,
    SetOption,
    UpdateColumnComment,
    UpdateColumnNullability,
    UpdateColumnPosition,
    UpdateColumnType,
    UpdateComment,
)
from lakeformat.schema.table_schema import KEY_PREFIX, SYSTEM_FIELD_NAMES, TableSchema
from lakeformat.schema.types import DataField, DataType, reassign_field_ids

# Options Paimon marks @Immutable: fixed once a table holds snapshots [CoreOptions.java].
IMMUTABLE_OPTIONS = frozenset({
    "type", "bucket-key", "bucket-function.type", "data-file.path-directory", "merge-engine",
    "sequence.snapshot-ordering", "aggregation.remove-record-on-delete",
    "partial-update.remove-record-on-delete", "partial-update.remove-record-on-sequence-group",
    "rowkind.field", "primary-key", "primary-key.nullable", "partition",
    "dynamic-bucket.initial-buckets", "force-lookup", "row-tracking.enabled",
    "data-evolution.enabled", "index-file-in-data-file-dir", "blob-field",
    "blob-descriptor-field", "blob-view-field", "pk-clustering-override",
})

# fields.<name>.<suffix> options whose key names one column (renamed along with it).
_FIELD_KEY_SUFFIXES = ("aggregate-function", "ignore-retract", "distinct", "list-agg-delimiter",
                       "map.storage-layout", "map.shared-shredding.max-columns",
                       "map.shared-shredding.column-placement-policy", "default-value",
                       "stats-mode")


def apply_changes(old: TableSchema, changes: list[Change], has_snapshots: bool) -> TableSchema:
    """Schema `old.id + 1` with `changes` applied; raises naming the change that is refused."""
    options = dict(old.options)
    fields = list(old.fields)
    highest = old.highest_field_id
    comment = old.comment
    renames: dict[str, str] = {}
    null_to_not_null_disabled = parse_bool(options, "alter-column-null-to-not-null.disabled",
                                           True)
    explicit_casts = not parse_bool(options, "disable-explicit-type-casting", False)
    for change in changes:
        if isinstance(change, SetOption):
            _check_set_option(options, change.key, change.value, has_snapshots)
            options[change.key] = change.value
        elif isinstance(change, RemoveOption):
            _check_remove_option(options, change.key, has_snapshots)
            options.pop(change.key, None)
        elif isinstance(change, UpdateComment):
            comment = change.comment
        elif isinstance(change, AddColumn):
            fields, highest = _add_column(old, fields, highest, change)
        elif isinstance(change, RenameColumn):
            _not_key(old, change.field_names, "rename", partition=True)
            _check_name(change.new_name)
            fields = _rename(fields, change)
            if len(change.field_names) == 1:
                renames[change.field_names[0]] = change.new_name
        elif isinstance(change, DropColumn):
            _not_key(old, change.field_names, "drop", partition=True, primary=True)
            fields = _drop(fields, change.field_names)
        elif isinstance(change, UpdateColumnType):
            _not_key(old, change.field_names, "update the type of", partition=True,
                     primary=True)
            fields = _update(fields, change.field_names, lambda f, c=change: _retype(
                f, c, null_to_not_null_disabled, explicit_casts))
        elif isinstance(change, UpdateColumnNullability):
            if change.new_nullability:
                _not_key(old, change.field_names, "make nullable", primary=True)
            fields = _update(fields, change.field_names, lambda f, c=change: _renull(
                f, c, null_to_not_null_disabled))
        elif isinstance(change, UpdateColumnComment):
            fields = _update(fields, change.field_names,
                             lambda f, c=change: replace(f, description=c.new_comment))
        elif isinstance(change, UpdateColumnPosition):
            fields = apply_move(fields, change.move)
        else:
            raise UnsupportedError(f"unsupported schema change {change!r}")
    primary_keys = tuple(renames.get(k, k) for k in old.primary_keys)
    return TableSchema(
        id=old.id + 1, fields=tuple(fields), highest_field_id=highest,
        partition_keys=old.partition_keys, primary_keys=primary_keys,
        options=rename_in_options(options, renames), comment=comment,
        time_millis=clock.now_millis())


# -- options ------------------------------------------------------------------------------------

def _check_set_option(options: dict[str, str], key: str, value: str, has_snapshots: bool) -> None:
    old = options.get(key)
    if old == value:
        return
    if key == "type":
        raise UnsupportedError("changing option 'type' is not supported")
    if key == "path":
        raise UnsupportedError("changing option 'path' is not supported")
    if not has_snapshots:
        return
    if key in IMMUTABLE_OPTIONS:
        raise UnsupportedError(f"option {key!r} cannot change once the table has snapshots "
                               f"({old!r} -> {value!r})")
    if key == "bucket":
        try:
            new_bucket, old_bucket = int(value), int(old) if old is not None else -1
        except ValueError:
            raise InvalidOptionError(f"option 'bucket' must be an integer, got {value!r}") from None
        if old_bucket == -1:
            raise UnsupportedError("cannot change 'bucket' of a dynamic-bucket (-1) table")
        if new_bucket == -1:
            raise UnsupportedError("cannot change 'bucket' to -1 (dynamic bucket)")
    new = {key: value}
    for flag in ("ignore-delete", "ignore-update-before"):
        if key == flag and parse_bool(options, key) and not parse_bool(new, key):
            raise UnsupportedError(f"cannot change {flag} from true to false")
    if key == "deletion-vectors.enabled" and not parse_bool(options,
                                                            "deletion-vectors.modifiable"):
        if parse_bool(options, key) != parse_bool(new, key):
            raise UnsupportedError("cannot change deletion-vectors.enabled without "
                                   "deletion-vectors.modifiable=true")


def _check_remove_option(options: dict[str, str], key: str, has_snapshots: bool) -> None:
    if key in ("type", "path"):
        raise UnsupportedError(f"option {key!r} cannot be removed")
    if not has_snapshots:
        return
    if key in IMMUTABLE_OPTIONS:
        raise UnsupportedError(f"option {key!r} cannot change once the table has snapshots")
    if key == "bucket":
        raise UnsupportedError("option 'bucket' cannot be reset")
    if key == "deletion-vectors.enabled" and key in options:
        _check_set_option(options, key, "false", has_snapshots)


def rename_in_options(options: dict[str, str], renames: dict[str, str]) -> dict[str, str]:
    """Options that name columns, with renamed columns' new names (Java does the same)."""
    if not renames:
        return options

    def names(text: str) -> str:
        return ",".join(renames.get(n.strip(), n.strip()) for n in text.split(","))

    out: dict[str, str] = {}
    for key, value in options.items():
        if key in ("bucket-key", "sequence.field") and value.strip():
            out[key] = names(value)
            continue
        if key.startswith("fields."):
            body = key[len("fields."):]
            for suffix in ("sequence-group", "nested-key"):
                if body.endswith("." + suffix):
                    out[f"fields.{names(body[: -len(suffix) - 1])}.{suffix}"] = names(value)
                    break
            else:
                for suffix in _FIELD_KEY_SUFFIXES:
                    if body.endswith("." + suffix):
                        col = body[: -len(suffix) - 1]
                        out[f"fields.{renames.get(col, col)}.{suffix}"] = value
                        break
                else:
                    out[key] = value
            continue
        out[key] = value
    return out


# -- columns ------------------------------------------------------------------------------------

def _check_name(name: str) -> None:
    if name in SYSTEM_FIELD_NAMES or name.startswith(KEY_PREFIX):
        raise InvalidOptionError(f"column name {name!r} is reserved by Paimon")


def _not_key(schema: TableSchema, path: tuple[str, ...], what: str, partition: bool = False,
             primary: bool = False) -> None:
    if len(path) > 1:
        return  # keys are never nested
    name = path[0]
    if partition and name in schema.partition_keys:
        raise UnsupportedError(f"cannot {what} partition column {name!r}")
    if primary and name in schema.primary_keys:
        raise UnsupportedError(f"cannot {what} primary-key column {name!r}")


def _index(fields: list[DataField], name: str) -> int:
    for i, f in enumerate(fields):
        if f.name == name:
            return i
    return -1


def _nested(fields: list[DataField], path: tuple[str, ...], edit, depth: int = 0
            ) -> list[DataField]:
    """Apply `edit(level_fields, name)` to the fields holding the last name of `path`."""
    if depth == len(path) - 1:
        return edit(list(fields), path[depth])
    i = _index(fields, path[depth])
    if i < 0:
        raise InvalidOptionError(f"column {'.'.join(path[:depth + 1])!r} does not exist")
    parent = fields[i]
    inner = _row_of(parent.type)
    if inner is None:
        raise InvalidOptionError(f"column {'.'.join(path[:depth + 1])!r} ({parent.type}) has "
                                 "no nested fields")
    new_inner = _nested(list(inner.fields), path, edit, depth + 1)
    out = list(fields)
    out[i] = replace(parent, type=_with_row(parent.type, new_inner))
    return out


def _row_of(dt: DataType) -> DataType | None:
    if dt.root == "ROW":
        return dt
    if dt.root in ("ARRAY", "MULTISET"):
        return _row_of(dt.element)  # type: ignore[arg-type]
    if dt.root == "MAP":
        return _row_of(dt.value)  # type: ignore[arg-type]
    return None


def _with_row(dt: DataType, fields: list[DataField]) -> DataType:
    if dt.root == "ROW":
        return replace(dt, fields=tuple(fields))
    if dt.root in ("ARRAY", "MULTISET"):
        return replace(dt, element=_with_row(dt.element, fields))  # type: ignore[arg-type]
    return replace(dt, value=_with_row(dt.value, fields))  # type: ignore[arg-type]


def _add_column(schema: TableSchema, fields: list[DataField], highest: int, change: AddColumn
                ) -> tuple[list[DataField], int]:
    where = ".".join(change.field_names)
    if not change.data_type.nullable:
        raise UnsupportedError(f"column {where!r} cannot be added as NOT NULL: rows already in "
                               "the table have no value for it")
    _check_name(change.field_names[-1])
    new_id = highest + 1
    dt, highest = reassign_field_ids(change.data_type, new_id)
    field = DataField(new_id, change.field_names[-1], dt, change.comment)

    def edit(level: list[DataField], name: str) -> list[DataField]:
        if _index(level, name) >= 0:
            raise InvalidOptionError(f"column {where!r} already exists")
        move = change.move
        if move is None or move.type == MoveType.LAST:
            return level + [field]
        if move.type == MoveType.FIRST:
            return [field] + level
        ref = _index(level, move.reference_field_name or "")
        if ref < 0:
            raise InvalidOptionError(f"reference column {move.reference_field_name!r} of "
                                     f"{where!r} does not exist")
        at = ref + 1 if move.type == MoveType.AFTER else ref
        return level[:at] + [field] + level[at:]

    return _nested(fields, change.field_names, edit), highest


def _rename(fields: list[DataField], change: RenameColumn) -> list[DataField]:
    where = ".".join(change.field_names)

    def edit(level: list[DataField], name: str) -> list[DataField]:
        i = _index(level, name)
        if i < 0:
            raise InvalidOptionError(f"column {where!r} does not exist")
        if _index(level, change.new_name) >= 0:
            raise InvalidOptionError(f"cannot rename {where!r}: column {change.new_name!r} "
                                     "already exists")
        level[i] = replace(level[i], name=change.new_name)
        return level

    return _nested(fields, change.field_names, edit)


def _drop(fields: list[DataField], path: tuple[str, ...]) -> list[DataField]:
    where = ".".join(path)

    def edit(level: list[DataField], name: str) -> list[DataField]:
        i = _index(level, name)
        if i < 0:
            raise InvalidOptionError(f"column {where!r} does not exist")
        del level[i]
        if not level:
            raise UnsupportedError(f"cannot drop {where!r}: it is the last field")
        return level

    return _nested(fields, path, edit)


def _update(fields: list[DataField], path: tuple[str, ...], fn) -> list[DataField]:
    where = ".".join(path)

    def edit(level: list[DataField], name: str) -> list[DataField]:
        i = _index(level, name)
        if i < 0:
            raise InvalidOptionError(f"column {where!r} does not exist")
        level[i] = fn(level[i])
        return level

    return _nested(fields, path, edit)


def _retype(field: DataField, change: UpdateColumnType, null_to_not_null_disabled: bool,
            explicit: bool) -> DataField:
    src, dst = field.type, change.new_data_type
    where = ".".join(change.field_names)
    if change.keep_nullability:
        dst = dst.copy(src.nullable)
    elif src.nullable and not dst.nullable and null_to_not_null_disabled:
        raise UnsupportedError(f"cannot make column {where!r} NOT NULL (set "
                               "alter-column-null-to-not-null.disabled=false to allow it)")
    if src.is_nested or dst.is_nested:
        if src.copy(True) != dst.copy(True):
            raise UnsupportedError(f"column {where!r}: cannot change nested type {src} to {dst}; "
                                   "change its fields by their paths instead")
    elif not supports_cast(src, dst, explicit):
        raise UnsupportedError(f"column {where!r}: type {src} cannot be converted to {dst} "
                               "without losing information")
    check_value_cast(src, dst, where)
    return replace(field, type=dst)


def _renull(field: DataField, change: UpdateColumnNullability,
            null_to_not_null_disabled: bool) -> DataField:
    if field.type.nullable and not change.new_nullability and null_to_not_null_disabled:
        raise UnsupportedError(f"cannot make column {'.'.join(change.field_names)!r} NOT NULL "
                               "(set alter-column-null-to-not-null.disabled=false to allow it)")
    return replace(field, type=field.type.copy(change.new_nullability))


def apply_move(fields: list[DataField], move: Move) -> list[DataField]:
    """Paimon's `applyMove`: reposition one top-level column."""
    names = [f.name for f in fields]
    if move.field_name not in names:
        raise InvalidOptionError(f"column {move.field_name!r} does not exist")
    i = names.index(move.field_name)
    out = list(fields)
    moving = out.pop(i)
    if move.type == MoveType.FIRST:
        if i == 0:
            raise InvalidOptionError(f"column {move.field_name!r} is already first")
        return [moving] + out
    if move.type == MoveType.LAST:
        if i == len(fields) - 1:
            raise InvalidOptionError(f"column {move.field_name!r} is already last")
        return out + [moving]
    ref = move.reference_field_name
    if ref not in names:
        raise InvalidOptionError(f"reference column {ref!r} does not exist")
    if ref == move.field_name:
        raise InvalidOptionError(f"cannot move column {ref!r} relative to itself")
    at = [f.name for f in out].index(ref)
    return out[:at + 1] + [moving] + out[at + 1:] if move.type == MoveType.AFTER else (
        out[:at] + [moving] + out[at:])
