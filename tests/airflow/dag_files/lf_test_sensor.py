"""Test DAGs of the snapshot sensor: table, bounds and partition come from run_conf; the
arguments that are not templated (mode, deferrable, timeout) get a DAG each, and so do a kind
given as a literal and one from a param."""

from __future__ import annotations

import datetime as dt

from airflow.sdk import DAG, Param

from lakeformat_airflow.sensors import LakeformatSnapshotSensor

START = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
PARAMS = {"table": Param("db.t", type="string"), "after": Param("", type="string"),
          "newer_than": Param("", type="string"), "dt": Param("", type="string"),
          "kind": Param("", type="string")}
WAIT = dict(table="{{ params.table }}", after_snapshot_id="{{ params.after }}",
            newer_than="{{ params.newer_than }}", poke_interval=0.2, timeout=60)


def sensor_dag(dag_id: str, retries: int = 0, **kwargs: object) -> None:
    with DAG(dag_id, schedule="@daily", start_date=START, catchup=False, params=PARAMS,
             default_args={"retries": retries, "retry_delay": dt.timedelta(seconds=0)},
             tags=["lakeformat-test"]):
        LakeformatSnapshotSensor(task_id="wait", **{**WAIT, **kwargs})


sensor_dag("lf_test_sensor")
sensor_dag("lf_test_sensor_compact", commit_kind="compact")
sensor_dag("lf_test_sensor_partition", partition={"dt": "{{ params.dt }}"})
sensor_dag("lf_test_sensor_reschedule", mode="reschedule", poke_interval=1)
sensor_dag("lf_test_sensor_deferred", deferrable=True)
sensor_dag("lf_test_sensor_timeout", timeout=1)
sensor_dag("lf_test_sensor_kind", retries=1, commit_kind="{{ params.kind }}")
# deferrable from `[operators] default_deferrable` when this file is parsed
sensor_dag("lf_test_sensor_config")
