"""Fan-out of small metadata reads (snapshots, manifests, schema files, file footers).

Object stores answer many small GETs at once far faster than one after another, so every
metadata fan-out goes through `parallel_map` with one bounded width, and independent steps of
one job (listings of different directories, say) through `concurrently`. The data work of a
job (its execute step) runs through `operation.runner` instead, which engines can replace.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")

#: concurrent metadata requests per fan-out (an S3 client pools 32 connections by default)
IO_WORKERS = 16


def parallel_map(fn: Callable[[T], R], items: Iterable[T], workers: int = IO_WORKERS
                 ) -> list[R]:
    """`[fn(x) for x in items]` with up to `workers` calls in flight; results in item order,
    and the first error raised once every call has finished."""
    items = list(items)
    if len(items) <= 1 or workers <= 1:
        return [fn(x) for x in items]
    # the caller runs the first call itself: one thread fewer to start (a two-read fan-out
    # starts one), the same number in flight
    with ThreadPoolExecutor(max_workers=min(workers - 1, len(items) - 1)) as pool:
        futures = [pool.submit(fn, x) for x in items[1:]]
        try:
            first: list[R] = [fn(items[0])]
        except BaseException as e:  # noqa: BLE001 - raised once every call has finished
            error: BaseException | None = e
        else:
            error = None
    if error is not None:
        raise error
    return first + [f.result() for f in futures]  # the pool has waited for every call


def concurrently(*calls: Callable[[], Any], workers: int = IO_WORKERS) -> list[Any]:
    """Run independent zero-argument calls at once (within `workers`); their results in order,
    the first error raised once every call has finished."""
    return parallel_map(lambda call: call(), calls, workers)


def quietly(fn: Callable[[T], R]) -> Callable[[T], R | None]:
    """`fn` returning None instead of raising: for a prefetch whose failure the caller meets
    again (and handles) when it reads the same thing for real."""
    def call(x: T) -> R | None:
        try:
            return fn(x)
        except Exception:  # noqa: BLE001 - read again by the caller, which decides
            return None
    return call


def chunks(items: Sequence[T], size: int) -> list[Sequence[T]]:
    """`items` cut into consecutive pieces of at most `size`."""
    return [items[i:i + size] for i in range(0, len(items), size)]
