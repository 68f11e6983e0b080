"""Reading lakeformat tables through Spark (`spark.read.format("lakeformat")`): the rows a user
sees equal `Table.read()`'s, one Spark partition per (partition, bucket) split, filters that
prune and never bring back an older version of a row, time travel, types and clear errors.

Local disk or S3: the tests read tables on local disk; one reads the merge-on-read table on
the moto S3 server (`test_read_on_s3_...`: the reader's `s3.*` options reach the tasks, which
is all a read does differently there). The table's S3 reads themselves are the library's
(tests/integration), the data source's writes on S3 are test_write's."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import types as T

import lakeformat as lf
from lakeformat.schema import types as pt
from lakeformat.schema.types import DataField


def _reader(spark: Any, catalog: lf.Catalog, **options: str) -> Any:
    r = spark.read.format("lakeformat").option("warehouse", catalog.warehouse)
    for k, v in {**catalog.options, **options}.items():
        r = r.option(k, v)
    return r


def _rows(df: Any, key: str = "id") -> list[dict[str, Any]]:
    return sorted(df.toArrow().to_pylist(), key=lambda r: r[key])


def _expected(table: lf.Table, key: str = "id", **read: Any) -> list[dict[str, Any]]:
    return sorted(table.read(**read).to_pylist(), key=lambda r: r[key])


def _splits(table: lf.Table, **partition: Any) -> int:
    """(partition, bucket) pairs holding files, of the partitions matching `partition`."""
    return len({(tuple(sorted(f["partition"].items())), f["bucket"]) for f in table.files()
                if all(f["partition"][k] == v for k, v in partition.items())})


ORDERS = pa.schema([
    pa.field("id", pa.int64(), False), pa.field("dt", pa.string(), False),
    pa.field("name", pa.string()), pa.field("qty", pa.int32()),
    pa.field("price", pa.decimal128(10, 2)), pa.field("ts", pa.timestamp("us")),
])


def _orders(catalog: lf.Catalog, engine: str = "partial-update") -> lf.Table:
    """Three writes merged on read: names first, then quantities, then a renamed row."""
    t = catalog.create_table("db.orders", ORDERS, primary_keys=["id", "dt"],
                             partition_keys=["dt"],
                             options={"bucket": "2", "merge-engine": engine})
    ids = [1, 2, 3, 4, 5, 6]
    t.write(pa.table({
        "id": ids, "dt": ["a", "a", "a", "b", "b", "c"],
        "name": [f"n{i}" for i in ids], "qty": pa.nulls(6, pa.int32()),
        "price": pa.array([Decimal(f"{i}.25") for i in ids], pa.decimal128(10, 2)),
        "ts": pa.array([dt.datetime(2024, 1, i, 12) for i in ids], pa.timestamp("us")),
    }, schema=ORDERS))
    t.write(pa.table({
        "id": [1, 2, 5], "dt": ["a", "a", "b"], "name": pa.nulls(3, pa.string()),
        "qty": pa.array([10, 20, 50], pa.int32()),
        "price": pa.nulls(3, pa.decimal128(10, 2)), "ts": pa.nulls(3, pa.timestamp("us")),
    }, schema=ORDERS))
    t.write(pa.table({
        "id": [3], "dt": ["a"], "name": ["renamed"], "qty": pa.array([3], pa.int32()),
        "price": pa.nulls(1, pa.decimal128(10, 2)), "ts": pa.nulls(1, pa.timestamp("us")),
    }, schema=ORDERS))
    return t


def test_merge_on_read_projection_and_filters(spark: Any, local_catalog: lf.Catalog) -> None:
    t = _orders(local_catalog)
    df = _reader(spark, local_catalog).load("db.orders")

    assert df.schema == T.StructType([
        T.StructField("id", T.LongType(), False), T.StructField("dt", T.StringType(), False),
        T.StructField("name", T.StringType(), True),
        T.StructField("qty", T.IntegerType(), True),
        T.StructField("price", T.DecimalType(10, 2), True),
        T.StructField("ts", T.TimestampNTZType(), True)])
    rows = _rows(df)
    assert rows == _expected(t)
    # partial update: the names of write 1 with the quantities of write 2 on the same rows
    assert rows[0] == {"id": 1, "dt": "a", "name": "n1", "qty": 10, "price": Decimal("1.25"),
                       "ts": dt.datetime(2024, 1, 1, 12)}
    assert rows[2]["name"] == "renamed" and rows[2]["price"] == Decimal("3.25")
    # one Spark partition per (partition, bucket) split
    assert df.rdd.getNumPartitions() == _splits(t) > 3

    # projection
    assert sorted(r["name"] for r in df.select("name").toArrow().to_pylist()) == sorted(
        r["name"] for r in rows)

    # partition filters prune splits and are exact
    only_a = df.where("dt = 'a'")
    assert only_a.rdd.getNumPartitions() == _splits(t, dt="a") < _splits(t)
    assert _rows(only_a) == _expected(t, filter=[("dt", "=", "a")])
    not_a = df.where("dt <> 'a' AND dt IN ('b', 'c', 'z')")
    assert not_a.rdd.getNumPartitions() == _splits(t) - _splits(t, dt="a")
    assert [r["id"] for r in _rows(not_a)] == [4, 5, 6]
    assert df.where("dt = 'nope'").count() == 0

    # key and value filters
    assert _rows(df.where("id = 2")) == [r for r in rows if r["id"] == 2]
    assert [r["id"] for r in _rows(df.where("qty >= 20 AND dt = 'a'"))] == [2]
    assert [r["id"] for r in _rows(df.where("qty IS NULL"))] == [4, 6]
    assert [r["id"] for r in _rows(df.where("name IN ('n1', 'renamed', 'n3')"))] == [1, 3]


@pytest.mark.parametrize("catalog", ["s3"], indirect=True)
def test_read_on_s3_hands_the_catalog_options_to_the_tasks(spark: Any, catalog: lf.Catalog
                                                           ) -> None:
    """The table of the test above on the moto S3 server: the tasks read its files through
    the `s3.*` options given to the reader; a partition filter still prunes splits."""
    t = _orders(catalog)
    df = _reader(spark, catalog).load("db.orders")
    assert _rows(df) == _expected(t)
    only_b = df.where("dt = 'b' AND qty = 50")
    assert only_b.rdd.getNumPartitions() == _splits(t, dt="b") < _splits(t)
    assert _rows(only_b) == _expected(t, filter=[("dt", "=", "b"), ("qty", "=", 50)])


def test_value_filter_never_matches_an_older_version_of_a_row(spark: Any,
                                                               local_catalog: lf.Catalog) -> None:
    t = local_catalog.create_table(
        "db.kv", pa.schema([pa.field("id", pa.int64(), False), pa.field("v", pa.string()),
                            pa.field("n", pa.int64())]),
        primary_keys=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1, 2], "v": ["old", "keep"], "n": [1, 1]}))
    t.write(pa.table({"id": [1], "v": ["new"], "n": [2]}))
    df = _reader(spark, local_catalog).load("db.kv")
    assert df.where("v = 'old'").count() == 0
    assert df.where("n = 1").toArrow().to_pylist() == [{"id": 2, "v": "keep", "n": 1}]
    assert df.where("v = 'new'").toArrow().to_pylist() == [{"id": 1, "v": "new", "n": 2}]


def test_time_travel_by_snapshot_id_and_tag(spark: Any, local_catalog: lf.Catalog) -> None:
    t = local_catalog.create_table(
        "db.tt", pa.schema([pa.field("id", pa.int64(), False), pa.field("v", pa.string())]),
        primary_keys=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    t.create_tag("first")
    t.alter([lf.SchemaChange.add_column("extra", pa.int64())])
    t.write(pa.table({"id": [1, 3], "v": ["a2", "c"], "extra": [7, 8]}))

    latest = _reader(spark, local_catalog).load("db.tt")
    assert latest.columns == ["id", "v", "extra"]
    assert _rows(latest) == [{"id": 1, "v": "a2", "extra": 7},
                             {"id": 2, "v": "b", "extra": None},
                             {"id": 3, "v": "c", "extra": 8}]
    old = [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}]
    # option names are case-insensitive; the snapshot's own schema is read
    by_id = _reader(spark, local_catalog, **{"Snapshot-Id": "1"}).load("db.tt")
    assert by_id.columns == ["id", "v"] and _rows(by_id) == old
    by_tag = _reader(spark, local_catalog, tag="first").option("table", "db.tt").load()
    assert by_tag.columns == ["id", "v"] and _rows(by_tag) == old


def test_types_values_and_nullability(spark: Any, local_catalog: lf.Catalog) -> None:
    row = pt.DataType("ROW", True, fields=(DataField(-1, "x", pt.int_(False)),
                                           DataField(-1, "s", pt.string())))
    fields = [
        DataField(-1, "id", pt.int_(False)), DataField(-1, "b", pt.boolean()),
        DataField(-1, "i8", pt.tinyint()), DataField(-1, "i16", pt.smallint(False)),
        DataField(-1, "i64", pt.bigint()), DataField(-1, "f32", pt.float_()),
        DataField(-1, "f64", pt.double()), DataField(-1, "dec", pt.decimal(38, 10)),
        DataField(-1, "c", pt.char(3)), DataField(-1, "vc", pt.varchar(10, False)),
        DataField(-1, "s", pt.string()), DataField(-1, "bin", pt.binary(2)),
        DataField(-1, "vb", pt.bytes_()), DataField(-1, "d", pt.date()),
        DataField(-1, "ts3", pt.timestamp(3)), DataField(-1, "ts6", pt.timestamp(6)),
        DataField(-1, "ltz", pt.timestamp_ltz(6)),
        DataField(-1, "arr", pt.DataType("ARRAY", True, element=pt.bigint(False))),
        DataField(-1, "m", pt.DataType("MAP", True, key=pt.string(False), value=pt.int_())),
        DataField(-1, "r", row),
    ]
    t = local_catalog.create_table("db.types", fields, primary_keys=["id"],
                                   options={"bucket": "1"})
    ts = dt.datetime(2024, 2, 29, 23, 59, 58, 123456)
    values = {
        "id": [1, 2], "b": [True, None], "i8": [-128, None], "i16": [32767, -1],
        "i64": [2**62, None], "f32": [1.5, None], "f64": [-2.25, None],
        "dec": [Decimal("1234567890123456789012345678.0123456789"), None],
        "c": ["abc", None], "vc": ["v", ""], "s": ["ß✓", None], "bin": [b"\x00\xff", None],
        "vb": [b"bytes", None], "d": [dt.date(1969, 12, 31), None],
        "ts3": [dt.datetime(2024, 1, 2, 3, 4, 5, 678000), None], "ts6": [ts, None],
        "ltz": [ts.replace(tzinfo=dt.UTC), None],
        "arr": [[1, 2], None], "m": [[("k", 1), ("n", None)], None],
        "r": [{"x": 1, "s": "in"}, None],
    }
    t.write(pa.table(values, schema=t.schema))
    df = _reader(spark, local_catalog).load("db.types")

    assert df.schema == T.StructType([
        T.StructField("id", T.IntegerType(), False), T.StructField("b", T.BooleanType()),
        T.StructField("i8", T.ByteType()), T.StructField("i16", T.ShortType(), False),
        T.StructField("i64", T.LongType()), T.StructField("f32", T.FloatType()),
        T.StructField("f64", T.DoubleType()), T.StructField("dec", T.DecimalType(38, 10)),
        T.StructField("c", T.StringType()), T.StructField("vc", T.StringType(), False),
        T.StructField("s", T.StringType()), T.StructField("bin", T.BinaryType()),
        T.StructField("vb", T.BinaryType()), T.StructField("d", T.DateType()),
        T.StructField("ts3", T.TimestampNTZType()), T.StructField("ts6", T.TimestampNTZType()),
        T.StructField("ltz", T.TimestampType()),
        T.StructField("arr", T.ArrayType(T.LongType(), containsNull=False)),
        T.StructField("m", T.MapType(T.StringType(), T.IntegerType(), True)),
        T.StructField("r", T.StructType([T.StructField("x", T.IntegerType(), False),
                                         T.StructField("s", T.StringType())])),
    ])
    expected = [dict(zip(values, r)) for r in zip(*values.values())]
    # PySpark's own toArrow cannot rebuild a null struct with a NOT NULL field (it fails in
    # its final cast), so the ROW column is checked through collect
    got = df.drop("r").toArrow()
    assert sorted(got.to_pylist(), key=lambda r: r["id"]) == [
        {k: v for k, v in r.items() if k != "r"} for r in expected]
    assert sorted((r.id, r.r and r.r.asDict()) for r in df.select("id", "r").collect()) == [
        (1, {"x": 1, "s": "in"}), (2, None)]
    # the same through Spark SQL's own functions (not only Arrow round trips)
    df.createOrReplaceTempView("types_view")
    assert spark.sql("SELECT i8 + 1 AS a, m['k'] AS b, r.s AS c, date_add(d, 1) AS e, "
                     "hour(ltz) AS h FROM types_view WHERE id = 1").collect()[0].asDict() == {
        "a": -127, "b": 1, "c": "in", "e": dt.date(1970, 1, 1), "h": 23}


def test_types_spark_cannot_hold_are_refused_by_column(spark: Any,
                                                       local_catalog: lf.Catalog) -> None:
    local_catalog.create_table("db.timed", [DataField(-1, "id", pt.int_(False)),
                                            DataField(-1, "at", pt.time(3))],
                               primary_keys=["id"], options={"bucket": "1"})
    with pytest.raises(Exception, match=r"column 'at' has type TIME\(3\)"):
        _reader(spark, local_catalog).load("db.timed")

    t = local_catalog.create_table("db.nanos", [DataField(-1, "id", pt.int_(False)),
                                                DataField(-1, "ts", pt.timestamp(9))],
                                   primary_keys=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1], "ts": pa.array([1_000_000_001], pa.timestamp("ns"))},
                     schema=t.schema))
    with pytest.raises(Exception, match=r"column 'ts' .*cannot be handed to Spark"):
        _reader(spark, local_catalog).load("db.nanos").collect()


def test_empty_table_reads_no_rows(spark: Any, local_catalog: lf.Catalog) -> None:
    local_catalog.create_table("db.empty", ORDERS, primary_keys=["id", "dt"],
                               partition_keys=["dt"], options={"bucket": "2"})
    df = _reader(spark, local_catalog).load("db.empty")
    assert df.count() == 0 and df.columns == ORDERS.names


def test_bad_input_is_named(spark: Any, local_catalog: lf.Catalog) -> None:
    t = local_catalog.create_table("db.ok", pa.schema([pa.field("id", pa.int64(), False)]),
                                   primary_keys=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1]}))
    read = _reader(spark, local_catalog)
    with pytest.raises(Exception, match=r"table db\.missing does not exist"):
        read.load("db.missing")
    with pytest.raises(Exception, match=r"option 'warehouse' is required"):
        spark.read.format("lakeformat").load("db.ok")
    with pytest.raises(Exception, match=r"no table given"):
        read.load()
    with pytest.raises(Exception, match=r"unknown catalog option 's3.endpont'.*s3.endpoint"):
        read.option("s3.endpont", "http://127.0.0.1:1").load("db.ok")
    with pytest.raises(Exception, match=r"snapshot 42 of db\.ok does not exist"):
        _reader(spark, local_catalog, **{"snapshot-id": "42"}).load("db.ok")
    with pytest.raises(Exception, match=r"tag 'nope' does not exist in db\.ok"):
        _reader(spark, local_catalog, tag="nope").load("db.ok")


def test_read_through_spark_connect(spark_connect: Any, local_catalog: lf.Catalog) -> None:
    t = _orders(local_catalog, engine="deduplicate")
    df = _reader(spark_connect, local_catalog).load("db.orders")
    assert _rows(df) == _expected(t)
    assert _rows(df.where("dt = 'b' AND qty = 50")) == _expected(
        t, filter=[("dt", "=", "b"), ("qty", "=", 50)])
