"""Maintenance commands print the library result's own text for people and its dict in the
JSON envelope: expire-snapshots, clean-schemas, remove-orphan-files, expire-partitions, tag
create/delete, expire-tags, rollback, compact.

The commands run through `lakeformat.cli.main` in this process (`lakeformat_main`, see
conftest.py): the same parsing and rendering as the installed script, without its start-up.
The script runs compact, expire-snapshots and tag in README.md's CLI session
(tests/readme/test_readme_blocks.py), and its exit statuses and errors in test_errors.py and
test_argument_errors.py.
"""

from __future__ import annotations

import lakeformat as lf
from lakeformat import clock
from tests.cli.conftest import lakeformat_main, make_orders, orders, run_main


def test_maintenance_commands_in_both_modes(tmp_path):
    wh = str(tmp_path / "wh")
    t = make_orders(wh, bucket="1")
    for i in range(4):
        t.write(orders(2, f"2024-01-0{1 + i % 2}", start=10 * i))
    base = ["--warehouse", wh]
    (exp_dry, exp_dry_j, schemas_dry, orphans_dry, parts_dry, tag_made, compact_dry) = run_main(
        [*base, "expire-snapshots", "db.t", "--retain-min", "1", "--older-than", "0 s",
         "--dry-run"],
        [*base, "--json", "expire-snapshots", "db.t", "--retain-min", "1", "--older-than",
         "0 s", "--dry-run"],
        [*base, "clean-schemas", "db.t", "--dry-run", "--json"],
        [*base, "remove-orphan-files", "db.t", "--dry-run", "--json"],
        [*base, "expire-partitions", "db.t", "--expiration-time", "1 d", "--dry-run", "--json"],
        [*base, "tag", "db.t", "create", "keep", "--snapshot", "2"],
        [*base, "snapshots", "db.t", "--json"])
    assert exp_dry.ok().out.startswith("db.t: ") and "would delete" in exp_dry.out
    dry = exp_dry_j.ok().json()
    assert dry["dry_run"] is True and dry["snapshots_deleted"] == [1, 2, 3]
    assert schemas_dry.ok().json()["operation"] and orphans_dry.ok().json()["dry_run"] is True
    assert "partitions_expired" in parts_dry.ok().json()
    assert tag_made.ok().out.startswith("tag keep: snapshot 2")
    assert len(compact_dry.ok().json()) == 4

    human = lakeformat_main(*base, "compact", "db.t", "--minor").ok()
    assert human.out.startswith("db.t: ") and "minor compaction" in human.out
    full = lakeformat_main(*base, "compact", "db.t", "--json").ok()
    assert full.json()["full"] is True and "buckets to compact" in full.err  # progress: stderr
    rolled = lakeformat_main(*base, "rollback", "db.t", "keep", "--json").ok().json()
    assert rolled["latest_snapshot"] == 2
    untag, expired = run_main([*base, "tag", "db.t", "delete", "keep", "--json"],
                              [*base, "expire-snapshots", "db.t", "--retain-min", "1",
                               "--older-than", "0 s"])
    assert untag.ok().json()["operation"]
    assert expired.ok().out.startswith("db.t: ")
    rows = lakeformat_main(*base, "read", "db.t", "--json").ok().lines()
    assert sorted(r["id"] for r in rows) == [0, 1, 10, 11]


def test_expiry_says_what_the_limit_left_and_clean_schemas_says_why(tmp_path):
    wh = str(tmp_path / "wh")
    t = make_orders(wh, bucket="1")
    for i in range(6):
        t.write(orders(3, "2024-01-01", start=i))
    t.alter([lf.SchemaChange.set_option("snapshot.num-retained.min", "1")])  # schema 1
    base = ["--warehouse", wh]
    old = ["--retain-min", "1", "--older-than", "0 s"]
    dry = lakeformat_main(*base, "expire-snapshots", "db.t", *old, "--max-deletes", "2",
                          "--dry-run").ok().out
    assert "limit snapshot.expire.limit=2 reached; 3 more snapshots are eligible" in dry
    assert "snapshots: 1..2" in dry and "/snapshot/snapshot-2" in dry  # the list, not counts
    lakeformat_main(*base, "compact", "db.t").ok()
    lakeformat_main(*base, "expire-snapshots", "db.t", *old, "--max-deletes", "20").ok()
    kept = lakeformat_main(*base, "clean-schemas", "db.t", *old).ok().out
    assert "deleted nothing" in kept and "1: latest schema" in kept
    assert "0: deleted data files still listed" in kept and "--compact-manifests" in kept
    compacted = lakeformat_main(*base, "clean-schemas", "db.t", *old, "--compact-manifests",
                                "--json").ok().json()
    assert compacted["manifest_compaction_snapshot"] == 8
    assert compacted["kept_kinds"] == {"0": "deleted-file", "1": "latest"}
    lakeformat_main(*base, "expire-snapshots", "db.t", *old).ok()  # snapshot 7 goes
    cleaned = lakeformat_main(*base, "clean-schemas", "db.t", *old, "--json").ok().json()
    assert cleaned["schema_files_deleted"] == 1
    assert [s.id for s in lf.Catalog(wh).get_table("db.t").schemas()] == [1]


def test_expire_tags_command(tmp_path, monkeypatch):
    wh = str(tmp_path / "wh")
    t = make_orders(wh, bucket="1")
    for i in range(2):
        t.write(orders(2, "2024-01-01", start=10 * i))
    t.create_tag("short", 1, time_retained="1 h")
    t.create_tag("kept", 2)  # no retention: expires only by --older-than
    real = clock.now_millis
    monkeypatch.setattr(clock, "now_millis", lambda: real() + 2 * 3600 * 1000)
    base = ["--warehouse", wh]
    dry, dry_j, done = run_main([*base, "expire-tags", "db.t", "--dry-run"],
                                [*base, "--json", "expire-tags", "db.t", "--dry-run"],
                                [*base, "expire-tags", "db.t", "--json"])
    assert dry.ok().out.startswith("db.t: expire-tags would delete 1 tags ['short']")
    assert "tag-short" in dry.out  # a dry run lists the paths
    assert dry_j.ok().json()["dry_run"] is True and dry_j.json()["tags_deleted"] == ["short"]
    assert done.ok().json()["tags_deleted"] == ["short"]
    assert [x.name for x in t.list_tags()] == ["kept"]
    bad = lakeformat_main(*base, "expire-tags", "db.t", "--older-than", "soon")
    assert bad.code != 0 and "older_than" in bad.err and bad.out == ""
    older = lakeformat_main(*base, "expire-tags", "db.t", "--older-than", "0 s", "--json")
    assert older.ok().json()["tags_deleted"] == ["kept"] and t.list_tags() == []
    assert sorted(r["id"] for r in lakeformat_main(*base, "read", "db.t", "--json").ok()
                  .lines()) == [0, 1, 10, 11]
