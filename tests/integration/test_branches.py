"""Branches (`branch/branch-<name>/`) and the cleanup of the main branch.

Histories are built as Paimon writes branches: `create_branch(name, tag)` copies the tag, its
snapshot and schemas into the branch directory (Java's FileSystemBranchManager), and a write
to the branch commits the branch's own snapshots while its data files and manifests land in
the table's own bucket and `manifest/` directories (Java's path factory of a branch is the
table's; pypaimon does the same, `tests/interop/test_branch_interop.py`). lakeformat does not
write to branches, so `write_branch` below commits a write job through the branch's snapshot
and schema managers.

Then snapshot expiry, tag deletion, orphan removal and schema retention run on the main
branch: every file the branch reads stays and its rows (and its tag's) read back through
`Table.branch`; what only the main branch held goes. A branch snapshot that cannot be read,
or a manifest it names that is missing, makes every cleanup delete nothing and name the branch
and the file.

The whole history runs on local disk and on the moto S3 server (`catalog`); the rest reach
nothing store-specific (file names and listings the first test already covers on S3) and run
on local disk only (`@local_disk`).
"""

from __future__ import annotations

import datetime as dt
import json

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat import clock
from lakeformat.branch_table import BRANCH_READS
from lakeformat.meta.branch import BranchManager
from lakeformat.meta.changelog import ChangelogManager, changelog_of
from lakeformat.meta.snapshot import SnapshotManager
from lakeformat.operation.maintain import TableReferences
from lakeformat.operation.write import WriteJob, conform
from lakeformat.schema.schema_manager import SchemaManager

DAY = 86400 * 1000
SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])
KEY = [("dt", "ascending"), ("id", "ascending")]
NOW = dt.timedelta(0)
local_disk = pytest.mark.parametrize("catalog", ["local"], indirect=True)


def rows(day: str, ids, tag: str) -> pa.Table:
    return pa.table({"dt": [day] * len(ids), "id": list(ids),
                     "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


def sorted_rows(t: pa.Table) -> list[dict]:
    return t.sort_by(KEY).to_pylist()


@pytest.fixture()
def later(monkeypatch):
    """Run maintenance as if two days had passed: every file written so far is old."""
    real = clock.now_millis
    monkeypatch.setattr(clock, "now_millis", lambda: real() + 2 * DAY)


def write_branch(t: lf.Table, name: str, data: pa.Table) -> int:
    """A write committed on branch `name` as Paimon commits one: the branch's snapshot and
    schema managers, the table's data and manifest directories."""
    branch = BranchManager(t.file_io, t.path).branch_path(name)
    schema = SchemaManager(t.file_io, branch).latest()
    job = WriteJob(t.file_io, t.path, schema, conform(data, schema))
    job.committer.snapshots = SnapshotManager(t.file_io, branch)
    job.committer.schemas = SchemaManager(t.file_io, branch)
    job.run()
    return job.committer.snapshots.latest_snapshot_id()


def all_files(t: lf.Table) -> set[str]:
    return {s.path for s in t.file_io.list_recursive(t.path)}


def branch_history(catalog) -> tuple[lf.Table, dict]:
    """Main: snapshots 1-2, tag t1 at 2, branch b from t1 with one write of its own (branch
    snapshot 3); then main moves on: an update, a schema change and a full compaction."""
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                             options={"bucket": "1"})
    t.write(rows("d1", range(6), "a"))
    t.write(rows("d2", range(4), "b"))
    t.create_tag("t1")
    tagged = sorted_rows(t.read())
    t.create_branch("b", tag="t1")
    write_branch(t, "b", rows("d1", [0, 1, 9], "branch"))
    branch_rows = sorted_rows(t.branch("b").read())
    branch_files = {f["path"] for f in t.branch("b").files()}
    t.write(rows("d1", [2, 3], "main"))
    main_only = {f["path"] for f in t.files()} - branch_files
    t.alter([lf.SchemaChange.add_column("w", pa.int64())])
    t.write(pa.table({"dt": ["d2"], "id": [7], "v": ["c7"], "w": [1]}))
    t.compact(full=True)
    return t, {"tagged": tagged, "branch_rows": branch_rows, "branch_files": branch_files,
               "main_only": main_only, "main_rows": sorted_rows(t.read())}


def test_main_cleanup_keeps_everything_the_branch_reads(catalog, later):
    t, h = branch_history(catalog)
    assert [(b.name, b.earliest_snapshot, b.latest_snapshot, b.schema_id, b.tags)
            for b in t.branches()] == [("b", 2, 3, 0, ["t1"])]
    assert h["branch_rows"] == sorted(
        [r for r in h["tagged"] if not (r["dt"] == "d1" and r["id"] in (0, 1))]
        + [{"dt": "d1", "id": i, "v": f"branch{i}"} for i in (0, 1, 9)],
        key=lambda r: (r["dt"], r["id"]))
    # Java's layout: the branch's own data files and manifests are the table's
    assert all("/branch/" not in p for p in h["branch_files"])

    deleted_tag = t.delete_tag("t1")  # snapshot 2 still exists on main: only the tag file
    assert deleted_tag.deleted == [t.file_io.join(t.path, "tag", "tag-t1")]
    expired = t.expire_snapshots(retain_min=1, retain_max=1, older_than=NOW)
    assert expired.snapshots_deleted == [1, 2, 3, 4]
    assert any("branches ['b']" in s for s in expired.skipped)
    cleaned = t.clean_schemas(retain_min=1, older_than=NOW)
    assert cleaned.deleted == [] and cleaned.kept_kinds[0] == "branch"
    assert "of branch 'b'" in cleaned.kept[0]
    orphans = t.remove_orphan_files(older_than=NOW, enforce_retention_duration=False)

    left = all_files(t)
    assert h["branch_files"] <= left
    b = catalog.get_table("db.t").branch("b")
    assert sorted_rows(b.read()) == h["branch_rows"]
    assert sorted_rows(catalog.get_table("db.t$branch_b").read()) == h["branch_rows"]
    assert sorted_rows(b.read(tag="t1")) == h["tagged"]
    assert sorted_rows(b.read(snapshot_id=2)) == h["tagged"]
    assert sorted_rows(catalog.get_table("db.t").read()) == h["main_rows"]
    # what only the main branch held went: its update's file, compacted away and expired
    gone = h["main_only"] - {f["path"] for f in t.files()}
    assert gone and not gone & left
    assert not any("/branch/" in p for p in expired.deleted + orphans.deleted)
    # the branch's directory is untouched
    assert {p for p in left if "/branch/" in p} == {
        t.file_io.join(t.path, "branch", "branch-b", x)
        for x in ("schema/schema-0", "snapshot/snapshot-2", "snapshot/snapshot-3",
                  "snapshot/LATEST", "tag/tag-t1")}


@local_disk
def test_deleting_the_tag_a_branch_was_made_from_keeps_the_branch_files(catalog, later):
    """Java deletes the tag (a branch keeps a copy) and, since no snapshot is left, the files
    only it held, which the branch still reads (apache/paimon#6272); here they stay."""
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["dt", "id"],
                             options={"bucket": "1"})
    t.write(rows("d1", range(5), "a"))
    t.create_tag("t1")
    t.create_branch("b", tag="t1")
    tagged = sorted_rows(t.read())
    t.write(rows("d1", range(5), "z"))
    t.compact(full=True)
    t.expire_snapshots(retain_min=1, retain_max=1, older_than=NOW)
    assert [s.id for s in t.snapshots()] == [3]
    held = {f["path"] for f in t.branch("b").files()}
    assert held <= all_files(t)

    dry = t.delete_tag("t1", dry_run=True)
    res = t.delete_tag("t1")
    assert res.deleted == dry.deleted == [t.file_io.join(t.path, "tag", "tag-t1")]
    assert any("branches ['b']" in n for n in res.notes)
    assert held <= all_files(t)
    assert sorted_rows(t.branch("b").read()) == tagged
    assert sorted_rows(t.branch("b").read(tag="t1")) == tagged
    # with the branch gone, nothing holds them: once no manifest names them (a manifest
    # compaction, and expiry of the snapshot before it) orphan removal takes them
    t.delete_branch("b")
    assert t.branches() == []
    t.compact_manifests()
    t.expire_snapshots(retain_min=1, retain_max=1, older_than=NOW)
    t.remove_orphan_files(older_than=NOW, enforce_retention_duration=False)
    assert not held & all_files(t)
    assert sorted_rows(t.read()) == sorted_rows(rows("d1", range(5), "z"))


@local_disk
def test_an_unreadable_branch_snapshot_makes_cleanup_delete_nothing(catalog, later):
    t, _ = branch_history(catalog)
    t.delete_tag("t1")
    bad = t.file_io.join(t.path, "branch", "branch-b", "snapshot", "snapshot-3")
    good = t.file_io.read_bytes(bad)
    t.file_io.write_bytes(bad, b"{not json")
    before = all_files(t)
    for run in (lambda: t.remove_orphan_files(older_than=NOW, enforce_retention_duration=False),
                lambda: t.expire_snapshots(retain_min=1, retain_max=1, older_than=NOW),
                lambda: t.clean_schemas(retain_min=1, older_than=NOW)):
        with pytest.raises(lf.CleanupAbortedError, match="nothing deleted") as err:
            run()
        assert "branch 'b'" in str(err.value) or "b:snapshot-3" in str(err.value)
        assert bad in str(err.value)
        assert all_files(t) == before

    # a manifest list only the branch snapshot names, missing
    t.file_io.write_bytes(bad, good)
    branch_list = json.loads(good)["deltaManifestList"]
    t.file_io.delete(t.file_io.join(t.path, "manifest", branch_list))
    before = all_files(t)
    with pytest.raises(lf.CleanupAbortedError, match=branch_list) as err:
        t.remove_orphan_files(older_than=NOW, enforce_retention_duration=False)
    assert "b:snapshot-3" in str(err.value)
    with pytest.raises(lf.CleanupAbortedError, match=branch_list):
        t.expire_snapshots(retain_min=1, retain_max=1, older_than=NOW)
    assert all_files(t) == before


@local_disk
def test_deleting_a_tag_with_an_unreadable_branch_deletes_nothing(catalog, later):
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["dt", "id"],
                             options={"bucket": "1"})
    t.write(rows("d1", range(5), "a"))
    t.create_tag("t1")
    t.write(rows("d1", range(5), "z"))
    t.compact(full=True)
    t.expire_snapshots(retain_min=1, retain_max=1, older_than=NOW)
    t.create_branch("b")  # empty, then a broken snapshot
    t.file_io.write_bytes(t.file_io.join(t.path, "branch", "branch-b", "snapshot", "snapshot-1"),
                          b"[]")
    before = all_files(t)
    with pytest.raises(lf.CleanupAbortedError, match="branch") as err:
        t.delete_tag("t1")
    assert "snapshot-1" in str(err.value)
    assert all_files(t) == before


@local_disk
def test_a_branch_without_schema_aborts_orphan_removal(catalog, later):
    """Java's `validBranches`: a branch with no schema file stops the whole run."""
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["dt", "id"],
                             options={"bucket": "1"})
    t.write(rows("d1", range(3), "a"))
    stray = t.file_io.join(t.path, "bucket-0", "data-stray-0.parquet")
    t.file_io.write_bytes(stray, b"x")
    t.file_io.write_bytes(t.file_io.join(t.path, "branch", "branch-x", "tag", "junk"), b"x")
    before = all_files(t)
    with pytest.raises(lf.CleanupAbortedError, match=r"branches \['x'\] have no schema"):
        t.remove_orphan_files(older_than=NOW, enforce_retention_duration=False)
    assert all_files(t) == before


@local_disk
def test_orphan_removal_cleans_stray_files_of_branch_snapshot_dirs_only(catalog, later):
    """As Java's `cleanBranchSnapshotDir`: a stray file in a branch's `snapshot/` goes; the
    branch's snapshots, hints, tags and schemas stay; data written on a deleted branch goes."""
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["dt", "id"],
                             options={"bucket": "1"})
    t.write(rows("d1", range(3), "a"))
    t.create_branch("e")  # empty: schemas only
    info = t.branches()[0]
    assert (info.name, info.earliest_snapshot, info.latest_snapshot, info.schema_id,
            info.tags) == ("e", None, None, 0, [])
    assert info.create_time is not None
    write_branch(t, "e", rows("d9", [1], "e"))
    assert sorted_rows(t.branch("e").read()) == [{"dt": "d9", "id": 1, "v": "e1"}]
    j = t.file_io.join
    stray = j(t.path, "branch", "branch-e", "snapshot", ".snapshot-2.tmp")
    t.file_io.write_bytes(stray, b"x")
    # Java's rule spares any `snapshot-*` name
    t.file_io.write_bytes(j(t.path, "branch", "branch-e", "snapshot", "snapshot-2.bak"), b"x")
    keep = {p for p in all_files(t) if "/branch/" in p} - {stray}
    assert len(keep) == 4  # schema-0, snapshot-1, snapshot-2.bak, LATEST
    res = t.remove_orphan_files(older_than=NOW, enforce_retention_duration=False)
    assert res.deleted == [stray]
    assert keep <= all_files(t)
    held = {f["path"] for f in t.branch("e").files()}
    t.delete_branch("e")
    res = t.remove_orphan_files(older_than=NOW, enforce_retention_duration=False)
    assert held and held <= set(res.deleted)
    assert sorted_rows(t.read()) == sorted_rows(rows("d1", range(3), "a"))


@local_disk
def test_create_branch_rules_and_a_tag_whose_snapshot_expired(catalog, later):
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["dt", "id"],
                             options={"bucket": "1"})
    t.write(rows("d1", range(3), "a"))
    t.create_tag("t1")
    for name, error in (("main", lf.InvalidArgumentError), ("123", lf.InvalidArgumentError),
                        (" ", lf.InvalidArgumentError)):
        with pytest.raises(error):
            t.create_branch(name, tag="t1")
    with pytest.raises(lf.TagNotFoundError):
        t.create_branch("b", tag="nope")
    assert t.branches() == []
    t.write(rows("d1", range(3), "z"))
    t.compact(full=True)
    t.expire_snapshots(retain_min=1, retain_max=1, older_than=NOW)
    assert not SnapshotManager(t.file_io, t.path).exists(1)
    # the snapshot expired: the branch's is written from the tag, without the tag's keys
    t.create_branch("b", tag="t1")
    with pytest.raises(lf.AlreadyExistsError):
        t.create_branch("b")
    snap = json.loads(t.file_io.read_bytes(
        t.file_io.join(t.path, "branch", "branch-b", "snapshot", "snapshot-1")))
    assert snap["id"] == 1 and "tagCreateTime" not in snap
    assert sorted_rows(t.branch("b").read()) == sorted_rows(rows("d1", range(3), "a"))
    with pytest.raises(lf.UnsupportedError, match="branch"):
        t.branch("b").write(rows("d1", [1], "x"))
    # every verb but the reads is refused on a branch (each would act on the table's snapshots)
    before = all_files(t)
    verbs = [v for v, m in vars(lf.Table).items() if callable(m) and not v.startswith("_")
             and v not in BRANCH_READS]
    assert {"write", "compact", "expire_snapshots", "delete_tag", "fast_forward"} <= set(verbs)
    for verb in verbs:
        with pytest.raises(lf.UnsupportedError, match="does not write or maintain"):
            getattr(t.branch("b"), verb)()
    assert all_files(t) == before
    with pytest.raises(lf.NotFoundError):
        t.branch("nope")
    with pytest.raises(lf.NotFoundError):
        catalog.get_table("db.t$branch_nope")
    with pytest.raises(lf.NotFoundError):
        t.delete_branch("nope")


@local_disk
def test_changelog_expiry_keeps_what_a_branch_snapshot_names(catalog, later):
    """A decoupled changelog (`changelog.num-retained.max` above the snapshots'): expired
    snapshots live on as `changelog/changelog-<id>` until changelog expiry; the branch made from
    a tag keeps the changelog list, manifests and files of its snapshot."""
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["dt", "id"],
                             options={"bucket": "1", "changelog-producer": "lookup",
                                      "changelog.num-retained.max": "50"})
    t.write(rows("d1", range(4), "a"))
    t.write(rows("d1", range(4), "b"))
    t.create_tag("t1")
    t.create_branch("b", tag="t1")
    t.delete_tag("t1")
    tagged = sorted_rows(t.read())
    for tag in "cde":
        t.write(rows("d1", range(4), tag))
    [branch_snap] = t.branch("b").snapshots()
    assert branch_snap.changelog_manifest_list
    refs = TableReferences(t.file_io, t.path, t.table_schema)
    names = {branch_snap.changelog_manifest_list} | {
        m.file_name for m in refs.changelog_manifests(branch_snap)}
    held = {t.file_io.join(t.path, "manifest", n) for n in names} | {
        r.path for e in refs.changelog_entries(branch_snap) for r in refs.file_refs(e)}
    assert len(held) > 2

    # expiry writes changelog-1..9, then changelog expiry (its retention falls back to the
    # snapshot arguments: min 1, the same cut-off) removes all but the newest
    res = t.expire_snapshots(retain_min=1, retain_max=1, older_than=NOW)
    assert res.changelogs_written and res.changelogs_deleted and res.changelog_files_deleted
    assert any("branches ['b']" in s for s in res.skipped)
    assert held <= all_files(t)
    res = t.expire_changelogs(delete_all=True)
    assert res.changelogs_deleted
    assert held <= all_files(t)
    assert sorted_rows(t.branch("b").read()) == tagged


@local_disk
def test_fast_forward_makes_the_table_the_branch(catalog, later):
    """Java's fastForward: main's snapshots from the branch's earliest on, schemas from that
    snapshot's schema on and tags of those snapshots go; the branch's files are copied in."""
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["dt", "id"],
                             options={"bucket": "1"})
    t.write(rows("d1", range(3), "a"))
    t.write(rows("d1", range(3), "b"))
    t.create_tag("t1", snapshot_id=2)
    t.create_branch("b", tag="t1")
    t.write(rows("d1", [7], "main"))  # main's snapshot 3, gone after the fast-forward
    t.create_tag("t3")
    t.alter([lf.SchemaChange.add_column("w", pa.int64())])
    write_branch(t, "b", rows("d2", [1], "br"))  # the branch's snapshot 3
    branch_rows = sorted_rows(t.branch("b").read())
    with pytest.raises(lf.InvalidArgumentError):
        t.fast_forward("main")
    t.create_branch("empty")
    with pytest.raises(lf.InvalidArgumentError, match="no snapshot"):
        t.fast_forward("empty")

    deleted = t.fast_forward("b")
    j = t.file_io.join
    assert sorted(deleted) == sorted([j(t.path, "snapshot", "snapshot-2"),
                                      j(t.path, "snapshot", "snapshot-3"),
                                      j(t.path, "schema", "schema-0"),
                                      j(t.path, "schema", "schema-1"),
                                      j(t.path, "tag", "tag-t1"), j(t.path, "tag", "tag-t3")])
    fresh = catalog.get_table("db.t")
    assert [s.id for s in fresh.snapshots()] == [1, 2, 3]
    assert fresh.latest_snapshot().id == 3
    assert [s.id for s in fresh.schemas()] == [0]
    assert [x.name for x in fresh.list_tags()] == ["t1"]
    assert sorted_rows(fresh.read()) == branch_rows
    assert "w" not in fresh.schema.names
    # main's own snapshot 3 wrote the only file nothing references now
    res = fresh.remove_orphan_files(older_than=NOW, enforce_retention_duration=False)
    assert res.data_files_deleted == 1
    assert sorted_rows(fresh.read()) == branch_rows


@local_disk
def test_a_branch_changelog_is_read_as_a_changelog(catalog, later):
    """Java's snapshot expiry on a branch with a decoupled changelog moves an expired branch
    snapshot to the branch's `changelog/changelog-<id>` and deletes its base and delta lists
    (its changelog list carries the changelog). Every cleanup of the main branch reads that
    changelog as it reads the main branch's (a list snapshot expiry removed is no error) and
    keeps its changelog list, manifests and files."""
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["dt", "id"],
                             options={"bucket": "1", "changelog-producer": "lookup",
                                      "changelog.num-retained.min": "50",
                                      "changelog.num-retained.max": "50"})
    t.write(rows("d1", range(4), "a"))
    t.write(rows("d1", range(4), "b"))
    t.create_tag("t1")
    t.create_branch("b", tag="t1")
    t.delete_tag("t1")
    write_branch(t, "b", rows("d1", [0, 9], "branch"))
    branch_rows = sorted_rows(t.branch("b").read())
    for tag in "cd":
        t.write(rows("d1", range(4), tag))
    t.create_tag("t2")
    t.write(rows("d1", range(4), "e"))
    t.expire_snapshots(retain_min=1, retain_max=1, older_than=NOW)
    # on the branch, as Java runs them there: its tag t1 is deleted (its snapshot exists: only
    # the tag file goes), then expiry turns its first snapshot into a changelog
    manager = BranchManager(t.file_io, t.path)
    manager.tags("b").delete_file("t1")
    snapshots = manager.snapshots("b")
    first = snapshots.snapshots()[0]
    assert first.changelog_manifest_list and len(snapshots.snapshot_ids()) == 2
    ChangelogManager(t.file_io, manager.branch_path("b")).commit(changelog_of(first))
    t.file_io.delete(snapshots.snapshot_path(first.id))
    for name in (first.base_manifest_list, first.delta_manifest_list):
        assert t.file_io.delete(t.file_io.join(t.path, "manifest", name))
    refs = TableReferences(t.file_io, t.path, t.table_schema)
    held = {t.file_io.join(t.path, "manifest", n) for n in {first.changelog_manifest_list} | {
        m.file_name for m in refs.changelog_manifests(first)}} | {
        r.path for e in refs.changelog_entries(first) for r in refs.file_refs(e)}
    assert len(held) > 2 and held <= all_files(t)

    assert t.remove_orphan_files().deleted is not None
    t.expire_snapshots(retain_min=1, retain_max=1, older_than=NOW)
    res = t.delete_tag("t2")  # its snapshot expired: the files only it held go
    assert res.deleted and held <= all_files(t)
    res = t.expire_changelogs(delete_all=True)
    assert res.changelogs_deleted and any("branches ['b']" in s for s in res.skipped)
    assert held <= all_files(t)
    assert t.remove_orphan_files().deleted == [] and held <= all_files(t)
    assert sorted_rows(t.branch("b").read()) == branch_rows
