"""Maintenance commands print the library result's own text for people and its dict in the
JSON envelope: expire-snapshots, clean-schemas, remove-orphan-files, expire-partitions, tag
create/delete, rollback, compact."""

from __future__ import annotations

from tests.cli.conftest import lakeformat, make_orders, orders, run_all


def test_maintenance_commands_in_both_modes(tmp_path):
    wh = str(tmp_path / "wh")
    t = make_orders(wh, bucket="1")
    for i in range(4):
        t.write(orders(2, f"2024-01-0{1 + i % 2}", start=10 * i))
    base = ["--warehouse", wh]
    (exp_dry, exp_dry_j, schemas_dry, orphans_dry, parts_dry, tag_made, compact_dry) = run_all(
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

    human = lakeformat(*base, "compact", "db.t", "--minor").ok()
    assert human.out.startswith("db.t: ") and "minor compaction" in human.out
    full = lakeformat(*base, "compact", "db.t", "--json").ok()
    assert full.json()["full"] is True and "buckets to compact" in full.err  # progress: stderr
    rolled = lakeformat(*base, "rollback", "db.t", "keep", "--json").ok().json()
    assert rolled["latest_snapshot"] == 2
    untag, expired = run_all([*base, "tag", "db.t", "delete", "keep", "--json"],
                             [*base, "expire-snapshots", "db.t", "--retain-min", "1",
                              "--older-than", "0 s"])
    assert untag.ok().json()["operation"]
    assert expired.ok().out.startswith("db.t: ")
    rows = lakeformat(*base, "read", "db.t", "--json").ok().lines()
    assert sorted(r["id"] for r in rows) == [0, 1, 10, 11]
