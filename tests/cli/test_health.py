"""`lakeformat health` and `lakeformat due`: the library's `Table.health()` and
`Table.maintenance_due()` on the command line — the same figures in the JSON envelope, a
readable text form, the worst bucket first, one table or the whole warehouse, threshold
overrides by Paimon option name, a budget, and a table that cannot be read reported beside
the others (exit 1 after the report).

In this process through `lakeformat.cli.main` (`lakeformat_main`, see conftest.py)."""

from __future__ import annotations

from pathlib import Path

from tests.cli.conftest import (
    assert_one_line_error,
    assert_table,
    lakeformat_main,
    make_orders,
    orders,
    run_main,
)


def _debt(wh: str, name: str, writes: int, **options: str):
    """A table whose one bucket holds `writes` level-0 files (sorted runs) in dt=2024-01-01,
    plus one write to dt=2024-01-02."""
    t = make_orders(wh, name, bucket="1", **options)
    for i in range(writes):
        t.write(orders(3, "2024-01-01", start=10 * i))
    t.write(orders(2, "2024-01-02", start=500))
    return t


def test_health_prints_the_libraries_figures_worst_bucket_first(tmp_path):
    wh = str(tmp_path / "wh")
    t = _debt(wh, "db.t", 6)
    base = ["--warehouse", wh]
    text, js, one = run_main([*base, "health", "db.t"], [*base, "health", "db.t", "--json"],
                             [*base, "health", "db.t", "--partition", "dt=2024-01-02",
                              "--json"])
    expected = t.health().to_dict()
    got = js.ok().json()
    for key in ("table", "snapshot_id", "score", "totals", "snapshots", "schemas",
                "manifests", "buckets"):
        assert got[key] == expected[key], key
    assert [b["sorted_runs"] for b in got["buckets"]] == [6, 1]  # worst first
    assert [b["partition"] for b in one.ok().json()["buckets"]] == ["dt=2024-01-02"]
    none, bad_key = run_main([*base, "health", "db.t", "--partition", "dt=2030-01-01"],
                             [*base, "health", "db.t", "--partition", "day=2024-01-01"])
    assert none.ok().out.rstrip().endswith("no live bucket in dt=2030-01-01")
    assert_one_line_error(bad_key, 2, "day", "dt")

    out = text.ok().out
    assert out.startswith(f"db.t: health {expected['score']}/100 at snapshot 7")
    rows = assert_table(out[out.index("PARTITION"):],
                        ["PARTITION", "BUCKET", "SORTED RUNS", "LEVEL-0", "FILES", "SMALL",
                         "ROWS", "DELETED", "SIZE", "DEBT"])
    assert [(r[0], r[2]) for r in rows] == [("dt=2024-01-01", "6"), ("dt=2024-01-02", "1")]
    for name in expected["components"]:
        assert f"\n{name} " in out


def test_due_names_the_rule_and_its_figures_and_says_why_the_rest_is_not_due(tmp_path):
    wh = str(tmp_path / "wh")
    t = _debt(wh, "db.t", 4)
    base = ["--warehouse", wh]
    lower, text, js, calm = run_main(
        [*base, "due", "db.t", "--json", "-T", "num-sorted-run.compaction-trigger=3"],
        [*base, "due", "db.t", "-T", "num-sorted-run.compaction-trigger=3"],
        [*base, "due", "db.t", "--json"],
        [*base, "due", "db.t"])
    # 4 sorted runs below the default trigger 5: nothing to compact yet
    assert js.ok().json()["actions"] == []
    assert "nothing due" in calm.ok().out
    assert "num-sorted-run.compaction-trigger" in calm.out  # the reason names the option

    result = lower.ok().json()
    want = t.maintenance_due({"num-sorted-run.compaction-trigger": 3})
    assert [a["kind"] for a in result["actions"]] == [a.kind for a in want.actions]
    assert result["actions"][0]["kind"] == "compact"
    assert result["actions"][0]["partitions"] == [{"dt": "2024-01-01"}]
    assert result["tables"][0]["not_due"] == want.not_due
    assert "4 sorted runs" in text.ok().out


def test_due_all_ranks_across_tables_within_a_budget_and_reports_a_broken_table(tmp_path):
    wh = str(tmp_path / "wh")
    _debt(wh, "db.heavy", 9)   # above the stop trigger's 8 - 1: urgent
    _debt(wh, "db.light", 6)   # above the compaction trigger 5
    _debt(wh, "db.calm", 2)
    base = ["--warehouse", wh]
    ranked, budget = run_main([*base, "due", "--all", "--json"],
                              [*base, "due", "--all", "--json", "--max-actions", "1"])
    result = ranked.ok().json()
    assert [(a["table"], a["urgent"]) for a in result["actions"]][:2] == [
        ("db.heavy", True), ("db.light", False)]
    assert {r["table"]: r["due"] for r in result["tables"]} == {
        "db.calm": False, "db.heavy": True, "db.light": True}
    assert [a["table"] for a in budget.ok().json()["actions"]] == ["db.heavy"]

    # a manifest of db.light that cannot be read: its error, the others still reported
    manifests = sorted(Path(wh, "db.db", "light", "manifest").glob("manifest-*"))
    for m in manifests:
        if not m.name.startswith("manifest-list"):
            m.write_bytes(b"not avro")
    broken = lakeformat_main(*base, "due", "--all")
    assert broken.code == 1
    assert "db.light: health -, error:" in broken.out
    assert "db.heavy: health" in broken.out and "db.calm: health" in broken.out
    assert_one_line_error(broken, 1, "1 of 3 tables reported errors", "db.light")


def test_due_refuses_a_bad_threshold_and_a_missing_target(tmp_path):
    wh = str(tmp_path / "wh")
    _debt(wh, "db.t", 1)
    base = ["--warehouse", wh]
    unknown, bad_value, neither, both = run_main(
        [*base, "due", "db.t", "-T", "num-sorted-run.trigger=3"],
        [*base, "due", "db.t", "-T", "num-sorted-run.compaction-trigger=many"],
        [*base, "due"],
        [*base, "due", "db.t", "--all"])
    assert_one_line_error(unknown, 2, "num-sorted-run.trigger")
    assert_one_line_error(bad_value, 2, "num-sorted-run.compaction-trigger")
    assert_one_line_error(neither, 2, "--all")
    assert_one_line_error(both, 2, "--all")
