"""The same jobs over Spark Connect: a local Connect server (the Connect service of the
suite's JVM on 127.0.0.1: conftest's `spark_connect`) runs the write, the data source's read
and write, and the compaction — no RDD and no SparkContext exist on this side."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

import lakeformat as lf
import lakeformat.spark as lfs
from lakeformat.spark.session import is_connect


def test_write_compact_and_read_over_spark_connect(spark_connect: Any, tmp_path: Path) -> None:
    spark = spark_connect
    assert is_connect(spark)
    cat = lf.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.c", pa.schema([pa.field("id", pa.int64(), nullable=False),
                                            ("a", pa.string()), ("b", pa.int64())]),
                         primary_keys=["id"], options={"bucket": "2",
                                                       "merge-engine": "partial-update"})
    first = lfs.write(spark.range(0, 100).selectExpr("id", "CAST(id AS STRING) AS a"), t,
                      merge_schema=False)
    assert first.rows_written == 100
    (spark.range(0, 100, 2).selectExpr("id", "id * 3 AS b").write.format("lakeformat")
     .mode("append").option("warehouse", cat.warehouse).save("db.c"))
    assert len(t.snapshots()) == 2
    result = lfs.compact(spark, t)
    assert result.snapshot_ids == [3]
    assert {f["level"] for f in t.files()} == {5}
    got = (spark.read.format("lakeformat").option("warehouse", cat.warehouse).load("db.c")
           .where("id < 4").toArrow().sort_by("id").to_pylist())
    assert got == [{"id": 0, "a": "0", "b": 0}, {"id": 1, "a": "1", "b": None},
                   {"id": 2, "a": "2", "b": 6}, {"id": 3, "a": "3", "b": None}]
    assert t.read().num_rows == 100
    landing = tmp_path / "landing"
    landing.mkdir()
    (landing / "x.json").write_text('{"id": 500, "a": "json"}\n')
    assert lfs.ingest(spark, t, str(landing / "*.json")).rows_written == 1
    assert t.read().num_rows == 101
