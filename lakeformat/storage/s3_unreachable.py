"""An S3 endpoint that does not answer, said the same way to every caller (the CLI, an Airflow
task, a user's script): `StoreUnreachableError` naming the endpoint and what to check,
instead of botocore's "Could not connect to the endpoint URL" or "Read timeout on endpoint
URL" (whose cause stays chained for `--debug` and logs).

`AnsweringClient` wraps the botocore client of an `S3FileIO`: each call's no-answer errors —
after the retries `RetryPolicy` allowed — become `StoreUnreachableError`; every other error
and every non-call attribute (`meta`, `exceptions`) passes through unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from lakeformat.errors import StoreUnreachableError
from lakeformat.storage.s3_common import CONNECT_TIMEOUT_S, S3Settings
from lakeformat.storage.s3_retry import no_answer_errors

__all__ = ["AnsweringClient", "unreachable_message"]


def _endpoint(url: str | None) -> str:
    """'http://127.0.0.1:9000' of a request URL (botocore names the whole request)."""
    if not url:
        return "(AWS S3)"
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.netloc else url


def unreachable_message(e: BaseException, settings: S3Settings | None = None) -> str | None:
    """The message of a refused, unreachable or stalled endpoint, or None for other errors."""
    from botocore.exceptions import ReadTimeoutError

    if not isinstance(e, no_answer_errors()):
        return None
    where = _endpoint(getattr(e, "kwargs", {}).get("endpoint_url")
                      or (settings.endpoint if settings else None))
    check = "check the host and port of option s3.endpoint and that the store is running"
    if isinstance(e, ReadTimeoutError):
        waited = (f"within {settings.read_timeout_s:g} s per attempt (s3.connection.timeout), "
                  f"retried for up to {settings.retry_timeout_s:g} s (s3.retry.timeout)"
                  if settings else "in time")
        return (f"cannot reach the S3 endpoint {where}: it accepted the connection but did not "
                f"answer {waited}; {check}")
    connect = f" within {CONNECT_TIMEOUT_S:g} s" if "timeout" in type(e).__name__.lower() else ""
    return f"cannot reach the S3 endpoint {where}{connect}: {check}"


class AnsweringClient:
    """A botocore S3 client whose calls raise `StoreUnreachableError` when the store does not
    answer (see the module docstring)."""

    def __init__(self, client: Any, settings: S3Settings):
        self._client = client
        self._settings = settings

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if not callable(attr) or name.startswith("_"):
            return attr
        return self._answering(attr)

    def _answering(self, call: Callable[..., Any]) -> Callable[..., Any]:
        def answered(*args: Any, **kwargs: Any) -> Any:
            try:
                return call(*args, **kwargs)
            except Exception as e:
                message = unreachable_message(e, self._settings)
                if message is None:
                    raise
                raise StoreUnreachableError(message) from e

        return answered
