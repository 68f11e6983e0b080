"""Database and table names are checked by one rule set (Paimon's plus the file system's
length limit) at every catalog entry point, on local disk, S3 and a JDBC catalog: a name the
store cannot hold is an `InvalidIdentifierError` naming it, never a raw `OSError`, and nothing
is created.

The length rules meet the stores' own limits, so they run on local disk and the moto S3 server;
Paimon's reserved names and the database rules (`@local_disk`) are refused before the store is
asked anything, on local disk only.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.identifier import check_identifier

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])
#: a test of this module that never reaches store specifics: local disk only (module docstring)
local_disk = pytest.mark.parametrize("catalog", ["local"], indirect=True)


LONG_TABLE = "t" * 256  # one byte past a path component
LONG_DATABASE = "d" * 253  # one byte past it once '.db' is appended
WIDE_TABLE = "é" * 128  # 128 characters, 256 bytes in UTF-8


def listing(catalog: lf.Catalog) -> set[str]:
    return {f.path for f in catalog.file_io.list_recursive(catalog.warehouse)}


def entry_points(catalog: lf.Catalog, database: str, table: str) -> dict[str, object]:
    name = f"{database}.{table}"
    return {
        "table_exists": lambda: catalog.table_exists(name),
        "get_table": lambda: catalog.get_table(name),
        "create_table": lambda: catalog.create_table(name, SCHEMA, primary_keys=["id"]),
        "create_table exist_ok": lambda: catalog.create_table(name, SCHEMA, exist_ok=True),
        "drop_table": lambda: catalog.drop_table(name, ignore_missing=True),
        "table_path": lambda: catalog.table_path(name),
        "table_locks": lambda: catalog.table_locks(name),
    }


def database_entry_points(catalog: lf.Catalog, database: str) -> dict[str, object]:
    return {
        "create_database": lambda: catalog.create_database(database, exist_ok=True),
        "database_exists": lambda: catalog.database_exists(database),
        "list_tables": lambda: catalog.list_tables(database),
        "drop_database": lambda: catalog.drop_database(database, ignore_missing=True),
        "database_path": lambda: catalog.database_path(database),
    }


@pytest.mark.parametrize("table", [LONG_TABLE, WIDE_TABLE])
def test_a_table_name_too_long_for_a_file_system_is_refused_everywhere(catalog, table):
    before = listing(catalog)
    for verb, call in entry_points(catalog, "db", table).items():
        with pytest.raises(lf.InvalidIdentifierError, match=r"256 bytes.*at most 255") as err:
            call()
        assert not isinstance(err.value, OSError), verb
    assert listing(catalog) == before


def test_a_database_name_too_long_for_its_directory_is_refused_everywhere(catalog):
    before = listing(catalog)
    calls = {**database_entry_points(catalog, LONG_DATABASE),
             **entry_points(catalog, LONG_DATABASE, "t")}
    for verb, call in calls.items():
        with pytest.raises(lf.InvalidIdentifierError, match=r"253 bytes.*at most 252.*'\.db'"):
            call()
            pytest.fail(f"{verb} accepted a database name of 253 bytes")
    assert listing(catalog) == before


def test_the_longest_names_work(catalog):
    database, table = "d" * 252, "t" * 255
    catalog.create_database(database)
    t = catalog.create_table(f"{database}.{table}", SCHEMA, primary_keys=["id"],
                             options={"bucket": "1"})
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    assert catalog.list_tables(database) == [table]
    again = catalog.get_table(f"{database}.{table}")
    assert sorted(again.read().column("id").to_pylist()) == [1, 2]
    assert again.compact(full=True) is not None


@pytest.mark.parametrize("name,rule", [
    ("db.orders$snapshots", "'\\$'"), ("db.orders$branch_dev", "'\\$'"),
    ("sys.orders", "system database"), ("db.a.b", "'database.table'"),
    ("db.", "non-empty"), ("db. t", "surrounding spaces"), ("db..", "'database.table'"),
])
@local_disk
def test_paimon_reserved_names_are_refused(catalog, name, rule):
    before = listing(catalog)
    with pytest.raises(lf.InvalidIdentifierError, match=rule):
        check_identifier(name)
    with pytest.raises(lf.InvalidIdentifierError, match=rule):
        catalog.create_table(name, SCHEMA, primary_keys=["id"])
    with pytest.raises(lf.InvalidIdentifierError, match=rule):
        catalog.table_exists(name)
    assert listing(catalog) == before


@local_disk
def test_database_names_follow_the_same_rules(catalog):
    for name, rule in (("sys", "system database"), ("a.b", "no '.'")):
        with pytest.raises(lf.InvalidIdentifierError, match=rule):
            catalog.create_database(name)
    assert catalog.list_databases() == ["db"]


def test_a_database_name_with_a_dollar_works_as_in_paimon(catalog):
    """Paimon reads `$` as the system-table separator in a table's name only: a database
    such as `sales$eu` is a plain one there, and its tables are read and written here."""
    catalog.create_database("sales$eu")
    t = catalog.create_table("sales$eu.orders", SCHEMA, primary_keys=["id"],
                             options={"bucket": "1"})
    t.write(pa.table({"id": [1], "v": ["a"]}))
    assert catalog.list_tables("sales$eu") == ["orders"]
    assert catalog.get_table("sales$eu.orders").read().to_pylist() == [{"id": 1, "v": "a"}]


def test_a_jdbc_catalog_refuses_the_same_names(tmp_path):
    wh = str(tmp_path / "wh")
    catalog = lf.Catalog(wh, options={"metastore": "jdbc",
                                      "uri": f"jdbc:sqlite:{tmp_path / 'catalog.db'}"})
    with catalog:
        catalog.create_database("db")
        for verb, call in {**entry_points(catalog, "db", LONG_TABLE),
                           **database_entry_points(catalog, LONG_DATABASE)}.items():
            with pytest.raises(lf.InvalidIdentifierError, match="at most"):
                call()
                pytest.fail(f"{verb} accepted a name too long")
        assert catalog.list_databases() == ["db"] and catalog.list_tables("db") == []
