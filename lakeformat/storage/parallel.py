"""Fan-out of small metadata reads (snapshots, manifests, schema files, file footers).

Object stores answer many small GETs at once far faster than one after another, so every
metadata fan-out goes through `parallel_map` with one bounded width. The data work of a job
(its execute step) runs through `operation.runner` instead, which engines can replace.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

#: concurrent metadata requests per fan-out
IO_WORKERS = 8


def parallel_map(fn: Callable[[T], R], items: Iterable[T], workers: int = IO_WORKERS
                 ) -> list[R]:
    """`[fn(x) for x in items]` with up to `workers` calls in flight; results in item order,
    and the first error raised once every call has finished."""
    items = list(items)
    if len(items) <= 1 or workers <= 1:
        return [fn(x) for x in items]
    with ThreadPoolExecutor(max_workers=min(workers, len(items))) as pool:
        return list(pool.map(fn, items))
