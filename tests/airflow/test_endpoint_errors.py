"""An operator whose connection points at an S3 endpoint that refuses connections or never
answers: the task's error is the library's `StoreUnreachableError`, naming the endpoint and
what to check (the words the CLI prints), raised within the S3 timeouts, and left to
Airflow's retries (a store that is restarting answers again)."""

from __future__ import annotations

import datetime as dt
import socket
import threading
import time
from types import SimpleNamespace

import pytest

import lakeformat as lf
from lakeformat_airflow.hooks import LakeformatHook
from lakeformat_airflow.operators import LakeformatExpireSnapshotsOperator


def _context() -> dict:
    ti = SimpleNamespace(dag_id="d", task_id="t", map_index=-1)
    return {"ti": ti, "logical_date": dt.datetime(2024, 4, 1, tzinfo=dt.UTC)}


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _connect(monkeypatch, dags, endpoint: str, **extra: str) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_LAKEFORMAT_DEFAULT", dags.conn_json(
        "lakeformat", "s3://bucket/wh", "AKIAEXAMPLEACCESS", "endpoint-test-secret",
        {"s3.endpoint": endpoint, **extra}))


def test_a_refused_port_shows_the_endpoint_and_what_to_check(monkeypatch, dags):
    endpoint = f"http://127.0.0.1:{_closed_port()}"
    _connect(monkeypatch, dags, endpoint, **{"s3.retry.timeout": "500ms"})
    op = LakeformatExpireSnapshotsOperator(task_id="x", table="db.t")
    with pytest.raises(lf.StoreUnreachableError) as err:  # not AirflowFailException: retried
        op.execute(_context())
    assert str(err.value).startswith(f"cannot reach the S3 endpoint {endpoint}: check the "
                                     "host and port of option s3.endpoint")
    ok, message = LakeformatHook().test_connection()
    assert not ok and f"cannot reach the S3 endpoint {endpoint}" in message


def test_a_stalled_endpoint_fails_the_try_within_the_timeouts(monkeypatch, dags):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                held.append(server.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    endpoint = f"http://127.0.0.1:{server.getsockname()[1]}"
    try:
        _connect(monkeypatch, dags, endpoint,
                 **{"s3.connection.timeout": "500ms", "s3.retry.timeout": "1500ms"})
        op = LakeformatExpireSnapshotsOperator(task_id="x", table="db.t")
        started = time.monotonic()
        with pytest.raises(lf.StoreUnreachableError, match="did not answer"):
            op.execute(_context())
        assert time.monotonic() - started < 30
    finally:
        server.close()
        for conn in held:
            conn.close()
