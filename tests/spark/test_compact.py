"""Compaction through Spark: the same rows, levels and sorted runs as in-process compaction of a
copy of the table; a failing task leaves no snapshot and no new file; S3 and Connect too."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import lakeformat as lf
import lakeformat.spark as lfs

SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False),
                    pa.field("id", pa.int64(), nullable=False),
                    ("qty", pa.int64()), ("city", pa.string())])


def fill(t: lf.Table, runs: int = 4, rows: int = 400) -> None:
    """Overlapping partial-update runs over two partitions: some values null each run (each
    run ~50 rows per bucket, half of them keys of earlier runs: enough for every merge)."""
    rng = np.random.default_rng(7)
    for r in range(runs):
        ids = rng.choice(rows * 2, rows, replace=False).astype(np.int64)
        qty = pa.array(ids * 10 + r, mask=rng.random(rows) < 0.3)
        city = pa.array([f"c{r}"] * rows).filter(pa.array(np.ones(rows, bool)))
        city = pa.array(city.to_pylist(), mask=rng.random(rows) < 0.3)
        t.write(pa.table({"dt": pa.array(np.where(ids % 2 == 0, "d0", "d1")), "id": ids,
                          "qty": qty, "city": city}, schema=SCHEMA))


def shape(t: lf.Table) -> Counter:
    """What a compaction leaves per bucket: (partition, bucket, level) -> rows."""
    c: Counter = Counter()
    for f in t.files():
        c[(tuple(f["partition"].items()), f["bucket"], f["level"])] += f["row_count"]
    return c


def sorted_rows(t: lf.Table) -> list[dict]:
    return t.read().sort_by([("dt", "ascending"), ("id", "ascending")]).to_pylist()


def make_table(cat: lf.Catalog, name: str = "db.pu") -> lf.Table:
    return cat.create_table(name, SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                            options={"bucket": "4", "merge-engine": "partial-update",
                                     "num-sorted-run.compaction-trigger": "3"})


@pytest.mark.parametrize("full", [True, False], ids=["full", "minor"])
def test_spark_compaction_equals_in_process_compaction(spark: Any, tmp_path: Path,
                                                        full: bool) -> None:
    cat = lf.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = make_table(cat)
    fill(t)
    shutil.copytree(tmp_path / "wh", tmp_path / "copy")
    twin = lf.Catalog(str(tmp_path / "copy")).get_table("db.pu")
    expected_rows = sorted_rows(t)

    via_spark = lfs.compact(spark, t, full=full)
    in_process = twin.compact(full=full)

    assert via_spark.snapshot_ids and via_spark.snapshot_ids == in_process.snapshot_ids
    assert sorted_rows(t) == expected_rows == sorted_rows(twin)
    assert shape(t) == shape(twin)
    assert via_spark.total.sorted_runs_after == in_process.total.sorted_runs_after
    assert via_spark.total.files_in == in_process.total.files_in
    assert via_spark.total.rows_out == in_process.total.rows_out
    assert via_spark.partitions.keys() == in_process.partitions.keys()
    if full:
        assert {level for (_, _, level) in shape(t)} == {3}  # num-levels = trigger + 1


def test_a_failing_task_leaves_no_snapshot_and_no_new_file(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "wh"
    cat = lf.Catalog(str(root))
    cat.create_database("db")
    t = make_table(cat)
    fill(t)
    # damage one bucket's newest file: that bucket's task fails, the others succeed
    victim = max((f for f in t.files() if f["bucket"] == 2), key=lambda f: f["creation_time"])
    Path(victim["path"]).write_bytes(Path(victim["path"]).read_bytes()[:-100])
    snapshots = [s.id for s in t.snapshots()]
    files_before = {p.relative_to(root) for p in root.rglob("*") if p.is_file()}

    with pytest.raises(lf.CorruptFileError, match=victim["file_name"]):
        lfs.compact(spark, t)

    assert [s.id for s in t.snapshots()] == snapshots
    files_after = {p.relative_to(root) for p in root.rglob("*") if p.is_file()}
    assert files_after == files_before  # the successful tasks' outputs were deleted


def test_compaction_on_s3_through_spark(spark: Any, s3_warehouse: tuple[str, dict[str, str]]
                                        ) -> None:
    uri, options = s3_warehouse
    cat = lf.Catalog(uri, options=options)
    cat.create_database("db")
    t = make_table(cat)
    fill(t, runs=3, rows=200)
    expected = sorted_rows(t)
    result = lfs.compact(spark, t, where=[("dt", "=", "d1")])
    assert list(result.partitions) == ["dt=d1"]
    assert sorted_rows(t) == expected
    levels = {(f["partition"]["dt"], f["level"]) for f in t.files()}
    assert ("d1", 3) in levels and ("d1", 0) not in levels and ("d0", 0) in levels
