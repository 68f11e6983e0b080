"""Compaction on S3 (moto server over HTTP) beside live writers and another compaction."""

from __future__ import annotations

import threading

import numpy as np
import pyarrow as pa

import lakeformat as lf

SCHEMA = pa.schema([pa.field("dt", pa.string(), False), pa.field("id", pa.int64(), False),
                    ("v", pa.int64())])


def batch(dt: str, ids, v: int) -> pa.Table:
    ids = np.asarray(ids, dtype=np.int64)
    return pa.table({"dt": [dt] * len(ids), "id": ids, "v": np.full(len(ids), v)},
                    schema=SCHEMA)


def setup(s3_warehouse) -> tuple[lf.Catalog, lf.Table]:
    uri, options = s3_warehouse
    cat = lf.Catalog(uri, options)
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                         options={"bucket": "2", "commit.max-retries": "50",
                                  "commit.min-retry-wait": "5 ms",
                                  "commit.max-retry-wait": "50 ms"})
    return cat, t


def data_objects(t: lf.Table) -> set[str]:
    return {s.path.rsplit("/", 1)[-1] for s in t.file_io.list_recursive(t.path)
            if s.path.rsplit("/", 1)[-1].startswith("data-")}


def test_writers_appending_during_compaction_lose_nothing(s3_warehouse):
    cat, t = setup(s3_warehouse)
    for i in range(4):
        t.write(batch("a", range(i * 100, i * 100 + 400), i))
        t.write(batch("b", range(i * 100, i * 100 + 400), i))
    expected: dict[tuple[str, int], int] = {}
    for r in t.read().to_pylist():
        expected[(r["dt"], r["id"])] = r["v"]
    stop = threading.Event()
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        w = cat.get_table("db.t")
        k = 0
        try:
            while not stop.is_set() and k < 12:
                ids = range(10_000 + n * 1000 + k * 10, 10_000 + n * 1000 + k * 10 + 10)
                w.write(batch("a", ids, 1000 + k))
                for i in ids:
                    expected[("a", i)] = 1000 + k
                k += 1
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(2)]
    for th in threads:
        th.start()
    results = []
    try:
        for _ in range(3):
            results.append(cat.get_table("db.t").compact())
    finally:
        stop.set()
        for th in threads:
            th.join()
    assert not errors, errors
    assert any(r.snapshot_ids for r in results)
    got = {(r["dt"], r["id"]): r["v"] for r in cat.get_table("db.t").read().to_pylist()}
    assert got == expected
    # whatever failed left nothing behind; a final run compacts everything
    final = cat.get_table("db.t").compact()
    assert not final.failed
    t = cat.get_table("db.t")
    assert {f["level"] for f in t.files()} == {5}
    live = {f["file_name"] for f in t.files()}
    # files no snapshot references only if compaction removed them from the live set
    from lakeformat.operation.scan import FileStoreScan
    referenced = set()
    scan = FileStoreScan(t.file_io, t.path, t.table_schema)
    for s in t.snapshots():
        referenced |= {e.file.file_name for e in scan.live_entries(s)}
    assert live <= data_objects(t) <= referenced
    got = {(r["dt"], r["id"]): r["v"] for r in t.read().to_pylist()}
    assert got == expected


def test_two_compactions_at_once_at_most_one_commits_per_bucket(s3_warehouse):
    cat, t = setup(s3_warehouse)
    for i in range(3):
        t.write(batch("a", range(i, 300 + i), i))
        t.write(batch("b", range(i, 300 + i), i))
    expected = t.read().sort_by([("dt", "ascending"), ("id", "ascending")])
    results: list = [None, None]
    barrier = threading.Barrier(2)

    def run(i: int) -> None:
        tbl = cat.get_table("db.t")
        barrier.wait()
        results[i] = tbl.compact()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    t = cat.get_table("db.t")
    compact_snaps = [s for s in t.snapshots() if s.commit_kind == "COMPACT"]
    committed = sum(r.total.buckets_compacted for r in results)
    assert committed == 4  # each of the 4 buckets compacted exactly once
    assert 1 <= len(compact_snaps) <= 3
    assert t.read().sort_by([("dt", "ascending"), ("id", "ascending")]).equals(expected)
    live = {f["file_name"] for f in t.files()}
    assert {f["level"] for f in t.files()} == {5} and len(live) == 4
    # the loser's files were deleted: only live files and the inputs of the winner remain
    from lakeformat.operation.scan import FileStoreScan
    scan = FileStoreScan(t.file_io, t.path, t.table_schema)
    referenced = set()
    for s in t.snapshots():
        referenced |= {e.file.file_name for e in scan.live_entries(s)}
    assert data_objects(t) <= referenced
    assert t.compact().snapshot_ids == []
