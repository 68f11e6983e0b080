"""Where the execute step of a job runs: the one seam between the library and an engine.

A job plans small picklable work units on the driver, hands `execute` and the units to a
`Runner`, and commits what comes back. The default `ThreadRunner` runs them in a thread pool
in this process (pyarrow and numpy release the GIL for the heavy parts); the Spark runner
(`lakeformat.spark`) runs the same function on executors. A runner only maps: it never reads
a snapshot and never commits.

A unit that fails must not lose the results of the units that succeeded (their files have to
be deleted when the job is abandoned), so jobs hand runners `captured(fn)`: a function that
returns a `UnitFailure` instead of raising, and `raise_first_failure` re-raises after cleanup.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from lakeformat.errors import InvalidArgumentError

T = TypeVar("T")
R = TypeVar("R")


class Runner(Protocol):
    """Runs `fn` over every unit and returns the results in unit order."""

    def map(self, fn: Callable[[T], R], units: Sequence[T]) -> list[R]: ...


class ThreadRunner:
    """A thread pool in this process; `workers` defaults to the number of CPUs."""

    def __init__(self, workers: int | None = None):
        if workers is not None and (isinstance(workers, bool) or int(workers) <= 0):
            raise InvalidArgumentError(f"workers must be a positive integer, got {workers!r}")
        self.workers = workers

    def map(self, fn: Callable[[T], R], units: Sequence[T]) -> list[R]:
        units = list(units)
        workers = min(len(units), self.workers or os.cpu_count() or 2)
        if workers <= 1:
            return [fn(u) for u in units]
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(fn, units))

    def __repr__(self) -> str:
        return f"ThreadRunner(workers={self.workers})"


def default_runner(runner: Runner | None, workers: int | None = None) -> Runner:
    return runner if runner is not None else ThreadRunner(workers)


@dataclass
class UnitFailure:
    """The error one unit raised, returned as a value so the other units' results survive."""

    error: BaseException


class captured:  # noqa: N801 - used like a function: `runner.map(captured(fn), units)`
    """`fn` returning its exception as a `UnitFailure` instead of raising it (a class, not a
    closure, so that it pickles whenever `fn` does)."""

    def __init__(self, fn: Callable[[Any], Any]):
        self.fn = fn

    def __call__(self, unit: Any) -> Any:
        try:
            return self.fn(unit)
        except Exception as error:  # noqa: BLE001 - handed back to the driver unchanged
            return UnitFailure(error)


def split_failures(results: Sequence[Any]) -> tuple[list[Any], BaseException | None]:
    """The successful results, and the first failure's error (None when all succeeded)."""
    ok = [r for r in results if not isinstance(r, UnitFailure)]
    failed = [r.error for r in results if isinstance(r, UnitFailure)]
    return ok, (failed[0] if failed else None)
