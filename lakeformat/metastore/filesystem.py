"""`metastore=filesystem` (Paimon's default): the warehouse's directories are the catalog.

A database is a `<name>.db` directory; a table is a directory under it holding a schema file.
Object stores have no empty directories, so a new database there gets a marker object.
"""

from __future__ import annotations

from collections.abc import Callable

from lakeformat.errors import (
    DatabaseAlreadyExistsError,
    DatabaseNotFoundError,
    TableAlreadyExistsError,
)
from lakeformat.metastore.base import DB_SUFFIX, Metastore
from lakeformat.schema.schema_manager import SchemaManager
from lakeformat.storage import FileIO

__all__ = ["FileSystemMetastore"]

_DATABASE_MARKER = ".lakeformat-database"


class FileSystemMetastore(Metastore):
    kind = "filesystem"

    def __init__(self, file_io: FileIO, warehouse: str):
        self.file_io = file_io
        self.warehouse = warehouse

    def _join(self, *parts: str) -> str:
        return self.file_io.join(*parts)

    def database_path(self, name: str) -> str:
        return self.file_io.join(self.warehouse, name + DB_SUFFIX)

    def list_databases(self) -> list[str]:
        names = [p.rstrip("/").rsplit("/", 1)[-1] for p in self.file_io.list_dirs(self.warehouse)]
        return sorted(n[: -len(DB_SUFFIX)] for n in names if n.endswith(DB_SUFFIX))

    def database_exists(self, name: str) -> bool:
        return self.file_io.is_dir(self.database_path(name))

    def create_database(self, name: str) -> None:
        path = self.database_path(name)
        if self.file_io.is_dir(path):
            raise DatabaseAlreadyExistsError(f"database {name!r} already exists at {path}")
        self.file_io.mkdirs(path)
        if not self.file_io.is_dir(path):  # object stores have no empty directories
            self.file_io.write_bytes(self.file_io.join(path, _DATABASE_MARKER), b"")

    def drop_database(self, name: str) -> None:
        self.file_io.delete_dir(self.database_path(name))

    def list_tables(self, database: str) -> list[str]:
        path = self.database_path(database)
        if not self.file_io.is_dir(path):
            raise DatabaseNotFoundError(f"database {database!r} does not exist")
        out = []
        for d in self.file_io.list_dirs(path):
            if SchemaManager(self.file_io, d.rstrip("/")).schema_ids():
                out.append(d.rstrip("/").rsplit("/", 1)[-1])
        return sorted(out)

    def table_exists(self, database: str, table: str) -> bool:
        return bool(SchemaManager(self.file_io, self.table_path(database, table)).schema_ids())

    def create_table(self, database: str, table: str, write_files: Callable[[], None]) -> None:
        if self.table_exists(database, table):
            raise TableAlreadyExistsError(f"table {database}.{table} already exists")
        write_files()

    def drop_table(self, database: str, table: str) -> None:
        self.file_io.delete_dir(self.table_path(database, table))
