"""The project's DAG files: import with no errors and no side effects (no pyarrow, pyspark or
boto3 at parse time). The on-call backfill DAG's runs are in `test_backfill.py`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DAG_FILES = sorted((ROOT / "dags").glob("*.py"))
HEAVY = ("pyarrow", "pyspark", "boto3", "botocore", "numpy", "pandas")

#: one fresh process parses the files one after another, as the DAG processor does, and
#: records after each which heavy modules are loaded: a file is clean when none is, since every
#: file parsed before it was found clean (so a heavy module there is this file's import)
PARSE_EACH = """
import json, os, sys
os.environ["AIRFLOW_HOME"] = sys.argv[1]
os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = sys.argv[2]
from airflow.dag_processing.dagbag import DagBag
heavy, found = json.loads(sys.argv[3]), {}
for path in sys.argv[4:]:
    bag = DagBag(dag_folder=path, safe_mode=False)
    found[os.path.basename(path)] = {
        "errors": {k: str(v) for k, v in bag.import_errors.items()},
        "dags": sorted(bag.dags), "heavy": [m for m in heavy if m in sys.modules]}
    if found[os.path.basename(path)]["heavy"]:
        break  # later files cannot be told apart from this one's imports
print("PARSED", json.dumps(found))
"""


def _parse(home: Path, files: list[Path], env: dict[str, str] | None = None,
           ) -> dict[str, dict[str, Any]]:
    """{file name: its import errors, DAG ids and the heavy modules loaded after it}."""
    out = subprocess.run([sys.executable, "-c", PARSE_EACH, str(home), str(ROOT / "dags"),
                          json.dumps(HEAVY), *map(str, files)],
                         capture_output=True, text=True, timeout=300, cwd=home,
                         env=None if env is None else {**os.environ, **env})
    assert out.returncode == 0, out.stderr[-3000:]
    line = next(x for x in out.stdout.splitlines() if x.startswith("PARSED "))
    return json.loads(line.removeprefix("PARSED "))


@pytest.fixture(scope="module")
def parsed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    return _parse(tmp_path_factory.mktemp("dag-parse"), DAG_FILES)


def test_the_five_dags_exist():
    assert [f.name for f in DAG_FILES] == [
        "lakeformat_backfill.py", "lakeformat_dual_stream.py", "lakeformat_expire.py",
        "lakeformat_maintenance.py", "lakeformat_on_debt.py"]


@pytest.mark.parametrize("path", DAG_FILES, ids=lambda p: p.name)
def test_dag_file_imports_light_and_clean(path, parsed):
    """Parsed as the DAG processor does (Airflow's DagBag, in a fresh process that loaded no
    heavy module before): no import errors, its one DAG, and none of the heavy modules loaded."""
    assert path.name in parsed, f"not parsed: a file before it loaded a heavy module {parsed}"
    got = parsed[path.name]
    assert not got["errors"], got["errors"]
    assert got["heavy"] == [], got
    assert got["dags"] == [path.stem]


@pytest.mark.parametrize("thresholds, named", [
    ('{"num-sorted-run.compaction-trigger": 3}', None),
    ('{"num-sorted-run.compaction-triger": 3}', "'num-sorted-run.compaction-triger'"),
    ('{"num-sorted-run.compaction-trigger": "many"}', "bad value 'many'"),
    ("num-sorted-run.compaction-trigger=3", "$LAKEFORMAT_DEBT_THRESHOLDS is not JSON"),
    ('[["num-sorted-run.compaction-trigger", 3]]', "must be a JSON object"),
], ids=["valid", "unknown-name", "bad-value", "not-json", "not-an-object"])
def test_on_debt_thresholds_are_checked_when_the_dag_is_parsed(tmp_path, thresholds, named):
    """`$LAKEFORMAT_DEBT_THRESHOLDS` is checked when the DAG processor parses the file (the
    watcher's trigger checks it at construction): a bad one is the file's import error, naming
    the value, which Airflow's UI shows — not a watcher that never fires. A good one keeps the
    parse light: the check loads none of the heavy modules."""
    path = ROOT / "dags" / "lakeformat_on_debt.py"
    got = _parse(tmp_path, [path], {"LAKEFORMAT_DEBT_THRESHOLDS": thresholds})[path.name]
    if named is None:
        assert not got["errors"] and got["dags"] == ["lakeformat_on_debt"], got
        assert got["heavy"] == [], got
    else:
        assert got["dags"] == [] and len(got["errors"]) == 1, got
        assert named in next(iter(got["errors"].values())), got
