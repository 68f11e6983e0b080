"""The S3 retry rules, the probe cache and the S3 options, without a store: which answers and
errors are retried, how long the waits are, that the count is kept, that one probe serves
every thread, and how the options read."""

from __future__ import annotations

import pickle
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace
from typing import Any

import pytest
from botocore.exceptions import (
    ConnectionClosedError,
    EndpointConnectionError,
    ReadTimeoutError,
    ResponseStreamingError,
)

from lakeformat.errors import InvalidOptionError
from lakeformat.storage.s3_common import S3Settings
from lakeformat.storage.s3_conditional import ProbeCache
from lakeformat.storage.s3_retry import (
    BASE_DELAY_S,
    MAX_DELAY_S,
    THROTTLE_BASE_DELAY_S,
    RetryCounter,
    RetryPolicy,
)


def _answer(status: int, code: str = "") -> tuple[Any, dict[str, Any]]:
    parsed: dict[str, Any] = {"ResponseMetadata": {"HTTPStatusCode": status}}
    if code:
        parsed["Error"] = {"Code": code}
    return SimpleNamespace(status_code=status, headers={}), parsed


@pytest.fixture()
def policy() -> RetryPolicy:
    return RetryPolicy(10, RetryCounter(), sleep=lambda s: None)


@pytest.mark.parametrize("status,code,throttled", [
    (503, "SlowDown", True),
    (503, "ServiceUnavailable", False),
    (429, "TooManyRequestsException", True),
    (500, "InternalError", False),
    (502, "", False),
    (504, "", False),
    (400, "RequestTimeout", False),
])
def test_transient_answers_are_retried(policy: RetryPolicy, status: int, code: str,
                                       throttled: bool) -> None:
    delay = policy.needs_retry(attempts=1, response=_answer(status, code))
    assert delay is not None
    base = THROTTLE_BASE_DELAY_S if throttled else BASE_DELAY_S
    assert base / 2 <= delay <= base


@pytest.mark.parametrize("status,code", [
    (200, ""), (404, "NoSuchKey"), (412, "PreconditionFailed"), (403, "AccessDenied"),
    (409, "ConditionalRequestConflict"), (400, "InvalidArgument"), (501, "NotImplemented"),
])
def test_final_answers_are_not_retried(policy: RetryPolicy, status: int, code: str) -> None:
    assert policy.needs_retry(attempts=1, response=_answer(status, code)) is None
    assert policy.counter.total == 0


@pytest.mark.parametrize("error", [
    ConnectionClosedError(endpoint_url="http://s"),
    EndpointConnectionError(endpoint_url="http://s"),
    ReadTimeoutError(endpoint_url="http://s"),
])
def test_connection_failures_are_retried(policy: RetryPolicy, error: Exception) -> None:
    assert policy.needs_retry(attempts=1, caught_exception=error) is not None
    assert policy.counter.by_cause() == {"request": 1}


def test_other_exceptions_and_the_last_attempt_are_not_retried(policy: RetryPolicy) -> None:
    assert policy.needs_retry(attempts=1, caught_exception=ValueError("bug")) is None
    assert policy.needs_retry(attempts=10, response=_answer(503, "SlowDown")) is None
    assert policy.needs_retry(attempts=9, response=_answer(503, "SlowDown")) is not None
    assert policy.counter.total == 1


def test_waits_grow_exponentially_with_jitter_and_a_cap(policy: RetryPolicy) -> None:
    for attempt in range(1, 12):
        ceiling = min(MAX_DELAY_S, BASE_DELAY_S * 2 ** (attempt - 1))
        waits = [policy.delay(attempt, throttled=False) for _ in range(50)]
        assert all(ceiling / 2 <= w <= ceiling for w in waits)
        assert len(set(waits)) > 1  # jittered
    assert max(policy.delay(30, throttled=True) for _ in range(50)) <= MAX_DELAY_S


def test_read_retry_issues_the_request_again(policy: RetryPolicy) -> None:
    requests = []

    def request() -> int:
        requests.append(1)
        return len(requests)

    def read(n: int) -> str:
        if n < 3:
            raise ResponseStreamingError(error="connection reset")
        return f"body of request {n}"

    assert policy.read_retry(request, read) == "body of request 3"
    assert policy.counter.by_cause() == {"read": 2}

    def never(n: int) -> str:
        raise ResponseStreamingError(error="reset again")

    with pytest.raises(ResponseStreamingError):
        policy.read_retry(request, never)
    assert policy.counter.by_cause() == {"read": 11}  # 9 more: 10 attempts in all

    def failing_request() -> int:
        raise ConnectionClosedError(endpoint_url="http://s")

    with pytest.raises(ConnectionClosedError):  # botocore's hook retried it already
        policy.read_retry(failing_request, read)
    assert policy.counter.total == 11


def test_counter_is_thread_safe_and_starts_over_when_pickled() -> None:
    counter = RetryCounter()
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda _: [counter.add("request") for _ in range(1000)], range(8)))
    assert counter.total == 8000
    policy = RetryPolicy(5, counter)
    clone = pickle.loads(pickle.dumps(policy))
    assert clone.counter.total == 0 and clone.attempts == 5


def test_one_probe_serves_every_thread() -> None:
    store = f"http://probe-cache-test-{time.monotonic_ns()}"
    calls = []
    barrier = threading.Barrier(8)

    def probe() -> bool:
        calls.append(1)
        time.sleep(0.05)
        return True

    def ask(_: int) -> bool:
        barrier.wait()
        return ProbeCache.answer(store, "b", probe)

    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(ask, range(8))) == [True] * 8
    assert len(calls) == 1
    assert ProbeCache.cached(store, "b") is True and ProbeCache.cached(store, "c") is None
    ProbeCache.forget(store)
    assert ProbeCache.cached(store, "b") is None


def test_a_probe_that_fails_leaves_no_answer() -> None:
    store = f"http://probe-cache-test-{time.monotonic_ns()}"

    def broken() -> bool:
        raise ConnectionClosedError(endpoint_url=store)

    with pytest.raises(ConnectionClosedError):
        ProbeCache.answer(store, "b", broken)
    assert ProbeCache.cached(store, "b") is None
    assert ProbeCache.answer(store, "b", lambda: False) is False
    assert ProbeCache.answer(store, "b", lambda: True) is False  # cached now
    ProbeCache.forget(store)


def test_settings_defaults_and_hadoop_spellings() -> None:
    st = S3Settings.from_options({"s3.endpoint": "h:9000", "s3.connection.ssl.enabled": "false"})
    assert st.endpoint == "http://h:9000" and st.attempts == 10 and st.page_size == 1000
    assert st.read_timeout_s == 20.0 and st.store_id == "http://h:9000"
    assert st.retry_timeout_s == 15.0
    assert S3Settings.from_options({"s3.retry.timeout": "2s"}).retry_timeout_s == 2.0
    assert S3Settings.from_options({}).store_id == "aws:default"
    st = S3Settings.from_options({"s3.attempts.maximum": "3", "s3.paging.maximum": "5000",
                                  "s3.connection.timeout": "1500"})
    assert (st.attempts, st.page_size, st.read_timeout_s) == (3, 1000, 1.5)
    for text, seconds in [("250ms", 0.25), ("30s", 30.0), ("2m", 120.0)]:
        st = S3Settings.from_options({"s3.connection.timeout": text})
        assert st.read_timeout_s == seconds
    for key, bad in [("s3.connection.timeout", "soon"), ("s3.connection.timeout", "0"),
                     ("s3.attempts.maximum", "-1"), ("s3.paging.maximum", "x"),
                     ("s3.retry.timeout", "0")]:
        with pytest.raises(InvalidOptionError, match=key):
            S3Settings.from_options({key: bad})


def test_no_answer_is_retried_only_within_the_retry_timeout() -> None:
    """A refused or timed-out request is retried while its first attempt is less than
    `retry_timeout_s` ago, and always once; a store that answers 503 keeps every attempt."""
    from botocore.exceptions import EndpointConnectionError, ReadTimeoutError

    policy = RetryPolicy(10, RetryCounter(), retry_timeout_s=5.0)
    fresh = {"context": {}}
    policy._started(context=fresh["context"])
    refused = EndpointConnectionError(endpoint_url="http://127.0.0.1:9")
    assert policy.needs_retry(attempts=1, caught_exception=refused, request_dict=fresh)
    old = {"context": {"lakeformat_started": time.monotonic() - 6}}
    stalled = ReadTimeoutError(endpoint_url="http://127.0.0.1:9")
    # one attempt may outlast the budget (a 20 s read timeout, a 15 s budget): one retry
    assert policy.needs_retry(attempts=1, caught_exception=stalled, request_dict=old)
    assert policy.needs_retry(attempts=2, caught_exception=stalled, request_dict=old) is None
    assert policy.needs_retry(attempts=2, caught_exception=refused, request_dict=old) is None
    answer = (SimpleNamespace(status_code=503), {"Error": {"Code": "SlowDown"}})
    assert policy.needs_retry(attempts=3, response=answer, request_dict=old)
