"""The Airflow suite: real Airflow 3.3 through `dag.test()`, against the moto S3 server.

Airflow reads its configuration when first imported, so this module sets it up before anything
imports airflow: a private AIRFLOW_HOME (SQLite metadata DB) in a temporary folder, no example
DAGs, and a DAGs folder holding the project's `dags/*.py` and the suite's
`tests/airflow/dag_files/*.py` (as links): `dag.test()` only runs DAGs whose file is in the
DAGs folder. Test DAG files take their table, warehouse and sources from `dag.test(run_conf=)`
or the environment, so one file serves many tests.

Each of those files is also a DAG bundle of its own (`[dag_processor] dag_bundle_config_list`):
`dag.test()` parses the bundle of the DAG it runs and writes every DAG of it to the metadata
DB on every call, which for one bundle of all the files cost ~1 s a run.
"""

from __future__ import annotations

import atexit
import copy
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
_HOME = Path(tempfile.mkdtemp(prefix="lakeformat-airflow-"))
atexit.register(shutil.rmtree, _HOME, ignore_errors=True)
DAGS = _HOME / "dags"
DAGS.mkdir()
_BUNDLES = []
for source in [*sorted((ROOT / "dags").glob("*.py")),
               *sorted((ROOT / "tests" / "airflow" / "dag_files").glob("*.py"))]:
    (DAGS / source.name).symlink_to(source)
    # the same file alone in a DAG bundle of its own: `dag.test()` parses and serializes every
    # DAG of the bundle its DAG belongs to, on every call (~2 s for the whole DAGs folder)
    folder = _HOME / "bundles" / source.stem
    folder.mkdir(parents=True)
    (folder / source.name).symlink_to(source)
    _BUNDLES.append({"name": source.stem, "kwargs": {"path": str(folder)},
                     "classpath": "airflow.dag_processing.bundles.local.LocalDagBundle"})
os.environ.update({
    "AIRFLOW_HOME": str(_HOME),
    "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
    "AIRFLOW__DAG_PROCESSOR__DAG_BUNDLE_CONFIG_LIST": json.dumps(_BUNDLES),
    "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
    "AIRFLOW__CORE__DAGBAG_IMPORT_TIMEOUT": "120",
    "AIRFLOW__LOGGING__LOGGING_LEVEL": "WARNING",
    "AIRFLOW__CORE__ALLOWED_DESERIALIZATION_CLASSES_REGEXP": r"(airflow|lakeformat.*)\..*",
})
os.environ.pop("AIRFLOW_CONN_LAKEFORMAT_DEFAULT", None)
os.environ.pop("AIRFLOW_CONN_SPARK_DEFAULT", None)

import pytest  # noqa: E402

from tests.support.catalogs import s3_bucket, s3_server, s3_warehouse  # noqa: E402,F401


@pytest.fixture(scope="session", autouse=True)
def airflow_db() -> None:
    """Airflow's metadata DB, created once per run (~2 s)."""
    from airflow.utils.db import initdb

    initdb()


def conn_json(conn_type: str, host: str, login: str | None = None,
              password: str | None = None, extra: dict[str, Any] | None = None) -> str:
    return json.dumps({"conn_type": conn_type, "host": host, "login": login,
                       "password": password, "extra": extra or {}})


@pytest.fixture()
def s3_conn(s3_warehouse: tuple[str, dict[str, str]], monkeypatch: pytest.MonkeyPatch  # noqa: F811
            ) -> tuple[str, dict[str, str]]:
    """`lakeformat_default` pointing at a fresh warehouse on the moto S3 server: access and
    secret key as login/password, the rest of the options in extra. Returns (uri, options)."""
    uri, options = s3_warehouse
    extra = {k: v for k, v in options.items() if k not in ("s3.access-key", "s3.secret-key")}
    monkeypatch.setenv("AIRFLOW_CONN_LAKEFORMAT_DEFAULT", conn_json(
        "lakeformat", uri, options.get("s3.access-key"), options.get("s3.secret-key"), extra))
    return uri, options


@pytest.fixture()
def local_conn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """`lakeformat_default` pointing at a warehouse folder on local disk."""
    uri = str(tmp_path / "warehouse")
    monkeypatch.setenv("AIRFLOW_CONN_LAKEFORMAT_DEFAULT", conn_json("lakeformat", uri))
    return uri


_BAGS: dict[str, Any] = {}


#: (DAG file, dag_id) -> the params each task had when the file was parsed
_PARAMS: dict[tuple[str, str], dict[str, Any]] = {}


def load_dag(file_name: str, dag_id: str) -> Any:
    """The DAG `dag_id` of DAG file `file_name` in the suite's DAGs folder, parsed by Airflow's
    own DagBag (once per file); a file that fails to import fails the test with its error."""
    from airflow.dag_processing.dagbag import DagBag

    bag = _BAGS.get(file_name)
    if bag is None:
        bag = DagBag(dag_folder=DAGS / file_name, safe_mode=False)
        if bag.import_errors:
            raise AssertionError(f"{file_name} does not import: {bag.import_errors}")
        _BAGS[file_name] = bag
    dag = bag.dags.get(dag_id)
    if dag is None:
        raise LookupError(f"{file_name} defines no DAG {dag_id!r} (it has {sorted(bag.dags)})")
    # `dag.test(run_conf=...)` writes the run's conf into the tasks' params, which would become
    # the next test's defaults: every load starts from the params the file declared
    saved = _PARAMS.setdefault((file_name, dag_id), {
        task.task_id: copy.deepcopy(task.params) for task in dag.tasks})
    for task in dag.tasks:
        task.params = copy.deepcopy(saved[task.task_id])
    return dag


def task_states(dag_run: Any) -> dict[str, str]:
    """{task_id (with [map_index] when mapped): state} of a finished run."""
    from airflow.utils.session import create_session

    with create_session() as session:
        tis = dag_run.get_task_instances(session=session)
        return {(t.task_id if t.map_index < 0 else f"{t.task_id}[{t.map_index}]"): str(t.state)
                for t in tis}


def xcom(dag_run: Any, task_id: str, map_index: int = -1, key: str = "return_value") -> Any:
    """The return value (or the XCom `key`) a task of a finished run pushed."""
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        row = session.query(XComModel).filter_by(
            dag_id=dag_run.dag_id, run_id=dag_run.run_id, task_id=task_id,
            map_index=map_index, key=key).one_or_none()
        if row is None:
            return None
        value = row.value
    return json.loads(value) if isinstance(value, (str, bytes)) else value


@pytest.fixture()
def dags() -> Iterator[Any]:
    """The helpers above, as a fixture (tests import nothing from conftest)."""

    class Helpers:
        load = staticmethod(load_dag)
        states = staticmethod(task_states)
        xcom = staticmethod(xcom)
        conn_json = staticmethod(conn_json)

    yield Helpers
