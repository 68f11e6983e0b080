"""Decoupled changelog: a changelog kept longer than the snapshots (`changelog.num-retained.*`,
`changelog.time-retained` above the snapshot settings), as Java Paimon keeps it.

Histories are written the way Java writes them for each producer: `lookup` (every write is
compacted before it returns; the COMPACT snapshot carries the changelog), `full-compaction`
(full compactions carry it) and `none` (the changelog is an APPEND snapshot's delta: the level-0
files its writer added). Snapshot expiry then turns the expiring snapshots into
`changelog/changelog-<id>` files holding the snapshot's JSON, and changelog expiry removes the
changelogs past their own retention. Each test reads, before and after, the changelog of every
snapshot (its changelog files, or for `none` its delta's files) and checks:

* every retained changelog (a `changelog-<id>` file or a snapshot) still reads exactly the
  rows it read when its snapshot was committed — all its files exist;
* what expired is gone: its snapshot file, its changelog files (or, for `none`, the level-0
  files a compaction replaced) and the manifests only it used — nothing is left for orphan
  removal, and orphan removal and schema retention keep what the changelogs use;
* consumers pin changelogs (and, unless `consumer.changelog-only`, snapshots); tags keep
  their files.

The S3 case runs one lookup history on the moto server (`test_lookup_changelog_on_s3`): paths,
listings and hints of `changelog/` differ between the stores; the other tests run on local disk
(the rules are the same code).
"""

from __future__ import annotations

import datetime as dt
import json
import os

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.data.kv_read import read_kv_file
from lakeformat.meta.binary_row import from_avro_bytes
from lakeformat.meta.changelog import ChangelogManager
from lakeformat.meta.consumer import ConsumerManager
from lakeformat.meta.data_file_meta import FileKind
from lakeformat.meta.snapshot import Snapshot
from lakeformat.operation.maintain import TableReferences
from lakeformat.operation.paths import PathFactory

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])
KIND = {0: "+I", 1: "-U", 2: "+U", 3: "-D"}
PRODUCERS = ["lookup", "full-compaction", "none"]
local_disk = pytest.mark.parametrize("catalog", ["local"], indirect=True)

#: two snapshots kept (no time protection), six changelogs
RETENTION = {"snapshot.num-retained.min": "2", "snapshot.num-retained.max": "2",
             "snapshot.time-retained": "1 ms", "changelog.num-retained.min": "6",
             "changelog.num-retained.max": "6", "snapshot.expire.limit": "100"}


# -- reading a changelog as a streaming reader does --------------------------------------------
def changelog_files(t: lf.Table, snap: Snapshot) -> list[str]:
    """Paths of the files a changelog reader opens for this snapshot or changelog: the files
    its changelog list adds; without one (changelog-producer=none) the files its APPEND delta
    adds (a COMPACT snapshot of such a table has no changelog)."""
    refs = TableReferences(t.file_io, t.path, t.table_schema)
    if snap.changelog_manifest_list:
        entries = refs.changelog_entries(snap)
    elif t.options.get("changelog-producer", "none") == "none" and snap.commit_kind == "APPEND":
        entries = refs.delta_entries(snap)
    else:
        return []
    paths = PathFactory(t.file_io, t.path, t.table_schema)
    types = [f.type for f in t.table_schema.partition_fields()]
    return [paths.data_file(tuple(from_avro_bytes(e.partition, types)), e.bucket, e.file)
            for e in entries if e.kind == FileKind.ADD]


def changelog_rows(t: lf.Table, snap: Snapshot) -> list[tuple]:
    out = []
    for path in changelog_files(t, snap):
        for r in read_kv_file(t.file_io, path, "parquet").to_pylist():
            out.append((KIND[r["_VALUE_KIND"]], r["id"], r["v"]))
    return sorted(out, key=lambda r: (r[1], r[0] in ("+I", "+U"), r[2] or ""))


def retained(t: lf.Table) -> dict[int, Snapshot]:
    """Every changelog a reader can replay: the long-lived ones and the snapshots."""
    out = {c.id: c for c in ChangelogManager(t.file_io, t.path).changelogs()}
    out.update({s.id: s for s in t.snapshot_manager.snapshots()})
    return out


class History:
    """A table and, per snapshot, the changelog rows and files read right after its commit."""

    def __init__(self, catalog: lf.Catalog, producer: str, name: str = "db.t", **options):
        catalog.create_database("db", exist_ok=True)
        opts = {"bucket": "1", "changelog-producer": producer, **RETENTION, **options}
        self.t = catalog.create_table(name, SCHEMA, primary_keys=["id"], options=opts)
        self.producer = producer
        self.rows: dict[int, list[tuple]] = {}
        self.files: dict[int, list[str]] = {}
        self.json: dict[int, dict] = {}
        self.model: dict[int, str] = {}
        self.step = 0

    def record(self) -> None:
        t = self.t
        for snap in t.snapshot_manager.snapshots():
            if snap.id not in self.rows:
                self.rows[snap.id] = changelog_rows(t, snap)
                self.files[snap.id] = changelog_files(t, snap)
                self.json[snap.id] = json.loads(t.file_io.read_bytes(
                    t.snapshot_manager.snapshot_path(snap.id)))

    def write(self, ids) -> None:
        self.step += 1
        values = [f"s{self.step}-{i}" for i in ids]
        self.t.write(pa.table({"id": list(ids), "v": values}, schema=SCHEMA))
        self.model.update(zip(ids, values))
        if self.producer == "full-compaction":
            self.t.compact(full=True)
        self.record()

    def compact(self) -> None:
        self.t.compact(full=True)
        self.record()

    def check(self) -> dict[int, Snapshot]:
        """Every retained changelog replays as recorded; the table reads the model."""
        t = self.t.refresh()
        kept = retained(t)
        for cid, snap in kept.items():
            assert changelog_files(t, snap) == self.files[cid], cid
            for path in self.files[cid]:
                assert t.file_io.exists(path), (cid, path)
            assert changelog_rows(t, snap) == self.rows[cid], cid
        assert sorted((r["id"], r["v"]) for r in t.read().to_pylist()) == sorted(
            self.model.items())
        return kept

    def leftovers(self) -> list[str]:
        """Files no snapshot, tag or changelog references (what orphan removal would take)."""
        return self.t.remove_orphan_files(older_than=dt.timedelta(0), dry_run=True,
                                          enforce_retention_duration=False).deleted


def build(catalog, producer: str, writes: int = 6, **options) -> History:
    h = History(catalog, producer, **options)
    for i in range(writes):
        h.write([i, i + 1])
        if producer == "none" and i % 2 == 1:
            h.compact()  # replaces the level-0 files the changelogs read
    return h


# -- snapshot expiry + changelog expiry ---------------------------------------------------------
@local_disk
@pytest.mark.parametrize("producer", PRODUCERS)
def test_expired_snapshots_live_on_as_changelogs(catalog, producer):
    h = build(catalog, producer)
    t = h.t
    latest = t.latest_snapshot().id
    dry = t.expire_snapshots(dry_run=True)
    result = t.expire_snapshots()
    assert dry.deleted == result.deleted and dry.changelogs_deleted == result.changelogs_deleted
    # snapshots [1, latest-1) expire; all become changelog-<id>; changelog retention keeps six
    # (ids from latest-5), never the newest changelog, so [1, latest-5) expire again
    assert result.snapshots_deleted == list(range(1, latest - 1))
    assert result.changelogs_written == list(range(1, latest - 1))
    assert result.changelogs_deleted == list(range(1, latest - 5))
    cl_dir = os.path.join(t.path, "changelog")
    assert sorted(os.listdir(cl_dir)) == sorted(
        ["EARLIEST", "LATEST"] + [f"changelog-{i}" for i in range(latest - 5, latest - 1)])
    cm = ChangelogManager(t.file_io, t.path)
    assert (cm.earliest_id(), cm.latest_id()) == (latest - 5, latest - 2)
    for cid in cm.changelog_ids():  # Java's Changelog JSON is the snapshot's
        assert json.loads(t.file_io.read_bytes(cm.changelog_path(cid))) == h.json[cid]
    kept = h.check()
    assert sorted(kept) == list(range(latest - 5, latest + 1))
    assert any(h.rows[i] for i in kept)  # the retained changelogs hold rows
    gone = [p for i in range(1, latest - 5) for p in h.files[i]]
    assert gone and not any(os.path.exists(p) for p in gone)
    assert h.leftovers() == []


@pytest.mark.parametrize("catalog", ["s3"], indirect=True)
def test_lookup_changelog_on_s3(catalog):
    h = build(catalog, "lookup")
    t = h.t
    latest = t.latest_snapshot().id
    result = t.expire_snapshots()
    assert result.changelogs_written == list(range(1, latest - 1))
    cm = ChangelogManager(t.file_io, t.path)
    assert cm.changelog_ids() == list(range(latest - 5, latest - 1))
    assert (cm.earliest_id(), cm.latest_id()) == (latest - 5, latest - 2)
    assert sorted(h.check()) == list(range(latest - 5, latest + 1))
    gone = [p for i in range(1, latest - 5) for p in h.files[i]]
    assert gone and not any(t.file_io.exists(p) for p in gone)
    assert h.leftovers() == []
    # later runs keep expiring by the changelog retention
    for i in range(2):
        h.write([20 + i])
    result = t.expire_snapshots()
    latest = t.latest_snapshot().id
    assert cm.changelog_ids() == list(range(latest - 5, latest - 1))
    assert sorted(h.check()) == list(range(latest - 5, latest + 1))
    assert h.leftovers() == []


@local_disk
def test_none_producer_keeps_the_level_0_files_until_their_changelog_expires(catalog):
    h = build(catalog, "none", **{"changelog.num-retained.min": "20",
                                  "changelog.num-retained.max": "20"})
    t = h.t
    appended = [i for i, s in h.json.items() if s["commitKind"] == "APPEND"]
    level0 = {p for i in appended for p in h.files[i]}
    assert appended[:2] == [1, 2] and h.json[3]["commitKind"] == "COMPACT"
    t.expire_snapshots()
    # every level-0 file is replaced by a compaction, yet every APPEND changelog reads it
    assert all(os.path.exists(p) for p in level0)
    h.check()
    cm = ChangelogManager(t.file_io, t.path)
    for cid in cm.changelog_ids():  # their delta and base lists stay for the changelog
        c = cm.changelog(cid)
        for name in (c.base_manifest_list, c.delta_manifest_list):
            assert os.path.exists(os.path.join(t.path, "manifest", name))
    # the changelog expires on its own terms: every level-0 file goes with it
    latest = t.latest_snapshot().id
    result = t.expire_changelogs(retain_max=2, retain_min=2)
    assert result.changelogs_deleted == list(range(1, latest - 2))
    assert cm.changelog_ids() == [latest - 2]
    h.check()
    # the level-0 files of snapshots 1 and 2, replaced by compaction 3: gone with changelog 3
    assert h.files[1] + h.files[2] and not any(
        os.path.exists(p) for p in h.files[1] + h.files[2])
    assert h.leftovers() == []


@local_disk
def test_consumers_pin_the_changelog(catalog):
    h = build(catalog, "lookup")
    t = h.t
    ConsumerManager(t.file_io, t.path).set("job", 4)
    r = t.expire_snapshots()
    # the consumer pins snapshot 4: snapshots 1-3 become changelogs, and changelog expiry
    # stops at the consumer too (and before the newest changelog, 3)
    assert r.snapshots_deleted == [1, 2, 3] and r.changelogs_deleted == [1, 2]
    assert ChangelogManager(t.file_io, t.path).changelog_ids() == [3]
    h.check()


@local_disk
def test_changelog_only_consumers_pin_only_the_changelog(catalog):
    h = build(catalog, "lookup", **{"consumer.changelog-only": "true"})
    t = h.t
    latest = t.latest_snapshot().id
    ConsumerManager(t.file_io, t.path).set("job", 4)
    r = t.expire_snapshots()
    assert r.snapshots_deleted == list(range(1, latest - 1))
    assert r.changelogs_deleted == [1, 2, 3]
    assert ChangelogManager(t.file_io, t.path).changelog_ids() == list(range(4, latest - 1))
    kept = h.check()
    assert min(kept) == 4
    assert h.leftovers() == []


@local_disk
def test_tags_keep_their_files_through_both_expiries(catalog):
    h = build(catalog, "lookup")
    t = h.t
    compact = [i for i, s in h.json.items() if s["commitKind"] == "COMPACT"][0]
    t.create_tag("kept", compact)
    tag_rows = sorted(r["id"] for r in t.read(tag="kept").to_pylist())
    r = t.expire_snapshots()
    assert compact in r.changelogs_deleted
    assert sorted(x["id"] for x in t.read(tag="kept").to_pylist()) == tag_rows
    # the tag's changelog files stay while the tag names them (the tag's snapshot JSON does)
    assert all(os.path.exists(p) for p in h.files[compact])
    h.check()
    assert h.leftovers() == []


@local_disk
def test_expire_changelogs_verb_and_delete_all(catalog):
    h = build(catalog, "lookup", **{"changelog.num-retained.min": "20",
                                    "changelog.num-retained.max": "20"})
    t = h.t
    latest = t.latest_snapshot().id
    r = t.expire_snapshots()
    assert r.changelogs_deleted == [] and r.changelogs_written == list(range(1, latest - 1))
    cm = ChangelogManager(t.file_io, t.path)
    before = cm.changelog_ids()
    dry = t.expire_changelogs(retain_max=5, retain_min=5, dry_run=True)
    assert cm.changelog_ids() == before
    real = t.expire_changelogs(retain_max=5, retain_min=5)
    assert dry.deleted == real.deleted and real.operation == "expire-changelogs"
    assert real.changelogs_deleted == list(range(1, latest - 4))
    assert cm.changelog_ids() == list(range(latest - 4, latest - 1))
    h.check()
    everything = [p for i in cm.changelog_ids() for p in h.files[i]]
    done = t.expire_changelogs(delete_all=True)
    assert done.changelogs_deleted == list(range(latest - 4, latest - 1))
    assert os.listdir(os.path.join(t.path, "changelog")) == []
    assert not any(os.path.exists(p) for p in everything)
    assert sorted(h.check()) == [latest - 1, latest]
    assert h.leftovers() == []
    with pytest.raises(lf.InvalidOptionError, match="retain_max"):
        t.expire_changelogs(retain_max=1, retain_min=2)


@local_disk
def test_orphans_and_schema_retention_keep_what_changelogs_use(catalog):
    h = History(catalog, "lookup", **{"changelog.num-retained.min": "20",
                                      "changelog.num-retained.max": "20"})
    t = h.t
    h.write([1, 2])
    h.write([2, 3])
    with pytest.raises(lf.InvalidOptionError, match="changelog.num-retained.max"):
        t.alter(lf.SchemaChange.set_option("changelog.num-retained.max", "7"))  # as Java
    t.alter(lf.SchemaChange.set_option("changelog.num-retained.max", "30"))  # schema 1
    for i in range(4):
        h.write([4 + i])
    t.expire_snapshots(retain_min=1, retain_max=1)
    cm = ChangelogManager(t.file_io, t.path)
    assert any(cm.changelog(i).schema_id == 0 for i in cm.changelog_ids())
    root = t.path
    for folder, _, names in os.walk(root):  # a day passes
        for n in names:
            when = (dt.datetime.now() - dt.timedelta(days=2)).timestamp()
            os.utime(os.path.join(folder, n), (when, when))
    assert t.remove_orphan_files().deleted == []
    h.check()
    cleaned = t.clean_schemas(retain_min=1, older_than=dt.timedelta(0))
    assert cleaned.schema_files_deleted == 0 and cleaned.kept_kinds[0] == "changelog"
    assert [s.id for s in t.schemas()] == [0, 1]


@local_disk
def test_health_reports_a_decoupled_table(catalog):
    h = build(catalog, "lookup")
    due = h.t.maintenance_due()
    expiry = [a for a in due.actions if a.kind == "expire-snapshots"]
    assert expiry and "refuse" not in expiry[0].reason
    h.t.expire_snapshots()
    assert not [a for a in h.t.maintenance_due().actions if a.kind == "expire-snapshots"]


# -- tags and rollback on a decoupled table -----------------------------------------------------
def tag_an_expired_snapshot(h: History) -> int:
    """Tag a snapshot that carries a changelog (an APPEND with `none`, else a COMPACT), then
    expire snapshots: it lives on both as the tag and as `changelog-<id>`, sharing its lists
    and files."""
    t = h.t
    latest = t.latest_snapshot().id
    kind = "APPEND" if h.producer == "none" else "COMPACT"
    tagged = max(i for i, s in h.json.items() if s["commitKind"] == kind and i < latest - 2)
    t.create_tag("x", tagged)
    t.expire_snapshots()
    assert tagged in ChangelogManager(t.file_io, t.path).changelog_ids()
    assert not t.snapshot_manager.exists(tagged) and h.files[tagged]
    return tagged


@local_disk
@pytest.mark.parametrize("producer", PRODUCERS)
@pytest.mark.parametrize("how", ["delete_tag", "expire_tags"])
def test_deleting_a_tag_keeps_what_the_retained_changelogs_replay(catalog, producer, how):
    """Deleting (or expiring) the tag of a snapshot that expired into `changelog-<id>` deletes
    what only the tag held, never the lists, manifests and files a retained changelog reads
    (its changelog files; with `none` its delta and base lists and the level-0 files its delta
    added, which a later changelog's compaction replaced)."""
    h = build(catalog, producer, **{"changelog.num-retained.min": "20",
                                    "changelog.num-retained.max": "20"})
    t = h.t
    tagged = tag_an_expired_snapshot(h)
    before = {cid: changelog_files(t, c) for cid, c in retained(t).items()}
    if how == "delete_tag":
        dry = t.delete_tag("x", dry_run=True)
        assert t.list_tags()
        r = t.delete_tag("x")
        assert r.deleted == dry.deleted
    else:
        r = t.expire_tags(older_than=dt.timedelta(0))
    assert t.list_tags() == [] and r.deleted[0].endswith("tag-x")
    kept = h.check()  # every retained changelog replays its rows from files that exist
    assert tagged in kept and {cid: changelog_files(t, c) for cid, c in kept.items()} == before
    assert h.leftovers() == []  # what only the tag held went
    # the changelogs then expire on their own terms, taking their files
    t.expire_changelogs(retain_max=2, retain_min=2)
    h.check()
    assert not any(os.path.exists(p) for p in h.files[tagged])
    assert h.leftovers() == []


@local_disk
@pytest.mark.parametrize("producer", ["lookup", "none"])
def test_rollback_deletes_the_changelogs_after_the_target(catalog, producer):
    """As Java's `RollbackHelper`: `changelog-<id>` after the target goes (newest first,
    `changelog/LATEST` naming the target), so a streaming reader resuming after the target
    reads the new history, not the one rolled back."""
    h = build(catalog, producer, **{"changelog.num-retained.min": "20",
                                    "changelog.num-retained.max": "20"})
    t = h.t
    t.create_tag("early", 1)
    tagged = tag_an_expired_snapshot(h)
    cm = ChangelogManager(t.file_io, t.path)
    ids = cm.changelog_ids()
    later_ids = [i for i in reversed(ids) if i > tagged]
    assert later_ids
    dry = t.rollback_to("x", dry_run=True)
    assert dry.changelogs_deleted == later_ids and cm.changelog_ids() == ids
    assert {cm.changelog_path(i) for i in later_ids} <= set(dry.deleted)
    r = t.rollback_to("x")
    assert r.changelogs_deleted == later_ids
    assert cm.changelog_ids() == [i for i in ids if i <= tagged]
    assert cm.latest_id() == tagged
    assert t.file_io.read_bytes(cm.hint_path("LATEST")).decode() == str(tagged)
    assert [s.id for s in t.snapshot_manager.snapshots()] == [tagged]
    for cid, c in retained(t.refresh()).items():
        assert changelog_rows(t, c) == h.rows[cid], cid
    # back before every changelog left: all go, and LATEST is -1 as Java writes it
    t.expire_changelogs(retain_max=1, retain_min=1)
    assert cm.changelog_ids() == [tagged]
    r = t.rollback_to("early")
    assert r.changelogs_deleted == [tagged] and cm.changelog_ids() == []
    assert t.file_io.read_bytes(cm.hint_path("LATEST")).decode() == "-1"
    assert not t.file_io.exists(cm.hint_path("EARLIEST"))  # it named a changelog gone
    assert [s.id for s in t.snapshot_manager.snapshots()] == [1]
    assert changelog_rows(t, t.latest_snapshot()) == h.rows[1]
