"""Rows for other dataframe libraries: `to_pandas`, `to_polars` (Polars is optional), and the
Arrow PyCapsule stream (`Table.__arrow_c_stream__`, `read_batches()`) that pyarrow, Polars and
DuckDB scan without a copy through pandas.

Local disk only (`local_only`): these convert what `read` and `read_batches` return; the store
is behind those two, whose S3 runs are in `test_read_batches.py` and `test_table.py`.
"""

from __future__ import annotations

import sys

import pyarrow as pa
import pytest

import lakeformat as lf

pytestmark = pytest.mark.local_only  # see the module docstring

SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False),
                    pa.field("id", pa.int64(), nullable=False), ("v", pa.float64())])


@pytest.fixture()
def table(catalog) -> lf.Table:
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                             options={"bucket": "2"})
    t.write(pa.table({"dt": ["a", "a", "b", "b"], "id": [1, 2, 3, 4], "v": [1.0, 2.0, 3.0, 4.0]},
                     schema=SCHEMA))
    t.write(pa.table({"dt": ["a"], "id": [1], "v": [10.0]}, schema=SCHEMA))  # snapshot 2
    return t


def ordered(rows: list[dict]) -> list[tuple]:
    return sorted(tuple(r.values()) for r in rows)


EXPECTED = [("a", 1, 10.0), ("a", 2, 2.0), ("b", 3, 3.0), ("b", 4, 4.0)]


def test_to_pandas_takes_the_read_arguments(table):
    df = table.to_pandas()
    assert list(df.columns) == ["dt", "id", "v"]
    assert ordered(df.to_dict("records")) == EXPECTED
    part = table.to_pandas(columns=["id", "v"], filter=[("dt", "=", "b")])
    assert list(part.columns) == ["id", "v"] and sorted(part["id"]) == [3, 4]
    old = table.to_pandas(snapshot_id=1)
    assert old.set_index("id").loc[1, "v"] == 1.0
    arrow_backed = table.to_pandas(types_mapper=lambda t: None)
    assert arrow_backed.shape == (4, 3)


def test_to_polars(table):
    pl = pytest.importorskip("polars")
    df = table.to_polars(filter=[("id", ">", 1)])
    assert isinstance(df, pl.DataFrame) and df.columns == ["dt", "id", "v"]
    assert ordered(df.to_dicts()) == EXPECTED[1:]
    assert df.schema["id"] == pl.Int64


def test_to_polars_without_polars_names_the_install(table, monkeypatch):
    monkeypatch.setitem(sys.modules, "polars", None)  # import polars raises ImportError
    with pytest.raises(ImportError, match="pip install polars"):
        table.to_polars()


def test_a_table_is_an_arrow_stream(table):
    assert hasattr(table, "__arrow_c_stream__")
    rows = pa.table(table)  # through the PyCapsule protocol
    assert rows.schema.names == ["dt", "id", "v"] and ordered(rows.to_pylist()) == EXPECTED
    reader = pa.RecordBatchReader.from_stream(table)
    assert ordered(reader.read_all().to_pylist()) == EXPECTED


def test_duckdb_scans_a_table_and_its_batches(table):
    duckdb = pytest.importorskip("duckdb")
    t = table  # DuckDB finds Python variables by name
    assert sorted(duckdb.sql("select dt, id, v from t").fetchall()) == EXPECTED
    reader = table.read_batches(filter=[("dt", "=", "a")])
    assert sorted(duckdb.from_arrow(reader).fetchall()) == EXPECTED[:2]
    con = duckdb.connect()
    con.register("files", table.inspect.files())
    got = con.sql("select partition, count(*) from files group by 1 order by 1").fetchall()
    expected: dict[str, int] = {}
    for f in table.files():
        key = f"dt={f['partition']['dt']}"
        expected[key] = expected.get(key, 0) + 1
    assert got == sorted(expected.items())
    del t


def test_polars_takes_a_table_and_its_batches(table):
    pl = pytest.importorskip("polars")
    assert ordered(pl.DataFrame(table).to_dicts()) == EXPECTED
    df = pl.from_arrow(table.read_batches(columns=["id"]))
    assert sorted(df["id"].to_list()) == [1, 2, 3, 4]
