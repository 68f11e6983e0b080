"""Schema text on the command line: `--columns 'id BIGINT, ...'` and `alter`'s change flags."""

from __future__ import annotations

import argparse
import re
from typing import Any

from lakeformat.cli.errors import UsageError
from lakeformat.errors import LakeformatError
from lakeformat.schema.schema_change import Move, SchemaChange
from lakeformat.schema.type_text import parse_type
from lakeformat.schema.types import DataField


def _split_top(text: str) -> list[str]:
    """Split 'a INT, b DECIMAL(10, 2)' on commas outside parentheses."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "(<":
            depth += 1
        elif ch in ")>":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def parse_columns(text: str) -> list[DataField]:
    """'id BIGINT NOT NULL, name STRING' -> fields (atomic types, Paimon SQL spelling)."""
    fields = []
    for i, col in enumerate(_split_top(text)):
        name, _, type_text = col.strip().partition(" ")
        if not type_text.strip():
            raise UsageError(f"column {col!r} needs a type, e.g. 'id BIGINT'")
        fields.append(DataField(i, name.strip("`\""), parse_type(type_text)))
    return fields


ALTER_FLAGS = (
    ("--set-option", "KEY=VALUE", "set a table option"),
    ("--remove-option", "KEY", "remove a table option"),
    ("--add-column", "'NAME TYPE [COMMENT text] [FIRST|AFTER col]'",
     "add a nullable column (NAME may be a.b for a field of a ROW column)"),
    ("--rename-column", "OLD=NEW", "rename a column (OLD may be a.b)"),
    ("--drop-column", "NAME", "drop a column"),
    ("--update-column-type", "'NAME TYPE'", "change a column's type (Paimon's cast rules)"),
    ("--update-column-nullability", "NAME=true|false", "make a column nullable or NOT NULL"),
    ("--update-column-comment", "NAME=COMMENT", "set a column's comment"),
    ("--update-column-position", "'NAME FIRST|LAST|AFTER col|BEFORE col'", "move a column"),
    ("--comment", "TEXT", "set the table comment"),
)


def _column_path(text: str) -> list[str]:
    """'a.b' -> ['a', 'b']; a backquoted name may hold dots: '`a.b`'."""
    text = text.strip()
    if text.startswith("`") and text.endswith("`") and text.count("`") == 2:
        return [text[1:-1]]
    return [p.strip("`") for p in text.split(".")]


def _pair(text: str, flag: str) -> tuple[str, str]:
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"{flag} takes KEY=VALUE, got {text!r}")
    k, v = text.split("=", 1)
    return k.strip(), v.strip()


def _name_and_rest(text: str, flag: str) -> tuple[str, str]:
    name, _, rest = text.strip().partition(" ")
    if not name or not rest.strip():
        raise argparse.ArgumentTypeError(f"{flag} takes 'NAME ...', got {text!r}")
    return name, rest.strip()


_POSITION = re.compile(r"^(?P<body>.*?)\s+(?:(?P<first>FIRST)|(?P<last>LAST)|"
                       r"(?P<kind>AFTER|BEFORE)\s+(?P<ref>\S+))\s*$", re.IGNORECASE)
_COMMENT = re.compile(r"^(?P<body>.*?)\s+COMMENT\s+'(?P<text>[^']*)'\s*$", re.IGNORECASE)


def change_parser(flag: str) -> Any:
    def parse(text: str) -> Any:
        if flag == "--set-option":
            return SchemaChange.set_option(*_pair(text, flag))
        if flag == "--remove-option":
            return SchemaChange.remove_option(text.strip())
        if flag == "--rename-column":
            old, new = _pair(text, flag)
            return SchemaChange.rename_column(_column_path(old), new)
        if flag == "--drop-column":
            return SchemaChange.drop_column(_column_path(text))
        if flag == "--update-column-nullability":
            name, value = _pair(text, flag)
            if value.lower() not in ("true", "false"):
                raise argparse.ArgumentTypeError(f"{flag}: {value!r} is not true or false")
            return SchemaChange.update_column_nullability(_column_path(name),
                                                          value.lower() == "true")
        if flag == "--update-column-comment":
            name, value = _pair(text, flag)
            return SchemaChange.update_column_comment(_column_path(name), value)
        if flag == "--comment":
            return SchemaChange.update_comment(text)
        name, rest = _name_and_rest(text, flag)
        try:
            if flag == "--update-column-type":
                return SchemaChange.update_column_type(_column_path(name), parse_type(rest))
            m = _POSITION.match(" " + rest if flag == "--update-column-position" else rest)
            if flag == "--update-column-position":
                if not m or m.group("body").strip():
                    raise argparse.ArgumentTypeError(
                        f"{flag} takes 'NAME FIRST|LAST|AFTER col|BEFORE col', got {text!r}")
                kind = (m.group("kind") or "").lower()
                return SchemaChange.update_column_position(
                    name, first=bool(m.group("first")), last=bool(m.group("last")),
                    after=m.group("ref") if kind == "after" else None,
                    before=m.group("ref") if kind == "before" else None)
            move = None
            if m and not m.group("last"):
                rest = m.group("body")
                if m.group("first"):
                    move = Move.first(_column_path(name)[-1])
                elif m.group("kind").lower() == "after":
                    move = Move.after(_column_path(name)[-1], m.group("ref"))
                else:
                    move = Move.before(_column_path(name)[-1], m.group("ref"))
            elif m:
                rest = m.group("body")
            comment = None
            c = _COMMENT.match(rest)
            if c:
                rest, comment = c.group("body"), c.group("text")
            return SchemaChange.add_column(_column_path(name), parse_type(rest), comment,
                                           move)
        except LakeformatError as e:
            raise argparse.ArgumentTypeError(f"{flag} {text!r}: {e}") from None

    parse.__name__ = flag.lstrip("-")
    return parse
