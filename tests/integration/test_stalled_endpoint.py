"""An S3 endpoint that accepts connections and never answers (a hung store, a wrong port that
happens to listen), or refuses them: every call fails within the time the S3 timeouts allow,
with `StoreUnreachableError` naming the endpoint and what to check — not after ten attempts
of a minute each with botocore's raw message. A healthy store is not cut short by them."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.storage import get_file_io
from tests.support.fault_proxy import FaultProxy

CREDENTIALS = {"s3.access-key": "AKIAEXAMPLEACCESS", "s3.secret-key": "stalled-test-secret"}
#: small per-attempt and total timeouts, so the test waits seconds
SHORT = {"s3.connection.timeout": "1s", "s3.retry.timeout": "3s"}


@pytest.fixture()
def stalled_endpoint() -> Iterator[str]:
    """http://127.0.0.1:<port> of a socket that accepts every connection, reads nothing and
    never answers; closed (with its connections) when the test ends."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:  # closed: the test is over
                return
            held.append(conn)

    threading.Thread(target=accept, name="stalled-endpoint", daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        server.close()
        for conn in held:
            conn.close()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def timed(call) -> tuple[BaseException, float]:
    started = time.monotonic()
    with pytest.raises(lf.StoreUnreachableError) as err:
        call()
    return err.value, time.monotonic() - started


def test_a_stalled_endpoint_fails_within_the_timeouts_naming_it(stalled_endpoint):
    options = {"s3.endpoint": stalled_endpoint, **CREDENTIALS, **SHORT}

    def catalog() -> lf.Catalog:
        return lf.Catalog("s3://bucket/wh", options=options)

    def io():
        return get_file_io("s3://bucket/wh", options)

    calls = {"list": lambda: catalog().list_databases(),
             "exists": lambda: catalog().database_exists("db"),
             "put": lambda: io().write_bytes("s3://bucket/wh/x", b"x" * 200_000),
             "get": lambda: io().read_bytes("s3://bucket/wh/x")}
    # each call has a client of its own and waits out its timeouts beside the others
    with ThreadPoolExecutor(len(calls)) as pool:
        outcomes = dict(zip(calls, pool.map(timed, calls.values()), strict=True))
    for what, (error, took) in outcomes.items():
        assert took < 30, f"{what} took {took:.0f} s"
        text = str(error)
        assert f"cannot reach the S3 endpoint {stalled_endpoint}" in text, text
        assert "did not answer" in text and "s3.connection.timeout" in text, text
        assert "s3.retry.timeout" in text and "s3.endpoint" in text, text
        assert isinstance(error, lf.RETRYABLE_ERRORS)  # a store may come back


def test_a_refused_port_fails_with_the_same_message():
    endpoint = f"http://127.0.0.1:{closed_port()}"
    catalog = lf.Catalog("s3://bucket/wh", options={"s3.endpoint": endpoint, **CREDENTIALS,
                                                     "s3.retry.timeout": "2s"})
    error, took = timed(catalog.list_databases)
    assert took < 30
    assert str(error).startswith(f"cannot reach the S3 endpoint {endpoint}: check the host")


def test_the_timeouts_are_checked_options():
    for key in ("s3.retry.timeout", "s3.connection.timeout"):
        with pytest.raises(lf.InvalidOptionError, match=key):
            lf.Catalog("s3://bucket/wh", options={**CREDENTIALS, key: "soon"})


def test_short_timeouts_do_not_cut_a_healthy_store(s3_warehouse):
    """The same small timeout per attempt against the moto server: a few MB written and read
    back, and a table's whole life, as usual. The retry budget is longer here: the moto server
    is a thread of this process, and on a loaded machine it can stay silent for a second (a
    timed-out attempt is then asked again); a timeout that cut transfers would fail every
    attempt, so this still fails within the budget."""
    uri, options = s3_warehouse
    options = {**options, **SHORT, "s3.retry.timeout": "30s"}
    io = get_file_io(uri, options)
    big = bytes(range(256)) * (16 * 4096)  # 16 MiB
    io.write_bytes(f"{uri}/big.bin", big)
    assert io.read_bytes(f"{uri}/big.bin") == big
    catalog = lf.Catalog(uri, options=options)
    catalog.create_database("db")
    t = catalog.create_table("db.t", pa.schema([pa.field("id", pa.int64(), False)]),
                             primary_keys=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": list(range(1000))}))
    assert t.read().num_rows == 1000


def test_one_stalled_request_to_a_healthy_store_is_retried(s3_server, s3_warehouse):
    """One request that gets no answer (a pooled connection the network dropped) while the
    store answers every other: it is asked again on a fresh connection and the call succeeds,
    even though one attempt's timeout is longer than the retry budget (as the defaults are:
    20 s per attempt, 15 s of retries)."""
    uri, options = s3_warehouse
    get_file_io(uri, options).write_bytes(f"{uri}/x", b"x" * 1000)
    with FaultProxy(s3_server, latency=(3.0, 3.0), lifetime=60) as proxy:
        io = get_file_io(uri, {**options, "s3.endpoint": proxy.endpoint,
                               "s3.connection.timeout": "1000", "s3.retry.timeout": "750"})
        proxy.inject("latency", method="GET")
        assert io.read_bytes(f"{uri}/x") == b"x" * 1000
        assert proxy.pending_scripts == 0  # the stalled attempt happened
