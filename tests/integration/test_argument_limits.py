"""Arguments at the edge of what Python's dates hold (an age of 270 million years, the year 1)
are refused by every maintenance verb with an error naming the argument; the table is left as
it was."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

import lakeformat as lf


@pytest.fixture()
def table(local_catalog: lf.Catalog) -> lf.Table:
    t = local_catalog.create_table(
        "db.t", pa.schema([pa.field("dt", pa.string(), False), ("id", pa.int64())]),
        primary_keys=["dt", "id"], partition_keys=["dt"], options={"bucket": "1"})
    t.write(pa.table({"dt": ["2024-01-01"], "id": [1]}))
    t.write(pa.table({"dt": ["2024-01-02"], "id": [2]}))
    return t


@pytest.mark.parametrize("older_than", ["99999999999 d", "99999999999999999999 ms",
                                        dt.datetime(1, 1, 1)])
def test_cleanup_verbs_refuse_an_age_beyond_the_calendar(table, older_than):
    files = {f.path for f in table.file_io.list_recursive(table.path)}
    verbs = {"expire_snapshots": lambda: table.expire_snapshots(retain_min=1,
                                                                older_than=older_than),
             "clean_schemas": lambda: table.clean_schemas(retain_min=1, older_than=older_than),
             "remove_orphan_files": lambda: table.remove_orphan_files(older_than=older_than)}
    for verb, call in verbs.items():
        with pytest.raises(lf.InvalidArgumentError, match="older_than") as err:
            call()
        assert "C int" not in str(err.value), verb
    assert {f.path for f in table.file_io.list_recursive(table.path)} == files
    assert [s.id for s in table.snapshots()] == [1, 2]


@pytest.mark.parametrize("age", ["99999999999 d", "999999999 d"])
def test_partition_expiry_refuses_an_age_before_the_year_one(table, age):
    with pytest.raises(lf.InvalidArgumentError, match="expiration_time"):
        table.expire_partitions(expiration_time=age)
    assert sorted(r["id"] for r in table.read().to_pylist()) == [1, 2]
