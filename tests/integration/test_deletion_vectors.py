"""Deletion-vector tables: reads leave out the rows their vectors mark, a batch read of a
primary-key table sees compacted files only (as Java's), compaction rewrites a bucket leaving
no vector, and expiry keeps the index files a retained snapshot uses. The vectors are written
by `tests/support/deletion_vectors.py`, playing the part of Java's writers."""

from __future__ import annotations

import datetime as dt
import time

import numpy as np
import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.errors import CommitConflictError, CorruptFileError, UnsupportedError
from lakeformat.meta.deletion_vector import (
    decode_bitmap,
    deserialize_vector,
    encode_bitmap,
    serialize_vector,
)
from lakeformat.operation.scan import FileStoreScan
from lakeformat.schema.schema_change import SchemaChange
from tests.support.deletion_vectors import live_entries, lookup_compact, mark_deleted

KV = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])


def rows(t, **kw) -> list[tuple]:
    return sorted((r["dt"], r["id"], r["v"]) for r in t.read(**kw).to_pylist())


def batch(ids, tag: str, day: str = "d1") -> pa.Table:
    return pa.table({"dt": [day] * len(ids), "id": list(ids), "v": [f"{tag}{i}" for i in ids]},
                    schema=KV)


def index_files(t) -> set[str]:
    return {s.path.rsplit("/", 1)[-1]
            for s in t.file_io.list_status(t.file_io.join(t.path, "index"))}


def dv_table(catalog, name="db.t") -> lf.Table:
    """A deduplicate table in Java's deletion-vector state: a compacted file at the top level
    with vectors on the rows a later write replaced, that write at level 4."""
    t = catalog.create_table(name, KV, primary_keys=["dt", "id"], partition_keys=["dt"],
                             options={"bucket": "2", "deletion-vectors.modifiable": "true"})
    t.write(batch(range(20), "a"))
    t.compact(full=True)
    t.alter([SchemaChange.set_option("deletion-vectors.enabled", "true")])
    return catalog.get_table(name)


def write_level_0(catalog, t, data: pa.Table) -> None:
    """A level-0 file as Java's writer leaves it before its commit-time compaction: written
    with the option off, since lakeformat's writers refuse deletion-vector tables."""
    t.alter([SchemaChange.set_option("deletion-vectors.enabled", "false")])
    catalog.get_table(t.name).write(data)
    t.alter([SchemaChange.set_option("deletion-vectors.enabled", "true")])


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
def test_reads_leave_out_deleted_rows_and_uncompacted_level_0(catalog):
    t = dv_table(catalog)
    before = rows(t)
    assert len(before) == 20
    write_level_0(catalog, t, batch([3, 4, 25], "b"))
    t = catalog.get_table("db.t")
    assert rows(t) == before  # level 0 is not read: Java's batch scan skips it too
    lookup_compact(t)
    t = catalog.get_table("db.t")
    after = rows(t)
    assert ("d1", 3, "b3") in after and ("d1", 3, "a3") not in after and len(after) == 21
    # a Java DELETE: the row's position marked, nothing else written
    top = [e for e in live_entries(t) if e.file.level == 5]
    victim = top[0]
    mark_deleted(t, {victim.file.file_name: [0]})
    t = catalog.get_table("db.t")
    gone = set(after) - set(rows(t))
    assert len(gone) == 1 and len(rows(t)) == 20
    # merge-on-read sees level 0 too
    write_level_0(catalog, t, batch([7], "c"))
    t = catalog.get_table("db.t")
    assert ("d1", 7, "c7") not in rows(t)
    t.alter([SchemaChange.set_option("deletion-vectors.merge-on-read", "true")])
    t = catalog.get_table("db.t")
    assert ("d1", 7, "c7") in rows(t) and ("d1", 7, "a7") not in rows(t)


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


def test_compacting_some_files_keeps_the_others_vectors(catalog):
    t = catalog.create_table("db.logs", KV, partition_keys=["dt"],
                             options={"deletion-vectors.enabled": "true",
                                      "target-file-size": "1 mb"})
    t.write(pa.table({"dt": ["d1"] * 60_000, "id": np.arange(60_000),
                      "v": [f"x{i:08d}" * 2 for i in range(60_000)]}, schema=KV))
    big = live_entries(t)[0].file
    for i in range(3):
        t.write(batch(range(100 + i, 101 + i), "s"))
    small = [e.file for e in live_entries(t) if e.file.file_name != big.file_name]
    mark_deleted(t, {big.file_name: [1, 2], small[0].file_name: [0]})
    t = catalog.get_table("db.logs")
    want = rows(t)
    assert len(want) == 60_000 + 3 - 3
    t.compact(full=True)
    t = catalog.get_table("db.logs")
    assert rows(t) == want
    live = {e.file.file_name for e in live_entries(t)}
    dvs = FileStoreScan(t.file_io, t.path, t.table_schema).deletion_files(t.latest_snapshot())
    kept = {name for files in dvs.values() for name in files}
    if big.file_name in live:  # the big file stays: its vector is carried into a new index file
        assert kept == {big.file_name}
    else:
        assert kept == set()


# -- compaction ----------------------------------------------------------------------------------
def test_compaction_rewrites_deletion_vector_buckets_and_leaves_none(catalog):
    t = dv_table(catalog)
    write_level_0(catalog, t, batch([1, 2, 30], "b"))
    t = catalog.get_table("db.t")
    lookup_compact(t)
    t = catalog.get_table("db.t")
    mark_deleted(t, {[e for e in live_entries(t) if e.file.level == 5][0].file.file_name: [3]})
    t = catalog.get_table("db.t")
    want = rows(t)
    write_level_0(catalog, t, batch([40], "c"))
    t = catalog.get_table("db.t")
    assert rows(t) == want
    t.compact()  # a bucket with level-0 files is compacted whole into the top level
    t = catalog.get_table("db.t")
    assert rows(t) == sorted(want + [("d1", 40, "c40")])
    t.compact(full=True)
    t = catalog.get_table("db.t")
    assert all(e.file.level == 5 for e in live_entries(t))
    assert t.latest_snapshot().index_manifest is None
    assert rows(t) == sorted(want + [("d1", 40, "c40")])
    assert t.compact(full=True).total.buckets_compacted == 0  # nothing left to do


def test_a_vector_added_after_the_plan_refuses_the_compaction(catalog, monkeypatch):
    t = catalog.create_table("db.logs", KV, partition_keys=["dt"],
                             options={"deletion-vectors.enabled": "true"})
    for i in range(3):
        t.write(batch([i], "m"))
    from lakeformat.operation import compact_job

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
def test_primary_key_writes_and_64_bit_vectors_are_refused_naming_the_option(catalog):
    t = dv_table(catalog)
    snaps = len(t.snapshots())
    with pytest.raises(UnsupportedError, match="deletion-vectors.enabled=true"):
        t.write(batch([1], "z"))
    with pytest.raises(UnsupportedError, match="deletion-vectors.enabled=true"):
        t.delete(batch([1], "z").select(["dt", "id"]))
    t.alter([SchemaChange.set_option("deletion-vectors.bitmap64", "true")])
    t = catalog.get_table("db.t")
    with pytest.raises(UnsupportedError, match="deletion-vectors.bitmap64"):
        t.compact(full=True)
    assert len(t.snapshots()) == snaps  # an alter writes a schema, not a snapshot
