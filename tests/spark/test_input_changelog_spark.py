"""`changelog-producer=input` through Spark: each task's flushes write the rows they hold as
changelog files too (the same `TableWrite` as in-process writes), a renumbered write moves its
changelog files' sequence numbers with its data files', and an overwrite commits no changelog
and leaves no changelog file behind. Local disk (the S3 paths of Spark writes are
`test_write`'s; changelog files on S3 are `integration/test_input_changelog`'s)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

import lakeformat as lf
import lakeformat.spark as lfs
from lakeformat.data.kv_read import read_kv_file
from lakeformat.operation.paths import PathFactory
from lakeformat.operation.scan import FileStoreScan
from lakeformat.spark.write_job import SparkWriteJob, incoming_schema

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])


def changelog(t: lf.Table, snap: Any) -> list[tuple[int, int, str]]:
    """(sequence number, k, v) of every changelog record of `snap`."""
    if snap.changelog_manifest_list is None:
        return []
    scan = FileStoreScan(t.file_io, t.path, t.table_schema)
    paths = PathFactory(t.file_io, t.path, t.table_schema)
    out = []
    for e in scan.read_entries(scan.manifest_list.read(snap.changelog_manifest_list)):
        data = read_kv_file(t.file_io, paths.data_file((), e.bucket, e.file), "parquet",
                            expect=e.file)
        out += [(r["_SEQUENCE_NUMBER"], r["k"], r["v"]) for r in data.to_pylist()]
    return out


def on_disk(t: lf.Table, prefix: str) -> set[str]:
    return {p.name for p in Path(t.path).rglob(f"{prefix}*")}


def test_spark_writes_renumbers_and_overwrites_the_input_changelog(spark: Any,
                                                                   local_catalog: lf.Catalog
                                                                   ) -> None:
    t = local_catalog.create_table("db.cl", SCHEMA, primary_keys=["k"],
                                   options={"bucket": "2", "changelog-producer": "input"})
    # every input record goes to the changelog, the duplicates of a key too
    df = spark.range(0, 300, 1, 3).selectExpr("id % 100 AS k", "CAST(id AS STRING) AS v")
    assert lfs.write(df, t, memory_budget=4096).rows_written == 300
    first = t.snapshots()[-1]
    assert first.changelog_record_count == 300
    assert sorted((k, v) for _, k, v in changelog(t, first)) == sorted(
        (i % 100, str(i)) for i in range(300))
    assert sorted(t.read()["v"].to_pylist(), key=int) == [str(i) for i in range(200, 300)]

    # another commit lands in the write's buckets: the Spark write's files are renumbered,
    # its changelog files with them
    df = spark.createDataFrame([(k, "spark") for k in range(20)], "k long, v string")
    job = SparkWriteJob(t.file_io, t.path, t.table_schema, incoming_schema(df),
                        runner=lfs.SparkRunner(spark), table_name=t.name)
    job.plan()
    job.execute_frame(df)
    t.write(pa.table({"k": pa.array(range(20), pa.int64()), "v": ["other"] * 20}))
    other = t.snapshots()[-1]
    assert job.commit().rewrites == 1
    mine = t.snapshots()[-1]
    records = changelog(t, mine)
    assert sorted((k, v) for _, k, v in records) == [(k, "spark") for k in range(20)]
    assert min(s for s, _, _ in records) > max(s for s, _, _ in changelog(t, other))
    assert set(t.read().to_pylist()[0].keys()) == {"k", "v"}
    assert {r["v"] for r in t.read().to_pylist() if r["k"] < 20} == {"spark"}
    referenced = {Path(p).name for s in t.snapshots() for p in _changelog_names(t, s)}
    assert on_disk(t, "changelog-") == referenced  # the unrenumbered ones were deleted

    # an overwrite commits no changelog and leaves none on disk
    before = on_disk(t, "changelog-")
    result = lfs.write(spark.createDataFrame([(1, "new")], "k long, v string"), t,
                       overwrite=True)
    assert result.commit_kind == "OVERWRITE"
    assert t.snapshots()[-1].changelog_manifest_list is None
    assert on_disk(t, "changelog-") == before
    assert t.read().to_pylist() == [{"k": 1, "v": "new"}]


def _changelog_names(t: lf.Table, snap: Any) -> list[str]:
    if snap.changelog_manifest_list is None:
        return []
    scan = FileStoreScan(t.file_io, t.path, t.table_schema)
    return [e.file.file_name
            for e in scan.read_entries(scan.manifest_list.read(snap.changelog_manifest_list))]
