"""Ingest of landed files through Spark: Parquet, CSV and JSON, local and on S3, with the parse
rules of the in-process path; merge-schema ingest; bad files named by line and column."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lakeformat as lf
import lakeformat.spark as lfs
from lakeformat.ingest import read_files
from lakeformat.storage import get_file_io

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False),
                    pa.field("dt", pa.string(), nullable=False), ("code", pa.string()),
                    ("amount", pa.decimal128(10, 2))])


def land(io_: Any, folder: str) -> list[str]:
    """Three files of three formats; returns their paths."""
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table({"id": pa.array([1, 2], pa.int64()), "dt": ["d1", "d2"],
                             "code": ["007", None]}), sink)
    files = {f"{folder}/a.parquet": sink.getvalue().to_pybytes(),
             f"{folder}/b.csv": b'id,dt,code,amount\n3,d1,0042,1.50\n4,d2,"",\n',
             f"{folder}/c.json": b'{"id": 5, "dt": "d1", "code": "NA", "amount": "2.25"}\n'}
    for path, data in files.items():
        io_.write_bytes(path, data)
    return list(files)


def like_the_in_process_reader(t: lf.Table, paths: list[str], io_: Any) -> None:
    expected = read_files(paths, schema=t, file_io=io_)  # the in-process reader
    key = [("id", "ascending")]
    assert t.read().sort_by(key).to_pylist() == expected.select(SCHEMA.names).sort_by(
        key).to_pylist()
    assert t.read().sort_by(key)["code"].to_pylist() == ["007", None, "0042", "", "NA"]


def test_ingest_three_formats_like_the_in_process_reader(spark: Any, tmp_path: Path) -> None:
    cat = lf.Catalog(str(tmp_path / "wh"))
    folder = str(tmp_path / "landing")
    Path(folder).mkdir()
    cat.create_database("db")
    t = cat.create_table("db.in", SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                         options={"bucket": "2"})
    io_ = get_file_io(folder, cat.options)
    paths = land(io_, folder)
    total = 0
    for path in paths:  # one ingest per file: one snapshot each
        result = lfs.ingest(spark, t, path)
        total += result.rows_written
    assert total == 5 and len(t.snapshots()) == 3
    like_the_in_process_reader(t, paths, io_)


def test_ingest_a_glob_of_three_formats_on_s3(spark: Any,
                                              s3_warehouse: tuple[str, dict[str, str]]) -> None:
    """The same files landed on S3, ingested by one glob: listed on S3 by the driver, each
    read by its task through the catalog's S3 options, one snapshot."""
    uri, options = s3_warehouse
    cat = lf.Catalog(uri, options=options)
    folder = uri.rsplit("/", 1)[0] + "/landing"
    cat.create_database("db")
    t = cat.create_table("db.in", SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                         options={"bucket": "2"})
    io_ = get_file_io(folder, cat.options)
    paths = land(io_, folder)
    result = lfs.ingest(spark, t, folder + "/*.*")
    assert result.rows_written == 5 and len(t.snapshots()) == 1
    like_the_in_process_reader(t, paths, io_)


def test_ingest_glob_overwrite_merge_schema_and_idempotence(spark: Any, tmp_path: Path) -> None:
    cat = lf.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.g", SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                         options={"bucket": "2"})
    landing = tmp_path / "landing"
    landing.mkdir()
    for i in range(3):
        pq.write_table(pa.table({"id": pa.array([i], pa.int64()), "dt": ["d1"],
                                 "code": [f"c{i}"], "extra": [i * 1.5]}),
                       landing / f"part-{i}.parquet")
    with pytest.raises(lf.SchemaMismatchError, match="extra"):
        lfs.ingest(spark, t, str(landing / "*.parquet"))
    first = lfs.ingest(spark, t, str(landing / "*.parquet"), merge_schema=True,
                       commit_user="dag.ingest", commit_identifier=1)
    assert first.rows_written == 3 and t.table_schema.field_names[-1] == "extra"
    again = lfs.ingest(spark, t, str(landing / "*.parquet"), merge_schema=True,
                       commit_user="dag.ingest", commit_identifier=1)
    assert again.already_committed and len(t.snapshots()) == 1
    assert sorted(t.read()["extra"].to_pylist()) == [0.0, 1.5, 3.0]
    (landing / "late.csv").write_text("id,dt,code\n9,d1,late\n")
    lfs.ingest(spark, t, str(landing / "late.csv"), overwrite=True)
    assert t.read().to_pylist() == [{"id": 9, "dt": "d1", "code": "late", "amount": None,
                                     "extra": None}]


def test_bad_files_are_named_and_change_nothing(spark: Any, tmp_path: Path) -> None:
    cat = lf.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.bad", SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                         options={"bucket": "2"})
    (tmp_path / "bad.csv").write_text("id,dt,code\n1,d1,a\nx2,d1,b\n")
    with pytest.raises(lf.InputFileError, match=r"bad.csv: line 3, column 'id'"):
        lfs.ingest(spark, t, str(tmp_path / "bad.csv"))
    with pytest.raises(lf.InputFileError, match="no input files"):
        lfs.ingest(spark, t, str(tmp_path / "missing-*.csv"))
    assert t.snapshots() == []
    assert not list(Path(t.path).rglob("data-*"))
