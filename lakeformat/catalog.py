"""Filesystem catalog: a warehouse of `<database>.db/<table>/` directories, as Paimon has it."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import pyarrow as pa

from lakeformat.errors import (
    DatabaseAlreadyExistsError,
    DatabaseNotEmptyError,
    DatabaseNotFoundError,
    TableAlreadyExistsError,
    TableNotFoundError,
    shown_value,
)
from lakeformat.identifier import SYSTEM_TABLE_SPLITTER, Identifier, check_name
from lakeformat.lock.base import TableLock
from lakeformat.lock.lease import LeaseLock, lease_path
from lakeformat.lock.table_locks import TableLocks
from lakeformat.metastore.base import Metastore
from lakeformat.metastore.filesystem import FileSystemMetastore
from lakeformat.metastore.options import check_catalog_options
from lakeformat.operation.write import validate_table_schema
from lakeformat.options import secrets_hidden
from lakeformat.schema.option_names import check_option_names
from lakeformat.schema.schema_manager import SchemaManager
from lakeformat.schema.table_schema import TableSchema, new_schema
from lakeformat.schema.types import DataField, assign_field_ids, from_arrow
from lakeformat.storage import FileIO, get_file_io
from lakeformat.storage.metadata_cache import configure as configure_metadata_cache
from lakeformat.table import Table

#: Paimon's name of a table's branch: `table$branch_<name>` (`Identifier.SYSTEM_BRANCH_PREFIX`)
BRANCH_MARKER = f"{SYSTEM_TABLE_SPLITTER}branch_"

#: how long the loser of a create race waits for the winner's catalog record (JDBC)
_RECORD_WAIT_S = 10.0


def schema_differences(theirs: TableSchema, ours: TableSchema) -> list[str]:
    """What differs between two new tables' schemas — columns (names, types, nullability),
    primary keys, partition keys, options — as "what: theirs vs ours" phrases."""
    out = []

    def columns(schema: TableSchema) -> str:
        return ", ".join(f"{f.name} {f.type}" for f in schema.fields)

    for what, a, b in (("columns", columns(theirs), columns(ours)),
                       ("primary keys", list(theirs.primary_keys), list(ours.primary_keys)),
                       ("partition keys", list(theirs.partition_keys),
                        list(ours.partition_keys))):
        if a != b:
            out.append(f"{what} {a} vs {b}")
    keys = sorted(set(theirs.options) | set(ours.options))
    for key in keys:
        a, b = theirs.options.get(key), ours.options.get(key)
        if a != b:
            out.append(f"option {key!r} {shown_value(key, a)} vs {shown_value(key, b)}")
    return out


def _holding(what: str, names: Callable[[], list[str]], most: int = 10) -> str:
    """' (the databases are a, b)' for an error message; '' when the listing fails, so a
    second storage error never hides the first one."""
    try:
        found = sorted(names())
    except Exception:
        return ""
    if not found:
        return f" (there are no {what})"
    more = f" and {len(found) - most} more" if len(found) > most else ""
    return f" (the {what} are {', '.join(found[:most])}{more})"


class Catalog:
    """Warehouse URI (local path, file://, s3://) plus catalog options by Paimon's names
    (`s3.*`, `metastore`, `uri`, `lock.*`, ...; unknown ones are refused)."""

    def __init__(self, warehouse: str, options: Mapping[str, str] | None = None,
                 file_io: FileIO | None = None):
        self.options = {str(k): str(v).lower() if isinstance(v, bool) else str(v)
                        for k, v in (options or {}).items()}
        self.warehouse = warehouse.rstrip("/") if warehouse not in ("/",) else warehouse
        self._jdbc: Any = None
        with secrets_hidden(self.options):  # no option error echoes a credential
            self.config = check_catalog_options(self.options, self.warehouse)
            self.file_io = file_io or get_file_io(warehouse, self.options)
            if self.config.metadata_cache_bytes is not None:
                configure_metadata_cache(self.file_io, self.config.metadata_cache_bytes)
            self.metastore = self._make_metastore()

    def __repr__(self) -> str:
        return f"Catalog({self.warehouse!r})"

    def close(self) -> None:
        """Release the JDBC connections of a JDBC catalog or lock (nothing else holds any)."""
        if self._jdbc is not None:
            self._jdbc.close()
            self._jdbc = None

    def __enter__(self) -> Catalog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _jdbc_client(self) -> Any:
        if self._jdbc is None:
            from lakeformat.lock.jdbc_client import JdbcClient

            self._jdbc = JdbcClient.from_options(self.options)
        return self._jdbc

    def _make_metastore(self) -> Metastore:
        if self.config.metastore == "jdbc":
            from lakeformat.metastore.jdbc import JdbcMetastore

            return JdbcMetastore(self._jdbc_client(), self.config.catalog_key, self.warehouse,
                                 self.file_io)
        return FileSystemMetastore(self.file_io, self.warehouse)

    def table_locks(self, identifier: str | Identifier) -> TableLocks:
        """The commit lock (`lock.enabled=true` only) and the maintenance lock of a table.

        The commit lock is of `lock.type`. The maintenance lock is lakeformat's own: always the
        lease object beside the warehouse, whatever the catalog, so a JDBC catalog and a plain
        warehouse catalog (the CLI, say) on one table exclude each other — except on a store
        that cannot hold a lease (no conditional writes), where only `lock.type=jdbc` can."""
        ident = Identifier.parse(identifier)
        cfg = self.config.lock

        def lease(kind: str) -> TableLock:
            where = lease_path(self.file_io, self.warehouse, ident.database, ident.table, kind)
            return LeaseLock(self.file_io, where, f"{kind} of table {ident}", cfg)

        def jdbc(kind: str) -> TableLock:
            from lakeformat.lock.jdbc import JdbcLock

            lock_id = f"{self.config.catalog_key}.{ident.database}.{ident.table}"
            name = lock_id if kind == "commit" else f"{lock_id}.{kind}"
            return JdbcLock(self._jdbc_client(), name, f"{kind} of table {ident}", cfg)

        commit = (jdbc if cfg.type == "jdbc" else lease)("commit") if cfg.enabled else None
        maintenance = lease("maintenance")
        if cfg.type == "jdbc" and not self.file_io.supports_versioned(maintenance.location):
            maintenance = jdbc("maintenance")
        return TableLocks(commit, maintenance)

    def _no_database(self, name: str) -> str:
        """The message of a missing database: the warehouse looked in, and what it holds."""
        return (f"database {name!r} does not exist in warehouse {self.warehouse}"
                + _holding("databases", self.metastore.list_databases))

    def _no_table(self, ident: Identifier) -> str:
        return (f"table {ident} does not exist in warehouse {self.warehouse}"
                + _holding(f"tables in database {ident.database!r}",
                           lambda: self.metastore.list_tables(ident.database)))

    # -- databases -------------------------------------------------------------------------------
    def database_path(self, name: str) -> str:
        return self.metastore.database_path(check_name("database", name))

    def list_databases(self) -> list[str]:
        return self.metastore.list_databases()

    def database_exists(self, name: str) -> bool:
        return self.metastore.database_exists(check_name("database", name))

    def create_database(self, name: str, exist_ok: bool = False) -> None:
        check_name("database", name)
        if exist_ok and self.metastore.database_exists(name):
            return
        try:
            self.metastore.create_database(name)
        except DatabaseAlreadyExistsError:
            if not exist_ok:
                raise

    def drop_database(self, name: str, ignore_missing: bool = False, cascade: bool = False) -> None:
        check_name("database", name)
        if not self.metastore.database_exists(name):
            if ignore_missing:
                return
            raise DatabaseNotFoundError(self._no_database(name))
        tables = self.list_tables(name)
        if tables and not cascade:
            raise DatabaseNotEmptyError(
                f"database {name!r} is not empty ({len(tables)} tables); use cascade=True")
        self.metastore.drop_database(name)

    # -- tables ------------------------------------------------------------------------------------
    def table_path(self, identifier: str | Identifier) -> str:
        ident = Identifier.parse(identifier)
        return self.metastore.table_path(ident.database, ident.table)

    def list_tables(self, database: str) -> list[str]:
        check_name("database", database)
        try:
            return self.metastore.list_tables(database)
        except DatabaseNotFoundError:
            raise DatabaseNotFoundError(self._no_database(database)) from None

    def table_exists(self, identifier: str | Identifier) -> bool:
        ident = Identifier.parse(identifier)
        return self.metastore.table_exists(ident.database, ident.table)

    def get_table(self, identifier: str | Identifier) -> Table:
        """`database.table`, or Paimon's `database.table$branch_<name>` for a branch of it
        (read-only: `Table.branch`)."""
        if isinstance(identifier, str):
            database, dot, name = identifier.rpartition(".")
            base, marker, branch = name.partition(BRANCH_MARKER)
            if dot and marker:
                return self.get_table(f"{database}.{base}").branch(branch)
        ident = Identifier.parse(identifier)
        # a warehouse's table exists when its schema directory lists a schema: the table's own
        # listing of its latest schema says so, one request instead of two
        known = isinstance(self.metastore, FileSystemMetastore) or \
            self.metastore.table_exists(ident.database, ident.table)
        if known:
            try:
                return Table(str(ident), self.table_path(ident), self.file_io,
                             self.table_locks(ident))
            except TableNotFoundError:
                pass
        if not self.metastore.database_exists(ident.database):
            raise DatabaseNotFoundError(self._no_database(ident.database))
        raise TableNotFoundError(self._no_table(ident))

    def create_table(self, identifier: str | Identifier, schema: pa.Schema | list[DataField],
                     primary_keys: list[str] | None = None,
                     partition_keys: list[str] | None = None,
                     options: Mapping[str, Any] | None = None, comment: str | None = None,
                     exist_ok: bool = False) -> Table:
        """Create a table from an Arrow schema (nullability is taken from it): a primary-key
        table with `primary_keys`, else an append table. Without table option `bucket` both
        take Paimon's default, -1: dynamic bucket, or bucket-unaware for an append table.

        A list of `DataField`s gives Paimon types Arrow cannot express (CHAR(n), VARCHAR(n)).
        """
        ident = Identifier.parse(identifier)
        if not self.database_exists(ident.database):
            raise DatabaseNotFoundError(self._no_database(ident.database))
        if self.table_exists(ident):
            if exist_ok:
                return self.get_table(ident)
            raise TableAlreadyExistsError(f"table {ident} already exists in warehouse "
                                          f"{self.warehouse}")
        if isinstance(schema, pa.Schema):
            fields = [DataField(-1, f.name, from_arrow(f.type, f.nullable)) for f in schema]
        else:
            fields = list(schema)
        fields, _ = assign_field_ids(fields)
        opts = {str(k): str(v).lower() if isinstance(v, bool) else str(v)
                for k, v in (options or {}).items()}
        check_option_names(str(ident), opts, [f.name for f in fields])
        table_schema = new_schema(0, fields, list(partition_keys or []), list(primary_keys or []),
                                  opts, comment)
        validate_table_schema(table_schema)
        file_io = self.table_locks(ident).guarded(self.file_io)
        path = self.table_path(ident)
        try:
            self.metastore.create_table(
                ident.database, ident.table,
                lambda: SchemaManager(file_io, path).create(table_schema))
        except TableAlreadyExistsError:
            if not exist_ok:
                raise
            return self._created_meanwhile(ident, table_schema)
        return self.get_table(ident)

    def _created_meanwhile(self, ident: Identifier, ours: TableSchema) -> Table:
        """`create_table(exist_ok=True)` lost a race to another creator of the same table:
        the winner's table when its schema is the one asked for, else a named error (the
        caller's code and the table disagree). A JDBC catalog records the table just after
        its files, so the winner's row is awaited briefly."""
        path = self.table_path(ident)
        try:
            theirs = SchemaManager(self.file_io, path).schema(0)
        except FileNotFoundError:  # the winner's row failed and it removed its files again
            raise TableAlreadyExistsError(
                f"table {ident} was being created by another job at the same time, which "
                "gave up; run the call again") from None
        differences = schema_differences(theirs, ours)
        if differences:
            raise TableAlreadyExistsError(
                f"table {ident} was created at the same time by another job with a different "
                f"schema ({'; '.join(differences)}; theirs first): create_table(exist_ok=True) "
                "returns an existing table only when it matches; make both callers ask for "
                "the same schema")
        wait = 0.02
        deadline = time.monotonic() + _RECORD_WAIT_S
        while not self.metastore.table_exists(ident.database, ident.table):
            if time.monotonic() > deadline:
                raise TableAlreadyExistsError(
                    f"table {ident}: its files were written by another job at the same time, "
                    f"but the catalog has not recorded it within {_RECORD_WAIT_S:g} s; run the "
                    "call again")
            time.sleep(wait)
            wait = min(wait * 2, 0.5)
        return self.get_table(ident)

    def drop_table(self, identifier: str | Identifier, ignore_missing: bool = False) -> None:
        ident = Identifier.parse(identifier)
        if not self.table_exists(ident):
            if ignore_missing:
                return
            raise TableNotFoundError(self._no_table(ident))
        self.metastore.drop_table(ident.database, ident.table)
        self.file_io.metadata_cache.invalidate_prefix(self.table_path(ident) + "/")
