"""What the provider checks before it touches a table, with the library's rules: a table name
no catalog accepts fails the DAG file when it is parsed (a literal) or the task at once (a
template, once rendered)."""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace

import pytest
from airflow.sdk.exceptions import AirflowFailException

import lakeformat as lf
from lakeformat_airflow.operators import (
    LakeformatCompactOperator,
    LakeformatExpireSnapshotsOperator,
)

LONG = "db." + "t" * 256


def _context() -> dict:
    ti = SimpleNamespace(dag_id="d", task_id="t", map_index=-1)
    return {"ti": ti, "logical_date": dt.datetime(2024, 3, 1, tzinfo=dt.UTC)}


@pytest.mark.parametrize("table,rule", [(LONG, "256 bytes.*at most 255"),
                                        ("db.orders$snapshots", "'\\$'"),
                                        ("sys.orders", "system database"),
                                        ("db.a/b", "'/'")])
def test_a_table_name_no_catalog_accepts_fails_when_the_dag_is_parsed(table, rule):
    with pytest.raises(lf.InvalidIdentifierError, match=rule):
        LakeformatCompactOperator(task_id="x", table=table)


def test_a_templated_name_is_checked_once_rendered(local_conn):
    op = LakeformatExpireSnapshotsOperator(task_id="x", table="{{ params.table }}")
    op.table = LONG  # as rendered
    with pytest.raises(AirflowFailException, match="InvalidIdentifierError.*at most 255"):
        op.execute(_context())


SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzzSECRET"


def test_a_secret_pasted_into_another_option_never_reaches_the_task(monkeypatch, dags):
    """The connection's password also pasted into `s3.path-style-access`: the task fails at
    once, its message names the option and not the secret, and Airflow's masker hides the
    secret in any log line (the access key id is no secret: it is left alone)."""
    from airflow.sdk.log import redact

    from lakeformat_airflow.hooks import LakeformatHook

    access = "AKIAEXAMPLEACCESSKEY"
    monkeypatch.setenv("AIRFLOW_CONN_LAKEFORMAT_DEFAULT", dags.conn_json(
        "lakeformat", "s3://bucket/wh", access, SECRET,
        {"s3.endpoint": "http://127.0.0.1:9", "s3.path-style-access": SECRET}))
    op = LakeformatExpireSnapshotsOperator(task_id="x", table="db.t")
    with pytest.raises(AirflowFailException, match="s3.path-style-access") as err:
        op.execute(_context())
    assert SECRET not in str(err.value) and "***" in str(err.value)
    LakeformatHook().catalog_config()
    assert redact(f"key {access} secret {SECRET}") == f"key {access} secret ***"


def test_an_access_key_that_is_a_common_word_does_not_blank_the_task_logs(monkeypatch, dags):
    """MinIO's root user is the access key (`lakeformat` in docker-compose.yml): registered
    with Airflow's masker it would turn every bucket, DAG and connection name of every log
    line into ***. The secret key still is masked."""
    from airflow.sdk.log import redact

    from lakeformat_airflow.hooks import LakeformatHook

    login, secret = "orders-bucket", "orders-bucket-secret-key-value"
    monkeypatch.setenv("AIRFLOW_CONN_LAKEFORMAT_DEFAULT", dags.conn_json(
        "lakeformat", "s3://orders-bucket/wh", login, secret,
        {"s3.endpoint": "http://127.0.0.1:9", "s3.session-token": "orders-session-token"}))
    warehouse, options = LakeformatHook().catalog_config()
    assert options["s3.access-key"] == login
    line = f"ingesting s3://orders-bucket/landing/dt=2024-01-01/*.parquet into {warehouse}"
    assert redact(line) == line
    assert redact(f"{secret} orders-session-token") == "*** ***"
