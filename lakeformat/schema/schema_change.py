"""Schema changes a user asks for (`Table.alter`), named as Paimon names them.

Each change is a small immutable value; `lakeformat.schema.alter.apply_changes` turns a list of
them into the next schema version. Column paths are a name, or a list of names for a field
inside a ROW column (`["address", "city"]`). Types may be given as a Paimon `DataType`, Paimon
SQL text (`"DECIMAL(12, 2)"`, `"ARRAY<INT>"`), or an Arrow type.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

import pyarrow as pa

from lakeformat.errors import InvalidOptionError
from lakeformat.schema.type_text import parse_type
from lakeformat.schema.types import DataType, from_arrow


def as_data_type(value: Any) -> DataType:
    """A Paimon type from a DataType, SQL type text or an Arrow type."""
    if isinstance(value, DataType):
        return value
    if isinstance(value, str):
        return parse_type(value)
    if isinstance(value, pa.DataType):
        return from_arrow(value)
    if isinstance(value, pa.Field):
        return from_arrow(value.type, value.nullable)
    raise InvalidOptionError(f"{value!r} is not a data type (give a DataType, SQL text such as "
                             "'BIGINT', or a pyarrow type)")


def _path(name: str | list[str] | tuple[str, ...]) -> tuple[str, ...]:
    path = (name,) if isinstance(name, str) else tuple(name)
    if not path or not all(isinstance(p, str) and p for p in path):
        raise InvalidOptionError(f"column path {name!r} must be a name or a list of names")
    return path


class MoveType(Enum):
    FIRST = "FIRST"
    AFTER = "AFTER"
    BEFORE = "BEFORE"
    LAST = "LAST"


@dataclass(frozen=True)
class Move:
    """Where a column goes: first, last, or after/before a reference column (same level)."""

    field_name: str
    reference_field_name: str | None
    type: MoveType

    @staticmethod
    def first(field_name: str) -> Move:
        return Move(field_name, None, MoveType.FIRST)

    @staticmethod
    def last(field_name: str) -> Move:
        return Move(field_name, None, MoveType.LAST)

    @staticmethod
    def after(field_name: str, reference_field_name: str) -> Move:
        return Move(field_name, reference_field_name, MoveType.AFTER)

    @staticmethod
    def before(field_name: str, reference_field_name: str) -> Move:
        return Move(field_name, reference_field_name, MoveType.BEFORE)


@dataclass(frozen=True)
class SetOption:
    key: str
    value: str


@dataclass(frozen=True)
class RemoveOption:
    key: str


@dataclass(frozen=True)
class UpdateComment:
    comment: str | None


@dataclass(frozen=True)
class AddColumn:
    field_names: tuple[str, ...]
    data_type: DataType
    comment: str | None = None
    move: Move | None = None


@dataclass(frozen=True)
class RenameColumn:
    field_names: tuple[str, ...]
    new_name: str


@dataclass(frozen=True)
class DropColumn:
    field_names: tuple[str, ...]


@dataclass(frozen=True)
class UpdateColumnType:
    field_names: tuple[str, ...]
    new_data_type: DataType
    keep_nullability: bool = False


@dataclass(frozen=True)
class UpdateColumnNullability:
    field_names: tuple[str, ...]
    new_nullability: bool


@dataclass(frozen=True)
class UpdateColumnComment:
    field_names: tuple[str, ...]
    new_comment: str | None


@dataclass(frozen=True)
class UpdateColumnPosition:
    move: Move


Change = (SetOption | RemoveOption | UpdateComment | AddColumn | RenameColumn | DropColumn
          | UpdateColumnType | UpdateColumnNullability | UpdateColumnComment
          | UpdateColumnPosition)


class SchemaChange:
    """Factories of schema changes, with Paimon's names (`SchemaChange.add_column(...)`)."""

    @staticmethod
    def set_option(key: str, value: Any) -> SetOption:
        text = str(value).lower() if isinstance(value, bool) else str(value)
        return SetOption(str(key), text)

    @staticmethod
    def remove_option(key: str) -> RemoveOption:
        return RemoveOption(str(key))

    @staticmethod
    def update_comment(comment: str | None) -> UpdateComment:
        return UpdateComment(comment)

    @staticmethod
    def add_column(field_name: str | list[str], data_type: Any, comment: str | None = None,
                   move: Move | None = None, *, after: str | None = None, first: bool = False
                   ) -> AddColumn:
        """A new nullable column at the end, `first=True`, or `after="col"` (or a `Move`)."""
        path = _path(field_name)
        if sum(x is not None and x is not False for x in (move, after, first or None)) > 1:
            raise InvalidOptionError("give only one of move, after and first")
        if first:
            move = Move.first(path[-1])
        elif after is not None:
            move = Move.after(path[-1], after)
        return AddColumn(path, as_data_type(data_type), comment, move)

    @staticmethod
    def rename_column(field_name: str | list[str], new_name: str) -> RenameColumn:
        if not new_name:
            raise InvalidOptionError("a column's new name cannot be empty")
        return RenameColumn(_path(field_name), new_name)

    @staticmethod
    def drop_column(field_name: str | list[str]) -> DropColumn:
        return DropColumn(_path(field_name))

    @staticmethod
    def update_column_type(field_name: str | list[str], new_data_type: Any,
                           keep_nullability: bool = False) -> UpdateColumnType:
        return UpdateColumnType(_path(field_name), as_data_type(new_data_type), keep_nullability)

    @staticmethod
    def update_column_nullability(field_name: str | list[str], new_nullability: bool
                                  ) -> UpdateColumnNullability:
        return UpdateColumnNullability(_path(field_name), bool(new_nullability))

    @staticmethod
    def update_column_comment(field_name: str | list[str], comment: str | None
                              ) -> UpdateColumnComment:
        return UpdateColumnComment(_path(field_name), comment)

    @staticmethod
    def update_column_position(move: Move | str, *, first: bool = False,
                               after: str | None = None, before: str | None = None,
                               last: bool = False) -> UpdateColumnPosition:
        """`update_column_position(Move.after("c", "a"))` or `("c", after="a")`."""
        if isinstance(move, Move):
            if first or last or after is not None or before is not None:
                raise InvalidOptionError("give either a Move or a column with one position")
            return UpdateColumnPosition(move)
        picks = [m for m, on in ((Move.first(move), first), (Move.last(move), last)) if on]
        if after is not None:
            picks.append(Move.after(move, after))
        if before is not None:
            picks.append(Move.before(move, before))
        if len(picks) != 1:
            raise InvalidOptionError(f"column {move!r} needs exactly one of first, last, after, "
                                     "before")
        return UpdateColumnPosition(picks[0])
