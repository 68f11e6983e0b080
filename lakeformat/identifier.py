"""Names of databases and tables: one check, used by both catalogs, the CLI and the Airflow
operators (which call `check_identifier` when a DAG file is parsed, so this module imports
nothing but the errors).

A name becomes a directory (`<warehouse>/<database>.db/<table>`), a lock object and a row of a
JDBC catalog, so it is checked before any of them is made. The rules:

* Paimon's own: `$` separates a table from its system tables and branches (`t$snapshots`,
  `t$branch_dev`), so no data table's name has one (a database's may: Paimon splits only the
  table's name there); `sys` is Paimon's system database; a table is named `database.table`,
  so neither name has a dot;
* the file system's: at most 255 bytes (UTF-8) per path component — 252 for a database, whose
  directory takes the `.db` suffix — and no `/`, `\\`, control characters, surrounding
  spaces, nor a name of only dots.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lakeformat.errors import InvalidIdentifierError

__all__ = ["Identifier", "check_identifier", "check_name", "MAX_NAME_BYTES",
           "SYSTEM_DATABASE", "SYSTEM_TABLE_SPLITTER"]

#: the longest name of a path component on common file systems (ext4, XFS, APFS, NTFS)
MAX_NAME_BYTES = 255
#: Paimon's separator of system tables and branches (`Identifier.SYSTEM_TABLE_SPLITTER`)
SYSTEM_TABLE_SPLITTER = "$"
#: Paimon's system database (`Catalog.SYSTEM_DATABASE_NAME`)
SYSTEM_DATABASE = "sys"
_DATABASE_SUFFIX = ".db"
_BAD = re.compile(r"[\x00-\x1f\x7f/\\]")


def _longest(kind: str) -> int:
    return MAX_NAME_BYTES - (len(_DATABASE_SUFFIX) if kind == "database" else 0)


def check_name(kind: str, name: object) -> str:
    """`name` when it is a valid `kind` ("database" / "table") name; else
    `InvalidIdentifierError` naming it and the rule it breaks."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidIdentifierError(f"{kind} name must be a non-empty string, got {name!r}")
    shown = name if len(name) <= 80 else f"{name[:60]}...{name[-10:]}"
    if _BAD.search(name) or ".." in name or name != name.strip():
        raise InvalidIdentifierError(
            f"invalid {kind} name {shown!r}: no '/', '\\', '..', control characters or "
            "surrounding spaces")
    if "." in name:
        raise InvalidIdentifierError(
            f"invalid {kind} name {shown!r}: no '.' (a table is named 'database.table')")
    if kind == "table" and SYSTEM_TABLE_SPLITTER in name:
        raise InvalidIdentifierError(
            f"invalid {kind} name {shown!r}: no '$' (Paimon reads 'table$name' as a system "
            "table or branch of 'table')")
    if kind == "database" and name == SYSTEM_DATABASE:
        raise InvalidIdentifierError(
            f"invalid database name {name!r}: it is Paimon's system database; choose another")
    try:
        size = len(name.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidIdentifierError(f"invalid {kind} name {shown!r}: not valid Unicode text "
                                     "(a lone surrogate)") from None
    longest = _longest(kind)
    if size > longest:
        why = " (its directory adds '.db')" if kind == "database" else ""
        raise InvalidIdentifierError(
            f"invalid {kind} name {shown!r}: {size} bytes in UTF-8, at most {longest}{why}: a "
            "file system holds no longer name; choose a shorter one")
    return name


@dataclass(frozen=True)
class Identifier:
    """`database.table`; both names are checked on construction, so an Identifier built by
    hand passes the same checks as a parsed string before any path is made from it."""

    database: str
    table: str

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> Identifier:
        """Raise `InvalidIdentifierError` unless both names are valid (see the module)."""
        check_name("database", self.database)
        check_name("table", self.table)
        return self

    @staticmethod
    def parse(identifier: str | Identifier) -> Identifier:
        if isinstance(identifier, Identifier):
            return identifier.check()  # again: a frozen dataclass can still be altered
        if not isinstance(identifier, str):
            raise InvalidIdentifierError(
                f"table identifier must be 'database.table' text, got {identifier!r}")
        parts = identifier.split(".")
        if len(parts) != 2:
            raise InvalidIdentifierError(
                f"table identifier {identifier!r} must be 'database.table'")
        return Identifier(parts[0], parts[1])

    def __str__(self) -> str:
        return f"{self.database}.{self.table}"


def check_identifier(identifier: str | Identifier) -> Identifier:
    """The `Identifier` of `"database.table"`, or `InvalidIdentifierError` naming what is
    wrong: the check every catalog call makes, for callers that check before they connect
    (an Airflow operator when its DAG file is parsed)."""
    return Identifier.parse(identifier)
