"""Paimon's JDBC catalog (`metastore=jdbc`) on SQLite and on a real PostgreSQL server: the
catalog tables and their rows are the ones Java Paimon's `JdbcCatalog` makes and writes, so
both see the same databases and tables; bad URLs get clear errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.errors import (
    DatabaseAlreadyExistsError,
    DatabaseNotFoundError,
    InvalidIdentifierError,
    InvalidOptionError,
    TableAlreadyExistsError,
    UnsupportedError,
)
from lakeformat.lock.jdbc_client import JdbcClient, JdbcConnectionError
from lakeformat.metastore.jdbc import JdbcMetastore
from lakeformat.schema.schema_manager import SchemaManager
from lakeformat.schema.table_schema import new_schema
from lakeformat.schema.types import DataField, assign_field_ids, from_arrow
from lakeformat.storage import get_file_io
from tests.support import postgres

ROOT = Path(__file__).resolve().parents[2]
# the fixtures this module uses: a SQLite file and a database on the session's PostgreSQL
jdbc_uri = postgres.jdbc_uri
postgres_server = postgres.postgres_server


def _metastore(uri: str, warehouse: str, key: str = "jdbc") -> JdbcMetastore:
    return JdbcMetastore(JdbcClient(uri), key, warehouse, get_file_io(warehouse))


def _schema_writer(ms: JdbcMetastore, db: str, table: str):
    fields, _ = assign_field_ids([DataField(-1, "id", from_arrow(pa.int64(), False)),
                                  DataField(-1, "v", from_arrow(pa.string()))])
    schema = new_schema(0, fields, [], ["id"], {"bucket": "1"}, None)
    return lambda: SchemaManager(ms.file_io, ms.table_path(db, table)).create(schema)


def _create_table(ms: JdbcMetastore, db: str, table: str) -> None:
    ms.create_table(db, table, _schema_writer(ms, db, table))


def _columns(client: JdbcClient, table: str) -> dict[str, tuple[str, int | None]]:
    return {c["name"]: (type(c["type"]).__name__.upper(), getattr(c["type"], "length", None))
            for c in client.columns(table)}


def _pk(client: JdbcClient, table: str) -> list[str]:
    return client._run(lambda c: client._sa.inspect(c).get_pk_constraint(table)
                       )["constrained_columns"]


@pytest.fixture()
def warehouse(tmp_path: Path) -> str:
    return str(tmp_path / "wh")


def test_catalog_tables_have_paimons_columns_and_keys(jdbc_uri, warehouse):
    ms = _metastore(jdbc_uri, warehouse)
    assert _columns(ms.client, "paimon_tables") == {
        "catalog_key": ("VARCHAR", 255), "database_name": ("VARCHAR", 255),
        "table_name": ("VARCHAR", 255)}
    assert _pk(ms.client, "paimon_tables") == ["catalog_key", "database_name", "table_name"]
    assert _columns(ms.client, "paimon_database_properties") == {
        "catalog_key": ("VARCHAR", 255), "database_name": ("VARCHAR", 255),
        "property_key": ("VARCHAR", 255), "property_value": ("VARCHAR", 1000)}
    assert _pk(ms.client, "paimon_database_properties") == [
        "catalog_key", "database_name", "property_key"]
    # the lock table is made only by a lock (Paimon: only when lock.enabled)
    assert not ms.client.has_table("paimon_distributed_locks")
    ms.close()


def test_rows_are_the_ones_paimon_writes(jdbc_uri, warehouse):
    ms = _metastore(jdbc_uri, warehouse)
    ms.create_database("sales")
    _create_table(ms, "sales", "orders")
    q = ms.client.query
    assert sorted(q("SELECT catalog_key, database_name, property_key, property_value "
                    "FROM paimon_database_properties")) == [
        ("jdbc", "sales", "exists", "true"),
        ("jdbc", "sales", "location", f"{warehouse}/sales.db")]
    assert q("SELECT catalog_key, database_name, table_name FROM paimon_tables") == [
        ("jdbc", "sales", "orders")]
    # the files are where Java looks for them: <location>/<table>
    assert ms.table_path("sales", "orders") == f"{warehouse}/sales.db/orders"
    assert SchemaManager(ms.file_io, f"{warehouse}/sales.db/orders").schema_ids() == [0]
    ms.close()


def test_a_table_is_found_again_by_a_new_metastore(jdbc_uri, warehouse):
    first = _metastore(jdbc_uri, warehouse)
    first.create_database("db")
    _create_table(first, "db", "t")
    first.close()

    again = _metastore(jdbc_uri, warehouse)
    assert again.list_databases() == ["db"]
    assert again.database_exists("db") and not again.database_exists("other")
    assert again.list_tables("db") == ["t"]
    assert again.table_exists("db", "t") and not again.table_exists("db", "u")
    latest = SchemaManager(again.file_io, again.table_path("db", "t")).latest()
    assert latest is not None and list(latest.primary_keys) == ["id"]
    again.close()


def test_rows_written_by_java_are_read(jdbc_uri, warehouse, tmp_path):
    ms = _metastore(jdbc_uri, warehouse)
    elsewhere = str(tmp_path / "elsewhere" / "ext.db")
    ms.client.execute("INSERT INTO paimon_database_properties VALUES "
                      "('jdbc', 'ext', 'exists', 'true'), ('jdbc', 'ext', 'location', :loc)",
                      {"loc": elsewhere})
    # a database Java knows only through a table row
    ms.client.execute("INSERT INTO paimon_tables VALUES ('jdbc', 'bare', 'x')")
    assert ms.list_databases() == ["bare", "ext"]
    assert ms.database_exists("bare")
    assert ms.list_tables("bare") == ["x"]
    assert ms.table_path("bare", "x") == f"{warehouse}/bare.db/x"
    assert ms.database_path("ext") == elsewhere
    _create_table(ms, "ext", "t")
    assert SchemaManager(ms.file_io, f"{elsewhere}/t").schema_ids() == [0]
    ms.close()


def test_catalog_key_keeps_catalogs_apart(jdbc_uri, warehouse):
    prod = _metastore(jdbc_uri, warehouse, key="prod")
    dev = _metastore(jdbc_uri, warehouse + "-dev", key="dev")
    prod.create_database("db")
    _create_table(prod, "db", "t")
    assert dev.list_databases() == [] and not dev.database_exists("db")
    dev.create_database("db")
    assert dev.list_tables("db") == []
    assert prod.list_tables("db") == ["t"]
    assert sorted(r[0] for r in prod.client.query("SELECT catalog_key FROM paimon_tables")) == [
        "prod"]
    prod.close()
    dev.close()


def test_drop_table_and_database(jdbc_uri, warehouse):
    ms = _metastore(jdbc_uri, warehouse)
    ms.create_database("db")
    _create_table(ms, "db", "a")
    _create_table(ms, "db", "b")
    path_a = ms.table_path("db", "a")
    ms.drop_table("db", "a")
    assert ms.list_tables("db") == ["b"]
    assert not ms.file_io.exists(path_a)
    ms.drop_table("db", "a")  # gone already: nothing to do, as in Java
    ms.drop_database("db")
    assert ms.list_databases() == []
    assert ms.client.query("SELECT * FROM paimon_tables") == []
    assert ms.client.query("SELECT * FROM paimon_database_properties") == []
    assert ms.file_io.list_recursive(f"{warehouse}/db.db") == []  # its tables' files went
    with pytest.raises(DatabaseNotFoundError, match="'db'"):
        ms.list_tables("db")
    ms.close()


def test_dropping_a_database_leaves_other_catalog_keys_tables_alone(jdbc_uri, warehouse):
    """Two catalog keys on one warehouse share `<wh>/db.db`: dropping catalog a's empty `db`
    deletes its rows only (Paimon's dropDatabaseImpl), never catalog b's table files."""
    b = lf.Catalog(warehouse, options={"metastore": "jdbc", "uri": jdbc_uri, "catalog-key": "b"})
    b.create_database("db")
    t = b.create_table("db.t", pa.schema([("id", pa.int64())]), primary_keys=["id"],
                       options={"bucket": "1"})
    t.write(pa.table({"id": [1, 2, 3]}))
    a = lf.Catalog(warehouse, options={"metastore": "jdbc", "uri": jdbc_uri, "catalog-key": "a"})
    a.create_database("db")
    a.drop_database("db")
    assert a.list_databases() == [] and b.list_tables("db") == ["t"]
    assert b.get_table("db.t").read().num_rows == 3
    a.close()
    b.close()


def test_a_table_whose_row_cannot_be_recorded_leaves_no_files(jdbc_uri, warehouse):
    ms = _metastore(jdbc_uri, warehouse)
    ms.create_database("db")
    write = _schema_writer(ms, "db", "t")

    def write_then_lose_the_race():
        write()  # our files ...
        ms.client.execute("INSERT INTO paimon_tables VALUES ('jdbc', 'db', 't')")  # ... their row

    with pytest.raises(TableAlreadyExistsError, match="db.t"):
        ms.create_table("db", "t", write_then_lose_the_race)
    assert not ms.file_io.exists(ms.table_path("db", "t"))
    ms.close()


def test_existing_names_and_upper_case_are_refused(jdbc_uri, warehouse):
    ms = _metastore(jdbc_uri, warehouse)
    ms.create_database("db")
    with pytest.raises(DatabaseAlreadyExistsError, match="'db'"):
        ms.create_database("db")
    _create_table(ms, "db", "t")
    with pytest.raises(TableAlreadyExistsError, match="db.t"):
        _create_table(ms, "db", "t")
    with pytest.raises(InvalidIdentifierError, match="'Db'"):
        ms.create_database("Db")
    with pytest.raises(InvalidIdentifierError, match="'T2'"):
        _create_table(ms, "db", "T2")
    assert ms.list_databases() == ["db"] and ms.list_tables("db") == ["t"]
    ms.close()


def test_sqlalchemy_urls_reach_the_same_catalog(postgres_server, tmp_path):
    wh = str(tmp_path / "wh")
    name = postgres_server.new_database()
    by_jdbc = _metastore(postgres_server.jdbc_url(name), wh)
    by_jdbc.create_database("db")
    _create_table(by_jdbc, "db", "t")
    for url in (postgres_server.sqlalchemy_url(name),
                f"postgresql://postgres@127.0.0.1:{postgres_server.port}/{name}"):
        assert _metastore(url, wh).list_tables("db") == ["t"]
    sqlite_file = tmp_path / "cat.db"
    _metastore(f"jdbc:sqlite:{sqlite_file}", wh).create_database("db")
    assert _metastore(f"sqlite:///{sqlite_file}", wh).list_databases() == ["db"]


@pytest.mark.parametrize("uri, options", [
    ("jdbc:postgresql://127.0.0.1:1/cat?user=lf&password=hunter2", {}),
    ("postgresql://lf:hunter2@127.0.0.1:1/cat", {}),
    ("jdbc:postgresql://127.0.0.1:1/cat", {"jdbc.user": "lf", "jdbc.password": "hunter2"}),
])
def test_an_unreachable_database_is_a_clear_error_without_the_password(uri, options):
    with pytest.raises(JdbcConnectionError) as info:
        JdbcClient.from_options({"uri": uri, **options})
    message = str(info.value)
    assert "cannot reach the JDBC catalog database at" in message
    assert "127.0.0.1:1/cat" in message and "refused" in message.lower()
    assert "hunter2" not in message and "hunter2" not in repr(info.value)
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_a_sqlite_file_that_cannot_be_opened_is_a_clear_error(tmp_path):
    uri = f"jdbc:sqlite:{tmp_path}/no/such/dir/cat.db"
    with pytest.raises(JdbcConnectionError, match="no/such/dir/cat.db"):
        JdbcClient(uri)


@pytest.mark.parametrize("uri, named", [
    ("jdbc:oracle:thin:@db:1521:cat", "'oracle'"),
    ("jdbc:mariadb://db:3306/cat", "'mariadb'"),
    ("jdbc:sqlserver://db:1433;databaseName=cat", "'sqlserver'"),
    ("mssql+pyodbc://db/cat", "'mssql'"),
])
def test_an_unknown_dialect_is_refused_by_name(uri, named):
    with pytest.raises(UnsupportedError, match=named):
        JdbcClient(uri)


def test_bad_options_are_refused_by_name(tmp_path):
    with pytest.raises(InvalidOptionError, match="'uri'"):
        JdbcClient.from_options({"metastore": "jdbc"})
    with pytest.raises(InvalidOptionError, match="'uri'"):
        JdbcClient("not a url")
    with pytest.raises(UnsupportedError, match="'tcpKeepAlive'"):
        JdbcClient.from_options({"uri": "jdbc:postgresql://127.0.0.1:1/x",
                                 "jdbc.tcpKeepAlive": "true"})
    with pytest.raises(InvalidOptionError, match="'lock-key-max-length'"):
        JdbcClient.from_options({"uri": f"jdbc:sqlite:{tmp_path}/c.db",
                                 "lock-key-max-length": "many"})
    with pytest.raises(InvalidOptionError, match="'client-pool-size'"):
        JdbcClient.from_options({"uri": f"jdbc:sqlite:{tmp_path}/c.db",
                                 "client-pool-size": "0"})


def test_the_client_never_shows_its_password(postgres_server):
    name = postgres_server.new_database()
    client = JdbcClient.from_options({"uri": postgres_server.jdbc_url(name),
                                      "jdbc.password": "hunter2"})  # trust: any password works
    assert "hunter2" not in repr(client) and "hunter2" not in client.url
    client.close()


def test_import_lakeformat_does_not_load_sqlalchemy():
    code = ("import sys, lakeformat, lakeformat.lock.jdbc, lakeformat.metastore.jdbc; "
            "print('sqlalchemy' in sys.modules, 'psycopg' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, check=True)
    assert done.stdout.strip() == "False False"


# -- through the public API: lf.Catalog(..., options={"metastore": "jdbc", "uri": ...}) ------
def _catalog(warehouse: str, uri: str, **more: str):
    import lakeformat as lf

    return lf.Catalog(warehouse, options={"metastore": "jdbc", "uri": uri, **more})


def test_a_jdbc_catalog_creates_writes_and_finds_its_tables(jdbc_uri, warehouse):
    rows = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "v": ["a", "b", "c"]})
    with _catalog(warehouse, jdbc_uri) as cat:
        cat.create_database("db")
        t = cat.create_table("db.orders", schema=rows.schema, primary_keys=["id"],
                             options={"bucket": "1"})
        t.write(rows)
        t.write(pa.table({"id": pa.array([2], pa.int64()), "v": ["B"]}))
        client = cat.metastore.client
        assert client.query("SELECT catalog_key, database_name, table_name "
                            "FROM paimon_tables") == [("jdbc", "db", "orders")]
    with _catalog(warehouse, jdbc_uri) as again:  # a new catalog object, by name
        assert again.list_databases() == ["db"] and again.list_tables("db") == ["orders"]
        got = again.get_table("db.orders").read().sort_by("id")
        assert got.column("v").to_pylist() == ["a", "B", "c"]
        assert again.table_path("db.orders") == f"{warehouse}/db.db/orders"
        again.drop_table("db.orders")
        assert again.list_tables("db") == []
        again.drop_database("db")
        assert again.list_databases() == []


def test_a_jdbc_catalog_with_another_catalog_key_sees_nothing(jdbc_uri, warehouse):
    with _catalog(warehouse, jdbc_uri, **{"catalog-key": "prod"}) as prod:
        prod.create_database("db")
    with _catalog(warehouse, jdbc_uri) as default_key:
        assert default_key.list_databases() == []
    with _catalog(warehouse, jdbc_uri, **{"catalog-key": "prod"}) as prod:
        assert prod.list_databases() == ["db"]


@pytest.mark.parametrize("uri, secret", [
    ("postgresql://bob:s3cr/et@127.0.0.1:1/cat", "s3cr/et"),
    ("jdbc:postgresql://bob:pa?ss@127.0.0.1:1/cat", "pa?ss"),
    ("postgresql://bob:p@ss#w@127.0.0.1:1/cat", "p@ss#w"),
    ("jdbc:postgresql://127.0.0.1:1/cat?user=bob&password=ab#cd", "ab#cd"),
])
def test_passwords_with_url_characters_never_shown(uri, secret):
    from lakeformat.lock.jdbc_client import mask_url

    assert secret not in mask_url(uri) and "***" in mask_url(uri)
    with pytest.raises((JdbcConnectionError, UnsupportedError)) as err:
        lf.Catalog("unused-wh", options={"metastore": "jdbc", "uri": uri})
    shown = str(err.value)
    assert "127.0.0.1" in shown
    assert secret not in shown and secret.split("?")[-1] + "@" not in shown  # not even a tail


def test_a_jdbc_catalog_and_a_plain_warehouse_catalog_share_the_maintenance_lock(
        jdbc_uri, warehouse):
    j = lf.Catalog(warehouse, options={"metastore": "jdbc", "uri": jdbc_uri})
    j.create_database("db")
    t = j.create_table("db.t", pa.schema([("id", pa.int64())]), primary_keys=["id"],
                       options={"bucket": "1"})
    for i in range(3):
        t.write(pa.table({"id": [i]}))
    plain = lf.Catalog(warehouse, options={"lock-acquire-timeout": "1 s"})  # e.g. the CLI
    with t.locks.maintenance.acquire("compact"):
        with pytest.raises(lf.LockTimeoutError, match="held by compact"):
            plain.get_table("db.t").expire_snapshots(retain_min=1, older_than="0 s")
    assert [s.id for s in t.snapshots()] == [1, 2, 3]
    j.close()


def test_lock_enabled_defaults_as_paimon(jdbc_uri, warehouse):
    """Paimon's lockEnabled(): the option, else on when the warehouse is an object store —
    for a JDBC catalog, whose Java writers commit there by exists-then-rename under it."""
    def enabled(wh: str, **options: str) -> bool:
        return lf.Catalog(wh, options=options).config.lock.enabled

    s3 = {"s3.endpoint": "http://127.0.0.1:1", "s3.access-key": "a", "s3.secret-key": "b"}
    assert enabled("s3://bucket/wh", metastore="jdbc", uri=jdbc_uri, **s3) is True
    assert enabled("s3://bucket/wh", metastore="jdbc", uri=jdbc_uri, **s3,
                   **{"lock.enabled": "false"}) is False
    assert enabled(warehouse, metastore="jdbc", uri=jdbc_uri) is False
    assert enabled("s3://bucket/wh", **s3) is False  # filesystem catalog: no lock by default
