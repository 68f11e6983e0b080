"""Record-level expiry between lakeformat and pypaimon 2.1.0: a table pypaimon writes with
`record-level.expire-time` is compacted by lakeformat (which drops the expired records as
Java's compaction does) and pypaimon reads what is left; in a deletion-vector table the
vector lakeformat writes for the expired row a new record replaces is read by pypaimon."""

from __future__ import annotations

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat import clock
from tests.support.pypaimon_helpers import (
    assert_same_rows,
    create_paimon_table,
    paimon_read,
    paimon_write,
)

NOW = 1_790_000_000
HOUR = 3600
SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("ts", pa.int32()), ("v", pa.string())])
OPTIONS = {"bucket": "1", "record-level.expire-time": "1 h", "record-level.time-field": "ts"}


@pytest.fixture
def now(monkeypatch):
    at = [NOW]
    monkeypatch.setattr(clock, "now_millis", lambda: at[0] * 1000)
    return at


def data(ids, times, v: str) -> pa.Table:
    return pa.table({"id": list(ids), "ts": list(times), "v": [v] * len(ids)}, schema=SCHEMA)


def test_pypaimon_reads_what_expiry_left(warehouse, paimon, now):
    table = create_paimon_table(paimon, "db.t", SCHEMA, ["id"], [], OPTIONS)
    paimon_write(table, data([1, 2, 3], [NOW - HOUR - 1, NOW - HOUR, None], "a"))
    paimon_write(table, data([4, 1], [NOW, NOW], "b"))
    lf.Catalog(warehouse).get_table("db.t").compact()
    want = [{"id": 1, "ts": NOW, "v": "b"}, {"id": 2, "ts": NOW - HOUR, "v": "a"},
            {"id": 3, "ts": None, "v": "a"}, {"id": 4, "ts": NOW, "v": "b"}]
    assert_same_rows(paimon_read(table), want, ["id"], "pypaimon after expiry")
    now[0] += 1  # id 2 is now one second past the boundary
    lf.Catalog(warehouse).get_table("db.t").compact()
    assert_same_rows(paimon_read(table), [r for r in want if r["id"] != 2], ["id"],
                     "pypaimon one second later")


def test_pypaimon_reads_the_vector_of_an_expired_row(warehouse, paimon, now):
    t = lf.Catalog(warehouse).create_table(
        "db.t", SCHEMA, primary_keys=["id"],
        options={**OPTIONS, "deletion-vectors.enabled": "true"})
    t.write(data(range(1, 301), [NOW] * 300, "a"))
    now[0] += 2 * HOUR
    t.write(data([1], [now[0]], "b"))  # its compaction finds id 1 expired in the top file
    assert sorted(f["level"] for f in t.files()) == [4, 5]
    want = [{"id": 1, "ts": now[0], "v": "b"}] + [{"id": i, "ts": NOW, "v": "a"}
                                                    for i in range(2, 301)]
    assert_same_rows(paimon_read(paimon.get_table("db.t")), want, ["id"], "pypaimon")
    assert_same_rows(t.read(), want, ["id"], "lakeformat")
