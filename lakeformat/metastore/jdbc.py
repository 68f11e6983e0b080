"""`metastore=jdbc`: Paimon's `JdbcCatalog`, the names of databases and tables kept in a
relational database, the table files in the warehouse as always.

The two tables and their rows are Paimon's (`JdbcUtils`, `JdbcCatalog`), so a Java Paimon
job on the same database and `catalog-key` sees what lakeformat creates, and the reverse:

* `paimon_database_properties(catalog_key, database_name, property_key, property_value)`:
  a new database gets `exists` = `true` and `location` = `<warehouse>/<name>.db`;
* `paimon_tables(catalog_key, database_name, table_name)`: one row per table, whose files
  are at `<database location>/<table>`.

A database exists when either table has a row for it; a table when its row exists. Creating
a table writes its first schema file, then inserts its row (`createTableImpl`); dropping one
deletes the row, then the directory (`dropTableImpl`). Paimon's JDBC catalog is not case
sensitive: database and table names must be lower case (`case_sensitive` is False, and the
catalog applies the same rule to column names, as Paimon's `validateCaseInsensitive`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from lakeformat.errors import (
    DatabaseAlreadyExistsError,
    DatabaseNotFoundError,
    InvalidIdentifierError,
    TableAlreadyExistsError,
)
from lakeformat.lock.jdbc_client import JdbcClient, JdbcConnectionError
from lakeformat.metastore.base import DB_SUFFIX, Metastore
from lakeformat.storage import FileIO

__all__ = ["JdbcMetastore", "TABLES_TABLE", "DATABASE_PROPERTIES_TABLE", "DEFAULT_CATALOG_KEY"]

TABLES_TABLE = "paimon_tables"
DATABASE_PROPERTIES_TABLE = "paimon_database_properties"
#: Paimon's `catalog-key` default
DEFAULT_CATALOG_KEY = "jdbc"
_EXISTS_PROPERTY = "exists"
_LOCATION_PROPERTY = "location"

_TABLES_DDL = ("CREATE TABLE " + TABLES_TABLE + " ("
               "catalog_key VARCHAR(255) NOT NULL, "
               "database_name VARCHAR(255) NOT NULL, "
               "table_name VARCHAR(255) NOT NULL, "
               "PRIMARY KEY (catalog_key, database_name, table_name))")
_PROPERTIES_DDL = ("CREATE TABLE " + DATABASE_PROPERTIES_TABLE + " ("
                   "catalog_key VARCHAR(255) NOT NULL, "
                   "database_name VARCHAR(255) NOT NULL, "
                   "property_key VARCHAR(255), "
                   "property_value VARCHAR(1000), "
                   "PRIMARY KEY (catalog_key, database_name, property_key))")


def _lower_case(kind: str, name: str) -> None:
    if name != name.lower():
        raise InvalidIdentifierError(
            f"{kind} name {name!r} has upper case letters: a JDBC catalog is not case "
            "sensitive in Paimon, so its names must be lower case")


class JdbcMetastore(Metastore):
    """Databases and tables of one `catalog-key` in a JDBC catalog (Paimon's `JdbcCatalog`)."""

    kind = "jdbc"
    case_sensitive = False

    def __init__(self, client: JdbcClient, catalog_key: str, warehouse: str, file_io: FileIO):
        self.client = client
        self.catalog_key = catalog_key or DEFAULT_CATALOG_KEY
        self.warehouse = warehouse
        self.file_io = file_io
        client.ensure_table(TABLES_TABLE, _TABLES_DDL)
        client.ensure_table(DATABASE_PROPERTIES_TABLE, _PROPERTIES_DDL)

    def __repr__(self) -> str:
        return f"JdbcMetastore({self.client.url!r}, catalog_key={self.catalog_key!r})"

    def _join(self, *parts: str) -> str:
        return self.file_io.join(*parts)

    def _key(self, **more: str) -> dict[str, str]:
        return {"key": self.catalog_key, **more}

    # -- databases --------------------------------------------------------------------------
    def list_databases(self) -> list[str]:
        rows = self.client.query(
            f"SELECT DISTINCT database_name FROM {TABLES_TABLE} WHERE catalog_key = :key "
            f"UNION SELECT DISTINCT database_name FROM {DATABASE_PROPERTIES_TABLE} "
            "WHERE catalog_key = :key", self._key())
        return sorted({r[0] for r in rows})

    def database_exists(self, name: str) -> bool:
        for table in (TABLES_TABLE, DATABASE_PROPERTIES_TABLE):
            if self.client.query(f"SELECT 1 FROM {table} WHERE catalog_key = :key "
                                 "AND database_name = :db", self._key(db=name)):
                return True
        return False

    def database_properties(self, name: str) -> dict[str, str]:
        """The database's rows of `paimon_database_properties` (`exists`, `location`, ...)."""
        rows = self.client.query(
            f"SELECT property_key, property_value FROM {DATABASE_PROPERTIES_TABLE} "
            "WHERE catalog_key = :key AND database_name = :db", self._key(db=name))
        return {str(k): str(v) for k, v in rows if k is not None and v is not None}

    def _default_path(self, name: str) -> str:
        return self.file_io.join(self.warehouse, name + DB_SUFFIX)

    def database_path(self, name: str) -> str:
        return self.database_properties(name).get(_LOCATION_PROPERTY) or self._default_path(name)

    def create_database(self, name: str, properties: Mapping[str, str] | None = None) -> None:
        """Record the database with Paimon's rows: `exists`=`true`, `location` (given in
        `properties` or `<warehouse>/<name>.db`) and any other `properties`."""
        _lower_case("database", name)
        if self.database_exists(name):
            raise DatabaseAlreadyExistsError(f"database {name!r} already exists in the JDBC "
                                             f"catalog {self.catalog_key!r}")
        props = {_EXISTS_PROPERTY: "true", **{str(k): str(v) for k, v in
                                               (properties or {}).items()}}
        props.setdefault(_LOCATION_PROPERTY, self._default_path(name))
        rows = [self._key(db=name, k=k, v=v) for k, v in props.items()]
        try:  # one statement, as Java's multi-row insert: all rows or none
            self.client.execute(
                f"INSERT INTO {DATABASE_PROPERTIES_TABLE} "
                "(catalog_key, database_name, property_key, property_value) "
                "VALUES " + ", ".join(f"(:key{i}, :db{i}, :k{i}, :v{i})"
                                      for i in range(len(rows))),
                {f"{col}{i}": value for i, row in enumerate(rows) for col, value in row.items()})
        except Exception as e:
            if self.client.is_duplicate(e):
                raise DatabaseAlreadyExistsError(
                    f"database {name!r} already exists in the JDBC catalog "
                    f"{self.catalog_key!r} (created at the same time by another job)") from None
            raise

    def drop_database(self, name: str) -> None:
        """Drop its tables (row, then directory, each), then its rows — and not its directory:
        as Paimon's `dropDatabaseImpl`, since catalogs with other keys on the same warehouse
        may keep tables in the same `<name>.db` directory."""
        for table in self.list_tables(name):
            self.drop_table(name, table)
        self.client.execute(f"DELETE FROM {TABLES_TABLE} WHERE catalog_key = :key "
                            "AND database_name = :db", self._key(db=name))
        self.client.execute(f"DELETE FROM {DATABASE_PROPERTIES_TABLE} WHERE catalog_key = :key "
                            "AND database_name = :db", self._key(db=name))

    # -- tables -----------------------------------------------------------------------------
    def list_tables(self, database: str) -> list[str]:
        if not self.database_exists(database):
            raise DatabaseNotFoundError(f"database {database!r} does not exist in the JDBC "
                                        f"catalog {self.catalog_key!r}")
        rows = self.client.query(f"SELECT table_name FROM {TABLES_TABLE} WHERE catalog_key = :key "
                                 "AND database_name = :db", self._key(db=database))
        return sorted(r[0] for r in rows)

    def table_exists(self, database: str, table: str) -> bool:
        return bool(self.client.query(
            f"SELECT 1 FROM {TABLES_TABLE} WHERE catalog_key = :key AND database_name = :db "
            "AND table_name = :t", self._key(db=database, t=table)))

    def create_table(self, database: str, table: str, write_files: Callable[[], None]) -> None:
        """Write the table's files, then insert its row. If the insert fails, the files are
        ours (the first schema file is written only if absent), so they are deleted again —
        unless the insert may have landed (the database went away mid-call) and cannot be
        checked: then the files stay and the error says so."""
        _lower_case("database", database)
        _lower_case("table", table)
        if self.table_exists(database, table):
            raise TableAlreadyExistsError(f"table {database}.{table} already exists in the JDBC "
                                          f"catalog {self.catalog_key!r}")
        path = self.table_path(database, table)
        write_files()
        params = self._key(db=database, t=table)
        try:
            self.client.execute(f"INSERT INTO {TABLES_TABLE} (catalog_key, database_name, "
                                "table_name) VALUES (:key, :db, :t)", params)
            return
        except JdbcConnectionError:
            try:
                landed = self.table_exists(database, table)
            except JdbcConnectionError:
                raise JdbcConnectionError(
                    f"table {database}.{table}: its files were written at {path} but whether "
                    f"its row in {TABLES_TABLE} was recorded is unknown (the JDBC catalog "
                    f"database at {self.client.url} stopped answering); the files were left "
                    "in place") from None
            if landed:
                return
            self.file_io.delete_dir(path)
            raise
        except Exception as e:
            self.file_io.delete_dir(path)
            if self.client.is_duplicate(e):
                raise TableAlreadyExistsError(
                    f"table {database}.{table} already exists in the JDBC catalog "
                    f"{self.catalog_key!r} (recorded at the same time by another job)") from None
            raise

    def drop_table(self, database: str, table: str) -> None:
        path = self.table_path(database, table)
        deleted = self.client.execute(
            f"DELETE FROM {TABLES_TABLE} WHERE catalog_key = :key AND database_name = :db "
            "AND table_name = :t", self._key(db=database, t=table))
        if deleted:
            self.file_io.delete_dir(path)

    def close(self) -> None:
        self.client.close()
