"""The two-stream partial-update scenario: an orders stream and a payments stream each write
only their own columns of one table, ordered by their own sequence group. Shared by the
integration test of subset writes and the pypaimon interop test of the same table."""

from __future__ import annotations

import pyarrow as pa

TWO_STREAMS = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    ("a", pa.string()), ("b", pa.int64()), ("a_ts", pa.int64()),
    ("c", pa.string()), ("d", pa.int64()), ("c_ts", pa.int64()),
])
ORDERS = pa.schema([pa.field("id", pa.int64(), nullable=False), ("a", pa.string()),
                    ("b", pa.int64()), ("a_ts", pa.int64())])
PAYMENTS = pa.schema([pa.field("id", pa.int64(), nullable=False), ("c", pa.string()),
                      ("d", pa.int64()), ("c_ts", pa.int64())])
COLUMNS = TWO_STREAMS.names


def orders(rows: list[tuple]) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(ORDERS.names, r)) for r in rows], schema=ORDERS)


def payments(rows: list[tuple]) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(PAYMENTS.names, r)) for r in rows], schema=PAYMENTS)


#: (stream, rows, rows of the table after the write) for the two-stream scenario
STEPS = [
    (orders, [(1, "a1", 1, 10), (2, "a2", 2, 10)],
     {1: ("a1", 1, 10, None, None, None), 2: ("a2", 2, 10, None, None, None)}),
    (payments, [(1, "c1", 1, 5), (3, "c3", 3, 5)],
     {1: ("a1", 1, 10, "c1", 1, 5), 2: ("a2", 2, 10, None, None, None),
      3: (None, None, None, "c3", 3, 5)}),
    # an older a_ts arriving later does not overwrite; a newer one replaces its whole group
    (orders, [(1, "old", 0, 5), (2, "a2new", None, 20)],
     {1: ("a1", 1, 10, "c1", 1, 5), 2: ("a2new", None, 20, None, None, None),
      3: (None, None, None, "c3", 3, 5)}),
    # a NULL ordering value leaves its group alone; an equal one wins (>=)
    (payments, [(3, "ignored", 9, None), (1, "c1b", None, 5)],
     {1: ("a1", 1, 10, "c1b", None, 5), 2: ("a2new", None, 20, None, None, None),
      3: (None, None, None, "c3", 3, 5)}),
]
