"""Inputs are checked and errors are typed: each bad input gets a lakeformat error naming the
thing at fault (identifier, argument, option key, column, table), and leaves the table as it
was.

Local disk and the moto S3 server where storage matters: identifiers that would escape their
key prefix, and every verb on a dropped table (its objects gone). The refusals of filters,
options and cut-offs (`@local_disk`, and the tests on `local_catalog`) are made before a file
is read or written, the same above either store, so they run on local disk only; the S3 reads,
writes and expiries that follow them are the ones `test_maintenance_s3.py` and the S3 runs of
`test_table.py` make.
"""

from __future__ import annotations

import dataclasses
import datetime as dt

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lakeformat as lf
from lakeformat.errors import InvalidFilterError
from lakeformat.options import CoreOptions, parse_bool, parse_duration
from lakeformat.schema.schema_manager import SchemaManager

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


#: a test of this module that never reaches store specifics: local disk only (module docstring)
local_disk = pytest.mark.parametrize("catalog", ["local"], indirect=True)


def make(catalog, **options) -> lf.Table:
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"],
                             options={"bucket": "1", **options})
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    return t


def files(catalog) -> set[str]:
    return {s.path for s in catalog.file_io.list_recursive(catalog.warehouse)}


def forged(database: str, table: str) -> lf.Identifier:
    """An Identifier whose names were changed after its checks ran (frozen is not sealed)."""
    ident = lf.Identifier("db", "ok")
    object.__setattr__(ident, "database", database)
    object.__setattr__(ident, "table", table)
    return ident


# -- identifiers -----------------------------------------------------------------------------------
@pytest.mark.parametrize("database,table", [("db", "../../x"), ("..", "t"), ("db", "a/b"),
                                            ("db", ""), ("db", "t\n"), ("db", " t")])
def test_identifier_objects_pass_the_string_name_checks(catalog, database, table):
    with pytest.raises(lf.InvalidIdentifierError, match="name"):
        lf.Identifier(database, table)
    before = files(catalog)
    bad = forged(database, table)
    for call in (lambda: catalog.create_table(bad, SCHEMA, primary_keys=["id"]),
                 lambda: catalog.get_table(bad), lambda: catalog.drop_table(bad),
                 lambda: catalog.table_exists(bad),
                 lambda: catalog.create_table(f"{database}.{table}", SCHEMA,
                                              primary_keys=["id"])):
        with pytest.raises(lf.InvalidIdentifierError):
            call()
    with pytest.raises(lf.InvalidIdentifierError):
        catalog.list_tables(database if database != "db" else "../x")
    assert files(catalog) == before


def test_identifier_replace_is_checked_too(local_catalog):
    ok = lf.Identifier("db", "t")
    with pytest.raises(lf.InvalidIdentifierError, match=r"\.\."):
        dataclasses.replace(ok, table="../../x")


def test_identifier_escape_creates_nothing_outside_the_warehouse(tmp_path):
    catalog = lf.Catalog(str(tmp_path / "a" / "wh"))
    catalog.create_database("db")
    with pytest.raises(lf.InvalidIdentifierError):
        catalog.create_table(forged("db", "../../x"), SCHEMA, primary_keys=["id"])
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["wh"]


# -- data given to write / delete ---------------------------------------------------------------
@pytest.mark.parametrize("data,named", [(None, "None"), ("rows.csv", "str"), (42, "int"),
                                        ({"id": [1]}, "dict"), ([{"id": 1}], "dict"),
                                        ([pa.table({"id": [1]}), "x"], "str")])
def test_write_and_delete_of_non_tabular_input_are_schema_mismatches(local_catalog, data,
                                                                     named):
    t = make(local_catalog)
    for verb in (t.write, t.delete):
        with pytest.raises(lf.SchemaMismatchError, match=named):
            verb(data)
    assert [s.id for s in t.snapshots()] == [1]


# -- filters ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("flt", [[("zzz", "=", 1)], [[("id", "=", 1)], [("zzz", ">", 2)]],
                                 pc.field("zzz") == 1,
                                 (pc.field("id") > 0) & (pc.field("zzz") < 1)])
@local_disk
def test_filter_on_unknown_column_names_it_and_the_table_columns(catalog, flt):
    t = make(catalog)
    with pytest.raises(InvalidFilterError) as e:
        t.read(filter=flt)
    assert "'zzz'" in str(e.value) and "['id', 'v']" in str(e.value)
    with pytest.raises(InvalidFilterError, match="zzz"):
        t.read(columns=["v"], filter=flt, snapshot_id=1)


@pytest.mark.parametrize("flt", [[("id", "=", "abc")], [("id", "in", [1, "x"])],
                                 pc.field("id") == "abc"])
def test_filter_value_that_does_not_fit_the_column_type_names_the_column(local_catalog, flt):
    t = make(local_catalog)
    with pytest.raises(InvalidFilterError, match="id") as e:
        t.read(filter=flt)
    assert "BIGINT" in str(e.value) or "int64" in str(e.value)
    assert t.read(filter=[("id", "=", 2)]).to_pylist() == [{"id": 2, "v": "b"}]


# -- a Table object whose table was dropped -----------------------------------------------------
def test_every_verb_on_a_dropped_table_raises_table_not_found(catalog):
    t = make(catalog)
    catalog.drop_table("db.t")
    verbs = {
        "write": lambda: t.write(pa.table({"id": [3], "v": ["c"]}, schema=SCHEMA)),
        "delete": lambda: t.delete(pa.table({"id": [1]})),
        "read": lambda: t.read(), "read snapshot": lambda: t.read(snapshot_id=1),
        "files": lambda: t.files(), "compact": lambda: t.compact(),
        "expire": lambda: t.expire_snapshots(), "clean": lambda: t.clean_schemas(),
        "orphans": lambda: t.remove_orphan_files(),
        "alter": lambda: t.alter(lf.SchemaChange.set_option("a", "b")),
        "refresh": lambda: t.refresh(),
    }
    for name, verb in verbs.items():
        with pytest.raises(lf.TableNotFoundError, match="does not exist") as e:
            verb()
        assert "db.t" in str(e.value) or t.path in str(e.value), name
    assert not catalog.file_io.is_dir(t.path)  # nothing was written back
    with pytest.raises(lf.TableNotFoundError, match="db.t"):
        lf.Table("db.t", t.path, catalog.file_io)


# -- arguments and options -------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs,named", [({"workers": 0}, "workers"), ({"workers": -2}, "workers"),
                                          ({"workers": 1.5}, "workers"),
                                          ({"partitions_per_commit": 0}, "partitions_per_commit"),
                                          ({"partitions_per_commit": None},
                                           "partitions_per_commit")])
def test_compact_refuses_non_positive_workers_and_partitions_per_commit(local_catalog, kwargs,
                                                                       named):
    t = make(local_catalog)
    with pytest.raises(lf.InvalidOptionError, match=named):
        t.compact(**kwargs)
    assert [s.id for s in t.snapshots()] == [1]
    t.compact(workers=1, partitions_per_commit=1)  # the smallest valid values run
    assert t.read().num_rows == 2


@pytest.mark.parametrize("options,key", [
    ({"commit.max-retries": "-1"}, "commit.max-retries"),
    ({"commit.max-retries": "many"}, "commit.max-retries"),
    ({"commit.timeout": "0 s"}, "commit.timeout"),
    ({"commit.min-retry-wait": "1 s", "commit.max-retry-wait": "10 ms"}, "commit.max-retry-wait"),
    ({"snapshot.num-retained.min": "0"}, "snapshot.num-retained.min"),
    ({"snapshot.num-retained.min": "5", "snapshot.num-retained.max": "2"},
     "snapshot.num-retained.max"),
    ({"snapshot.expire.limit": "0"}, "snapshot.expire.limit"),
])
def test_invalid_commit_and_expiry_options_are_refused_at_create_and_alter(local_catalog,
                                                                          options, key):
    with pytest.raises(lf.InvalidOptionError, match=key):
        local_catalog.create_table("db.bad", SCHEMA, primary_keys=["id"],
                                   options={"bucket": "1", **options})
    assert not local_catalog.table_exists("db.bad")
    t = make(local_catalog)
    with pytest.raises(lf.InvalidOptionError, match=key):
        t.alter([lf.SchemaChange.set_option(k, v) for k, v in options.items()])
    assert [s.id for s in t.schemas()] == [0]


@local_disk
def test_invalid_commit_option_written_by_another_engine_is_refused_at_write(catalog):
    t = make(catalog)
    before = files(catalog)
    # a schema some other writer published without lakeformat's checks
    sm = SchemaManager(t.file_io, t.path)
    latest = sm.latest()
    bad = dataclasses.replace(latest, id=latest.id + 1,
                              options={**latest.options, "commit.max-retries": "-3"})
    assert sm.commit(bad)
    with pytest.raises(lf.InvalidOptionError, match="commit.max-retries"):
        t.write(pa.table({"id": [3], "v": ["c"]}, schema=SCHEMA))
    after = files(catalog)
    assert {p for p in after - before if "/schema/" not in p} == set()  # no data left behind
    assert [s.id for s in t.snapshots()] == [1]


# -- expiry's cut-off ------------------------------------------------------------------------------
@pytest.mark.parametrize("older_than", [dt.datetime.now() + dt.timedelta(hours=1),
                                        dt.timedelta(hours=-1)])
@local_disk
def test_expire_snapshots_refuses_a_future_cutoff_like_the_other_verbs(catalog, older_than):
    t = make(catalog)
    t.write(pa.table({"id": [3], "v": ["c"]}, schema=SCHEMA))
    before = files(catalog)
    for verb in (lambda **kw: t.expire_snapshots(retain_min=1, older_than=older_than, **kw),
                 lambda **kw: t.clean_schemas(retain_min=1, older_than=older_than, **kw),
                 lambda **kw: t.remove_orphan_files(older_than=older_than, **kw)):
        for dry_run in (True, False):
            with pytest.raises(lf.InvalidOptionError, match="older_than .* is in the future"):
                verb(dry_run=dry_run)
    assert files(catalog) == before
    assert t.expire_snapshots(retain_min=1, older_than=dt.timedelta(0)).snapshots_deleted == [1]


# -- secrets ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("key", ["s3.secret-key", "s3.access-key", "s3.session-token",
                                 "jdbc.password", "fs.oss.accessKeySecret", "gcs.credentials"])
def test_errors_never_echo_a_secret_bearing_option_value(key):
    value = "hunter2-Secret"
    calls = [lambda: parse_bool({key: value}, key), lambda: parse_duration(value, key),
             lambda: CoreOptions({key: value})._int(key, 0)]
    for call in calls:
        with pytest.raises(lf.InvalidOptionError) as e:
            call()
        assert key in str(e.value) and value not in str(e.value) and "***" in str(e.value)
    with pytest.raises(lf.InvalidOptionError, match="'maybe'"):  # other values are shown
        parse_bool({"lock.enabled": "maybe"}, "lock.enabled")


def test_s3_option_errors_do_not_echo_the_credentials(s3_warehouse):
    uri, options = s3_warehouse
    bad = {**options, "s3.path-style-access": "perhaps"}
    with pytest.raises(lf.InvalidOptionError, match="s3.path-style-access") as e:
        lf.Catalog(uri, bad)
    assert options["s3.secret-key"] not in str(e.value)
    assert options["s3.access-key"] not in str(e.value)
