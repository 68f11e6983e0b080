"""Tag lifecycle as Java Paimon runs it: `expire_tags` (TagTimeExpire), automatic tags after
writes, deletes and compactions (TagAutoCreation, TagBatchCreation), `tag.num-retained-max` and
`tag.default-time-retained`, through the public API.

The wall clock is moved through `lakeformat.clock.now_millis` (snapshot times, tag creation
times and the "now" of expiry all read it); the process-time zone is pinned to UTC so tag
names do not depend on the machine's zone. The tests that delete files on expiry run on local
disk and S3 (`catalog`); the others only create and list tag files, which the S3 runs of those
tests already exercise, and run on local disk (`local_disk`).
"""

from __future__ import annotations

import datetime as dt
import json
import os

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat import clock

local_disk = pytest.mark.parametrize("catalog", ["local"], indirect=True)
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64())])


class WallClock:
    """A clock tests move by hand: `at("2024-03-09 10:00")` (UTC)."""

    def __init__(self) -> None:
        self.ms = 0
        self.at("2024-03-09 10:00")

    def at(self, text: str) -> None:
        when = dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC)
        self.ms = int(when.timestamp() * 1000)

    def forward(self, delta: dt.timedelta) -> None:
        self.ms += int(delta.total_seconds() * 1000)


@pytest.fixture()
def wall(monkeypatch) -> WallClock:
    c = WallClock()
    monkeypatch.setattr(clock, "now_millis", lambda: c.ms)
    return c


def make(catalog, **options) -> lf.Table:
    return catalog.create_table("db.t", SCHEMA, primary_keys=["id"],
                                options={"bucket": "1", "sink.process-time-zone": "UTC",
                                         **options})


def put(t: lf.Table, *ids: int, **kw) -> lf.CommitResult:
    return t.write(pa.table({"id": list(ids), "v": list(ids)}), **kw)


def all_files(t: lf.Table) -> set[str]:
    return {s.path for s in t.file_io.list_recursive(t.path)}


def tags(t: lf.Table) -> dict[str, int]:
    return {x.name: x.snapshot_id for x in t.list_tags()}


def ids(t: lf.Table, **kw) -> list[int]:
    return sorted(r["id"] for r in t.read(**kw).to_pylist())


# -- expire_tags --------------------------------------------------------------------------------
def test_expire_tags_deletes_tags_past_retention_and_files_only_they_held(catalog, wall):
    t = make(catalog)
    put(t, 1)
    put(t, 2)
    t.create_tag("d1", 1, time_retained="1 h")
    t.create_tag("d2", 2, time_retained="1 h")
    held = {f["path"] for f in t.files(tag="d1")} | {f["path"] for f in t.files(tag="d2")}
    put(t, 3, overwrite=True)  # snapshot 3 drops the files of 1 and 2
    t.create_tag("keep", 3)  # no retention: never expires by time
    put(t, 4)
    wall.forward(dt.timedelta(seconds=1))  # every snapshot's successor is then older
    assert t.expire_snapshots(retain_min=1, older_than=dt.timedelta(0)).snapshots_deleted == [
        1, 2, 3]
    wall.forward(dt.timedelta(minutes=30))
    before = all_files(t)
    nothing = t.expire_tags()
    assert nothing.tags_deleted == [] and all_files(t) == before
    wall.forward(dt.timedelta(hours=1))
    dry = t.expire_tags(dry_run=True)
    assert all_files(t) == before and set(tags(t)) == {"d1", "d2", "keep"}
    real = t.expire_tags()
    assert real.tags_deleted == dry.tags_deleted == ["d1", "d2"]
    # d1 and d2 share snapshot 1's file: the dry run counts d1 as gone when it looks at d2
    assert real.deleted == dry.deleted and real.data_files_deleted == len(held) == 2
    assert held <= set(real.deleted)
    assert before - all_files(t) == set(real.deleted)
    assert tags(t) == {"keep": 3}
    assert ids(t, tag="keep") == [3] and ids(t) == [3, 4]
    assert "2 tags" in str(real) and real.to_dict()["tags_deleted"] == ["d1", "d2"]


@local_disk
def test_older_than_expires_tags_created_before_it(catalog):
    t = make(catalog)
    put(t, 1)
    put(t, 2)
    t.create_tag("old", 1)  # no retention: counted from its file's time
    t.create_tag("young", 2, time_retained="30 d")
    t.create_tag("fresh", 2)
    tag_dir = os.path.join(t.path, "tag")
    three_days_ago = dt.datetime.now().timestamp() - 3 * 86400
    os.utime(os.path.join(tag_dir, "tag-old"), (three_days_ago, three_days_ago))
    # a tag as Java writes one without retention: the snapshot JSON, no tagCreateTime
    path = os.path.join(tag_dir, "tag-java")
    with open(os.path.join(tag_dir, "tag-fresh")) as f:
        plain = {k: v for k, v in json.load(f).items() if k != "tagCreateTime"}
    with open(path, "w") as f:
        json.dump(plain, f)
    os.utime(path, (three_days_ago, three_days_ago))
    assert t.expire_tags().tags_deleted == []  # no retention reached: nothing expires
    r = t.expire_tags(older_than="2 d")
    assert sorted(r.tags_deleted) == ["java", "old"]
    assert set(tags(t)) == {"young", "fresh"}
    cut = dt.datetime.now()
    assert sorted(t.expire_tags(older_than=cut).tags_deleted) == ["fresh", "young"]
    with pytest.raises(lf.InvalidOptionError, match="future"):
        t.expire_tags(older_than=dt.datetime.now() + dt.timedelta(hours=1))
    assert ids(t) == [1, 2]


@local_disk
def test_expire_tags_refuses_tag_callbacks(catalog, wall):
    t = make(catalog, **{"tag.callbacks": "com.example.Callback"})
    put(t, 1)
    t.create_tag("a", time_retained="1 s")
    wall.forward(dt.timedelta(minutes=1))
    with pytest.raises(lf.UnsupportedError, match="tag.callbacks"):
        t.expire_tags()
    assert tags(t) == {"a": 1}


# -- automatic creation: process-time ----------------------------------------------------------
def test_process_time_daily_tags_num_retained_max_and_default_retention(catalog, wall):
    t = make(catalog, **{"tag.automatic-creation": "process-time",
                         "tag.num-retained-max": "2", "tag.default-time-retained": "3 d"})
    put(t, 1)  # the first commit tags the day before its own
    assert tags(t) == {"2024-03-08": 1}
    first = {f["path"] for f in t.files(tag="2024-03-08")}
    wall.at("2024-03-09 11:00")
    put(t, 2, overwrite=True)  # the same day: no tag; snapshot 1's file now held by the tag
    t.create_tag("manual", 2)  # not an auto-created name: never counted nor deleted
    wall.forward(dt.timedelta(seconds=1))
    assert t.expire_snapshots(retain_min=1, older_than=dt.timedelta(0)).snapshots_deleted == [1]
    wall.at("2024-03-10 00:30")
    put(t, 3)
    assert tags(t) == {"2024-03-08": 1, "manual": 2, "2024-03-09": 3}
    before = all_files(t)
    wall.at("2024-03-11 01:00")
    compacted = t.compact(full=True)  # compaction commits tag too
    [snap] = compacted.snapshot_ids
    # three auto-created tags > tag.num-retained-max 2: the oldest goes with its file
    assert tags(t) == {"manual": 2, "2024-03-09": 3, "2024-03-10": snap}
    assert first <= before and not first & all_files(t)
    auto = {x.name: x for x in t.list_tags()}["2024-03-10"]
    assert auto.time_retained == dt.timedelta(days=3)
    assert auto.create_time == dt.datetime.fromtimestamp(wall.ms / 1000)
    assert ids(t, tag="2024-03-09") == [2, 3] and ids(t) == [2, 3]
    # past their 3 days: 2024-03-09 (created 03-10 00:30) and manual, which took
    # tag.default-time-retained too (created 03-09 11:00)
    wall.at("2024-03-13 02:00")
    assert t.expire_tags().tags_deleted == ["manual", "2024-03-09"]
    assert tags(t) == {"2024-03-10": snap}


@local_disk
@pytest.mark.parametrize("formatter,names", [
    ("with_dashes", ["2024-03-09 09", "2024-03-09 10"]),
    ("without_dashes", ["20240309 09", "20240309 10"]),
    ("without_dashes_and_spaces", ["2024030909", "2024030910"]),
])
def test_process_time_hourly_waits_for_the_creation_delay(catalog, wall, formatter, names):
    t = make(catalog, **{"tag.automatic-creation": "process-time",
                         "tag.creation-period": "hourly", "tag.creation-delay": "10 min",
                         "tag.period-formatter": formatter})
    wall.at("2024-03-09 10:05")
    put(t, 1)
    assert tags(t) == {names[0]: 1}
    wall.at("2024-03-09 11:05")  # the 10:00-11:00 hour closed, but its delay has not passed
    put(t, 2)
    assert tags(t) == {names[0]: 1}
    wall.at("2024-03-09 11:15")
    put(t, 3)
    assert tags(t) == {names[0]: 1, names[1]: 3}


@local_disk
def test_period_duration_two_hours_and_automatic_completion(catalog, wall):
    t = make(catalog, **{"tag.automatic-creation": "process-time",
                         "tag.creation-period": "two-hours"})
    wall.at("2024-03-09 13:30")
    put(t, 1)
    assert tags(t) == {"2024-03-09 10": 1}
    t2 = catalog.create_table("db.t2", SCHEMA, primary_keys=["id"], options={
        "bucket": "1", "sink.process-time-zone": "UTC", "tag.automatic-creation": "process-time",
        "tag.creation-period-duration": "30 min", "tag.creation-period": "daily"})
    put(t2, 1)
    assert tags(t2) == {"202403091300": 1}
    t3 = catalog.create_table("db.t3", SCHEMA, primary_keys=["id"], options={
        "bucket": "1", "sink.process-time-zone": "UTC", "tag.automatic-creation": "process-time",
        "tag.automatic-completion": "true"})
    put(t3, 1)
    wall.at("2024-03-12 08:00")  # three days later: each commit fills the next missing day
    put(t3, 2)
    put(t3, 3)
    assert tags(t3) == {"2024-03-08": 1, "2024-03-09": 2, "2024-03-10": 3}


@local_disk
def test_retried_commit_and_a_second_run_create_no_duplicate(catalog, wall):
    t = make(catalog, **{"tag.automatic-creation": "process-time"})
    put(t, 1, commit_user="job", commit_identifier=1)
    wall.at("2024-03-10 02:00")
    put(t, 2, commit_user="job", commit_identifier=2)
    assert tags(t) == {"2024-03-08": 1, "2024-03-09": 2}
    again = put(t, 2, commit_user="job", commit_identifier=2)  # the retried task
    assert again.already_committed and tags(t) == {"2024-03-08": 1, "2024-03-09": 2}
    assert t.create_auto_tags().created == []
    assert [s.id for s in t.snapshots()] == [1, 2]


@local_disk
def test_a_second_auto_named_tag_on_an_auto_tagged_snapshot_is_refused(catalog, wall):
    t = make(catalog, **{"tag.automatic-creation": "process-time"})
    put(t, 1)
    with pytest.raises(lf.TagAlreadyExistsError, match="already auto-tagged"):
        t.create_tag("2024-03-01", 1)
    t.create_tag("release-1", 1)  # any other name is fine
    assert tags(t) == {"2024-03-08": 1, "release-1": 1}


@local_disk
def test_tags_follow_snapshots_a_failed_run_missed(catalog, wall):
    t = make(catalog)  # written without automatic tags (as by a write-only Flink job)
    put(t, 1)
    wall.at("2024-03-10 01:00")
    put(t, 2)
    wall.at("2024-03-11 01:00")
    put(t, 3)
    t.alter(lf.SchemaChange.set_option("tag.automatic-creation", "process-time"))
    t.delete(pa.table({"id": [1]}))  # the next commit tags every snapshot since
    assert tags(t) == {"2024-03-08": 1, "2024-03-09": 2, "2024-03-10": 3}
    assert ids(t, tag="2024-03-09") == [1, 2]


@local_disk
def test_write_only_tables_get_no_automatic_tags(catalog, wall):
    t = make(catalog, **{"tag.automatic-creation": "process-time", "write-only": "true"})
    put(t, 1)
    assert tags(t) == {}


@local_disk
def test_watermark_mode_tags_by_the_snapshots_watermark(catalog, wall):
    t = make(catalog, **{"tag.automatic-creation": "watermark",
                         "sink.watermark-time-zone": "Asia/Shanghai"})
    put(t, 1)
    assert tags(t) == {}  # no watermark in the snapshot: nothing to tag by
    # a Flink writer records its watermark in the snapshot; lakeformat's commits carry it on
    path = os.path.join(t.path, "snapshot", "snapshot-1")
    with open(path) as f:
        snap = json.load(f)
    snap["watermark"] = int(dt.datetime(2024, 3, 9, 20, 0, tzinfo=dt.UTC).timestamp() * 1000)
    with open(path, "w") as f:
        json.dump(snap, f)
    wall.at("2024-03-20 00:00")  # the commit time does not count, the watermark does
    put(t, 2)
    # 20:00 UTC is 04:00 on 2024-03-10 in Shanghai: the day before is tagged
    assert tags(t) == {"2024-03-09": 1}
    assert t.snapshots()[-1].watermark == snap["watermark"]


# -- automatic creation: batch ----------------------------------------------------------------
@local_disk
def test_batch_mode_tags_the_latest_snapshot_of_each_day(catalog, wall):
    t = make(catalog, **{"tag.automatic-creation": "batch", "tag.num-retained-max": "2",
                         "tag.default-time-retained": "7 d"})
    put(t, 1, commit_user="job", commit_identifier=1)
    assert tags(t) == {"batch-write-2024-03-09": 1}
    put(t, 2)  # the same day: the tag moves to the newer snapshot
    assert tags(t) == {"batch-write-2024-03-09": 2}
    put(t, 1, commit_user="job", commit_identifier=1)  # a retried write: the tag stays
    assert tags(t) == {"batch-write-2024-03-09": 2}
    wall.at("2024-03-10 09:00")
    t.delete(pa.table({"id": [2]}))
    t.create_tag("manual", 3)
    assert tags(t) == {"batch-write-2024-03-09": 2, "batch-write-2024-03-10": 3, "manual": 3}
    wall.at("2024-03-11 09:00")
    put(t, 4)
    # batch mode counts every tag: snapshot 2's goes, then the older-written one of snapshot 3
    assert tags(t) == {"manual": 3, "batch-write-2024-03-11": 4}
    info = {x.name: x for x in t.list_tags()}["batch-write-2024-03-11"]
    assert info.time_retained == dt.timedelta(days=7)
    assert t.compact(full=True).snapshot_ids == [5]
    assert tags(t) == {"manual": 3, "batch-write-2024-03-11": 5}


@local_disk
def test_batch_customized_name(catalog, wall):
    t = make(catalog, **{"tag.automatic-creation": "batch",
                         "tag.batch.customized-name": "nightly"})
    put(t, 1)
    wall.at("2024-03-12 09:00")
    put(t, 2)
    assert tags(t) == {"nightly": 2} and ids(t, tag="nightly") == [1, 2]


# -- options ----------------------------------------------------------------------------------
@local_disk
@pytest.mark.parametrize("options,match,error", [
    ({"tag.creation-period": "weekly"}, "tag.creation-period", lf.InvalidOptionError),
    ({"tag.creation-delay": "1 d"}, "tag.creation-delay", lf.InvalidOptionError),
    ({"tag.num-retained-max": "-1"}, "tag.num-retained-max", lf.InvalidOptionError),
    ({"tag.period-formatter": "iso"}, "tag.period-formatter", lf.InvalidOptionError),
    ({"sink.process-time-zone": "Mars/Olympus"}, "sink.process-time-zone",
     lf.InvalidOptionError),
    ({"tag.callbacks": "com.example.Callback"}, "tag.callbacks", lf.UnsupportedError),
    ({"tag.create-success-file": "true"}, "tag.create-success-file", lf.UnsupportedError),
])
def test_bad_tag_options_are_refused_before_anything_is_written(catalog, wall, options, match,
                                                                  error):
    t = make(catalog, **{"tag.automatic-creation": "process-time", **options})
    with pytest.raises(error, match=match):
        put(t, 1)
    with pytest.raises(error, match=match):
        t.delete(pa.table({"id": [1]}))
    assert t.snapshots() == [] and tags(t) == {}


@local_disk
def test_tag_automatic_creation_none_ignores_the_other_tag_options(catalog, wall):
    t = make(catalog, **{"tag.creation-delay": "3 d", "tag.callbacks": "x.Y"})
    put(t, 1)
    assert tags(t) == {}


@local_disk
def test_create_tag_takes_the_default_time_retained(catalog, wall):
    t = make(catalog, **{"tag.default-time-retained": "2 h"})
    put(t, 1)
    assert t.create_tag("a").time_retained == dt.timedelta(hours=2)
    assert t.create_tag("b", time_retained="1 d").time_retained == dt.timedelta(days=1)
    wall.forward(dt.timedelta(hours=3))
    assert t.expire_tags().tags_deleted == ["a"]


# -- due maintenance -----------------------------------------------------------------------
@local_disk
def test_tag_expiry_is_due_when_a_tag_is_past_its_retention(catalog, wall):
    from lakeformat.health import perform

    t = make(catalog)
    put(t, 1)
    t.create_tag("daily", time_retained="1 d")
    t.create_tag("forever")
    report = t.maintenance_due()
    assert not [a for a in report.actions if a.kind == "expire-tags"]
    assert report.not_due["tag-expiry"].startswith("no tag past its retention (2 tags, 1 with")
    wall.forward(dt.timedelta(days=2))
    [action] = [a for a in t.maintenance_due().actions if a.kind == "expire-tags"]
    assert action.rule == "tag-expiry" and action.figures["tags"] == ["daily"]
    result = perform(t, action.to_dict())
    assert result.tags_deleted == ["daily"] and tags(t) == {"forever": 1}
    assert "tag-expiry" in t.maintenance_due().not_due
    t.create_tag("again", time_retained="1 s")
    t.alter(lf.SchemaChange.set_option("tag.time-expire-enabled", "false"))
    wall.forward(dt.timedelta(minutes=1))
    report = t.maintenance_due()
    assert report.not_due["tag-expiry"] == "tag.time-expire-enabled is false"
    assert t.expire_tags().tags_deleted == ["again"]  # the verb expires regardless, as Java's
