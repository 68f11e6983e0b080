"""Deletion-vector tables: reads leave out the rows their vectors mark, a batch read of a
primary-key table sees compacted files only (as Java's), compaction rewrites a bucket leaving
no vector, and expiry keeps the index files a retained snapshot uses. The vectors are written
by `tests/support/deletion_vectors.py`, playing the part of Java's writers.

The index files live beside the data files, so writing them (a lookup compaction marking the
rows it replaces), a vector committed under a compaction's feet, and expiry and orphan removal
keeping the index files retained snapshots use run on local disk and on the moto S3 server.
How vectors apply to reads and compactions and the 64-bit refusal (`@local_disk`) are the same
above either store, on local disk only.
"""

from __future__ import annotations

import datetime as dt
import time

import numpy as np
import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.errors import CorruptFileError, UnsupportedError
from lakeformat.meta.deletion_vector import (
    decode_bitmap,
    deserialize_vector,
    encode_bitmap,
    frame_cardinality,
    serialize_vector,
)
from lakeformat.operation.scan import FileStoreScan
from lakeformat.schema.schema_change import SchemaChange
from tests.support.deletion_vectors import live_entries, mark_deleted

KV = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])


def rows(t, **kw) -> list[tuple]:
    return sorted((r["dt"], r["id"], r["v"]) for r in t.read(**kw).to_pylist())


def batch(ids, tag: str, day: str = "d1") -> pa.Table:
    return pa.table({"dt": [day] * len(ids), "id": list(ids), "v": [f"{tag}{i}" for i in ids]},
                    schema=KV)


def index_files(t) -> set[str]:
    return {s.path.rsplit("/", 1)[-1]
            for s in t.file_io.list_status(t.file_io.join(t.path, "index"))}


def dv_table(catalog, name="db.t", **options) -> lf.Table:
    return catalog.create_table(name, KV, primary_keys=["dt", "id"], partition_keys=["dt"],
                                options={"bucket": "2", "deletion-vectors.enabled": "true",
                                         **options})


def vectors(t) -> dict[str, int]:
    """Data file name -> deleted rows, of the latest snapshot."""
    dvs = FileStoreScan(t.file_io, t.path, t.table_schema).deletion_files(t.latest_snapshot())
    return {name: d.cardinality for files in dvs.values() for name, d in files.items()}


#: a test of this module that never reaches store specifics: local disk only (module docstring)
local_disk = pytest.mark.parametrize("catalog", ["local"], indirect=True)


# -- the bytes -----------------------------------------------------------------------------------
@pytest.mark.parametrize("positions", [
    [], [0], [0, 1, 2, 3, 10], list(range(100_000)), list(range(0, 10_000, 2)),
    [5, 65536 * 7 + 3, 2**31 - 1], list(range(70_000, 70_010)) + list(range(200_000, 204_097))])
def test_vectors_round_trip_through_java_layout(positions):
    frame = serialize_vector(np.array(positions, dtype=np.int64))
    size = int.from_bytes(frame[:4], "big")
    assert len(frame) == 4 + size + 4
    assert int.from_bytes(frame[4:8], "big") == 1581511376  # BitmapDeletionVector.MAGIC_NUMBER
    assert deserialize_vector(frame, "f", size).tolist() == sorted(set(positions))
    assert frame_cardinality(frame) == len(set(positions))
    with pytest.raises(CorruptFileError, match="checksum"):
        deserialize_vector(frame[:-1] + bytes([frame[-1] ^ 1]), "f")


def test_roaring_containers_as_java_serializes_them():
    # array container: cookie 12346, 1 container (key 0, cardinality-1 2), offset 16, values
    assert encode_bitmap(np.array([1, 5, 9])) == bytes.fromhex(
        "3a300000" "01000000" "0000" "0200" "10000000" "0100" "0500" "0900")
    # a run of 10 after runOptimize: cookie 12347 | (1-1)<<16, run flags, header, no offsets
    assert encode_bitmap(np.arange(10)) == bytes.fromhex(
        "3b300000" "01" "0000" "0900" "0100" "0000" "0900")
    bits = encode_bitmap(np.arange(0, 20_000, 2))  # 10,000 values: a bitmap container
    assert len(bits) == 16 + 8192
    assert decode_bitmap(bits).tolist() == list(range(0, 20_000, 2))


# -- reads ---------------------------------------------------------------------------------------
def test_writes_compact_level_0_and_mark_the_rows_they_replace(catalog):
    # file sizes fall far apart (first write >> second >> the delete), so universal
    # compaction's size ratio never picks the upper runs and each write is forced up alone
    t = dv_table(catalog)
    res = t.write(batch(range(400), "a"))
    assert res.compaction_snapshot_ids == [res.snapshot_id + 1]  # Java's lookup-wait
    assert all(e.file.level > 0 for e in live_entries(t)) and vectors(t) == {}
    res = t.write(batch([3, 4, 425, *range(500, 560)], "b"))
    assert len(res.compaction_snapshot_ids) == 1
    assert all(e.file.level > 0 for e in live_entries(t))
    assert sum(vectors(t).values()) == 2  # the old rows of 3 and 4
    t.delete(batch([5, 425], "").select(["dt", "id"]))
    assert sum(vectors(t).values()) == 4  # retracts leave vectors, not -D rows
    assert all(e.file.delete_row_count == 0 for e in live_entries(t))
    want = [("d1", i, "b" + str(i) if i in (3, 4) else f"a{i}") for i in range(400) if i != 5]
    want = sorted(want + [("d1", i, f"b{i}") for i in range(500, 560)])
    assert rows(t) == want
    t.write(batch([1000], "c"), commit_user="u", commit_identifier=7)
    again = t.write(batch([1000], "c"), commit_user="u", commit_identifier=7)
    assert again.already_committed and rows(t) == sorted(want + [("d1", 1000, "c1000")])


@local_disk
def test_level_0_is_read_with_merge_on_read_only(catalog):
    t = dv_table(catalog, **{"write-only": "true"})  # a writer that leaves compaction to a job
    t.write(batch(range(10), "a"))
    assert rows(t) == [] and {e.file.level for e in live_entries(t)} == {0}
    t.alter([SchemaChange.set_option("deletion-vectors.merge-on-read", "true")])
    assert len(rows(catalog.get_table("db.t"))) == 10
    t.alter([SchemaChange.remove_option("deletion-vectors.merge-on-read")])
    t = catalog.get_table("db.t")
    t.compact(full=False)
    assert len(rows(t)) == 10 and {e.file.level for e in live_entries(t)} == {5}


@local_disk
def test_a_java_delete_marks_a_row(catalog):
    t = dv_table(catalog)
    t.write(batch(range(20), "a"))
    top = live_entries(t)[0]
    mark_deleted(t, {top.file.file_name: [0]})  # what a Spark DELETE leaves
    t = catalog.get_table("db.t")
    assert len(rows(t)) == 19
    t.write(batch([100], "z"))  # the next lookup compaction keeps the vector
    assert len(rows(t)) == 20 and sum(vectors(t).values()) == 1


@local_disk
def test_append_table_vectors_apply_to_reads_and_compaction(catalog):
    t = catalog.create_table("db.logs", KV, partition_keys=["dt"],
                             options={"deletion-vectors.enabled": "true"})
    for i in range(3):
        t.write(batch(range(i * 10, i * 10 + 10), "m"))  # appends are written as usual
    files = sorted(live_entries(t), key=lambda e: e.file.creation_time)
    mark_deleted(t, {files[0].file.file_name: [0, 9], files[2].file.file_name: [5]})
    t = catalog.get_table("db.logs")
    expected = sorted(set(range(30)) - {0, 9, 25})
    assert [r[1] for r in rows(t)] == expected
    index_before = index_files(t)
    assert len(index_before) == 1
    res = t.compact(full=True)
    assert res.total.buckets_compacted == 1
    t = catalog.get_table("db.logs")
    assert [r[1] for r in rows(t)] == expected
    assert len(live_entries(t)) == 1
    assert t.latest_snapshot().index_manifest is None  # no vector outlives its files


@local_disk
def test_compacting_some_files_keeps_the_others_vectors(catalog):
    t = catalog.create_table("db.logs", KV, partition_keys=["dt"],
                             options={"deletion-vectors.enabled": "true",
                                      "target-file-size": "16 kb"})
    t.write(pa.table({"dt": ["d1"] * 60_000, "id": np.arange(60_000),
                      "v": [f"x{i:08d}" * 2 for i in range(60_000)]}, schema=KV))
    big = max((e.file for e in live_entries(t)), key=lambda f: f.file_size)
    for i in range(4):  # small files are packed in pairs (each counts the 4 MB open cost)
        t.write(batch(range(100 + i, 101 + i), "s"))
    small = [e.file for e in live_entries(t) if e.file.row_count == 1]
    assert len(small) == 4
    mark_deleted(t, {big.file_name: [1, 2], small[0].file_name: [0]})  # one index file
    t = catalog.get_table("db.logs")
    scan = FileStoreScan(t.file_io, t.path, t.table_schema)
    before = scan.deletion_files(t.latest_snapshot())
    want = rows(t)
    t.compact(full=True)
    t = catalog.get_table("db.logs")
    assert rows(t) == want
    live = {e.file.file_name for e in live_entries(t)}
    assert big.file_name in live and not live & {f.file_name for f in small}
    after = scan.deletion_files(t.latest_snapshot())
    kept = {name: d for files in after.values() for name, d in files.items()}
    assert set(kept) == {big.file_name}  # the small file's vector went with it
    old = [d for files in before.values() for name, d in files.items()
           if name == big.file_name][0]
    assert kept[big.file_name].index_file != old.index_file  # carried into a new index file
    assert kept[big.file_name].cardinality == 2


# -- compaction ----------------------------------------------------------------------------------
@local_disk
def test_full_compaction_leaves_no_vector(catalog):
    t = dv_table(catalog)
    t.write(batch(range(30), "a"))
    for i in range(3):
        t.write(batch(range(i, 30, 4), f"u{i}"))
    t.write(batch(range(10), "b", day="d2"))
    assert vectors(t)
    want = rows(t)
    t.compact(full=True)
    t = catalog.get_table("db.t")
    assert all(e.file.level == 5 for e in live_entries(t))
    assert t.latest_snapshot().index_manifest is None
    assert rows(t) == want
    assert t.compact(full=True).total.buckets_compacted == 0  # nothing left to do


def test_a_vector_added_after_the_plan_refuses_the_compaction(catalog, monkeypatch):
    t = catalog.create_table("db.logs", KV, partition_keys=["dt"],
                             options={"deletion-vectors.enabled": "true"})
    for i in range(3):
        t.write(batch([i], "m"))
    from lakeformat.operation.compact import job as compact_job

    real = compact_job.CompactJob.commit
    first = live_entries(t)[0].file.file_name

    def racing(self, outcomes, failed):
        mark_deleted(catalog.get_table("db.logs"), {first: [0]})  # Java deletes a row meanwhile
        return real(self, outcomes, failed)

    monkeypatch.setattr(compact_job.CompactJob, "commit", racing)
    snapshots = len(t.snapshots())
    res = t.compact(full=True)
    t = catalog.get_table("db.logs")
    assert res.total.buckets_compacted == 0 and res.failed
    assert len(t.snapshots()) == snapshots + 1  # only the delete landed
    assert len(rows(t)) == 2  # the deleted row stays deleted


# -- maintenance ---------------------------------------------------------------------------------
def test_expiry_and_orphans_keep_the_index_files_retained_snapshots_use(catalog):
    t = catalog.create_table("db.logs", KV, partition_keys=["dt"],
                             options={"deletion-vectors.enabled": "true"})
    for i in range(2):
        t.write(batch(range(i * 5, i * 5 + 5), "m"))
    f0 = live_entries(t)[0].file.file_name
    mark_deleted(t, {f0: [1]})
    t = catalog.get_table("db.logs")
    first_index = index_files(t)
    mark_deleted(t, {f0: [2]})  # a second vector for the file: a new index file
    t = catalog.get_table("db.logs")
    assert len(index_files(t)) == 2
    want = rows(t)
    stray = t.file_io.join(t.path, "index", "index-00000000-dead-0")
    t.file_io.write_bytes(stray, b"\x01")  # a failed commit's index file
    time.sleep(0.05)
    res = t.remove_orphan_files(older_than=dt.timedelta(0), enforce_retention_duration=False)
    assert any(p.endswith("index-00000000-dead-0") for p in res.deleted)
    assert len(index_files(t)) == 2  # both are referenced by snapshots
    t.expire_snapshots(retain_max=1, retain_min=1)
    t = catalog.get_table("db.logs")
    left = index_files(t)
    assert len(left) == 1 and not (left & first_index)
    assert rows(t) == want


# -- refusals --------------------------------------------------------------------------------------
@local_disk
def test_64_bit_vectors_are_refused_naming_the_option(catalog):
    t = dv_table(catalog, **{"deletion-vectors.bitmap64": "true"})
    with pytest.raises(UnsupportedError, match="deletion-vectors.bitmap64"):
        t.write(batch([1], "z"))
    with pytest.raises(UnsupportedError, match="deletion-vectors.bitmap64"):
        t.compact(full=True)
    assert t.snapshots() == []
