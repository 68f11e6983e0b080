"""The snapshot sensor and its trigger through real Airflow (`dag.test()`, which runs a deferred
task's trigger inline) against the moto S3 server, with commits made meanwhile by a thread or
by another process writing through lakeformat."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lakeformat as lf

SCHEMA = pa.schema([pa.field("dt", pa.string(), False), pa.field("id", pa.int64(), False),
                    ("v", pa.string())])
ROOT = Path(__file__).resolve().parents[2]

#: what the child process runs: commit to `db.t` every 0.3 s until the stop file appears
CHILD_WRITER = """
import json, os, sys, time
import pyarrow as pa
import lakeformat as lf
uri, options, stop, dt_value = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], sys.argv[4]
table = lf.Catalog(uri, options=options).get_table("db.t")
for i in range(600):
    if os.path.exists(stop):
        break
    table.write(pa.table({"dt": [dt_value], "id": [1000 + i], "v": ["child"]}),
                commit_user="writer-process")
    time.sleep(0.3)
"""


def rows(dt_value: str, ids: list[int]) -> pa.Table:
    return pa.table({"dt": [dt_value] * len(ids), "id": ids, "v": [f"v{i}" for i in ids]},
                    schema=SCHEMA)


@pytest.fixture()
def table(s3_conn: tuple[str, dict[str, str]]) -> lf.Table:
    """`db.t` (partitioned by dt) on the connection's warehouse, with one snapshot."""
    uri, options = s3_conn
    cat = lf.Catalog(uri, options=options)
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                         options={"bucket": "1"})
    t.write(rows("2024-01-01", [1, 2]))
    return t


def millis_iso(millis: int) -> str:
    return (dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(milliseconds=millis)
            ).isoformat(timespec="milliseconds")


def when(day: int) -> dt.datetime:
    """A logical date per test, so runs of one DAG never share a run id."""
    return dt.datetime(2024, 2, day, tzinfo=dt.UTC)


@contextmanager
def committing(action: Callable[[threading.Event], None]) -> Iterator[None]:
    """Run `action(stop)` in a thread while the block runs (a dag.test), then stop it."""
    stop = threading.Event()
    errors: list[BaseException] = []

    def run() -> None:
        try:
            action(stop)
        except BaseException as e:  # noqa: BLE001 - re-raised in the test
            errors.append(e)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=60)
    if errors:
        raise errors[0]


def keep_appending(t: lf.Table, user: str = "writer-thread") -> Callable[[threading.Event], None]:
    def action(stop: threading.Event) -> None:
        for i in range(300):
            if stop.wait(0.3):
                return
            t.write(rows("2024-01-02", [100 + i]), commit_user=user)
    return action


def ti_states(dag_id: str) -> list[str]:
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session

    with create_session() as session:
        return [str(ti.state) for ti in session.query(TaskInstance).filter_by(
            dag_id=dag_id, task_id="wait")]


def wait_for_state(dag_id: str, state: str, stop: threading.Event) -> bool:
    """Poll Airflow's DB (from a side thread) until the sensor's task reaches `state`."""
    while not stop.wait(0.1):
        try:
            if state in ti_states(dag_id):
                return True
        except Exception:  # noqa: BLE001 - the SQLite file may be busy: ask again
            continue
    return False


# -- poke mode ----------------------------------------------------------------------------------
def test_poke_returns_a_snapshot_committed_while_waiting(table, dags):
    before = table.latest_snapshot().id
    dag = dags.load("lf_test_sensor.py", "lf_test_sensor")
    with committing(keep_appending(table)):
        run = dag.test(logical_date=when(1), run_conf={"table": "db.t"})
    assert run.state == "success", dags.states(run)
    found = dags.xcom(run, "wait")
    assert found["snapshot_id"] > before
    snap = table.snapshot_manager.snapshot(found["snapshot_id"])
    assert found == {"table": "db.t", "snapshot_id": snap.id, "commit_kind": "APPEND",
                     "commit_user": "writer-thread",
                     "commit_identifier": snap.commit_identifier,
                     "time_millis": snap.time_millis,
                     "time": millis_iso(snap.time_millis),
                     "schema_id": snap.schema_id, "delta_record_count": 1,
                     "total_record_count": snap.total_record_count}


def test_commit_kind_skips_appends_until_a_compaction(table, dags):
    before = table.latest_snapshot().id

    def append_then_compact(stop: threading.Event) -> None:
        table.write(rows("2024-01-01", [3]))
        if not stop.wait(0.3):
            table.compact(full=True)

    dag = dags.load("lf_test_sensor.py", "lf_test_sensor_compact")
    with committing(append_then_compact):
        run = dag.test(logical_date=when(2), run_conf={"table": "db.t", "after": str(before)})
    assert run.state == "success", dags.states(run)
    found = dags.xcom(run, "wait")
    assert table.snapshot_manager.snapshot(before + 1).commit_kind == "APPEND"
    assert (found["snapshot_id"], found["commit_kind"]) == (before + 2, "COMPACT")


def test_partition_ignores_writes_to_other_partitions(table, dags):
    before = table.latest_snapshot().id

    def other_then_target(stop: threading.Event) -> None:
        table.write(rows("2024-01-07", [1]))
        if not stop.wait(0.3):
            table.write(rows("2024-01-09", [1]))

    dag = dags.load("lf_test_sensor.py", "lf_test_sensor_partition")
    with committing(other_then_target):
        run = dag.test(logical_date=when(3), run_conf={"table": "db.t", "after": str(before),
                                                       "dt": "2024-01-09"})
    assert run.state == "success", dags.states(run)
    assert table.delta_partitions(before + 1) == [{"dt": "2024-01-07"}]
    assert dags.xcom(run, "wait")["snapshot_id"] == before + 2


def test_explicit_bounds_find_snapshots_made_before_the_run(table, dags):
    """`after_snapshot_id` and `newer_than` name snapshots older than the sensor: they are
    found on the first poke, the earliest matching one first."""
    for i in range(3):
        time.sleep(0.01)  # distinct commit times
        table.write(rows("2024-01-03", [10 + i]))
    snaps = table.snapshots()  # ids 1..4
    dag = dags.load("lf_test_sensor.py", "lf_test_sensor")
    run = dag.test(logical_date=when(4), run_conf={"table": "db.t", "after": "2"})
    assert run.state == "success", dags.states(run)
    assert dags.xcom(run, "wait")["snapshot_id"] == 3
    cut = millis_iso(snaps[-1].time_millis)
    run = dag.test(logical_date=when(5), run_conf={"table": "db.t", "newer_than": cut})
    assert run.state == "success", dags.states(run)
    assert dags.xcom(run, "wait")["snapshot_id"] == snaps[-1].id


def test_timeout_fails_the_task_and_leaves_the_table_alone(table, dags):
    files = sorted(s.path for s in table.file_io.list_recursive(table.path))
    ids = [s.id for s in table.snapshots()]
    dag = dags.load("lf_test_sensor.py", "lf_test_sensor_timeout")
    run = dag.test(logical_date=when(6), run_conf={"table": "db.t"})
    assert run.state == "failed"
    assert dags.states(run) == {"wait": "failed"}
    assert [s.id for s in table.snapshots()] == ids
    assert sorted(s.path for s in table.file_io.list_recursive(table.path)) == files


# -- reschedule mode ------------------------------------------------------------------------------
def test_reschedule_keeps_the_baseline_between_tries(table, dags):
    """The one commit lands after the first try was rescheduled: a later try that took the
    latest snapshot as its baseline afresh would never see it, and time out."""
    dag_id = "lf_test_sensor_reschedule"
    made: list[int] = []

    def commit_after_first_try(stop: threading.Event) -> None:
        if wait_for_state(dag_id, "up_for_reschedule", stop):
            made.append(table.write(rows("2024-01-04", [1]), commit_user="late").snapshot_id)

    dag = dags.load("lf_test_sensor.py", dag_id)
    with committing(commit_after_first_try):
        run = dag.test(logical_date=when(7), run_conf={"table": "db.t"})
    assert run.state == "success", dags.states(run)
    found = dags.xcom(run, "wait")
    assert made and found["snapshot_id"] == made[0] and found["commit_user"] == "late"


# -- deferrable mode ------------------------------------------------------------------------------
@contextmanager
def child_writer(s3_conn: tuple[str, dict[str, str]], tmp_path: Path,
                 dt_value: str = "2024-01-05") -> Iterator[None]:
    """Another process committing to db.t every 0.3 s until the block ends."""
    uri, options = s3_conn
    stop = tmp_path / "stop"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), os.environ.get("PYTHONPATH", "")])}
    child = subprocess.Popen([sys.executable, "-c", CHILD_WRITER, uri, json.dumps(options),
                              str(stop), dt_value], env=env, stderr=subprocess.PIPE)
    try:
        yield
    finally:
        stop.touch()
        try:
            _, err = child.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            child.kill()
            _, err = child.communicate()
    assert child.returncode == 0, err.decode()


def test_deferred_sensor_fires_on_a_commit_by_another_process(table, dags, s3_conn,
                                                              tmp_path):
    before = table.latest_snapshot().id
    dag = dags.load("lf_test_sensor.py", "lf_test_sensor_deferred")
    with child_writer(s3_conn, tmp_path):
        run = dag.test(logical_date=when(8), run_conf={"table": "db.t"})
    assert run.state == "success", dags.states(run)
    found = dags.xcom(run, "wait")
    assert found["snapshot_id"] > before and found["commit_user"] == "writer-process"
    assert table.snapshot_manager.snapshot(found["snapshot_id"]).commit_user == "writer-process"


def test_trigger_round_trip_and_event(table, s3_conn, tmp_path):
    from airflow.sdk._shared.module_loading import import_string

    from lakeformat_airflow.triggers import LakeformatSnapshotTrigger

    before = table.latest_snapshot().id
    trigger = LakeformatSnapshotTrigger(table="db.t", after_snapshot_id=before,
                                        commit_kind="append", partition={"dt": "2024-01-06"},
                                        poll_interval=0.2)
    classpath, kwargs = trigger.serialize()
    assert json.loads(json.dumps(kwargs)) == kwargs  # plain values only
    rebuilt = import_string(classpath)(**kwargs)
    assert type(rebuilt) is LakeformatSnapshotTrigger and rebuilt.serialize() == (classpath,
                                                                                 kwargs)
    assert kwargs["commit_kind"] == "APPEND" and kwargs["after_snapshot_id"] == before

    async def first_event() -> Any:
        return await asyncio.wait_for(anext(rebuilt.run()), timeout=60)

    table.write(rows("2024-01-02", [7]))  # another partition: not an answer
    with child_writer(s3_conn, tmp_path, dt_value="2024-01-06"):
        event = asyncio.run(first_event())
    assert event.payload["status"] == "success"
    found = event.payload["snapshot"]
    assert found["snapshot_id"] == before + 2 and found["commit_user"] == "writer-process"
    assert table.delta_partitions(found["snapshot_id"]) == [{"dt": "2024-01-06"}]


def test_trigger_reports_a_missing_table_as_fatal(s3_conn):
    from lakeformat_airflow.triggers import LakeformatSnapshotTrigger

    trigger = LakeformatSnapshotTrigger(table="db.nowhere", poll_interval=0.1)
    event = asyncio.run(anext(trigger.run()))
    assert event.payload["status"] == "error" and event.payload["fatal"] is True
    assert "db.nowhere" in event.payload["message"]


# -- bad input ----------------------------------------------------------------------------------
def test_unknown_table_fails_at_once(table, dags):
    from airflow.sdk.exceptions import AirflowFailException

    from lakeformat_airflow.sensors import LakeformatSnapshotSensor

    dag = dags.load("lf_test_sensor.py", "lf_test_sensor")
    run = dag.test(logical_date=when(9), run_conf={"table": "db.missing"})
    assert run.state == "failed" and dags.states(run) == {"wait": "failed"}
    # the poke's own error: the library's message naming the table, no retry, no waiting
    with pytest.raises(AirflowFailException, match="db.missing"):
        LakeformatSnapshotSensor(task_id="w", table="db.missing").poke({})
    with pytest.raises(AirflowFailException, match="'day'.*partition keys are \\['dt'\\]"):
        LakeformatSnapshotSensor(task_id="w", table="db.t", partition={"day": "x"}).poke({})


def test_bad_arguments_fail_at_construction():
    from lakeformat_airflow.sensors import LakeformatSnapshotSensor
    from lakeformat_airflow.sensors.snapshot import LakeformatSnapshotSensor as same

    assert same is LakeformatSnapshotSensor
    with pytest.raises(ValueError, match="commit_kind must be one of APPEND, COMPACT, "
                                         "OVERWRITE.*'MERGE'"):
        LakeformatSnapshotSensor(task_id="w", table="db.t", commit_kind="MERGE")
    with pytest.raises(ValueError, match="after_snapshot_id"):
        LakeformatSnapshotSensor(task_id="w", table="db.t", after_snapshot_id="latest")
    with pytest.raises(ValueError, match="newer_than"):
        LakeformatSnapshotSensor(task_id="w", table="db.t", newer_than="yesterday")
    with pytest.raises(ValueError, match="database.table"):
        LakeformatSnapshotSensor(task_id="w", table="t")
    ok = LakeformatSnapshotSensor(task_id="w", table="db.t", commit_kind="Overwrite",
                                  after_snapshot_id="{{ params.after }}")
    assert ok.commit_kind == "OVERWRITE"


def test_rendered_bounds_parse_as_airflow_renders_them():
    from lakeformat_airflow.triggers.snapshot import instant_millis, snapshot_id_arg

    midnight = 1704153600000  # 2024-01-02T00:00:00Z
    assert instant_millis("2024-01-02 00:00:00+00:00") == midnight  # "{{ data_interval_end }}"
    assert instant_millis("2024-01-02T01:00:00+01:00") == midnight
    assert instant_millis("2024-01-02T00:00:00Z") == midnight
    assert instant_millis(dt.datetime(2024, 1, 2)) == midnight  # no zone: UTC
    assert instant_millis("2024-01-02T00:00:00.000001Z") == midnight + 1  # "at or after"
    assert instant_millis("None") is None and instant_millis("") is None  # an empty template
    assert snapshot_id_arg(" 12 ") == 12 and snapshot_id_arg("None") is None
    with pytest.raises(ValueError, match="after_snapshot_id"):
        snapshot_id_arg(-1)


def test_watch_follows_a_rollback(table):
    """Commits after a rollback reuse the ids above the rolled-back-to snapshot: the wait sees
    them as new instead of waiting for an id above the old latest."""
    from lakeformat import SnapshotWatch

    table.write(rows("2024-01-02", [1]))
    table.write(rows("2024-01-02", [2]))  # snapshots 1..3
    watch = SnapshotWatch()
    assert watch.check(table) is None and watch.after_id == 3
    table.rollback_to(1)
    assert watch.check(table) is None and watch.after_id == 1
    sid = table.write(rows("2024-01-08", [1])).snapshot_id
    assert sid == 2 and watch.check(table)["snapshot_id"] == 2


def test_the_sensor_checks_the_commit_kinds_the_watch_knows():
    """The sensor spells the kinds out (a DAG file's parse loads no pyarrow): the same list."""
    import lakeformat as lf
    from lakeformat_airflow.triggers.snapshot import COMMIT_KINDS

    assert COMMIT_KINDS == lf.SnapshotWatch.COMMIT_KINDS


# -- templated arguments, Airflow's default_deferrable --------------------------------------------
def test_templated_commit_kind_is_checked_once_rendered(table, dags):
    """`commit_kind="{{ params.kind }}"`: rendered in any case it selects that kind; a kind
    that does not exist fails the first try (retries=1 unused) without waiting."""
    from airflow.utils.session import create_session

    before = table.latest_snapshot().id

    def append_then_compact(stop: threading.Event) -> None:
        table.write(rows("2024-01-01", [3]))
        if not stop.wait(0.3):
            table.compact(full=True)

    dag = dags.load("lf_test_sensor.py", "lf_test_sensor_kind")
    with committing(append_then_compact):
        run = dag.test(logical_date=when(10), run_conf={"table": "db.t", "after": str(before),
                                                        "kind": "Compact"})
    assert run.state == "success", dags.states(run)
    assert dags.xcom(run, "wait")["commit_kind"] == "COMPACT"
    bad = dag.test(logical_date=when(11), run_conf={"table": "db.t", "after": "",
                                                    "kind": "merge"})
    assert bad.state == "failed"
    with create_session() as session:
        (ti,) = bad.get_task_instances(session=session)
        assert (str(ti.state), ti.try_number) == ("failed", 1)


def _parsed(file_name: str, dag_id: str) -> Any:
    """A DAG parsed now (the suite's `dags.load` keeps its first parse), from the DAGs folder."""
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=Path(os.environ["AIRFLOW__CORE__DAGS_FOLDER"]) / file_name,
                 safe_mode=False)
    assert not bag.import_errors, bag.import_errors
    return bag.dags[dag_id]


@pytest.mark.parametrize("setting", ["true", "false"])
def test_deferrable_defaults_from_airflow_config(table, dags, s3_conn, tmp_path, monkeypatch,
                                                 setting):
    """A sensor without `deferrable` follows `[operators] default_deferrable`: set, it waits
    deferred (its task instance was handed to a trigger); unset, it pokes (no trigger)."""
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session

    monkeypatch.setenv("AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE", setting)
    dag = _parsed("lf_test_sensor.py", "lf_test_sensor_config")
    deferrable = setting == "true"
    assert dag.get_task("wait").deferrable is deferrable
    with child_writer(s3_conn, tmp_path):
        run = dag.test(logical_date=when(12 if deferrable else 13),
                       run_conf={"table": "db.t", "after": "", "newer_than": ""})
    assert run.state == "success", dags.states(run)
    assert dags.xcom(run, "wait")["commit_user"] == "writer-process"
    with create_session() as session:
        ti = session.query(TaskInstance).filter_by(dag_id=run.dag_id, run_id=run.run_id).one()
        assert (ti.trigger_id is not None) is deferrable
