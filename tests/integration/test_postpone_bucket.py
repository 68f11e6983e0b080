"""Postpone-bucket tables (`bucket = -2`) through the public API: what a user sees in rows and
files after writes (postpone files, or real buckets for a batch write with
`postpone.batch-write-fixed-bucket`), reads before and after the compaction that assigns the
postpone records to buckets, merge engines, a second round, expiry, health, and refusals.

`test_postpone_round_trip` runs on local disk and on the moto S3 server (publishing, deletes
and expiry of the postpone files); the others read and write the same way and run on local disk.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.errors import LakeformatError

SCHEMA = pa.schema([pa.field("dt", pa.string(), False), pa.field("id", pa.int64(), False),
                    ("v", pa.string()), ("n", pa.int64())])

local_disk = pytest.mark.parametrize("catalog", ["local"], indirect=True)


def make(catalog, name="db.t", fixed=False, **options) -> lf.Table:
    opts = {"bucket": "-2", "postpone.batch-write-fixed-bucket": str(fixed).lower(), **options}
    return catalog.create_table(name, SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                                options=opts)


def rows(dt: str, ids, v: str, n=None) -> pa.Table:
    ids = list(ids)
    return pa.table({"dt": [dt] * len(ids), "id": ids, "v": [f"{v}{i}" for i in ids],
                     "n": n if n is not None else [i * 10 for i in ids]}, schema=SCHEMA)


def content(t: lf.Table) -> list[tuple]:
    got = t.read().sort_by([("dt", "ascending"), ("id", "ascending")])
    return [tuple(r.values()) for r in got.to_pylist()]


def postpone_files(t: lf.Table) -> list[dict]:
    return [f for f in t.files() if f["bucket"] == -2]


def real_files(t: lf.Table) -> list[dict]:
    return [f for f in t.files() if f["bucket"] >= 0]


def test_postpone_round_trip(catalog):
    """Writes land in bucket-postpone (Java's names, Avro, no sequence numbers) and stay
    invisible; a compaction assigns them to real buckets in one COMPACT snapshot; expiry then
    deletes the postpone files."""
    t = make(catalog, **{"postpone.default-bucket-num": "2"})
    t.write(rows("a", [3, 1, 2], "x"))
    r = t.write(rows("b", [1], "y"), commit_user="writer-1")
    files = postpone_files(t)
    assert len(files) == 2 and not real_files(t)
    for f in files:
        assert f["total_buckets"] == -2 and f["level"] == 0
        assert "/bucket-postpone/" in f["path"] and f["file_name"].endswith(".avro")
        assert f["min_sequence_number"] == f["max_sequence_number"] == -1
    named = [f for f in files if f["partition"] == {"dt": "b"}][0]["file_name"]
    assert named.startswith(f"data--u-{r.commit_user}-s-") and "-w-" in named
    assert t.read().num_rows == 0  # invisible until compacted

    result = t.compact()
    snap = t.latest_snapshot()
    assert result.snapshot_ids == [snap.id] and snap.commit_kind == "COMPACT"
    assert not postpone_files(t)
    assert {f["total_buckets"] for f in real_files(t)} == {2}
    assert {f["bucket"] for f in real_files(t)} <= {0, 1}
    assert content(t) == [("a", 1, "x1", 10), ("a", 2, "x2", 20), ("a", 3, "x3", 30),
                          ("b", 1, "y1", 10)]
    gone = [f["path"] for f in files]
    assert all(t.file_io.exists(p) for p in gone)
    t.expire_snapshots(retain_min=1, retain_max=1)
    assert not any(t.file_io.exists(p) for p in gone)
    assert content(t) == [("a", 1, "x1", 10), ("a", 2, "x2", 20), ("a", 3, "x3", 30),
                          ("b", 1, "y1", 10)]


@local_disk
def test_batch_write_fixed_bucket(catalog):
    """A batch write with postpone.batch-write-fixed-bucket (the default) writes real buckets:
    rows visible at once, each partition keeping the bucket count its files have."""
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                             options={"bucket": "-2", "postpone.default-bucket-num": "3"})
    t.write(rows("a", range(20), "x"))
    assert not postpone_files(t)
    assert {f["total_buckets"] for f in real_files(t)} == {3}
    assert {f["level"] for f in real_files(t)} == {0}
    t.alter([lf.SchemaChange.set_option("postpone.default-bucket-num", "5")])
    t.write(pa.concat_tables([rows("a", [1], "y"), rows("b", range(20), "z")]))
    totals = {(f["partition"]["dt"], f["total_buckets"]) for f in real_files(t)}
    assert totals == {("a", 3), ("b", 5)}
    assert content(t)[:3] == [("a", 0, "x0", 0), ("a", 1, "y1", 10), ("a", 2, "x2", 20)]
    assert len(content(t)) == 40


@local_disk
def test_fixed_bucket_count_estimated_from_the_batch(catalog):
    """Without postpone.default-bucket-num a new partition's bucket count comes from the batch:
    rows over postpone.target-row-num-per-bucket, rounded up to a power of two and capped by
    postpone.batch-write-fixed-bucket.max-parallelism (Java's decideFixedBucketNum)."""
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                             options={"bucket": "-2", "postpone.target-row-num-per-bucket": "2",
                                      "postpone.batch-write-fixed-bucket.max-parallelism": "8"})
    t.write(pa.concat_tables([rows("a", range(5), "x"), rows("b", range(40), "x")]))
    totals = {(f["partition"]["dt"], f["total_buckets"]) for f in real_files(t)}
    assert totals == {("a", 4), ("b", 8)}


@local_disk
def test_overwrite_decides_the_bucket_count_anew(catalog):
    t = make(catalog, fixed=True, **{"postpone.default-bucket-num": "2"})
    t.write(rows("a", range(6), "x"))
    t.alter([lf.SchemaChange.set_option("postpone.batch-write-fixed-bucket", "false")])
    t.write(rows("a", [1], "p"))
    t.alter([lf.SchemaChange.set_option("postpone.batch-write-fixed-bucket", "true"),
             lf.SchemaChange.set_option("postpone.default-bucket-num", "4")])
    t.write(rows("a", [7, 8], "o"), overwrite=True)
    assert not postpone_files(t)
    assert {f["total_buckets"] for f in real_files(t)} == {4}
    assert content(t) == [("a", 7, "o7", 70), ("a", 8, "o8", 80)]


@local_disk
def test_compaction_into_default_and_existing_bucket_counts(catalog):
    """A partition with real buckets keeps their count; a new one takes
    postpone.default-bucket-num; keys land where a fixed-bucket table hashes them."""
    t = make(catalog, fixed=True, **{"postpone.default-bucket-num": "2"})
    t.write(rows("a", range(10), "old"))
    t.alter([lf.SchemaChange.set_option("postpone.batch-write-fixed-bucket", "false"),
             lf.SchemaChange.set_option("postpone.default-bucket-num", "4")])
    t.write(pa.concat_tables([rows("a", range(5, 15), "new"), rows("b", range(30), "b")]))
    assert len(content(t)) == 10
    t.compact()
    totals = {(f["partition"]["dt"], f["total_buckets"]) for f in real_files(t)}
    assert totals == {("a", 2), ("b", 4)}
    got = content(t)
    assert got[:15] == [("a", i, f"{'old' if i < 5 else 'new'}{i}", i * 10) for i in range(15)]
    assert len(got) == 45
    ref = catalog.create_table("db.ref", SCHEMA, primary_keys=["dt", "id"],
                               partition_keys=["dt"], options={"bucket": "4"})
    ref.write(rows("b", range(30), "b"))

    def per_bucket(table):
        out: dict[int, int] = {}
        for f in table.files():
            if f["partition"] == {"dt": "b"}:
                out[f["bucket"]] = out.get(f["bucket"], 0) + f["row_count"]
        return out
    assert per_bucket(t) == per_bucket(ref)


@local_disk
def test_later_postpone_records_win(catalog):
    """Postpone files are replayed oldest first, each in its own order: a later record of a key
    wins over earlier ones and over the bucket's earlier data; a delete removes the key."""
    t = make(catalog)
    t.write(rows("a", [1, 2, 3], "v1"))
    t.compact()
    t.write(pa.table({"dt": ["a"] * 3, "id": [1, 1, 4], "v": ["first", "second", "four"],
                      "n": [1, 2, 4]}, schema=SCHEMA))
    t.write(rows("a", [4], "v3"))
    t.delete(pa.table({"dt": ["a"], "id": [2]}))
    assert content(t) == [("a", 1, "v11", 10), ("a", 2, "v12", 20), ("a", 3, "v13", 30)]
    t.compact()
    assert content(t) == [("a", 1, "second", 2), ("a", 3, "v13", 30), ("a", 4, "v34", 40)]
    assert not postpone_files(t)


@local_disk
def test_sequence_field_decides_over_arrival(catalog):
    t = make(catalog, **{"sequence.field": "n"})
    t.write(rows("a", [1], "new", n=[5]))
    t.write(rows("a", [1], "old", n=[3]))
    t.compact()
    assert content(t) == [("a", 1, "new1", 5)]


@local_disk
def test_partial_update(catalog):
    t = make(catalog, **{"merge-engine": "partial-update"})
    t.write(pa.table({"dt": ["a", "a"], "id": [1, 2], "v": ["v1", None], "n": [None, 20]},
                     schema=SCHEMA))
    t.compact()
    t.write(pa.table({"dt": ["a", "a"], "id": [1, 2], "v": [None, "v2"], "n": [10, None]},
                     schema=SCHEMA))
    t.write(pa.table({"dt": ["a"], "id": [1], "v": ["v1b"], "n": [None]}, schema=SCHEMA))
    assert content(t) == [("a", 1, "v1", None), ("a", 2, None, 20)]
    t.compact()
    assert content(t) == [("a", 1, "v1b", 10), ("a", 2, "v2", 20)]


@local_disk
def test_second_round_compacts_level_0(catalog):
    """Every compaction adds level-0 files to the buckets; once a bucket has
    num-sorted-run.compaction-trigger runs, the same compaction merges them (Java's universal
    pick on the buckets it wrote); the postpone files go either way."""
    t = make(catalog, **{"postpone.default-bucket-num": "1",
                         "num-sorted-run.compaction-trigger": "3"})
    for round_ in range(4):
        t.write(rows("a", range(round_, round_ + 5), f"r{round_}-"))
        t.compact()
        assert not postpone_files(t)
    levels = [f["level"] for f in real_files(t)]
    assert max(levels) > 0 and len(levels) < 4
    assert content(t) == [("a", i, f"r{min(i, 3)}-{i}", i * 10) for i in range(8)]


@local_disk
def test_compaction_compacts_fixed_bucket_level_0(catalog):
    """Level-0 files a fixed-bucket batch write left in real buckets are picked by the postpone
    compaction too (Java's getLevel0Buckets)."""
    t = make(catalog, fixed=True, **{"postpone.default-bucket-num": "1",
                                     "num-sorted-run.compaction-trigger": "2"})
    t.write(rows("a", [1, 2], "x"))
    t.write(rows("a", [2, 3], "y"))
    assert [f["level"] for f in real_files(t)] == [0, 0]
    result = t.compact()
    assert result.snapshot_ids
    assert [f["level"] for f in real_files(t)] != [0, 0]
    assert content(t) == [("a", 1, "x1", 10), ("a", 2, "y2", 20), ("a", 3, "y3", 30)]


@local_disk
def test_nothing_to_compact(catalog):
    t = make(catalog)
    assert t.compact().snapshot_ids == []
    t.write(rows("a", [1], "x"))
    t.compact()
    assert t.compact().snapshot_ids == []


@local_disk
def test_health_reports_postpone_files_as_due(catalog):
    t = make(catalog)
    t.write(rows("a", [1, 2], "x"))
    due = t.maintenance_due()
    compact = [a for a in due.actions if a.kind == "compact"]
    assert compact and "postpone files" in compact[0].reason
    lf.health.perform(t, compact[0])
    assert not postpone_files(t) and len(content(t)) == 2
    assert not [a for a in t.maintenance_due().actions if a.kind == "compact"]


@local_disk
def test_refusals(catalog):
    t = catalog.create_table("db.append", pa.schema([("id", pa.int64())]),
                             options={"bucket": "-2"})
    with pytest.raises(LakeformatError, match="bucket=-2 without a primary key"):
        t.write(pa.table({"id": [1]}))
    m = make(catalog, name="db.mor", **{"postpone.merge-on-read": "true"})
    m.write(rows("a", [1], "x"))
    with pytest.raises(LakeformatError, match="postpone.merge-on-read"):
        m.read()


@local_disk
@pytest.mark.parametrize("meanwhile", ["postpone-write", "compaction"])
def test_commit_during_compaction(catalog, monkeypatch, meanwhile):
    """Postpone files written while a compaction runs stay for the next one; a compaction that
    lost its postpone files to another one fails closed (its new files deleted, rows intact)."""
    from lakeformat.operation.compact import CompactJob
    from lakeformat.operation.compact import postpone as postpone_compaction

    t = make(catalog, **{"postpone.default-bucket-num": "1"})
    t.write(rows("a", [1, 2], "p"))
    other = catalog.get_table("db.t")
    pick = postpone_compaction.PostponeCompaction._pick

    def racing(self, *args):
        monkeypatch.setattr(postpone_compaction.PostponeCompaction, "_pick", pick)
        if meanwhile == "postpone-write":
            other.write(rows("a", [2, 3], "q"))
        else:  # another process's compaction (this process holds the maintenance lock)
            CompactJob(other.file_io, other.path, other.table_schema, "db.t").run()
        return pick(self, *args)

    monkeypatch.setattr(postpone_compaction.PostponeCompaction, "_pick", racing)
    result = t.compact()
    if meanwhile == "postpone-write":
        assert result.snapshot_ids and not result.failed
        assert content(t) == [("a", 1, "p1", 10), ("a", 2, "p2", 20)]
        assert len(postpone_files(t)) == 1
        t.compact()
        assert content(t) == [("a", 1, "p1", 10), ("a", 2, "q2", 20), ("a", 3, "q3", 30)]
    else:
        assert not result.snapshot_ids and list(result.failed) == ["dt=a"]
        assert content(t) == [("a", 1, "p1", 10), ("a", 2, "p2", 20)]
        live = {f["file_name"] for f in t.files()}
        bucket_dir = real_files(t)[0]["path"].rsplit("/", 1)[0]
        assert {s.path.rsplit("/", 1)[-1] for s in t.file_io.list_status(bucket_dir)} == live
