"""The metastore seam: where a catalog keeps the names of its databases and tables.

Paimon's `metastore` catalog option picks it: `filesystem` (the default: a database is a
`<name>.db` directory of the warehouse, a table a directory holding `schema/schema-0`) or
`jdbc` (Paimon's `JdbcCatalog`: the names live in the `paimon_tables` and
`paimon_database_properties` tables of a relational database, the files still in the
warehouse). The catalog checks names and arguments; a metastore only records and looks up.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable

__all__ = ["Metastore", "DB_SUFFIX"]

DB_SUFFIX = ".db"


class Metastore(ABC):
    """Databases and tables of one catalog. Names passed in are already checked."""

    #: Paimon's name of the kind ("filesystem", "jdbc")
    kind: str

    @abstractmethod
    def list_databases(self) -> list[str]:
        """Sorted database names."""

    @abstractmethod
    def database_exists(self, name: str) -> bool: ...

    @abstractmethod
    def database_path(self, name: str) -> str:
        """The directory of the database's tables (Paimon's `<warehouse>/<name>.db`, or the
        database's `location` property in a JDBC catalog)."""

    @abstractmethod
    def create_database(self, name: str) -> None:
        """Record a new database; `DatabaseAlreadyExistsError` if it exists."""

    @abstractmethod
    def drop_database(self, name: str) -> None:
        """Forget the database and delete its directory (the catalog checked it may)."""

    @abstractmethod
    def list_tables(self, database: str) -> list[str]:
        """Sorted table names; `DatabaseNotFoundError` if the database does not exist."""

    @abstractmethod
    def table_exists(self, database: str, table: str) -> bool: ...

    def table_path(self, database: str, table: str) -> str:
        """The table's directory: `<database path>/<table>` (as Paimon has it)."""
        return self._join(self.database_path(database), table)

    @abstractmethod
    def create_table(self, database: str, table: str, write_files: Callable[[], None]) -> None:
        """Create the table: `write_files()` writes its first schema file, and the metastore
        records the table (a JDBC catalog: after the files, deleting them again if the record
        fails, as Paimon's `createTableImpl`). `TableAlreadyExistsError` if it exists."""

    @abstractmethod
    def drop_table(self, database: str, table: str) -> None:
        """Forget the table and delete its directory."""

    @abstractmethod
    def _join(self, *parts: str) -> str: ...
