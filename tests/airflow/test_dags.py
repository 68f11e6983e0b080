"""The project's DAG files: import with no errors and no side effects (no pyarrow, pyspark or
boto3 at parse time). The on-call backfill DAG's runs are in `test_backfill.py`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

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
