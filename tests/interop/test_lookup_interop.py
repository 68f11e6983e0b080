"""Lookup tables between lakeformat and pypaimon 2.1.0: pypaimon reads the deletion vectors
lakeformat's lookup compactions leave (primary-key tables) and those a DELETE leaves on append
files, every retained snapshot alike; lookup-changelog tables read the same; a table pypaimon
writes with deletion vectors enabled is compacted by lakeformat and read back by pypaimon."""

from __future__ import annotations

import random
from typing import Any

import pytest

pytest.importorskip("pypaimon")  # collected only in the interop venv

import pyarrow as pa  # noqa: E402

from lakeformat.operation.scan import FileStoreScan  # noqa: E402
from tests.support.deletion_vectors import live_entries, mark_deleted  # noqa: E402
from tests.support.pypaimon_helpers import (  # noqa: E402
    create_paimon_table,
    paimon_read,
    paimon_write,
)

SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False),
                    pa.field("id", pa.int64(), nullable=False), ("v", pa.string()),
                    ("n", pa.int64())])


def batch(ids, day: str, tag: str, n: int = 1) -> pa.Table:
    ids = list(ids)
    return pa.table({"dt": [day] * len(ids), "id": ids, "v": [f"{tag}{i}" for i in ids],
                     "n": [n] * len(ids)}, schema=SCHEMA)


def rows(t: pa.Table) -> list[tuple]:
    return sorted((r["dt"], r["id"], r["v"], r["n"]) for r in t.to_pylist())


def vectors(t: Any) -> int:
    dvs = FileStoreScan(t.file_io, t.path, t.table_schema).deletion_files(t.latest_snapshot())
    return sum(d.cardinality or 0 for files in dvs.values() for d in files.values())


def same_everywhere(t: Any, paimon: Any, name: str) -> None:
    """Every retained snapshot reads the same through both libraries."""
    pt = paimon.get_table(name)
    for snap in t.snapshots():
        assert rows(paimon_read(pt, snap.id)) == rows(t.read(snapshot_id=snap.id)), snap.id


@pytest.mark.parametrize("engine", ["deduplicate", "partial-update"])
def test_pypaimon_reads_lakeformat_deletion_vector_tables(paimon, lake, engine):
    t = lake.create_table("db.dv", SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                          options={"bucket": "2", "deletion-vectors.enabled": "true",
                                   "merge-engine": engine})
    rng = random.Random(3)
    t.write(batch(range(300), "d1", "a"))
    for step in range(4):
        ids = rng.sample(range(350), 40)
        t.write(batch(ids, rng.choice(["d1", "d2"]), f"s{step}", step))
    if engine == "deduplicate":
        t.delete(batch(range(0, 300, 50), "d1", "").select(["dt", "id"]))
    assert vectors(t) > 0 and all(e.file.level > 0 for e in live_entries(t))
    same_everywhere(t, paimon, "db.dv")
    t.compact(full=True)
    assert vectors(t) == 0
    same_everywhere(t, paimon, "db.dv")


@pytest.mark.parametrize("engine", ["deduplicate", "partial-update", "aggregation"])
def test_pypaimon_reads_a_lookup_changelog_table(paimon, lake, engine):
    aggregate = {"fields.n.aggregate-function": "sum",
                 "fields.v.aggregate-function": "last_non_null_value"}
    t = lake.create_table("db.lk", SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                          options={"bucket": "1", "changelog-producer": "lookup",
                                   "merge-engine": engine,
                                   **(aggregate if engine == "aggregation" else {})})
    t.write(batch(range(500), "d1", "a"))
    for i in range(3):
        t.write(batch(range(0, 500, 2 + i), "d1", f"b{i}", 10))
    if engine == "aggregation":
        # a key's older results above level 0 are not merged again (Java's
        # LookupMergeFunction); pypaimon 2.1.0 merges every level and would count them twice,
        # so it is not the reference here
        got = {r["id"]: r["n"] for r in t.read().to_pylist()}
        assert (got[0], got[6], got[3], got[1]) == (31, 21, 11, 1)  # each added once
        return
    same_everywhere(t, paimon, "db.lk")


def test_pypaimon_reads_append_files_with_deletion_vectors(paimon, lake):
    t = lake.create_table("db.logs", SCHEMA, partition_keys=["dt"],
                          options={"deletion-vectors.enabled": "true"})
    for i in range(3):
        t.write(batch(range(i * 10, i * 10 + 10), "d1", "m"))
    files = sorted(live_entries(t), key=lambda e: e.file.creation_time)
    mark_deleted(t, {files[0].file.file_name: [0, 3], files[2].file.file_name: [9]})
    t = lake.get_table("db.logs")
    assert t.read().num_rows == 27
    same_everywhere(t, paimon, "db.logs")
    t.compact(full=True)
    same_everywhere(t, paimon, "db.logs")


def test_lakeformat_compacts_what_pypaimon_writes_with_deletion_vectors(paimon, lake):
    pt = create_paimon_table(paimon, "db.pw", SCHEMA, ["dt", "id"], ["dt"],
                             {"bucket": "1", "deletion-vectors.enabled": "true"})
    paimon_write(pt, batch(range(20), "d1", "a"))
    paimon_write(pt, batch(range(10, 30), "d1", "b"))
    t = lake.get_table("db.pw")
    # pypaimon leaves level-0 files: a batch read sees none of them until compaction
    assert rows(t.read()) == rows(paimon_read(paimon.get_table("db.pw")))
    t.compact(full=False)
    t = lake.get_table("db.pw")
    want = [("d1", i, ("b" if i >= 10 else "a") + str(i), 1) for i in range(30)]
    assert rows(t.read()) == want
    assert rows(paimon_read(paimon.get_table("db.pw"))) == want
