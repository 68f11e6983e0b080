"""The project's DAG files: import with no errors and no side effects (no pyarrow, pyspark or
boto3 at parse time), and the on-call backfill DAG re-ingests a date range."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lakeformat as lf

ROOT = Path(__file__).resolve().parents[2]
DAG_FILES = sorted((ROOT / "dags").glob("*.py"))
HEAVY = ("pyarrow", "pyspark", "boto3", "botocore", "numpy", "pandas")


def test_the_four_dags_exist():
    assert [f.name for f in DAG_FILES] == [
        "lakeformat_backfill.py", "lakeformat_dual_stream.py", "lakeformat_expire.py",
        "lakeformat_maintenance.py"]


@pytest.mark.parametrize("path", DAG_FILES, ids=lambda p: p.name)
def test_dag_file_imports_light_and_clean(path, tmp_path):
    """Parsed as the DAG processor does (Airflow's DagBag, in a fresh process): no import
    errors, at least one DAG, and none of the heavy modules loaded."""
    code = f"""
import os, sys
os.environ["AIRFLOW_HOME"] = {str(tmp_path)!r}
os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = {str(path.parent)!r}
from airflow.dag_processing.dagbag import DagBag
bag = DagBag(dag_folder={str(path)!r}, safe_mode=False)
assert not bag.import_errors, bag.import_errors
assert bag.dags, "no DAG"
heavy = [m for m in {HEAVY!r} if m in sys.modules]
print("HEAVY", heavy)
print("DAGS", sorted(bag.dags))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "HEAVY []" in out.stdout, out.stdout
    assert f"DAGS ['{path.stem}']" in out.stdout


def _orders(tmp_path: Path, day: str, ids: list[int], v: str) -> None:
    folder = tmp_path / "landing" / f"dt={day}"
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"dt": [day] * len(ids), "id": ids, "v": [v] * len(ids)}),
                   folder / "part-0.parquet")


def test_backfill_reingests_a_range(local_conn, tmp_path, dags):
    catalog = lf.Catalog(local_conn)
    catalog.create_database("db")
    schema = pa.schema([pa.field("dt", pa.string(), nullable=False),
                        pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    t = catalog.create_table("db.orders", schema, primary_keys=["dt", "id"],
                             partition_keys=["dt"], options={"bucket": "2"})
    t.write(pa.table({"dt": ["2024-05-02"] * 3, "id": [1, 2, 3], "v": ["stale"] * 3},
                     schema=schema))
    for day, ids in (("2024-05-01", [1, 2]), ("2024-05-02", [1]), ("2024-05-03", [4])):
        _orders(tmp_path, day, ids, "fixed")
    dag = dags.load("lakeformat_backfill.py", "lakeformat_backfill")
    conf = {"table": "db.orders", "source": str(tmp_path / "landing" / "dt={date}" / "*.parquet"),
            "start": "2024-05-01", "end": "2024-05-03", "mode": "overwrite", "format": "",
            "merge_schema": False}
    run = dag.test(logical_date=dt.datetime(2024, 6, 1, tzinfo=dt.UTC), run_conf=conf)
    states = dags.states(run)
    assert run.state == "success", states
    assert [k for k in states if k.startswith("ingest[")] == [
        "ingest[0]", "ingest[1]", "ingest[2]"]
    rows = sorted((r["dt"], r["id"], r["v"]) for r in t.read().to_pylist())
    # overwrite replaced day 2's stale partition with its file: ids 2 and 3 are gone
    assert rows == [("2024-05-01", 1, "fixed"), ("2024-05-01", 2, "fixed"),
                    ("2024-05-02", 1, "fixed"), ("2024-05-03", 4, "fixed")]
    results = [dags.xcom(run, "ingest", i) for i in range(3)]
    assert [r["commit_kind"] for r in results] == ["OVERWRITE"] * 3
    assert len({r["commit_user"] for r in results}) == 1
    assert [r["commit_identifier"] for r in results] == [
        int(dt.datetime(2024, 5, d, tzinfo=dt.UTC).timestamp() * 1000) for d in (1, 2, 3)]


def test_backfill_refuses_a_bad_range(local_conn, dags):
    dag = dags.load("lakeformat_backfill.py", "lakeformat_backfill")
    run = dag.test(logical_date=dt.datetime(2024, 6, 2, tzinfo=dt.UTC), run_conf={
        "table": "db.orders", "source": "x/dt={date}/*.parquet", "start": "2024-05-03",
        "end": "2024-05-01", "mode": "overwrite", "format": "", "merge_schema": False})
    assert run.state == "failed"
    assert dags.states(run)["days"] == "failed"


def test_backfill_refuses_overwrite_where_it_loses_rows(local_conn, dags):
    catalog = lf.Catalog(local_conn)
    catalog.create_database("db")
    schema = pa.schema([pa.field("dt", pa.string(), nullable=False),
                        pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    catalog.create_table("db.wide", schema, primary_keys=["dt", "id"], partition_keys=["dt"],
                         options={"bucket": "1", "merge-engine": "partial-update"})
    dag = dags.load("lakeformat_backfill.py", "lakeformat_backfill")
    run = dag.test(logical_date=dt.datetime(2024, 6, 3, tzinfo=dt.UTC), run_conf={
        "table": "db.wide", "source": "x/dt={date}/*.parquet", "start": "2024-05-01",
        "end": "2024-05-01", "mode": "overwrite", "format": "", "merge_schema": False})
    assert run.state == "failed"
    assert dags.states(run)["days"] == "failed"
    assert catalog.get_table("db.wide").snapshots() == []
