"""Maintenance that explains itself: expiry says how many snapshots the per-run limit left,
dry-run text lists what would be deleted, clean_schemas says why each schema stays, and
`compact_manifests=True` lets schemas only deleted files named go.

What the reports say is computed from snapshots, manifests and schemas, the same above either
store, so most tests (`@local_disk`) run on local disk only. Two run on the moto S3 server as
well: the dry runs of orphans (files found by listing, their ages from S3's LastModified, S3
paths in the text), schemas and partitions, and a manifest compaction that commits and then
lets schema files go (a commit and deletes on S3). Expiry's deletes and counts on S3 are
`test_maintenance_s3.py`'s; schema cleaning on S3 also `test_schema_retention.py`'s.
"""

from __future__ import annotations

import datetime as dt
import time

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat import SchemaChange
from lakeformat.results import LIST_LIMIT

NOW = dt.timedelta(0)  # older_than=0: every snapshot's successor counts as old
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


#: a test of this module that never reaches store specifics: local disk only (module docstring)
local_disk = pytest.mark.parametrize("catalog", ["local"], indirect=True)


def many_snapshots(catalog, n: int, **options) -> lf.Table:
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"],
                             options={"bucket": "1", **options})
    for i in range(n):
        t.write(pa.table({"id": [i % 3, 100 + i], "v": [f"a{i}", f"b{i}"]}))
    return t


def snapshot_reads(t: lf.Table) -> dict[int, list]:
    return {s.id: sorted(t.read(snapshot_id=s.id).to_pylist(), key=lambda r: r["id"])
            for s in t.snapshots()}


def listed(text: str) -> list[str]:
    """The lines of a result's text listing what it would delete."""
    lines = text.splitlines()
    start = lines.index("  would delete:") + 1
    out = []
    for line in lines[start:]:
        if not line.startswith("    "):
            break
        out.append(line.strip())
    return out


@local_disk
def test_expiry_reports_what_the_limit_left_and_next_runs_take_it(catalog):
    t = many_snapshots(catalog, 25, **{"snapshot.expire.limit": "10"})
    plan = t.expire_snapshots(retain_min=2, older_than=NOW, dry_run=True)
    # 1..23 are eligible (2 retained): the limit lets 10 go now
    assert plan.snapshots_deleted == list(range(1, 11))
    assert plan.snapshots_remaining_eligible == 13 and plan.expire_limit == 10
    assert ("limit snapshot.expire.limit=10 reached; 13 more snapshots are eligible — run "
            "again or raise max_deletes") in str(plan)
    assert plan.to_dict()["snapshots_remaining_eligible"] == 13

    first = t.expire_snapshots(retain_min=2, older_than=NOW)
    assert first.snapshots_deleted == plan.snapshots_deleted
    assert first.snapshots_remaining_eligible == 13 and "13 more snapshots" in str(first)
    second = t.expire_snapshots(retain_min=2, older_than=NOW, max_deletes=4)
    assert second.snapshots_deleted == [11, 12, 13, 14]
    assert second.snapshots_remaining_eligible == 9 and "max_deletes" in str(second)
    assert "snapshot.expire.limit=4 reached; 9 more" in str(second)
    last = t.expire_snapshots(retain_min=2, older_than=NOW, max_deletes=50)
    assert last.snapshots_deleted == list(range(15, 24))
    assert last.snapshots_remaining_eligible == 0 and "more snapshots are eligible" not in str(
        last)
    assert [s.id for s in t.snapshots()] == [24, 25]


@local_disk
def test_expiry_counts_only_snapshots_old_enough(catalog):
    t = many_snapshots(catalog, 12)
    time.sleep(0.05)
    cutoff = dt.datetime.now()
    time.sleep(0.05)
    for i in range(6):  # snapshots 13..18 are younger than the cut-off
        t.write(pa.table({"id": [500 + i], "v": ["young"]}))
    r = t.expire_snapshots(retain_min=1, older_than=cutoff, max_deletes=5, dry_run=True)
    # 1..11 may expire (12 stays: its successor 13 is younger than the cut-off): 5 now, 6 later
    assert r.snapshots_deleted == [1, 2, 3, 4, 5] and r.snapshots_remaining_eligible == 6


@local_disk
def test_dry_run_text_lists_the_first_paths_and_how_many_more(catalog):
    t = many_snapshots(catalog, 15)
    plan = t.expire_snapshots(retain_min=1, older_than=NOW, max_deletes=20, dry_run=True)
    assert len(plan.deleted) > LIST_LIMIT
    text = str(plan)
    shown = listed(text)
    assert shown[:-1] == plan.deleted[:LIST_LIMIT]
    assert shown[-1] == f"... and {len(plan.deleted) - LIST_LIMIT} more"
    assert "snapshots: 1..14" in text and "would delete 14 snapshots" in text
    assert "KiB" in text and isinstance(plan.to_dict()["bytes_deleted"], int)
    real = t.expire_snapshots(retain_min=1, older_than=NOW, max_deletes=20)
    assert real.deleted == plan.deleted and "would delete:" not in str(real)

    # rollback and tag deletion dry runs list their paths too
    t.create_tag("keep", snapshot_id=15)
    for i in range(3):
        t.write(pa.table({"id": [900 + i], "v": ["late"]}))
    back = t.rollback_to(15, dry_run=True)
    assert listed(str(back)) == back.deleted and len(back.deleted) == 3
    assert "snapshots: 16..18" in str(back)
    tag = t.delete_tag("keep", dry_run=True)
    assert listed(str(tag)) == tag.deleted == [t.path + "/tag/tag-keep"]


def test_dry_run_text_of_orphans_schemas_and_partitions(catalog):
    t = many_snapshots(catalog, 1)
    junk = [f"{t.path}/manifest/manifest-junk-{i:02d}" for i in range(LIST_LIMIT + 3)]
    for path in junk:
        t.file_io.write_bytes(path, b"x" * 2000)
    time.sleep(0.02)  # a file is an orphan only when its mtime is before the cut-off (strict)
    orphans = t.remove_orphan_files(older_than="0 s", enforce_retention_duration=False,
                                    dry_run=True)
    assert sorted(orphans.deleted) == junk
    assert listed(str(orphans)) == orphans.deleted[:LIST_LIMIT] + ["... and 3 more"]
    assert "25.4 KiB" in str(orphans) and orphans.bytes_deleted == 26000

    for i in range(3):
        t.alter(SchemaChange.set_option("custom.n", str(i)))
    time.sleep(0.05)
    schemas = t.clean_schemas(retain_min=1, older_than="1 ms", dry_run=True)
    assert listed(str(schemas)) == schemas.deleted and len(schemas.deleted) == 2

    days = catalog.create_table("db.days", pa.schema([("dt", pa.string()), ("id", pa.int64())]),
                                primary_keys=["dt", "id"], partition_keys=["dt"],
                                options={"bucket": "1",
                                         "partition.timestamp-formatter": "yyyyMMdd"})
    names = [f"202401{d:02d}" for d in range(1, LIST_LIMIT + 6)]
    days.write(pa.table({"dt": names, "id": list(range(len(names)))}))
    parts = days.expire_partitions(dt.datetime(2024, 2, 1), dry_run=True)
    assert len(parts.partitions_expired) == LIST_LIMIT + 5
    text = str(parts)
    assert all(f"dt={d}" in text for d in names[:LIST_LIMIT])
    assert f"dt={names[-1]}" not in text and "... and 5 more" in text


def evolved_and_compacted(catalog) -> lf.Table:
    """Schema 0 and 1 files replaced by a full compaction under schema 2, one more write, and
    expiry down to that last snapshot (4): its manifests still list the old files as ADD/DELETE
    pairs (the merge keeps them until a full manifest compaction)."""
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}))  # snapshot 1, schema 0 files
    t.alter(SchemaChange.add_column("c", pa.int64()))  # schema 1
    t.write(pa.table({"id": [3], "v": ["c"], "c": [1]}))  # snapshot 2, schema 1 files
    t.alter(SchemaChange.set_option("custom.k", "1"))  # schema 2
    t.compact(full=True)  # snapshot 3, one schema 2 file
    t.write(pa.table({"id": [4], "v": ["d"], "c": [2]}))  # snapshot 4
    t.expire_snapshots(retain_min=1, older_than=NOW)
    assert [s.id for s in t.snapshots()] == [4]
    assert {f["schema_id"] for f in t.files()} == {2}  # snapshot 4 reads only schema 2 files
    time.sleep(0.05)
    return t


@local_disk
def test_clean_schemas_says_why_each_schema_is_kept(catalog):
    t = evolved_and_compacted(catalog)
    t.alter(SchemaChange.set_option("custom.k", "2"))  # schema 3: nothing names it
    time.sleep(0.05)
    cutoff = dt.datetime.now()
    time.sleep(0.05)
    t.alter(SchemaChange.set_option("custom.k", "3"))  # schema 4, the latest
    r = t.clean_schemas(retain_min=1, older_than="1 d")
    assert r.kept_kinds[3] == "too-young" and "too young: it was created" in r.kept[3]
    r = t.clean_schemas(retain_min=1, older_than=cutoff)  # 3 is old, but 4 replaced it since
    assert r.deleted == [] and sorted(r.kept) == [0, 1, 2, 3, 4]
    assert r.kept_kinds == {0: "deleted-file", 1: "deleted-file", 2: "snapshot",
                            3: "too-young", 4: "latest"}
    assert "snapshot 4" in r.kept[0] and "compact_manifests (CLI --compact-manifests)" in r.kept[0]
    assert r.kept[2] == "schemaId of snapshot 4"
    assert "schema 4, which replaced it," in r.kept[3]
    text = str(r)
    assert "kept schemas:" in text and f"    0: {r.kept[0]}" in text
    assert r.to_dict()["kept_kinds"] == {str(k): v for k, v in r.kept_kinds.items()}

    r = t.clean_schemas(retain_min=2, older_than="1 d", dry_run=True)
    assert r.kept_kinds[3] == "retain-min" and "newest 2 schemas" in r.kept[3]
    r = t.clean_schemas(retain_min=1, older_than="1 ms")
    assert r.deleted == [t.schema_manager.schema_path(3)]
    assert r.kept_kinds == {0: "deleted-file", 1: "deleted-file", 2: "snapshot", 4: "latest"}


@local_disk
def test_clean_schemas_names_live_files_and_tags(catalog):
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1], "v": ["a"]}))  # snapshot 1, schema 0
    t.create_tag("first", snapshot_id=1)
    t.alter(SchemaChange.add_column("c", pa.int64()))  # schema 1
    t.write(pa.table({"id": [2], "v": ["b"], "c": [1]}))  # snapshot 2
    t.alter(SchemaChange.set_option("custom.k", "1"))  # schema 2
    t.write(pa.table({"id": [3], "v": ["c"], "c": [2]}))  # snapshot 3
    t.expire_snapshots(retain_min=1, older_than=NOW)
    time.sleep(0.05)
    r = t.clean_schemas(retain_min=1, older_than="1 ms")
    assert r.deleted == []
    assert r.kept_kinds == {0: "tag", 1: "live-file", 2: "latest"}
    assert r.kept[0] == "schemaId of tag 'first'"
    schema1_file = next(f["file_name"] for f in t.files() if f["schema_id"] == 1)
    assert schema1_file in r.kept[1] and "snapshot 3" in r.kept[1]


def test_compact_manifests_lets_schemas_of_deleted_files_go(catalog):
    t = evolved_and_compacted(catalog)
    rows = t.read(snapshot_id=4).sort_by("id")
    records = t.snapshot_manager.snapshot(4).total_record_count

    dry = t.clean_schemas(retain_min=1, older_than="1 ms", compact_manifests=True,
                          dry_run=True)
    assert [s.id for s in t.snapshots()] == [4] and dry.manifest_compaction_snapshot is None
    assert "would compact the manifests of snapshot 4" in str(dry)

    r = t.clean_schemas(retain_min=1, older_than="1 ms", compact_manifests=True)
    assert r.manifest_compaction_snapshot == 5
    snaps = {s.id: s for s in t.snapshots()}
    assert snaps[5].commit_kind == "COMPACT" and snaps[5].total_record_count == records
    assert snaps[5].delta_record_count == 0
    assert t.read(snapshot_id=5).sort_by("id").equals(rows)
    assert t.read(snapshot_id=4).sort_by("id").equals(rows)
    # snapshot 4 is still retained and still lists the old files: the schemas stay for it
    assert r.deleted == [] and r.kept_kinds[0] == r.kept_kinds[1] == "deleted-file"
    assert "of snapshot 4" in r.kept[0] and "of snapshot 5" not in r.kept[0]
    assert "committed COMPACT snapshot 5" in str(r)

    again = t.clean_schemas(retain_min=1, older_than="1 ms", compact_manifests=True)
    assert again.manifest_compaction_snapshot is None and "nothing to compact" in str(again)
    assert [s.id for s in t.snapshots()] == [4, 5]

    t.expire_snapshots(retain_min=1, older_than=NOW)
    r = t.clean_schemas(retain_min=1, older_than="1 ms")
    assert r.deleted == [t.schema_manager.schema_path(k) for k in (0, 1)]
    assert r.kept_kinds == {2: "latest"}
    fresh = catalog.get_table("db.t")
    assert fresh.read().sort_by("id").equals(rows)
    assert fresh.read(snapshot_id=5).sort_by("id").equals(rows)


@local_disk
def test_without_compacting_manifests_the_old_schemas_stay(catalog):
    t = evolved_and_compacted(catalog)
    t.write(pa.table({"id": [5], "v": ["e"], "c": [3]}))  # snapshot 5, merge keeps the pairs
    t.expire_snapshots(retain_min=1, older_than=NOW)
    r = t.clean_schemas(retain_min=1, older_than="1 ms")
    assert r.deleted == [] and r.kept_kinds[0] == "deleted-file"
    assert "of snapshot 5" in r.kept[0]


@pytest.mark.parametrize("dry_run", [True, False])
def test_compact_manifests_on_a_table_without_deletes_commits_nothing(local_catalog, dry_run):
    t = many_snapshots(local_catalog, 2)
    r = t.clean_schemas(compact_manifests=True, dry_run=dry_run)
    assert r.manifest_compaction_snapshot is None and "nothing to compact" in str(r)
    assert [s.id for s in t.snapshots()] == [1, 2]
