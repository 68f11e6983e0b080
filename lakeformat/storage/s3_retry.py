"""Retrying S3 requests: throttling, server errors, resets and timeouts, counted.

Two places can fail, and each gets its own retry:

* **the request** (no answer, or a 5xx/throttling answer): botocore's event ``needs-retry``
  asks :meth:`RetryPolicy.needs_retry`, which answers with a back-off delay. botocore's own
  "standard" retry handler stays installed but is given one attempt, so it never retries:
  its retry quota (500 units, 14 per retried error, refunded only by a 2xx) runs dry under a
  steady fault rate once 404s and 412s (which refund nothing) are part of the traffic, and
  then it stops retrying altogether. Ours has no quota: every request gets its attempts.
* **the body of a streamed answer** (GetObject): botocore hands the stream back before it is
  read, so a reset or timeout while reading it (``ResponseStreamingError``,
  ``IncompleteReadError``, ``ReadTimeoutError``...) reaches the caller un-retried.
  :meth:`RetryPolicy.read_retry` re-issues the whole GET.

Non-streamed answers (listings, DeleteObjects) are read inside botocore's send, so a reset in
their body is a request failure like any other: a listing page is asked again with the same
continuation token, which resumes the listing where it stopped.

Delays are exponential with "equal jitter" (half fixed, half random, so every retry really
waits), from 50 ms for errors and 500 ms for throttling, capped at 5 s per wait.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from functools import lru_cache
from typing import Any, TypeVar

__all__ = ["RetryCounter", "RetryPolicy", "no_answer_errors", "stream_errors"]

T = TypeVar("T")
R = TypeVar("R")

_RETRY_STATUS = frozenset({500, 502, 503, 504})
_THROTTLE_STATUS = frozenset({429, 503})
_THROTTLE_CODES = frozenset({
    "SlowDown", "Throttling", "ThrottlingException", "ThrottledException",
    "RequestThrottled", "RequestThrottledException", "TooManyRequestsException",
    "RequestLimitExceeded", "BandwidthLimitExceeded", "ProvisionedThroughputExceededException",
})
_TRANSIENT_CODES = frozenset({
    "InternalError", "ServiceUnavailable", "RequestTimeout", "RequestTimeoutException",
    "PriorRequestNotComplete", "BadGateway", "GatewayTimeout",
})

#: where a request's start time is kept in botocore's per-request context
_STARTED = "lakeformat_started"

BASE_DELAY_S = 0.05
THROTTLE_BASE_DELAY_S = 0.5
MAX_DELAY_S = 5.0


class RetryCounter:
    """Retries made, by cause; thread-safe. A pickled copy starts again at zero."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()

    def __reduce__(self) -> tuple[Any, ...]:
        return (RetryCounter, ())

    def add(self, cause: str) -> None:
        with self._lock:
            self._counts[cause] += 1

    @property
    def total(self) -> int:
        with self._lock:
            return sum(self._counts.values())

    def by_cause(self) -> dict[str, int]:
        """E.g. ``{"request": 12, "read": 2, "conflict": 1}``."""
        with self._lock:
            return dict(self._counts)


@lru_cache(maxsize=1)
def _request_errors() -> tuple[type[BaseException], ...]:
    """Exceptions from sending a request that mean "no usable answer": a later attempt may
    well succeed (connection refused, reset, closed, read or connect timeout)."""
    from botocore.exceptions import ConnectionError as BotoConnectionError
    from botocore.exceptions import HTTPClientError

    return (BotoConnectionError, HTTPClientError)


@lru_cache(maxsize=1)
def no_answer_errors() -> tuple[type[BaseException], ...]:
    """Request errors that mean the store did not answer at all: refused or unreachable,
    or a connect or read timeout (a stalled endpoint)."""
    from botocore.exceptions import (
        ConnectTimeoutError,
        EndpointConnectionError,
        ReadTimeoutError,
    )

    return (ConnectTimeoutError, EndpointConnectionError, ReadTimeoutError)


@lru_cache(maxsize=1)
def stream_errors() -> tuple[type[BaseException], ...]:
    """Exceptions raised while reading a streamed body that a fresh request can cure."""
    import http.client

    from botocore.exceptions import (
        ConnectionError as BotoConnectionError,
    )
    from botocore.exceptions import (
        HTTPClientError,
        IncompleteReadError,
    )
    from urllib3.exceptions import HTTPError as Urllib3Error

    return (BotoConnectionError, HTTPClientError, IncompleteReadError, Urllib3Error,
            http.client.HTTPException, ConnectionError, TimeoutError)


def _response_kind(response: Any) -> str | None:
    """"throttle", "error" or None for a parsed answer ``(http_response, parsed)``."""
    if not response:
        return None
    http_response, parsed = response
    status = getattr(http_response, "status_code", None)
    code = ""
    if isinstance(parsed, dict):
        code = str(parsed.get("Error", {}).get("Code", ""))
    if code in _THROTTLE_CODES or (status in _THROTTLE_STATUS and code not in _TRANSIENT_CODES):
        return "throttle"
    if status in _RETRY_STATUS or code in _TRANSIENT_CODES:
        return "error"
    return None


class RetryPolicy:
    """Bounded exponential back-off with jitter, shared by the request hook and body reads.

    ``attempts`` counts the first try: 10 means up to 9 retries of one request.
    ``retry_timeout_s`` bounds a request the store does not answer at all: once that long has
    passed since its first attempt, a refused connection or a timeout is not retried again
    (the first retry is always made), so a dead endpoint fails within about that time and a
    stalled one within about two attempts' timeouts.
    """

    def __init__(self, attempts: int, counter: RetryCounter,
                 sleep: Callable[[float], None] = time.sleep,
                 retry_timeout_s: float | None = None) -> None:
        self.attempts = attempts
        self.counter = counter
        self.retry_timeout_s = retry_timeout_s
        self._sleep = sleep
        self._rng = random.Random()

    def __reduce__(self) -> tuple[Any, ...]:
        return (_policy, (self.attempts, self.counter, self.retry_timeout_s))

    def delay(self, attempt: int, throttled: bool) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        base = THROTTLE_BASE_DELAY_S if throttled else BASE_DELAY_S
        ceiling = min(MAX_DELAY_S, base * (2 ** (attempt - 1)))
        return ceiling / 2 + self._rng.uniform(0, ceiling / 2)

    # -- the botocore hook ------------------------------------------------------------------
    def install(self, client: Any) -> None:
        """Make this policy the one that retries ``client``'s requests. The client must have
        been built with ``retries={"mode": "standard", "total_max_attempts": 1}``."""
        events = client.meta.events
        events.register("before-call.s3", self._started, unique_id="lakeformat-retry-start")
        events.register("needs-retry.s3", self.needs_retry, unique_id="lakeformat-retry")
        events.register("request-created.s3", self._announce_attempts,
                        unique_id="lakeformat-retry-header")

    @staticmethod
    def _started(context: dict[str, Any] | None = None, **_: Any) -> None:
        """botocore's ``before-call`` event (once per request, before its first attempt)."""
        if isinstance(context, dict):
            context[_STARTED] = time.monotonic()

    def _out_of_time(self, delay: float, request_dict: Any) -> bool:
        """Whether retrying after `delay` would start past the request's `retry_timeout_s`."""
        if self.retry_timeout_s is None or not isinstance(request_dict, dict):
            return False
        started = (request_dict.get("context") or {}).get(_STARTED)
        return started is not None and \
            time.monotonic() - started + delay > self.retry_timeout_s

    def needs_retry(self, attempts: int = 1, response: Any = None,
                    caught_exception: BaseException | None = None,
                    request_dict: Any = None, **_: Any) -> float | None:
        """botocore's ``needs-retry`` event: a delay in seconds to retry, None to stop."""
        if attempts >= self.attempts:
            return None
        if caught_exception is not None:
            if not isinstance(caught_exception, _request_errors()):
                return None
            if isinstance(caught_exception, no_answer_errors()):
                delay = self.delay(attempts, throttled=False)
                # the first retry is always made: one stalled connection (a pooled socket the
                # network dropped) is not a dead store, and one attempt may outlast the budget
                if attempts > 1 and self._out_of_time(delay, request_dict):
                    return None
                self.counter.add("request")
                return delay
            throttled = False
        else:
            kind = _response_kind(response)
            if kind is None:
                return None
            throttled = kind == "throttle"
        self.counter.add("request")
        return self.delay(attempts, throttled)

    def _announce_attempts(self, request: Any = None, **_: Any) -> None:
        """Keep the ``amz-sdk-request`` header's ``max=`` truthful (botocore's handler, given
        one attempt, would announce 1)."""
        retries = getattr(request, "context", {}).get("retries")
        if isinstance(retries, dict):
            retries["max"] = self.attempts

    # -- streamed bodies --------------------------------------------------------------------
    def read_retry(self, request: Callable[[], R], read: Callable[[R], T]) -> T:
        """``read(request())``, with the request issued again when reading its streamed body
        breaks off. A failing ``request()`` is not retried here: botocore's hook did that."""
        attempt = 1
        while True:
            answer = request()
            try:
                return read(answer)
            except stream_errors():
                if attempt >= self.attempts:
                    raise
                self.counter.add("read")
                self._sleep(self.delay(attempt, throttled=False))
                attempt += 1

    def conflict_wait(self, attempt: int) -> None:
        """Back off before retrying after a 409 ``ConditionalRequestConflict``."""
        self.counter.add("conflict")
        self._sleep(self.delay(attempt, throttled=False))


def _policy(attempts: int, counter: RetryCounter, retry_timeout_s: float | None
            ) -> RetryPolicy:
    """Unpickling: a policy with the real sleep (a test's fake sleep does not travel)."""
    return RetryPolicy(attempts, counter, retry_timeout_s=retry_timeout_s)
