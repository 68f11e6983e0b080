"""Filesystem catalog: a warehouse of `<database>.db/<table>/` directories, as Paimon has it."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from lakeformat.errors import (
    DatabaseAlreadyExistsError,
    DatabaseNotEmptyError,
    DatabaseNotFoundError,
    InvalidIdentifierError,
    TableAlreadyExistsError,
    TableNotFoundError,
)
from lakeformat.operation.merge_schema import validate_table_schema
from lakeformat.schema.schema_manager import SchemaManager
from lakeformat.schema.table_schema import new_schema
from lakeformat.schema.types import DataField, assign_field_ids, from_arrow
from lakeformat.storage import FileIO, get_file_io
from lakeformat.table import Table

DB_SUFFIX = ".db"
_BAD = re.compile(r"[\x00-\x1f\x7f/\\]")


def check_name(kind: str, name: str) -> str:
    if not isinstance(name, str) or not name.strip():
        raise InvalidIdentifierError(f"{kind} name must be a non-empty string, got {name!r}")
    if _BAD.search(name) or ".." in name or name in (".",) or name != name.strip():
        raise InvalidIdentifierError(
            f"invalid {kind} name {name!r}: no '/', '\\', '..', control characters or "
            "surrounding spaces")
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
        """Raise `InvalidIdentifierError` unless both names are safe to use in a path."""
        check_name("database", self.database)
        check_name("table", self.table)
        return self

    @staticmethod
    def parse(identifier: str | Identifier) -> Identifier:
        if isinstance(identifier, Identifier):
            return identifier.check()  # again: a frozen dataclass can still be altered
        parts = str(identifier).split(".")
        if len(parts) != 2:
            raise InvalidIdentifierError(
                f"table identifier {identifier!r} must be 'database.table'")
        return Identifier(parts[0], parts[1])

    def __str__(self) -> str:
        return f"{self.database}.{self.table}"


class Catalog:
    """Warehouse URI (local path, file://, s3://) plus catalog options (`s3.*`, ...)."""

    def __init__(self, warehouse: str, options: Mapping[str, str] | None = None,
                 file_io: FileIO | None = None):
        self.options = {str(k): str(v) for k, v in (options or {}).items()}
        self.file_io = file_io or get_file_io(warehouse, self.options)
        self.warehouse = warehouse.rstrip("/") if warehouse not in ("/",) else warehouse

    def __repr__(self) -> str:
        return f"Catalog({self.warehouse!r})"

    # -- databases -------------------------------------------------------------------------------
    def database_path(self, name: str) -> str:
        return self.file_io.join(self.warehouse, check_name("database", name) + DB_SUFFIX)

    def list_databases(self) -> list[str]:
        names = [p.rstrip("/").rsplit("/", 1)[-1] for p in self.file_io.list_dirs(self.warehouse)]
        return sorted(n[: -len(DB_SUFFIX)] for n in names if n.endswith(DB_SUFFIX))

    def database_exists(self, name: str) -> bool:
        return self.file_io.is_dir(self.database_path(name))

    def create_database(self, name: str, exist_ok: bool = False) -> None:
        path = self.database_path(name)
        if self.file_io.is_dir(path):
            if exist_ok:
                return
            raise DatabaseAlreadyExistsError(f"database {name!r} already exists at {path}")
        self.file_io.mkdirs(path)
        if not self.file_io.is_dir(path):  # object stores have no empty directories
            self.file_io.write_bytes(self.file_io.join(path, ".lakeformat-database"), b"")

    def drop_database(self, name: str, ignore_missing: bool = False, cascade: bool = False) -> None:
        path = self.database_path(name)
        if not self.file_io.is_dir(path):
            if ignore_missing:
                return
            raise DatabaseNotFoundError(f"database {name!r} does not exist")
        tables = self.list_tables(name)
        if tables and not cascade:
            raise DatabaseNotEmptyError(
                f"database {name!r} is not empty ({len(tables)} tables); use cascade=True")
        self.file_io.delete_dir(path)

    # -- tables ------------------------------------------------------------------------------------
    def table_path(self, identifier: str | Identifier) -> str:
        ident = Identifier.parse(identifier)
        return self.file_io.join(self.database_path(ident.database), ident.table)

    def list_tables(self, database: str) -> list[str]:
        path = self.database_path(database)
        if not self.file_io.is_dir(path):
            raise DatabaseNotFoundError(f"database {database!r} does not exist")
        out = []
        for d in self.file_io.list_dirs(path):
            if SchemaManager(self.file_io, d.rstrip("/")).schema_ids():
                out.append(d.rstrip("/").rsplit("/", 1)[-1])
        return sorted(out)

    def table_exists(self, identifier: str | Identifier) -> bool:
        return bool(SchemaManager(self.file_io, self.table_path(identifier)).schema_ids())

    def get_table(self, identifier: str | Identifier) -> Table:
        ident = Identifier.parse(identifier)
        path = self.table_path(ident)
        if not SchemaManager(self.file_io, path).schema_ids():
            if not self.file_io.is_dir(self.database_path(ident.database)):
                raise DatabaseNotFoundError(f"database {ident.database!r} does not exist")
            raise TableNotFoundError(f"table {ident} does not exist")
        return Table(str(ident), path, self.file_io)

    def create_table(self, identifier: str | Identifier, schema: pa.Schema | list[DataField],
                     primary_keys: list[str] | None = None,
                     partition_keys: list[str] | None = None,
                     options: Mapping[str, Any] | None = None, comment: str | None = None,
                     exist_ok: bool = False) -> Table:
        """Create a primary-key table from an Arrow schema (nullability is taken from it).

        A list of `DataField`s gives Paimon types Arrow cannot express (CHAR(n), VARCHAR(n)).
        """
        ident = Identifier.parse(identifier)
        if not self.database_exists(ident.database):
            raise DatabaseNotFoundError(f"database {ident.database!r} does not exist")
        if self.table_exists(ident):
            if exist_ok:
                return self.get_table(ident)
            raise TableAlreadyExistsError(f"table {ident} already exists")
        if not primary_keys:
            raise InvalidIdentifierError(
                f"table {ident}: lakeformat manages primary-key tables; give primary_keys")
        if isinstance(schema, pa.Schema):
            fields = [DataField(-1, f.name, from_arrow(f.type, f.nullable)) for f in schema]
        else:
            fields = list(schema)
        fields, _ = assign_field_ids(fields)
        opts = {str(k): str(v).lower() if isinstance(v, bool) else str(v)
                for k, v in (options or {}).items()}
        table_schema = new_schema(0, fields, list(partition_keys or []), list(primary_keys),
                                  opts, comment)
        validate_table_schema(table_schema)
        SchemaManager(self.file_io, self.table_path(ident)).create(table_schema)
        return self.get_table(ident)

    def drop_table(self, identifier: str | Identifier, ignore_missing: bool = False) -> None:
        ident = Identifier.parse(identifier)
        if not self.table_exists(ident):
            if ignore_missing:
                return
            raise TableNotFoundError(f"table {ident} does not exist")
        self.file_io.delete_dir(self.table_path(ident))

