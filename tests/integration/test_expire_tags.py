"""Snapshot expiry, tags and rollback: Paimon's rules, through the public API."""

from __future__ import annotations

import datetime as dt
import os

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.meta.consumer import ConsumerManager

NOW = dt.timedelta(0)  # older_than=0: every snapshot's successor counts as old


@pytest.fixture()
def catalog(tmp_path) -> lf.Catalog:
    cat = lf.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    return cat


def make(catalog, n: int, **options) -> lf.Table:
    t = catalog.create_table("db.t", pa.schema([("id", pa.int64()), ("v", pa.int64())]),
                             primary_keys=["id"], options={"bucket": "2", **options})
    for i in range(n):
        t.write(pa.table({"id": [i % 4, 100 + i], "v": [i, i]}))
    return t


def all_files(t: lf.Table) -> set[str]:
    return {s.path for s in t.file_io.list_recursive(t.path)}


def snapshot_reads(t: lf.Table) -> dict[int, list]:
    return {s.id: sorted(t.read(snapshot_id=s.id).to_pylist(), key=lambda r: r["id"])
            for s in t.snapshots()}


def test_retain_min_max_and_limit(catalog):
    t = make(catalog, 12)
    r = t.expire_snapshots(retain_min=5, older_than=NOW)  # default limit 10 per run
    assert r.snapshots_deleted == [1, 2, 3, 4, 5, 6, 7] and r.earliest_snapshot == 8
    r = t.expire_snapshots(retain_min=1, retain_max=3, max_deletes=2)
    # retain_max expires regardless of time, but the limit caps one run at 2 snapshots
    assert r.snapshots_deleted == [8, 9]
    r = t.expire_snapshots(retain_min=1, retain_max=3, max_deletes=10)
    assert [s.id for s in t.snapshots()] == [10, 11, 12] and r.snapshots_deleted == []
    with open(os.path.join(t.path, "snapshot", "EARLIEST")) as f:
        assert f.read() == "10"
    with pytest.raises(lf.InvalidOptionError):
        t.expire_snapshots(retain_min=0)
    with pytest.raises(lf.InvalidOptionError):
        t.expire_snapshots(retain_min=5, retain_max=3)


def test_time_retained_checks_the_next_snapshot(catalog):
    t = make(catalog, 6)
    times = [s.time_millis for s in t.snapshots()]
    # cut-off between snapshot 3 and 4: snapshots 1, 2 expire (their successors are older),
    # snapshot 3 stays because snapshot 4 is not older than the cut-off
    if times[3] < times[2] + 2:
        pytest.skip("snapshots 3 and 4 committed within the same millisecond")
    cut = dt.datetime.fromtimestamp((times[2] + 1.5) / 1000)
    r = t.expire_snapshots(retain_min=1, older_than=cut)
    assert r.snapshots_deleted == [1, 2]
    # the default snapshot.time-retained (1 h) keeps everything this young
    assert t.expire_snapshots(retain_min=1).snapshots_deleted == []


def test_options_give_the_defaults(catalog):
    t = make(catalog, 6, **{"snapshot.num-retained.min": "2", "snapshot.time-retained": "0 s",
                            "snapshot.expire.limit": "3"})
    assert t.expire_snapshots().snapshots_deleted == [1, 2, 3]
    assert t.expire_snapshots().snapshots_deleted == [4]


def test_consumer_pins_snapshots(catalog):
    t = make(catalog, 8)
    ConsumerManager(t.file_io, t.path).set("job-1", 3)
    assert t.expire_snapshots(retain_min=1, older_than=NOW).snapshots_deleted == [1, 2]
    ConsumerManager(t.file_io, t.path).set("job-1", 8)
    assert t.expire_snapshots(retain_min=1, older_than=NOW).snapshots_deleted == [
        3, 4, 5, 6, 7]


def test_expiry_deletes_only_unreferenced_files_and_dry_run_matches(catalog):
    t = make(catalog, 4)
    overwritten = {f["path"] for f in t.files()}
    t.write(pa.table({"id": [0, 1], "v": [9, 9]}), overwrite=True)  # snapshot 5 drops all
    t.write(pa.table({"id": [7], "v": [7]}))
    reads = snapshot_reads(t)
    before = all_files(t)
    dry = t.expire_snapshots(retain_min=2, older_than=NOW, dry_run=True)
    assert all_files(t) == before  # a dry run deletes nothing
    real = t.expire_snapshots(retain_min=2, older_than=NOW)
    assert real.deleted == dry.deleted and real.snapshots_deleted == [1, 2, 3, 4]
    after = all_files(t)
    assert before - after == set(real.deleted)
    # exactly the files the overwrite removed: nothing live in snapshots 5 and 6
    assert real.data_files_deleted == len(overwritten)
    assert overwritten <= set(real.deleted)
    for sid in (5, 6):
        assert sorted(t.read(snapshot_id=sid).to_pylist(), key=lambda r: r["id"]) == reads[sid]
    with pytest.raises(lf.LakeformatError, match="does not exist"):
        t.read(snapshot_id=4)
    assert real.bytes_deleted > 0 and "deleted 4 snapshots" in str(real)
    assert real.to_dict()["earliest_snapshot"] == 5


def test_tags_keep_files_and_delete_tag_frees_them(catalog):
    t = make(catalog, 3)
    t.create_tag("before_overwrite")
    tag_files = {f["path"] for f in t.files(tag="before_overwrite")}
    tagged = sorted(t.read(tag="before_overwrite").to_pylist(), key=lambda r: r["id"])
    t.write(pa.table({"id": [50], "v": [50]}), overwrite=True)
    t.write(pa.table({"id": [51], "v": [51]}))
    r = t.expire_snapshots(retain_min=1, older_than=NOW)
    assert r.snapshots_deleted == [1, 2, 3, 4] and r.data_files_deleted == 0
    assert sorted(t.read(tag="before_overwrite").to_pylist(), key=lambda r: r["id"]) == tagged
    [info] = t.list_tags()
    assert info.name == "before_overwrite" and info.snapshot_id == 3
    before = all_files(t)
    dry = t.delete_tag("before_overwrite", dry_run=True)
    assert all_files(t) == before
    res = t.delete_tag("before_overwrite")
    assert res.deleted == dry.deleted and res.data_files_deleted == len(tag_files)
    assert tag_files <= set(res.deleted)
    assert before - all_files(t) == set(res.deleted)
    assert t.list_tags() == []
    assert sorted(r["id"] for r in t.read().to_pylist()) == [50, 51]


def test_delete_tag_of_live_snapshot_only_removes_the_tag(catalog):
    t = make(catalog, 2)
    t.create_tag("a", 1)
    t.create_tag("b", 1)
    before = all_files(t)
    res = t.delete_tag("a")
    assert res.data_files_deleted == 0 and len(res.deleted) == 1
    assert before - all_files(t) == set(res.deleted)
    t.expire_snapshots(retain_min=1, older_than=NOW)
    res = t.delete_tag("b")  # snapshot 1 expired, but its files are still live in snapshot 2
    assert res.data_files_deleted == 0
    assert t.read().num_rows == 4


def test_tag_errors(catalog):
    t = make(catalog, 2)
    t.create_tag("x")
    with pytest.raises(lf.LakeformatError, match="already exists"):
        t.create_tag("x")
    with pytest.raises(lf.InvalidOptionError):
        t.create_tag("12")
    with pytest.raises(lf.InvalidOptionError):
        t.create_tag("a/b")
    with pytest.raises(lf.LakeformatError, match="does not exist"):
        t.create_tag("y", snapshot_id=9)
    with pytest.raises(lf.LakeformatError, match="does not exist"):
        t.delete_tag("nope")
    t.create_tag("ttl", time_retained="7 d")
    ttl = {x.name: x for x in t.list_tags()}["ttl"]
    assert ttl.time_retained.total_seconds() == 7 * 86400
    assert ttl.to_dict()["time_retained_s"] == 7 * 86400


def test_tag_info_prints_and_converts_to_the_plain_dict(catalog):
    t = make(catalog, 2)
    info = t.create_tag("eod", 1, time_retained="1 d")
    assert (info.name, info.snapshot_id, info.schema_id) == ("eod", 1, 0)
    assert info.commit_time == t.snapshots()[0].time_millis
    assert info.time_retained == dt.timedelta(days=1) and info.create_time is not None
    assert info.to_dict() == {"name": "eod", "snapshot_id": 1, "schema_id": 0,
                              "commit_time": info.commit_time,
                              "create_time": info.create_time.isoformat(),
                              "time_retained_s": 86400.0}
    assert "tag eod: snapshot 1" in str(info)
    assert t.list_tags() == [info] and isinstance(info, lf.TagInfo)


def test_rollback_to_snapshot_and_to_expired_tag(catalog):
    t = make(catalog, 5)
    reads = snapshot_reads(t)
    t.create_tag("at2", 2)
    t.create_tag("at4", 4)
    r = t.rollback_to(3)
    assert r.snapshots_deleted == [5, 4] and r.latest_snapshot == 3
    assert [x.name for x in t.list_tags()] == ["at2"]  # tags of later snapshots go
    assert sorted(t.read().to_pylist(), key=lambda x: x["id"]) == reads[3]
    t.write(pa.table({"id": [9], "v": [9]}))
    assert t.snapshots()[-1].id == 4  # commits continue after the rollback point
    t.expire_snapshots(retain_min=1, older_than=NOW)
    assert [s.id for s in t.snapshots()] == [4]
    r = t.rollback_to("at2")  # snapshot 2 expired: restored from the tag
    assert [s.id for s in t.snapshots()] == [2]
    assert sorted(t.read().to_pylist(), key=lambda x: x["id"]) == reads[2]
    with pytest.raises(lf.LakeformatError, match="does not exist"):
        t.rollback_to(7)


def test_rollback_dry_run_lists_and_changes_nothing(catalog):
    t = make(catalog, 5)
    t.create_tag("at2", 2)
    t.create_tag("at4", 4)
    t.expire_snapshots(retain_min=3, older_than=NOW)  # snapshot 2 lives on in its tag only
    listing = sorted(os.listdir(os.path.join(t.path, "snapshot")))
    for target, deleted in ((3, [5, 4]), ("at2", [5, 4, 3])):
        r = t.rollback_to(target, dry_run=True)
        assert r.dry_run and r.snapshots_deleted == deleted
        assert sum(p.endswith("tag-at4") for p in r.deleted) == 1
    assert sorted(os.listdir(os.path.join(t.path, "snapshot"))) == listing
    assert [s.id for s in t.snapshots()] == [3, 4, 5]
    assert [x.name for x in t.list_tags()] == ["at2", "at4"]


def test_unreadable_manifest_means_less_is_deleted(catalog):
    t = make(catalog, 3)
    t.write(pa.table({"id": [0, 1, 2, 3], "v": [5, 5, 5, 5]}), overwrite=True)
    t.write(pa.table({"id": [8], "v": [8]}))
    snap4 = t.snapshots()[3]
    delta = os.path.join(t.path, "manifest", snap4.delta_manifest_list)
    with open(delta, "wb") as f:
        f.write(b"not avro")
    r = t.expire_snapshots(retain_min=1, older_than=NOW)
    assert r.snapshots_deleted == [1, 2, 3, 4]
    assert r.data_files_deleted == 0 and any("snapshot 4" in s for s in r.skipped)
    assert sorted(x["id"] for x in t.read().to_pylist()) == [0, 1, 2, 3, 8]
