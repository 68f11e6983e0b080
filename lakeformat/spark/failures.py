"""Errors of the library raised inside a Spark task, raised again on the driver as themselves.

Spark reports a failed Python task as a JVM-side exception whose message holds the task's
Python traceback. A caller (an Airflow operator deciding whether to retry, a test, a user
reading the log) needs the library's own error — `SchemaMismatchError` naming the column, not a
page of JVM frames — so the last `lakeformat.errors.<Name>: <message>` line of the traceback is
raised again as that class, chained to Spark's exception.
"""

from __future__ import annotations

import re
from typing import NoReturn

import lakeformat.errors as errors

_LINE = re.compile(r"^lakeformat\.errors\.(\w+): (.*)$", re.MULTILINE)


def library_error(error: BaseException) -> errors.LakeformatError | None:
    """The library error a Spark failure carries, or None when it carries none."""
    if isinstance(error, errors.LakeformatError):
        return error
    found = _LINE.findall(str(error))
    if not found:
        return None
    name, message = found[-1]
    cls = getattr(errors, name, None)
    if not (isinstance(cls, type) and issubclass(cls, errors.LakeformatError)):
        return None
    try:
        return cls(message.strip())
    except TypeError:  # an error class with a richer constructor
        return errors.EngineError(f"{name}: {message.strip()}")


def raise_library_error(error: BaseException) -> None | NoReturn:
    """Raise the library error `error` carries (from `error`); return when it carries none."""
    found = library_error(error)
    if found is not None and found is not error:
        raise found from error


def _analysis_error(error: BaseException) -> bool:
    """Spark refused the query itself (a missing column, a bad expression): the caller's
    mistake, shown as Spark reports it."""
    return any(c.__name__ == "AnalysisException" for c in type(error).__mro__)


def reraise(error: BaseException) -> NoReturn:
    """Raise what a failed Spark job means for the caller: the library error a task raised
    (its own class and message), Spark's own analysis error for a bad query, or
    `EngineError` (retryable: nothing was committed) when the engine failed otherwise (an
    executor lost, a worker killed, a task out of attempts)."""
    if isinstance(error, errors.LakeformatError):
        raise error
    raise_library_error(error)
    if _analysis_error(error):
        raise error
    first = next((line.strip() for line in str(error).splitlines() if line.strip()),
                 type(error).__name__)
    raise errors.EngineError(f"the Spark job failed: {first[:500]}") from error
