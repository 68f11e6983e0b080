"""remove_orphan_files: deletes exactly the old files nothing references, never what a
snapshot, tag or a commit made during the run needs, never schema/; refusals delete nothing.
Local disk (ages set with os.utime) and the moto S3 server (ages by moving the job's clock:
S3 objects cannot be back-dated). A cut-off too close or in the future (`@local_disk`) is
refused before anything is listed, so it runs on local disk only.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import subprocess
import sys
import time
import uuid

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat import clock
from lakeformat.meta.tag import TagManager
from lakeformat.operation.commit import CommitMessage, FileStoreCommit
from lakeformat.operation.maintain import orphan_files
from lakeformat.operation.scan import FileStoreScan

DAY = 86400
SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])


def rows(dt, ids, tag="a") -> pa.Table:
    return pa.table({"dt": [dt] * len(ids), "id": ids, "v": [f"{tag}{i}" for i in ids]},
                    schema=SCHEMA)


def make_table(catalog) -> lf.Table:
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                             options={"bucket": "2"})
    t.write(rows("2024-01-01", list(range(20))))
    t.write(rows("2024-01-02", list(range(10))))
    t.write(rows("2024-01-01", list(range(5)), tag="b"))
    return t


def files(t: lf.Table) -> set[str]:
    return {s.path for s in t.file_io.list_recursive(t.path)}


def snapshot_rows(t: lf.Table) -> dict:
    return {s.id: t.read(snapshot_id=s.id).sort_by([("dt", "ascending"), ("id", "ascending")])
            for s in t.snapshots()}


def plant(t: lf.Table) -> tuple[set[str], set[str]]:
    """(orphans a run may delete, junk it must never touch), all written now."""
    j = t.file_io.join
    orphans = {j(t.path, "dt=2024-01-01", "bucket-0", f"data-{uuid.uuid4()}-0.parquet"),
               j(t.path, "dt=2024-01-02", "bucket-1", f"changelog-{uuid.uuid4()}-0.parquet"),
               j(t.path, "manifest", f"manifest-{uuid.uuid4()}-0"),
               j(t.path, "manifest", f"manifest-list-{uuid.uuid4()}-0"),
               j(t.path, "statistics", f"stats-{uuid.uuid4()}-0"),
               j(t.path, "snapshot", f".snapshot-4.{uuid.uuid4().hex}.tmp"),
               j(t.path, "tag", f".tag-x.{uuid.uuid4().hex}.tmp"),
               j(t.path, "index", "index-orphan")}  # no index manifest lists it
    never = {j(t.path, "schema", f".schema-1.{uuid.uuid4().hex}.tmp"),
             j(t.path, "consumer", "consumer-junk.tmp"),
             j(t.path, "changelog", "junk"), j(t.path, "random", "file.txt"),
             j(t.path, "dt=2024-01-01", "not-a-bucket", "x.parquet"),
             j(t.path, "dt=2024-01-01", "bucket-0", "nested", "x.parquet")}
    for p in orphans | never:
        t.file_io.write_bytes(p, b"junk")
    return orphans, never


def age_all(t: lf.Table, seconds: float) -> None:
    when = time.time() - seconds
    for p in files(t):
        os.utime(p, (when, when))


#: a test of this module that never reaches store specifics: local disk only (module docstring)
local_disk = pytest.mark.parametrize("catalog", ["local"], indirect=True)


@pytest.fixture()
def later(monkeypatch):
    """Run the job as if two days had passed: every file written so far is old."""
    real = clock.now_millis
    monkeypatch.setattr(clock, "now_millis", lambda: real() + 2 * DAY * 1000)


def test_only_old_unreferenced_files_go_by_mtime(local_catalog):
    t = make_table(local_catalog)
    before_rows = snapshot_rows(t)
    orphans, never = plant(t)
    age_all(t, 3 * DAY)  # referenced files are old too: age alone never deletes
    young = t.file_io.join(t.path, "dt=2024-01-02", "bucket-0", "data-young-0.parquet")
    t.file_io.write_bytes(young, b"still being written")
    nearly = t.file_io.join(t.path, "manifest", "manifest-nearly-0")
    t.file_io.write_bytes(nearly, b"x")
    os.utime(nearly, (time.time() - 23 * 3600,) * 2)  # younger than the 1 day default
    all_files = files(t)

    plan = t.remove_orphan_files(dry_run=True)
    assert plan.dry_run and set(plan.deleted) == orphans
    assert files(t) == all_files
    res = t.remove_orphan_files()
    assert res.deleted == plan.deleted  # same files, same order
    assert (res.data_files_deleted, res.changelog_files_deleted, res.manifest_files_deleted,
            res.other_files_deleted) == (1, 1, 2, 4)
    assert res.bytes_deleted == 4 * len(orphans)
    assert (res.earliest_snapshot, res.latest_snapshot) == (1, 3)
    assert files(t) == all_files - orphans
    assert never | {young, nearly} <= files(t)
    # a 23 h old manifest is young for "1 d", old for "22 h"
    assert t.remove_orphan_files("1 d").deleted == []
    assert t.remove_orphan_files("22 h").deleted == [nearly]
    fresh = local_catalog.get_table("db.t")
    assert snapshot_rows(fresh) == before_rows


def test_clock_moved_on_local_and_s3(catalog, later):
    t = make_table(catalog)
    before_rows = snapshot_rows(t)
    orphans, never = plant(t)
    all_files = files(t)
    plan = t.remove_orphan_files(dry_run=True)
    assert set(plan.deleted) == orphans and files(t) == all_files
    res = t.remove_orphan_files()
    assert res.deleted == plan.deleted and files(t) == all_files - orphans
    assert never <= files(t)
    assert snapshot_rows(catalog.get_table("db.t")) == before_rows
    assert t.remove_orphan_files().deleted == []


def test_young_files_are_kept_without_moving_the_clock(catalog):
    t = make_table(catalog)
    plant(t)
    all_files = files(t)
    assert t.remove_orphan_files().deleted == [] and files(t) == all_files


@local_disk
def test_cutoffs_in_the_future_or_within_an_hour_are_refused(catalog, later):
    t = make_table(catalog)
    plant(t)
    all_files = files(t)
    now = dt.datetime.now() + dt.timedelta(days=2)  # the job's clock is 2 days ahead
    for value in (now + dt.timedelta(hours=1), now - dt.timedelta(minutes=30), "30 min",
                  dt.timedelta(minutes=59), dt.timedelta(hours=-1)):
        with pytest.raises(lf.InvalidOptionError, match="future|1 hour"):
            t.remove_orphan_files(value, dry_run=True)
        with pytest.raises(lf.InvalidOptionError, match="future|1 hour"):
            t.remove_orphan_files(value)
    assert files(t) == all_files


def test_nothing_referenced_but_data_files_is_refused(catalog, later):
    t = make_table(catalog)
    plant(t)
    for p in list(files(t)):
        if "/snapshot/" in p:
            t.file_io.delete(p)
    left = files(t)
    with pytest.raises(lf.LakeformatError, match="refusing"):
        t.remove_orphan_files()
    assert files(t) == left


def test_a_failed_read_deletes_nothing(catalog, later):
    t = make_table(catalog)
    plant(t)
    j, io = t.file_io.join, t.file_io
    left = files(t)
    snap = t.snapshots()[0]
    for path, damage in [(j(t.path, "tag", "tag-broken"), b"{not json"),
                         (j(t.path, "snapshot", "snapshot-2"), b"{}"),
                         (j(t.path, "manifest", snap.delta_manifest_list), None)]:
        saved = io.read_bytes(path) if io.exists(path) else None
        if damage is None:
            io.delete(path)
        else:
            io.write_bytes(path, damage)
        # another process's view: this one's metadata cache still holds the list it wrote
        # (served from there, its files would only be kept, never deleted)
        io.metadata_cache.clear()
        with pytest.raises(lf.LakeformatError, match="nothing deleted: cannot read"):
            t.remove_orphan_files()
        if saved is None:
            io.delete(path)
        else:
            io.write_bytes(path, saved)
        assert files(t) == left


def test_a_damaged_manifest_read_in_parallel_deletes_nothing(catalog, later):
    """Manifests are read several at once; any one failing aborts the whole run."""
    t = make_table(catalog)
    plant(t)
    left = files(t)
    scan = FileStoreScan(t.file_io, t.path, t.table_schema)
    metas = scan.data_manifests(t.latest_snapshot())
    assert len(metas) > 1  # the parallel path
    t.file_io.write_bytes(t.file_io.join(t.path, "manifest", metas[-1].file_name), b"not avro")
    with pytest.raises(lf.LakeformatError, match="nothing deleted: cannot read"):
        t.remove_orphan_files()
    assert files(t) == left


def test_a_tag_keeps_what_expired_snapshots_shared(catalog, later):
    t = make_table(catalog)
    TagManager(t.file_io, t.path).create("v1", t.snapshots()[0])
    tagged = t.read(tag="v1")
    tagged_files = {f["path"] for f in t.files(tag="v1")}
    t.write(rows("2024-01-01", [100]), overwrite=True)
    # as snapshot expiry would leave it: snapshots 1-3 gone, their files left to the tag
    for sid in (1, 2, 3):
        t.file_io.delete(t.snapshot_manager.snapshot_path(sid))
    latest = t.read()
    res = t.remove_orphan_files()
    assert not tagged_files & set(res.deleted)
    # the lists of snapshots 2 and 3 go; their data files stay: snapshot 4 names them
    assert res.manifest_files_deleted > 0 and res.data_files_deleted == 0
    fresh = catalog.get_table("db.t")
    assert fresh.read(tag="v1").sort_by("id").equals(tagged.sort_by("id"))
    assert fresh.read().equals(latest)


def test_a_snapshot_committed_during_the_scan_keeps_its_files(local_catalog, later,
                                                              monkeypatch):
    t = make_table(local_catalog)
    schema = t.table_schema
    entry = FileStoreScan(t.file_io, t.path, schema).live_entries(t.latest_snapshot())[0]
    src = next(f["path"] for f in t.files() if f["file_name"] == entry.file.file_name)
    folder = src.rsplit("/", 1)[0]
    # an old file a slow writer made long ago, committed only while the cleaner scans
    late = dataclasses.replace(entry.file, file_name=f"data-{uuid.uuid4()}-0.parquet")
    t.file_io.write_bytes(t.file_io.join(folder, late.file_name), t.file_io.read_bytes(src))
    before = t.read()
    real_refresh = orphan_files.ReferenceScan.refresh
    calls = []

    def refresh(self):
        n = real_refresh(self)
        if not calls:
            calls.append(1)
            FileStoreCommit(t.file_io, t.path, schema).commit([CommitMessage(
                entry.partition, entry.bucket, entry.total_buckets, new_files=[late],
                deleted_files=[entry.file])], kind="COMPACT")
        return n

    monkeypatch.setattr(orphan_files.ReferenceScan, "refresh", refresh)
    res = t.remove_orphan_files()
    assert calls and t.latest_snapshot().id == 4
    assert not any(late.file_name in p for p in res.deleted)
    key = [("dt", "ascending"), ("id", "ascending")]
    assert local_catalog.get_table("db.t").read().sort_by(key).equals(before.sort_by(key))


CRASHING_WRITER = """
import json, os, sys
import pyarrow as pa
import lakeformat as lf
uri, options = sys.argv[1], json.loads(sys.argv[2])
t = lf.Catalog(uri, options).get_table("db.t")
publish = t.file_io.write_if_absent
def crash(path, data):  # dies right before its snapshot would land: files, no snapshot
    if "/snapshot/snapshot-" in path:
        os._exit(3)
    return publish(path, data)
t.file_io.write_if_absent = crash
t.write(pa.table({"dt": ["2024-01-03"] * 3, "id": [1, 2, 3], "v": ["x", "y", "z"]}))
"""


def crash_a_writer(catalog) -> None:
    """A real writer process killed between writing its files and publishing its snapshot."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [os.path.dirname(os.path.dirname(lf.__file__)), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", CRASHING_WRITER, catalog.warehouse,
                          json.dumps(catalog.options)], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 3, out.stderr


def test_crashed_writer_files_go_only_with_the_retention_override(catalog):
    t = make_table(catalog)
    before_rows = snapshot_rows(t)
    before = files(t)
    crash_a_writer(catalog)
    crashed = files(t) - before
    assert any("dt=2024-01-03" in p for p in crashed)  # data files
    assert any("/manifest/" in p for p in crashed)  # and the manifests of its commit
    time.sleep(0.05)  # the cut-off is strictly after the crashed files' times
    for older_than in ("0 s", dt.timedelta(minutes=5), "59 min"):
        with pytest.raises(lf.InvalidOptionError, match="enforce_retention_duration=False"):
            t.remove_orphan_files(older_than)
    assert files(t) == before | crashed
    with pytest.raises(lf.InvalidOptionError, match="future"):
        t.remove_orphan_files(dt.timedelta(minutes=-5), enforce_retention_duration=False)
    plan = t.remove_orphan_files("0 s", dry_run=True, enforce_retention_duration=False)
    assert set(plan.deleted) == crashed and files(t) == before | crashed
    res = t.remove_orphan_files("0 s", enforce_retention_duration=False)
    assert set(res.deleted) == crashed
    assert files(t) == before
    assert snapshot_rows(catalog.get_table("db.t")) == before_rows
