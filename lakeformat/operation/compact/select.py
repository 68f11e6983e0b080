"""Which partitions a compaction touches: explicit partitions, a `where` filter on partition
columns, and `partition_idle_time` (as Paimon's compact action offers them)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import pyarrow.compute as pc

from lakeformat import clock
from lakeformat.errors import InvalidArgumentError
from lakeformat.expressions import Filter, dnf_terms, partition_predicate
from lakeformat.meta.partition import typed_partition_value
from lakeformat.operation.scan import PartitionPredicate
from lakeformat.options import parse_duration
from lakeformat.schema.table_schema import TableSchema


def select_partitions(schema: TableSchema, partitions: Sequence[dict[str, Any]] | None,
                      where: Filter) -> PartitionPredicate | None:
    keys = list(schema.partition_keys)
    preds: list[PartitionPredicate] = []
    if partitions:
        if not keys:
            raise InvalidArgumentError("partitions given but the table is not partitioned")
        specs = []
        for spec in partitions:
            unknown = [k for k in spec if k not in keys]
            if unknown:
                raise InvalidArgumentError(f"partition spec {spec} names non-partition "
                                           f"columns {unknown}; partition keys are {keys}")
            specs.append({k: typed_partition_value(schema, k, v) for k, v in spec.items()})
        preds.append(lambda values: any(all(values.get(k) == v for k, v in s.items())
                                        for s in specs))
    if where is not None:
        if isinstance(where, pc.Expression):
            raise InvalidArgumentError("compaction `where` takes DNF tuples on partition "
                                       "columns, e.g. [('dt', '>=', '2024-01-01')]")
        for conj in dnf_terms(where):
            for col, _, _ in conj:
                if col not in keys:
                    raise InvalidArgumentError(f"compaction `where` may only use partition "
                                               f"columns {keys}; got {col!r}")
        typed = [[(c, op, [typed_partition_value(schema, c, x) for x in v]
                   if op in ("in", "not in") else typed_partition_value(schema, c, v))
                  for c, op, v in conj] for conj in dnf_terms(where)]
        pred = partition_predicate(typed, keys)
        if pred is not None:
            preds.append(pred)
    if not preds:
        return None
    return lambda values: all(p(values) for p in preds)


def idle_before(idle: Any) -> int | None:
    """Cut-off (stored creation-time millis) for `partition_idle_time`."""
    if idle is None:
        return None
    if not isinstance(idle, timedelta):
        idle = parse_duration(str(idle), "partition_idle_time")
    return clock.local_millis_now() - int(idle.total_seconds() * 1000)

