"""Dynamic-bucket (bucket = -1) primary-key tables between lakeformat and pypaimon 2.1.0: both
assign a key the same bucket (Java's HashBucketAssigner), each continues the other's HASH
index, reads agree, and expiry and orphan cleanup keep exactly the index files still used."""

from __future__ import annotations

import datetime as dt
import time
from typing import Any

import pytest

pytest.importorskip("pypaimon")  # collected only in the interop venv

import pyarrow as pa  # noqa: E402

from lakeformat.meta.index_manifest import IndexManifestFile  # noqa: E402
from tests.support.pypaimon_helpers import (  # noqa: E402
    create_paimon_table,
    paimon_live_files,
    paimon_read,
    paimon_write,
)

SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False),
                    pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
OPTIONS = {"bucket": "-1", "dynamic-bucket.target-row-num": "7"}


def batch(ids: range, day: str, tag: str) -> pa.Table:
    return pa.table({"dt": [day] * len(ids), "id": list(ids), "v": [f"{tag}{i}" for i in ids]},
                    schema=SCHEMA)


def rows(t: pa.Table) -> list[tuple]:
    return sorted((r["dt"], r["id"], r["v"]) for r in t.to_pylist())


def index_state(table: Any) -> dict[tuple[bytes, int], list[int]]:
    """(partition, bucket) -> sorted key hashes of the latest snapshot's HASH index."""
    idx = IndexManifestFile(table.file_io, table.path)
    snap = table.snapshot_manager.latest_snapshot()
    return {(e.partition, e.bucket): sorted(idx.read_hashes(e).tolist())
            for e in idx.read(snap.index_manifest)}


HISTORY = [(range(0, 10), "d1", "a"), (range(5, 20), "d1", "b"), (range(0, 4), "d2", "c"),
           (range(15, 30), "d1", "d")]


def test_both_assign_the_same_buckets_and_index(paimon, lake):
    theirs = create_paimon_table(paimon, "db.p", SCHEMA, ["dt", "id"], ["dt"], OPTIONS)
    mine = lake.create_table("db.l", SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                             options=OPTIONS)
    for ids, day, tag in HISTORY:
        paimon_write(theirs, batch(ids, day, tag))
        mine.write(batch(ids, day, tag))
    p = lake.get_table("db.p")
    assert index_state(mine) == index_state(p)
    assert rows(mine.read()) == rows(p.read()) == rows(paimon_read(paimon.get_table("db.l")))
    assert {(str(f["partition"]), f["bucket"]) for f in mine.files()} == {
        (str(f["partition"]), f["bucket"]) for f in p.files()}
    assert len(mine.read()) == 34  # 30 keys in d1 and 4 in d2: one row per key


def test_each_continues_the_others_index(paimon, lake):
    pt = create_paimon_table(paimon, "db.t", SCHEMA, ["dt", "id"], ["dt"], OPTIONS)
    paimon_write(pt, batch(range(0, 12), "d1", "p"))
    t = lake.get_table("db.t")
    t.write(batch(range(6, 20), "d1", "l"))  # 6..11 update pypaimon's keys, 12.. are new
    paimon_write(paimon.get_table("db.t"), batch(range(18, 25), "d1", "q"))
    got = rows(paimon_read(paimon.get_table("db.t")))
    assert got == rows(t.read())
    expected = {i: "p" for i in range(0, 6)} | {i: "l" for i in range(6, 18)} | {
        i: "q" for i in range(18, 25)}
    assert got == sorted(("d1", i, f"{tag}{i}") for i, tag in expected.items())
    # each key lives in one bucket: its rows never split across buckets
    files = paimon_live_files(paimon.get_table("db.t"))
    assert {f["bucket"] for f in files} == {0, 1, 2, 3}


def test_expiry_and_orphans_keep_the_live_index(paimon, lake):
    t = lake.create_table("db.t", SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                          options=OPTIONS)
    for ids, day, tag in HISTORY:
        t.write(batch(ids, day, tag))
    t.compact()
    before = index_state(t)
    idx_dir = t.file_io.join(t.path, "index")
    on_disk = {s.path for s in t.file_io.list_status(idx_dir)}
    r = t.expire_snapshots(retain_min=1, older_than=dt.timedelta(0))
    left = {s.path for s in t.file_io.list_status(idx_dir)}
    assert set(r.deleted) & on_disk == on_disk - left and len(left) == len(before)
    junk = t.file_io.join(idx_dir, "index-junk-0")
    t.file_io.write_bytes(junk, b"\x00\x00\x00\x01")
    time.sleep(0.02)
    orphans = t.remove_orphan_files(older_than="0 s", enforce_retention_duration=False)
    assert orphans.deleted == [junk]
    assert index_state(t) == before
    paimon_write(paimon.get_table("db.t"), batch(range(25, 40), "d1", "z"))
    assert rows(paimon_read(paimon.get_table("db.t"))) == rows(t.read())
    assert len(t.read()) == 44
