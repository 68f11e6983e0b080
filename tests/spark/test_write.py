"""Writes through Spark: `lakeformat.spark.write` (shuffled by bucket, committed on the driver)
and the data source's writer (`df.write.format("lakeformat")`), read back by the library, the
data source and pypaimon.

Local disk or S3: the tests run on local disk, except the overwrite and the merge-schema
tests, which run on the moto S3 server only (they ran on both): they are where `write()` and
the data source's writer publish on S3 with catalog options (`s3.*`) handed to the tasks; what
they do on local disk the other tests do (the data source's writer: two streams, retried and
refused writes; overwrite: `test_ingest`'s; merge-schema: timestamps, `test_ingest`'s)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lakeformat as lf
import lakeformat.spark as lfs
from lakeformat.spark.write_job import SparkWriteJob, incoming_schema
from tests.support.pypaimon_reader import pypaimon_rows_many
from tests.support.two_streams import COLUMNS, STEPS, TWO_STREAMS


def rows_by_id(table: pa.Table) -> dict[int, tuple]:
    return {r["id"]: tuple(r[c] for c in COLUMNS[1:]) for r in table.to_pylist()}


def table_bytes(root: Path) -> dict[str, bytes]:
    """Every object under a table (or warehouse) directory, by relative path."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def ds_read(spark: Any, catalog: lf.Catalog, name: str, **options: str) -> pa.Table:
    reader = spark.read.format("lakeformat").option("warehouse", catalog.warehouse)
    for k, v in {**catalog.options, **options}.items():
        reader = reader.option(k, v)
    return reader.load(name).toArrow()


def ds_write(df: Any, catalog: lf.Catalog, name: str, mode: str = "append",
             **options: str) -> None:
    writer = df.write.format("lakeformat").mode(mode).option("warehouse", catalog.warehouse)
    for k, v in {**catalog.options, **options}.items():
        writer = writer.option(k, v)
    writer.save(name)


#: the `catalog` fixture on the moto S3 server only: the data source's writer with catalog
#: options (s3.*) is only run here; the same writes on local disk are every other test's
ON_S3 = pytest.mark.parametrize("catalog", ["s3"], indirect=True)


@pytest.mark.parametrize("path", ["job", "datasource"])
def test_two_streams_through_spark_read_back_two_ways(spark: Any, tmp_path: Path,
                                                       path: str) -> None:
    """The README's partial-update scenario: orders and payments each write their own columns
    with their own sequence group (out-of-order and NULL ordering values), through Spark.
    (pypaimon's read-back of a Spark write: the next test.)"""
    cat = lf.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.two", TWO_STREAMS, primary_keys=["id"], options={
        "bucket": "2", "merge-engine": "partial-update",
        "fields.a_ts.sequence-group": "a,b", "fields.c_ts.sequence-group": "c,d"})
    for stream, rows, expected in STEPS:
        df = spark.createDataFrame(stream(rows))
        if path == "job":
            result = lfs.write(df, t)
            assert result.snapshot_id == t.latest_snapshot().id
            assert result.rows_written == len(rows)
        else:
            ds_write(df, cat, "db.two")
        assert rows_by_id(t.read()) == expected
    expected = STEPS[-1][2]
    assert len(t.snapshots()) == len(STEPS)  # one snapshot per Spark write
    assert rows_by_id(ds_read(spark, cat, "db.two")) == expected


def test_pypaimon_reads_a_spark_write_and_refuses_sequence_groups(spark: Any, tmp_path: Path
                                                                  ) -> None:
    """Spark's partial-update writes read back by the library, the data source and pypaimon
    2.1.0 (one child process for both tables); pypaimon refuses a table with sequence groups
    (the two-stream history) instead of returning other rows."""
    cat = lf.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    grouped = cat.create_table("db.two", TWO_STREAMS, primary_keys=["id"], options={
        "bucket": "2", "merge-engine": "partial-update",
        "fields.a_ts.sequence-group": "a,b", "fields.c_ts.sequence-group": "c,d"})
    plain = cat.create_table("db.plain", TWO_STREAMS, primary_keys=["id"], options={
        "bucket": "2", "merge-engine": "partial-update"})
    for stream, rows, _ in STEPS:  # the library writes it: the table is pypaimon's concern
        grouped.write(stream(rows))
    for stream, rows, _ in STEPS[:2]:
        lfs.write(spark.createDataFrame(stream(rows)), plain)
    plain_rows = rows_by_id(plain.read())
    assert plain_rows == {1: ("a1", 1, 10, "c1", 1, 5), 2: ("a2", 2, 10, None, None, None),
                          3: (None, None, None, "c3", 3, 5)}
    theirs_grouped, theirs_plain = pypaimon_rows_many(cat.warehouse,
                                                      [("db.two", None), ("db.plain", None)])
    assert "sequence-group" in theirs_grouped["error"]
    got = theirs_plain["rows"]
    assert {r["id"]: tuple(r[c] for c in COLUMNS[1:]) for r in got} == plain_rows
    assert rows_by_id(ds_read(spark, cat, "db.plain")) == plain_rows


def test_later_rows_of_one_dataframe_win_across_tasks_and_flushes(spark: Any,
                                                                  local_catalog: lf.Catalog
                                                                  ) -> None:
    t = local_catalog.create_table("db.dups", pa.schema([
        pa.field("k", pa.int64(), nullable=False), ("v", pa.int64())]), primary_keys=["k"],
        options={"bucket": "3"})
    # Spark hands a task its rows in batches of 10,000: a tiny buffer flushes after each
    df = spark.range(0, 60000, 1, 4).selectExpr("id % 500 AS k", "id AS v")
    result = lfs.write(df, t, memory_budget=4096)
    assert result.rows_written == 60000
    rows = t.read().sort_by("k")
    assert rows["k"].to_pylist() == list(range(500))
    assert rows["v"].to_pylist() == [k + 59500 for k in range(500)]
    files = t.files()
    assert len(files) > 3  # flushed in pieces, still one snapshot
    assert len(t.snapshots()) == 1
    # the data source's writer: a later task wins a key over an earlier one
    ds_write(spark.range(0, 4000, 1, 4).selectExpr("id % 500 AS k", "id * 10 AS v"),
             local_catalog, "db.dups")
    rows = t.read().sort_by("k")
    assert rows["v"].to_pylist() == [(k + 3500) * 10 for k in range(500)]


@ON_S3
def test_overwrite_replaces_the_partitions_written(spark: Any, catalog: lf.Catalog) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False),
                        pa.field("dt", pa.string(), nullable=False), ("v", pa.string())])
    t = catalog.create_table("db.ow", schema, primary_keys=["dt", "id"], partition_keys=["dt"],
                             options={"bucket": "2"})
    t.write(pa.table({"id": [1, 2, 3], "dt": ["a", "a", "b"], "v": ["x", "y", "z"]},
                     schema=schema))
    df = spark.createDataFrame([(9, "a", "new")], "id long, dt string, v string")
    result = lfs.write(df, t, overwrite=True)
    assert result.commit_kind == "OVERWRITE"
    assert sorted(t.read().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 3, "dt": "b", "v": "z"}, {"id": 9, "dt": "a", "v": "new"}]
    ds_write(spark.createDataFrame([(7, "b", "b7")], "id long, dt string, v string"), catalog,
             "db.ow", mode="overwrite")
    assert sorted(t.read().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 7, "dt": "b", "v": "b7"}, {"id": 9, "dt": "a", "v": "new"}]


def test_a_retried_write_lands_once(spark: Any, tmp_path: Path, local_catalog: lf.Catalog
                                    ) -> None:
    t = local_catalog.create_table("db.idem", pa.schema([
        pa.field("k", pa.int64(), nullable=False), ("v", pa.int64())]), primary_keys=["k"],
        options={"bucket": "2", "merge-engine": "aggregation", "fields.v.aggregate-function":
                 "sum"})
    df = spark.createDataFrame([(1, 5), (2, 7)], "k long, v long")
    first = lfs.write(df, t, commit_user="dag.ingest", commit_identifier=20240101)
    again = lfs.write(df, t, commit_user="dag.ingest", commit_identifier=20240101)
    assert again.already_committed and again.snapshot_id == first.snapshot_id
    assert t.read().sort_by("k")["v"].to_pylist() == [5, 7]  # summed once, not twice
    # through the data source: the result is persisted for the caller
    out = tmp_path / "result.json"
    for _ in range(2):
        ds_write(df, local_catalog, "db.idem", **{"commit-user": "dag.ds",
                                                  "commit-identifier": "7",
                                                  "result-path": str(out)})
    import json
    result = json.loads(out.read_text())
    assert result["already_committed"] is True and result["commit_user"] == "dag.ds"
    assert t.read().sort_by("k")["v"].to_pylist() == [10, 14]
    assert len(t.snapshots()) == 2


@ON_S3
def test_merge_schema_write_adds_a_column(spark: Any, catalog: lf.Catalog) -> None:
    t = catalog.create_table("db.ms", pa.schema([pa.field("id", pa.int64(), nullable=False),
                                                 ("a", pa.string())]), primary_keys=["id"],
                             options={"bucket": "2"})
    t.write(pa.table({"id": pa.array([1], pa.int64()), "a": ["x"]}))
    df = spark.createDataFrame([(2, "y", 2.5)], "id long, a string, score double")
    result = lfs.write(df, t, merge_schema=True)
    assert result.snapshot_id == 2
    assert t.table_schema.field_names == ["id", "a", "score"]
    assert sorted(t.read().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "a": "x", "score": None}, {"id": 2, "a": "y", "score": 2.5}]
    ds_write(spark.createDataFrame([(3, "z", 1.0, True)],
                                   "id long, a string, score double, flag boolean"),
             catalog, "db.ms", **{"merge-schema": "true"})
    assert t.refresh().table_schema.field_names == ["id", "a", "score", "flag"]
    assert t.read().filter(pc.equal(t.read()["id"], 3)).to_pylist() == [
        {"id": 3, "a": "z", "score": 1.0, "flag": True}]


def test_refused_merge_and_bad_input_leave_every_object_unchanged(spark: Any, tmp_path: Path
                                                                  ) -> None:
    root = tmp_path / "wh"
    cat = lf.Catalog(str(root))
    cat.create_database("db")
    t = cat.create_table("db.bad", pa.schema([pa.field("id", pa.int64(), nullable=False),
                                              ("a", pa.string())]), primary_keys=["id"],
                         options={"bucket": "2"})
    t.write(pa.table({"id": pa.array([1], pa.int64()), "a": ["x"]}))
    before = table_bytes(root)
    # a refused merge (STRING cannot become INT): nothing published, nothing written
    df = spark.createDataFrame([(2, 5)], "id long, a int")
    with pytest.raises(lf.SchemaMismatchError, match="'a'"):
        lfs.write(df, t, merge_schema=True)
    with pytest.raises(Exception, match="a"):
        ds_write(df, cat, "db.bad", **{"merge-schema": "true"})
    # a wrong type, a null key, an unknown column
    with pytest.raises(lf.SchemaMismatchError, match="'a'"):
        lfs.write(spark.createDataFrame([(2, 5)], "id long, a int"), t)
    with pytest.raises(lf.SchemaMismatchError, match="'id'.*null"):
        lfs.write(spark.createDataFrame([(None, "q"), (3, "r")], "id long, a string"), t)
    with pytest.raises(lf.SchemaMismatchError, match="zzz"):
        lfs.write(spark.createDataFrame([(2, "q", 1)], "id long, a string, zzz int"), t)
    # a missing table and an unknown option through the data source
    ok = spark.createDataFrame([(2, "q")], "id long, a string")
    with pytest.raises(Exception, match="db.nope"):
        ds_write(ok, cat, "db.nope")
    with pytest.raises(Exception, match="s3.endpont"):
        ds_write(ok, cat, "db.bad", **{"s3.endpont": "http://127.0.0.1:1"})
    assert table_bytes(root) == before
    assert t.read().to_pylist() == [{"id": 1, "a": "x"}]


def test_a_failing_task_leaves_no_snapshot_and_no_file(spark: Any, tmp_path: Path) -> None:
    """One task fails (its rows break a partial-update retract rule only it holds): the files
    every other task wrote are deleted, no snapshot is published."""
    root = tmp_path / "wh"
    cat = lf.Catalog(str(root))
    cat.create_database("db")
    t = cat.create_table("db.fail", pa.schema([
        pa.field("id", pa.int64(), nullable=False), ("v", pa.int64()), ("op", pa.string())]),
        primary_keys=["id"], options={"bucket": "4", "merge-engine": "partial-update",
                                      "rowkind.field": "op"})
    t.write(pa.table({"id": pa.array([0], pa.int64()), "v": [0], "op": ["+I"]}))
    before = table_bytes(root)
    # -D on a partial-update table without remove-record-on-delete is refused, in one bucket
    df = spark.range(0, 400, 1, 4).selectExpr(
        "id", "id AS v", "CASE WHEN id = 399 THEN '-D' ELSE '+I' END AS op")
    # one task per bucket (AQE would merge these small shuffle partitions into one task)
    spark.conf.set("spark.sql.adaptive.coalescePartitions.enabled", "false")
    try:
        with pytest.raises(lf.LakeformatError, match="delete|retract|-D"):
            lfs.write(df, t)
    finally:
        spark.conf.unset("spark.sql.adaptive.coalescePartitions.enabled")
    assert table_bytes(root) == before


def test_renumbers_buckets_another_writer_landed_in(spark: Any, local_catalog: lf.Catalog
                                                    ) -> None:
    """Another commit lands in the write's buckets between its plan and its commit: the
    Spark write's files are renumbered past it, so the Spark write (committed later) wins."""
    t = local_catalog.create_table("db.race", pa.schema([
        pa.field("k", pa.int64(), nullable=False), ("v", pa.string())]), primary_keys=["k"],
        options={"bucket": "2"})
    df = spark.createDataFrame([(k, "spark") for k in range(20)], "k long, v string")
    job = SparkWriteJob(t.file_io, t.path, t.table_schema, incoming_schema(df),
                        runner=lfs.SparkRunner(spark), table_name=t.name)
    job.plan()
    job.execute_frame(df)
    t.write(pa.table({"k": pa.array(range(20), pa.int64()), "v": ["other"] * 20}))
    result = job.commit()
    assert result.rewrites == 1
    assert set(t.read()["v"].to_pylist()) == {"spark"}
    live = {f["file_name"] for f in t.files()}
    on_disk = {p.name for p in Path(t.path).rglob("data-*")}
    assert on_disk == live  # the first, unrenumbered files were deleted


def test_a_result_that_cannot_be_written_never_costs_the_landed_snapshot(
        spark: Any, tmp_path: Path, local_catalog: lf.Catalog) -> None:
    """Spark aborts a write whose commit() raised: once the snapshot landed, nothing may."""
    t = local_catalog.create_table("db.res", pa.schema([
        pa.field("k", pa.int64(), nullable=False), ("v", pa.int64())]), primary_keys=["k"],
        options={"bucket": "2"})
    (tmp_path / "afile").write_text("a file, not a folder")
    ds_write(spark.createDataFrame([(1, 5), (2, 7)], "k long, v long"), local_catalog,
             "db.res", **{"result-path": str(tmp_path / "afile" / "result.json")})
    assert t.read().sort_by("k").to_pylist() == [{"k": 1, "v": 5}, {"k": 2, "v": 7}]


def test_a_write_planned_as_landed_commits_nothing_even_once_expired(
        spark: Any, local_catalog: lf.Catalog) -> None:
    from pyspark.sql.types import LongType, StructField, StructType

    from lakeformat.spark.writer import LakeformatWriter

    t = local_catalog.create_table("db.exp", pa.schema([
        pa.field("k", pa.int64(), nullable=False), ("v", pa.int64())]), primary_keys=["k"],
        options={"bucket": "1"})
    options = {"warehouse": local_catalog.warehouse, "path": "db.exp", "commit-user": "dag",
               "commit-identifier": "7"}
    t.write(pa.table({"k": pa.array([1], pa.int64()), "v": [1]}), overwrite=True,
            commit_user="dag", commit_identifier=7)
    writer = LakeformatWriter(options, StructType([StructField("k", LongType(), False),
                                                   StructField("v", LongType())]), True)
    assert writer.landed
    t.write(pa.table({"k": pa.array([2], pa.int64()), "v": [2]}))
    t.expire_snapshots(retain_min=1, retain_max=1)  # the landed snapshot is gone
    writer.commit([])
    assert [s.id for s in t.snapshots()] == [2]
    assert t.read().sort_by("k").to_pylist() == [{"k": 1, "v": 1}, {"k": 2, "v": 2}]


def test_spark_timestamps_meet_the_table_precision(spark: Any, local_catalog: lf.Catalog
                                                   ) -> None:
    """Microseconds go into TIMESTAMP(3) floored (toward the past, as Java does, also before
    1970) on a plain and a merge-schema write, and the column keeps its precision."""
    import datetime as dt

    t = local_catalog.create_table("db.ts", pa.schema([
        pa.field("k", pa.int64(), nullable=False), ("ts", pa.timestamp("ms"))]),
        primary_keys=["k"], options={"bucket": "1"})
    df = spark.createDataFrame(
        [(1, dt.datetime(1969, 12, 31, 23, 59, 59, 999999)),
         (2, dt.datetime(2024, 1, 2, 3, 4, 5, 678901))], "k long, ts timestamp_ntz")
    lfs.write(df, t)
    lfs.write(df.selectExpr("k + 10 AS k", "ts", "1 AS extra"), t, merge_schema=True)
    assert str(t.table_schema.field("ts").type) == "TIMESTAMP(3)"
    got = t.read().sort_by("k")["ts"].to_pylist()
    assert got == [dt.datetime(1969, 12, 31, 23, 59, 59, 999000),
                   dt.datetime(2024, 1, 2, 3, 4, 5, 678000)] * 2


def test_options_of_the_other_direction_are_refused(spark: Any, tmp_path: Path,
                                                    local_catalog: lf.Catalog) -> None:
    local_catalog.create_table("db.dir", pa.schema([
        pa.field("k", pa.int64(), nullable=False)]), primary_keys=["k"],
        options={"bucket": "1"})
    df = spark.createDataFrame([(1,)], "k long")
    with pytest.raises(Exception, match="snapshot-id"):
        ds_write(df, local_catalog, "db.dir", **{"snapshot-id": "1"})
    with pytest.raises(Exception, match="result-path"):
        ds_read(spark, local_catalog, "db.dir", **{"result-path": str(tmp_path / "x.json")})


@pytest.mark.parametrize("bucketed", [False, True], ids=["unaware", "bucketed"])
def test_append_tables_through_spark(spark: Any, local_catalog: lf.Catalog,
                                     bucketed: bool) -> None:
    """An append table written by Spark keeps every row (duplicates too), the data source
    reads it back, and a Spark compaction rewrites its small files into one per bucket."""
    options = {"bucket": "2", "bucket-key": "id"} if bucketed else {}
    t = local_catalog.create_table("db.logs", pa.schema([("dt", pa.string()), ("id", pa.int64()),
                                                         ("msg", pa.string())]),
                                   partition_keys=["dt"], options=options)
    for i in range(3):
        df = spark.range(0, 300, 1, 3).selectExpr(
            "IF(id % 2 = 0, 'd1', 'd2') AS dt", "id % 7 AS id", f"CONCAT('{i}-', id) AS msg")
        assert lfs.write(df, t).rows_written == 300
    rows = sorted((r["dt"], r["id"], r["msg"]) for r in t.read().to_pylist())
    assert len(rows) == 900 and len(set(rows)) == 900
    via_ds = ds_read(spark, local_catalog, "db.logs")
    assert sorted((r["dt"], r["id"], r["msg"]) for r in via_ds.to_pylist()) == rows
    lfs.compact(spark, t, full=True)
    per_bucket: dict[tuple, int] = {}
    for f in t.files():
        key = (str(f["partition"]), f["bucket"])
        per_bucket[key] = per_bucket.get(key, 0) + 1
    assert set(per_bucket.values()) == {1} and len(per_bucket) == (4 if bucketed else 2)
    assert sorted((r["dt"], r["id"], r["msg"]) for r in t.read().to_pylist()) == rows
    if bucketed:  # a key's rows in write order (compaction keeps a bucket's sequence order)
        order: dict[tuple, list[int]] = {}
        for r in t.read().to_pylist():
            order.setdefault((r["dt"], r["id"]), []).append(int(r["msg"].split("-")[0]))
        assert all(v == sorted(v) for v in order.values())


def test_dynamic_bucket_write_through_spark_is_refused(spark: Any,
                                                       local_catalog: lf.Catalog) -> None:
    t = local_catalog.create_table("db.dyn", pa.schema([pa.field("id", pa.int64(), False),
                                                        ("v", pa.string())]),
                                   primary_keys=["id"])  # Paimon's default: bucket=-1
    with pytest.raises(lf.UnsupportedError, match="dynamic-bucket.*engine='local'"):
        lfs.write(spark.createDataFrame([(1, "a")], "id long, v string"), t)
    assert t.snapshots() == []
    t.write(pa.table({"id": [1], "v": ["a"]}))  # the library writes it
    assert t.read().to_pylist() == [{"id": 1, "v": "a"}]


@pytest.mark.parametrize("options", [{"deletion-vectors.enabled": "true"},
                                     {"changelog-producer": "lookup"}],
                         ids=["deletion-vectors", "lookup-changelog"])
def test_lookup_tables_through_spark_are_compacted_after_the_write(
        spark: Any, local_catalog: lf.Catalog, options: dict[str, str]) -> None:
    """The write job compacts a lookup table's level 0 after its commit, as the library's
    write does: rows written through Spark are read back, with the compaction's snapshot."""
    t = local_catalog.create_table("db.lookup", pa.schema([pa.field("id", pa.int64(), False),
                                                           ("v", pa.string())]),
                                   primary_keys=["id"], options={"bucket": "2", **options})
    first = lfs.write(spark.createDataFrame([(1, "a"), (2, "b")], "id long, v string"), t)
    second = lfs.write(spark.createDataFrame([(2, "c"), (3, "d")], "id long, v string"), t)
    kinds = {s.id: s.commit_kind for s in t.snapshots()}
    for result in (first, second):
        assert result.compaction_snapshot_ids == [result.snapshot_id + 1]  # Java's lookup-wait
        assert kinds[result.compaction_snapshot_ids[0]] == "COMPACT"
    assert sorted(t.read().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "v": "a"}, {"id": 2, "v": "c"}, {"id": 3, "v": "d"}]


def test_spark_writes_create_automatic_tags(spark: Any, local_catalog: lf.Catalog) -> None:
    """Java's Spark writer tags the latest snapshot after a batch write (`batch` mode); both
    Spark write paths do, and a bad `tag.*` option fails before a task writes."""
    t = local_catalog.create_table("db.tagged", pa.schema([
        pa.field("k", pa.int64(), nullable=False), ("v", pa.int64())]), primary_keys=["k"],
        options={"bucket": "1", "tag.automatic-creation": "batch",
                 "tag.batch.customized-name": "nightly", "tag.default-time-retained": "2 d"})
    df = spark.createDataFrame([(1, 5), (2, 7)], "k long, v long")
    lfs.write(df, t)
    assert [(x.name, x.snapshot_id) for x in t.list_tags()] == [("nightly", 1)]
    ds_write(spark.createDataFrame([(3, 1)], "k long, v long"), local_catalog, "db.tagged")
    [tag] = t.list_tags()
    assert (tag.name, tag.snapshot_id) == ("nightly", 2) and tag.time_retained.days == 2
    assert sorted(t.read(tag="nightly")["k"].to_pylist()) == [1, 2, 3]
    t.alter(lf.SchemaChange.set_option("tag.automatic-creation", "hourly"))
    for write in (lambda: lfs.write(df, t), lambda: ds_write(df, local_catalog, "db.tagged")):
        with pytest.raises(Exception, match="tag.automatic-creation"):
            write()
    assert len(t.snapshots()) == 2
