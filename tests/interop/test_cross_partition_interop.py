"""Cross-partition upsert tables (bucket = -1, primary key without the partition column)
written by lakeformat and read by pypaimon 2.1.0: moved keys are read once, in their new
partition; partial-update rows land in the key's old partition; first-row keeps the first;
deletes by key are seen."""

from __future__ import annotations

import pytest

pytest.importorskip("pypaimon")  # collected only in the interop venv

import pyarrow as pa  # noqa: E402

from tests.support.pypaimon_helpers import paimon_live_files, paimon_read  # noqa: E402

SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False),
                    pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def batch(items: list[tuple]) -> pa.Table:
    return pa.table({"dt": [i[0] for i in items], "id": [i[1] for i in items],
                     "v": [i[2] for i in items]}, schema=SCHEMA)


def rows(t: pa.Table) -> list[tuple]:
    return sorted((r["dt"], r["id"], r["v"]) for r in t.to_pylist())


@pytest.mark.parametrize("engine", ["deduplicate", "partial-update", "first-row"])
def test_pypaimon_reads_moved_keys_once(paimon, lake, engine):
    t = lake.create_table("db.t", SCHEMA, primary_keys=["id"], partition_keys=["dt"],
                          options={"bucket": "-1", "merge-engine": engine,
                                   "dynamic-bucket.target-row-num": "4"})
    t.write(batch([("d1", i, f"a{i}") for i in range(10)]))
    t.write(batch([("d2", 1, "b1"), ("d2", 2, "b2"), ("d1", 3, "b3"), ("d2", 1, "c1"),
                   ("d3", 20, "n")]))
    if engine == "deduplicate":  # pypaimon refuses partial-update's remove-on-delete
        t.delete(pa.table({"id": [5, 99]}))
    mine = rows(t.read())
    assert len({r[1] for r in mine}) == len(mine)  # one row per key
    if engine == "first-row":  # pypaimon reads a first-row table's compacted files only
        t.compact(full=True)
    theirs = rows(paimon_read(paimon.get_table("db.t")))
    assert theirs == mine
    if engine == "deduplicate":
        assert ("d2", 1, "c1") in theirs and ("d2", 2, "b2") in theirs
        assert 5 not in {r[1] for r in theirs}
    elif engine == "partial-update":
        assert ("d1", 1, "c1") in theirs and ("d1", 2, "b2") in theirs
    else:
        assert ("d1", 1, "a1") in theirs and ("d1", 2, "a2") in theirs
    t.compact(full=True)
    assert rows(paimon_read(paimon.get_table("db.t"))) == mine
    files = paimon_live_files(paimon.get_table("db.t"))
    assert {f["bucket"] for f in files} <= {0, 1, 2}
