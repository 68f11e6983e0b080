"""Append tables (no primary key): what a user writes comes back as written, files look as
Java writes them, compaction follows Java's append rules, and maintenance works as for
primary-key tables. Refusals name themselves and leave the table as it was.

Files as Java writes them, and expiry, orphan removal and tags (deletes and listing), run on
local disk and on the moto S3 server. Reads with projections and filters, overwrites, schema
merging and the compaction rules (`@local_disk`, and the tests on `local_catalog`) are the same
above either store, on local disk only; their S3 reads and writes are the ones the primary-key
tests make on S3 (`test_table.py`, `test_read_batches.py`, `test_compact_s3.py`).
"""

from __future__ import annotations

import datetime as dt
import time

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import lakeformat as lf
from lakeformat.errors import InvalidOptionError, SchemaMismatchError, UnsupportedError
from lakeformat.meta.binary_row import EMPTY_ROW
from lakeformat.operation.scan import FileStoreScan

LOGS = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("msg", pa.string())])
NOW = dt.timedelta(0)


def batch(i: int, days=("d1", "d2")) -> pa.Table:
    return pa.table({"dt": [d for d in days for _ in range(3)],
                     "id": [i * 10 + k for _ in days for k in range(3)],
                     "msg": [f"{d}/{i}/{k}" for d in days for k in range(3)]}, schema=LOGS)


def live(t) -> list:
    return FileStoreScan(t.file_io, t.path, t.table_schema).live_entries(
        t.snapshot_manager.latest_snapshot())


def rows(t, **kw) -> list[dict]:
    return sorted(t.read(**kw).to_pylist(), key=lambda r: (r["dt"], r["id"]))


def logs(catalog, name="db.logs", **options) -> lf.Table:
    return catalog.create_table(name, LOGS, partition_keys=["dt"], options=options or None)


#: a test of this module that never reaches store specifics: local disk only (module docstring)
local_disk = pytest.mark.parametrize("catalog", ["local"], indirect=True)


# -- write and read --------------------------------------------------------------------------------
def test_unaware_table_writes_what_java_writes(catalog):
    t = logs(catalog)
    assert t.table_schema.primary_keys == () and "bucket" not in t.table_schema.options
    expected = []
    for i in range(3):
        t.write(batch(i))
        expected += batch(i).to_pylist()
    assert rows(t) == sorted(expected, key=lambda r: (r["dt"], r["id"]))
    entries = live(t)
    assert len(entries) == 6 and {(e.bucket, e.total_buckets) for e in entries} == {(0, -1)}
    for e in entries:
        f = e.file
        assert f.min_key == f.max_key == EMPTY_ROW and f.key_stats.null_counts == ()
        assert (f.min_sequence_number, f.max_sequence_number) == (0, 2)  # each write from 0
        assert f.level == 0 and f.delete_row_count == 0 and f.row_count == 3
    path = t.inspect.files().column("file_path")[0].as_py()
    names = pq.read_schema(t.file_io.open_input(path)).names
    assert names == ["dt", "id", "msg"]  # the table columns only, no system column


@local_disk
def test_projection_filter_and_streaming_reads(catalog):
    t = logs(catalog)
    for i in range(4):
        t.write(batch(i))
    got = t.read(columns=["msg"], filter=(pc.field("id") >= 30) & (pc.field("dt") == "d2"))
    assert sorted(got.column("msg").to_pylist()) == ["d2/3/0", "d2/3/1", "d2/3/2"]
    assert t.read(filter="id < 10 and dt = 'd1'").num_rows == 3
    streamed = pa.Table.from_batches(list(t.read_batches()))
    assert streamed.num_rows == 24 and streamed.schema.names == ["dt", "id", "msg"]


def test_bucketed_table_hashes_by_bucket_key_and_keeps_write_order(local_catalog):
    t = local_catalog.create_table("db.b", LOGS, options={"bucket": "2", "bucket-key": "id"})
    for i in range(3):
        t.write(pa.table({"dt": ["x"] * 4, "id": [1, 2, 3, 4], "msg": [f"{i}"] * 4},
                         schema=LOGS))
    entries = live(t)
    assert {e.bucket for e in entries} == {0, 1} and {e.total_buckets for e in entries} == {2}
    by_id = {}
    for r in t.read().to_pylist():
        by_id.setdefault(r["id"], []).append(r["msg"])
    assert by_id == {k: ["0", "1", "2"] for k in (1, 2, 3, 4)}  # write order per bucket
    per_bucket = {}
    for e in entries:
        per_bucket.setdefault(e.bucket, []).append(
            (e.file.min_sequence_number, e.file.max_sequence_number))
    for ranges in per_bucket.values():  # each bucket continues its numbers, as Java does
        ranges.sort()
        assert ranges[0][0] == 0
        assert all(b[0] == a[1] + 1 for a, b in zip(ranges, ranges[1:]))


@local_disk
def test_overwrite_merge_schema_and_added_columns(catalog):
    t = logs(catalog)
    t.write(batch(0))
    t.write(batch(1, days=("d2",)), overwrite=True)
    assert [r["msg"] for r in rows(t)] == ["d1/0/0", "d1/0/1", "d1/0/2",
                                           "d2/1/0", "d2/1/1", "d2/1/2"]
    wider = batch(2, days=("d3",)).append_column("level", pa.array(["warn"] * 3))
    t.write(wider, merge_schema=True)
    assert t.table_schema.field_names == ["dt", "id", "msg", "level"]
    got = rows(t)
    assert [r["level"] for r in got] == [None] * 6 + ["warn"] * 3


# -- refusals ----------------------------------------------------------------------------------
def test_refusals_name_themselves_and_change_nothing(local_catalog, tmp_path):
    t = logs(local_catalog)
    t.write(batch(0))
    snaps = [s.id for s in t.snapshots()]
    with pytest.raises(UnsupportedError, match="append table has no primary key"):
        t.delete(pa.table({"id": [1]}))
    with pytest.raises(SchemaMismatchError, match="append table has no primary key"):
        t.delete(where="id = 1")
    kinds = local_catalog.create_table("db.k", LOGS.append(pa.field("op", pa.string())),
                                       options={"rowkind.field": "op"})
    with pytest.raises(SchemaMismatchError, match=r"takes \+I rows only; 1 rows"):
        kinds.write(pa.table({"dt": ["a", "a"], "id": [1, 2], "msg": ["x", "y"],
                              "op": ["+I", "-D"]}))
    assert kinds.snapshots() == []
    with pytest.raises(InvalidOptionError, match="bucket-key"):
        local_catalog.create_table("db.nokey", LOGS, options={"bucket": "4"})
    with pytest.raises(InvalidOptionError, match="bucket = -1"):
        local_catalog.create_table("db.unaware", LOGS, options={"bucket-key": "id"})
    with pytest.raises(InvalidOptionError, match="changelog-producer"):
        local_catalog.create_table("db.cl", LOGS, options={"changelog-producer": "input"})
    assert not any(local_catalog.table_exists(n) for n in ("db.nokey", "db.unaware", "db.cl"))
    assert [s.id for s in t.snapshots()] == snaps and t.read().num_rows == 6
    # a `where` on partition columns drops whole partitions, as for any table
    res = t.delete(where="dt = 'd1'")
    assert res.commit_kind == "OVERWRITE" and {r["dt"] for r in t.read().to_pylist()} == {"d2"}


# -- compaction ------------------------------------------------------------------------------------
@local_disk
def test_unaware_minor_compaction_waits_for_min_file_num(catalog):
    t = logs(catalog, **{"compaction.min.file-num": "4"})
    for i in range(3):
        t.write(batch(i))
    before = rows(t)
    r = t.compact(full=False)
    assert r.snapshot_ids == [] and len(live(t)) == 6  # 3 small files per partition: wait
    t.write(batch(3, days=("d1",)))
    r = t.compact(full=False)
    assert len(r.snapshot_ids) == 1 and t.snapshots()[-1].commit_kind == "COMPACT"
    files = {e.partition: [] for e in live(t)}
    for e in live(t):
        files[e.partition].append(e.file)
    counts = sorted(len(v) for v in files.values())
    assert counts == [1, 3]  # d1 had 4 small files: one now; d2 still waits with 3
    merged = [f for v in files.values() if len(v) == 1 for f in v][0]
    assert merged.row_count == 12 and merged.file_source == 1 and merged.level == 0
    assert rows(t) == sorted(before + batch(3, days=("d1",)).to_pylist(),
                             key=lambda r: (r["dt"], r["id"]))
    # full compaction also takes what is left when two or more small files remain
    r = t.compact(full=True)
    assert sorted(len([e for e in live(t) if e.partition == p]) for p in files) == [1, 1]


def test_unaware_compaction_leaves_large_files_and_packs_bins(local_catalog):
    # target 8 KiB: files of ~1 KB are small (below 0.7 x target); the big write rolls large ones
    t = local_catalog.create_table("db.p", LOGS, options={
        "target-file-size": "8 kb", "source.split.open-file-cost": "1 b",
        "compaction.min.file-num": "50"})
    big = pa.table({"dt": ["x"] * 8000, "id": list(range(8000)),
                    "msg": [f"{i:08d}-{i * 7919 % 100003}" for i in range(8000)]}, schema=LOGS)
    t.write(big)
    # rolled at the target: every file but the tail is large (the tail may be small)
    large = {e.file.file_name for e in live(t) if e.file.file_size >= 0.7 * 8192}
    assert len(large) >= len(live(t)) - 1 and len(large) >= 3
    for i in range(30):
        t.write(pa.table({"dt": ["x"] * 30, "id": [i] * 30,
                          "msg": [f"{i}-{k}-{'z' * 20}" for k in range(30)]}, schema=LOGS))
    small = [e.file for e in live(t) if e.file.file_name not in large]
    before = rows(t)
    r = t.compact(full=False)
    after = live(t)
    assert large <= {e.file.file_name for e in after}  # large files are never rewritten
    # bins close at twice the target: each rewritten group held >= 16 KiB of small files
    rewritten = r.total.files_in
    assert 0 < rewritten <= len(small) and r.total.files_out < rewritten
    assert rows(t) == before


def test_bucketed_full_and_minor_follow_java(local_catalog):
    t = local_catalog.create_table("db.b", LOGS, options={
        "bucket": "1", "bucket-key": "id", "compaction.min.file-num": "3"})
    t.write(batch(0))
    t.write(batch(1))
    assert t.compact(full=True).snapshot_ids == []  # fewer than 3 files: nothing
    assert t.compact(full=False).snapshot_ids == []  # 2 < compaction.min.file-num
    t.write(batch(2))
    before = t.read().to_pylist()
    r = t.compact(full=False)
    (entry,) = live(t)
    assert r.total.files_in == 3 and entry.file.row_count == 18
    assert (entry.file.min_sequence_number, entry.file.max_sequence_number) == (0, 17)
    assert t.read().to_pylist() == before  # the bucket's rows in write order
    for i in range(3, 5):
        t.write(batch(i))
    r = t.compact(full=True)
    assert r.total.files_in == 3 and len(live(t)) == 1 and t.read().num_rows == 30


def test_bucketed_full_keeps_large_head_files_unless_forced(local_catalog):
    t = local_catalog.create_table("db.b", LOGS, options={
        "bucket": "1", "bucket-key": "id", "target-file-size": "4 kb"})
    t.write(pa.table({"dt": ["x"] * 2000, "id": list(range(2000)),
                      "msg": [f"{i * 7919 % 100003:06d}" for i in range(2000)]}, schema=LOGS))
    head = {e.file.file_name for e in live(t)}
    for i in range(3):
        t.write(batch(i))
    t.compact(full=True)
    names = {e.file.file_name for e in live(t)}
    assert head <= names and len(names) == len(head) + 1
    t.alter(lf.SchemaChange.set_option("compaction.force-rewrite-all-files", "true"))
    t.compact(full=True)
    assert not (head & {e.file.file_name for e in live(t)})
    assert t.read().num_rows == 2018


# -- maintenance -----------------------------------------------------------------------------------
def test_expiry_orphans_and_tags_on_an_append_table(catalog):
    t = logs(catalog)
    for i in range(4):
        t.write(batch(i))
    t.create_tag("before-compact", snapshot_id=4)
    t.compact(full=True)
    old = t.inspect.files(snapshot_id=4).column("file_path").to_pylist()
    assert len(old) == 8
    r = t.expire_snapshots(retain_min=1, older_than=NOW)
    assert r.snapshots_deleted == [1, 2, 3, 4]
    assert all(t.file_io.exists(p) for p in old)  # the tag keeps its files
    assert t.read(tag="before-compact").num_rows == 24
    t.delete_tag("before-compact")  # and deleting it deletes what nothing else uses
    assert not any(t.file_io.exists(p) for p in old)
    junk = t.file_io.join(t.path, "dt=d1", "bucket-0", "data-junk-0.parquet")
    t.file_io.write_bytes(junk, b"x")
    time.sleep(0.02)
    r = t.remove_orphan_files(older_than="0 s", enforce_retention_duration=False)
    assert r.deleted == [junk]
    assert rows(t) == sorted([r for i in range(4) for r in batch(i).to_pylist()],
                             key=lambda r: (r["dt"], r["id"]))


def test_two_groups_of_one_bucket_count_once_in_the_report(local_catalog):
    t = local_catalog.create_table("db.g", LOGS, options={
        "target-file-size": "4 kb", "source.split.open-file-cost": "1 b"})
    for i in range(24):
        t.write(pa.table({"dt": ["x"] * 30, "id": [i] * 30,
                          "msg": [f"{i}-{k}-{'z' * 20}" for k in range(30)]}, schema=LOGS))
    r = t.compact(full=True)
    total = r.total
    assert total.files_in == 24 and total.files_out >= 2  # several bins, one bucket
    assert total.buckets_compacted == 1
    assert total.sorted_runs_before == 24 and total.sorted_runs_after == len(live(t))
