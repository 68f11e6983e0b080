"""`SparkRunner`: the library's `Runner` seam on Spark, classic or Connect.

The work units of a job (compaction tasks, renumbering units, ...) are pickled into a
DataFrame of (index, unit) rows, spread one unit per Spark partition (`repartitionByRange` over
the index, largest units first so the slowest start first), and run by `mapInArrow`, which
hands back one pickled result per unit. Nothing here touches an RDD or the SparkContext, so
the same code runs over Spark Connect.

Spark keeps the output of exactly one attempt of each task (a retried or speculative attempt's
output is dropped), and results are keyed by unit index, so a unit's result is used once. Files a
dropped attempt wrote are never referenced: orphan cleanup removes them.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import pyarrow as pa

from lakeformat.errors import EngineError
from lakeformat.operation.runner import UnitFailure
from lakeformat.spark.failures import reraise

T = TypeVar("T")
R = TypeVar("R")

_RESULT_SCHEMA = "idx long, result binary"


def dump_result(value: Any) -> bytes:
    """Pickle a result; an error that does not pickle comes back as its text."""
    try:
        return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as e:  # noqa: BLE001 - the unit's own outcome must still reach the driver
        if isinstance(value, UnitFailure):
            err = value.error
            return pickle.dumps(UnitFailure(EngineError(f"{type(err).__name__}: {err}")))
        return pickle.dumps(UnitFailure(EngineError(f"result of a unit did not pickle: {e}")))


class _RunUnits:
    """The mapInArrow function: unpickle each unit, run `fn`, pickle the result."""

    def __init__(self, fn: Callable[[Any], Any]):
        self.fn = fn

    def __call__(self, batches: Any) -> Any:
        for batch in batches:
            idx = batch.column(0).to_pylist()
            raw = batch.column(1).to_pylist()
            for i, payload in zip(idx, raw):
                result = self.fn(pickle.loads(payload))
                yield pa.RecordBatch.from_arrays(
                    [pa.array([i], pa.int64()), pa.array([dump_result(result)], pa.binary())],
                    names=["idx", "result"])


class SparkRunner:
    """Runs `fn` over units on a Spark session's executors; results in unit order.

    `weight(unit)` orders the units (heaviest first) so the longest ones start first."""

    def __init__(self, spark: Any, weight: Callable[[Any], float] | None = None):
        self.spark = spark
        self.weight = weight

    def map(self, fn: Callable[[T], R], units: Sequence[T]) -> list[R]:
        units = list(units)
        if not units:
            return []
        order = list(range(len(units)))
        if self.weight is not None:
            order.sort(key=lambda i: -self.weight(units[i]))  # type: ignore[misc]
        # position in the DataFrame = launch order; idx = place in the caller's list
        table = pa.table({
            "pos": pa.array(range(len(units)), pa.int64()),
            "idx": pa.array(order, pa.int64()),
            "unit": pa.array([pickle.dumps(units[i], protocol=pickle.HIGHEST_PROTOCOL)
                              for i in order], pa.binary()),
        })
        frame = (self.spark.createDataFrame(table)
                 .repartitionByRange(len(units), "pos")
                 .select("idx", "unit"))
        try:
            rows = frame.mapInArrow(_RunUnits(fn), _RESULT_SCHEMA).toArrow()
        except Exception as e:  # noqa: BLE001 - re-raised as the library error it carries
            reraise(e)
        results: dict[int, Any] = {}
        for i, payload in zip(rows.column("idx").to_pylist(), rows.column("result").to_pylist()):
            results.setdefault(i, pickle.loads(payload))
        missing = [i for i in range(len(units)) if i not in results]
        if missing:
            raise EngineError(f"Spark returned no result for {len(missing)} of "
                                  f"{len(units)} work units")
        return [results[i] for i in range(len(units))]

    def __repr__(self) -> str:
        return f"SparkRunner({self.spark!r})"
