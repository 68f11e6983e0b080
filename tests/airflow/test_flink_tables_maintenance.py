"""`lakeformat_maintenance` over a warehouse holding one table of each kind Flink writes and
lakeformat used to refuse (issue 37): a decoupled changelog, a branch, a postpone bucket,
record-level expiry, partition expiry by update time, first-row with lookup changelog,
`changelog-producer=input`, and automatic tags with a retention.

Each table is given debt its own rules see; the DAG runs on the moto S3 server and every task
succeeds: no table is refused, each one's due work runs, and what a consumer, branch, tag or
retained changelog needs is still there afterwards."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa

import lakeformat as lf
from lakeformat import clock

DAY = dt.datetime(2024, 6, 1, tzinfo=dt.UTC)
DAY_MS = 86_400_000
SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False),
                    pa.field("id", pa.int64(), nullable=False), ("v", pa.int64()),
                    ("ts", pa.int64())])
#: snapshot expiry is due on a table keeping one snapshot of any age
KEEP_ONE = {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1",
            "snapshot.time-retained": "1 ms"}


def _rows(dt_: str, ids: list[int], v: int, ts: int | None = None) -> pa.Table:
    now_s = clock.now_millis() // 1000 if ts is None else ts
    return pa.table({"dt": [dt_] * len(ids), "id": ids, "v": [v] * len(ids),
                     "ts": [now_s] * len(ids)}, schema=SCHEMA)


def _create(catalog: lf.Catalog, name: str, options: dict[str, str]) -> lf.Table:
    catalog.create_database(name.split(".")[0], exist_ok=True)
    return catalog.create_table(name, SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                                options={"bucket": "1", **options})


def _sorted(table: lf.Table) -> pa.Table:
    return table.read().sort_by([("dt", "ascending"), ("id", "ascending")])


def _ids(table: lf.Table) -> list[int]:
    return sorted(table.read(columns=["id"])["id"].to_pylist())


def _warehouse(catalog: lf.Catalog, monkeypatch) -> dict[str, lf.Table]:
    real_now = clock.now_millis()

    def at(days_ago: float) -> None:
        monkeypatch.setattr(clock, "now_millis", lambda: real_now - int(days_ago * DAY_MS))

    t: dict[str, lf.Table] = {}
    # decoupled changelog: snapshots kept 1, the changelog 20
    t["flink.changelog"] = _create(catalog, "flink.changelog", {
        **KEEP_ONE, "changelog-producer": "lookup", "changelog.num-retained.min": "20",
        "changelog.num-retained.max": "20", "changelog.time-retained": "30 d"})
    # a branch made from a tag of the first snapshot; the table keeps one snapshot
    t["flink.branched"] = _create(catalog, "flink.branched", KEEP_ONE)
    # postpone bucket: the writer leaves its records in bucket-postpone
    t["flink.postpone"] = _create(catalog, "flink.postpone", {
        "bucket": "-2", "postpone.batch-write-fixed-bucket": "false",
        "postpone.default-bucket-num": "2"})
    # record-level expiry by `ts` (epoch seconds), one day
    t["flink.ttl"] = _create(catalog, "flink.ttl", {
        "record-level.expire-time": "1 d", "record-level.time-field": "ts"})
    # partitions expire one day after their last update, whatever their values
    t["flink.updated"] = _create(catalog, "flink.updated", {
        "partition.expiration-strategy": "update-time", "partition.expiration-time": "1 d"})
    t["flink.first_lookup"] = _create(catalog, "flink.first_lookup", {
        **KEEP_ONE, "merge-engine": "first-row", "changelog-producer": "lookup"})
    t["flink.input"] = _create(catalog, "flink.input", {**KEEP_ONE, "changelog-producer": "input"})
    # a tag a day, each kept two days
    t["flink.tagged"] = _create(catalog, "flink.tagged", {
        "tag.automatic-creation": "process-time", "tag.creation-period": "daily",
        "tag.default-time-retained": "2 d"})

    for day in (6, 5, 4, 3):  # a commit on each of four days, writes six sorted runs on ttl
        at(day)
        for name in ("flink.changelog", "flink.postpone", "flink.first_lookup", "flink.input",
                     "flink.tagged"):
            t[name].write(_rows("2024-01-01", [day, 10 + day], day))
        t["flink.ttl"].write(_rows("2024-01-01", [day], day))
        t["flink.ttl"].write(_rows("2024-01-01", [100 + day], day))
        t["flink.updated"].write(_rows("2024-01-01" if day > 3 else "2024-01-02", [day], day))
    at(3)
    t["flink.branched"].write(_rows("2024-01-01", [1, 2], 1))
    t["flink.branched"].create_tag("t1")
    t["flink.branched"].create_branch("b", tag="t1")
    t["flink.branched"].write(_rows("2024-01-01", [1, 3], 2))
    t["flink.branched"].write(_rows("2024-01-01", [4], 3))
    monkeypatch.setattr(clock, "now_millis", lambda: clock.time.time_ns() // 1_000_000)
    # today: the first-row tables see their keys again (first rows win), ttl gets a fresh row
    t["flink.first_lookup"].write(_rows("2024-01-01", [6, 99], 1000))
    t["flink.ttl"].write(_rows("2024-01-01", [200], 7))
    t["flink.updated"].write(_rows("2024-01-01", [8], 8))  # an old value, updated today
    t["flink.updated"].write(_rows("2024-01-03", [7], 7))
    return t


def test_maintenance_of_the_tables_flink_writes(s3_conn, dags, monkeypatch):
    uri, options = s3_conn
    catalog = lf.Catalog(uri, options=options)
    tables = _warehouse(catalog, monkeypatch)
    branch_rows = _sorted(tables["flink.branched"].branch("b"))
    first_rows = {"flink.first_lookup": _sorted(tables["flink.first_lookup"])}
    assert first_rows["flink.first_lookup"].filter(
        pa.compute.equal(first_rows["flink.first_lookup"]["id"], 6))["v"].to_pylist() == [6]
    changelog_rows = _sorted(tables["flink.changelog"])
    input_rows = _sorted(tables["flink.input"])
    assert tables["flink.postpone"].read().num_rows == 0  # invisible until compacted
    assert len(tables["flink.tagged"].list_tags()) == 4

    dag = dags.load("lakeformat_maintenance.py", "lakeformat_maintenance")
    run = dag.test(logical_date=DAY, run_conf={
        "tables": "flink.*", "partition_idle_time": "0 s", "engine": "local",
        "thresholds": {"num-sorted-run.compaction-trigger": 3}})
    states = dags.states(run)
    assert run.state == "success", states
    assert all(s == "success" for s in states.values()), states
    examined = dags.xcom(run, "due_actions", key="tables")
    assert sorted(examined) == sorted(tables)
    for name, report in examined.items():  # nothing refused, nothing unreadable
        assert report["errors"] == [], (name, report)
    due = {w["table"]: [a["kind"] for a in w["actions"]] for w in dags.xcom(run, "due_actions")}
    assert "expire-snapshots" in due["flink.changelog"], due
    assert "expire-snapshots" in due["flink.branched"], due
    assert "compact" in due["flink.postpone"] or "full-compact" in due["flink.postpone"], due
    assert "compact" in due["flink.ttl"] or "full-compact" in due["flink.ttl"], due
    assert "expire-partitions" in due["flink.updated"], due
    assert "expire-snapshots" in due["flink.input"], due
    assert "expire-tags" in due["flink.tagged"], due
    results = {r["table"]: r for r in (dags.xcom(run, "maintain", i) for i in range(len(due)))}
    for name, result in results.items():
        assert result["skipped"] == [], (name, result)

    fresh = {name: catalog.get_table(name) for name in tables}
    # decoupled changelog: one snapshot left, the expired ones kept as changelog-N
    cl = fresh["flink.changelog"]
    assert len(cl.snapshots()) == 1 and _sorted(cl).equals(changelog_rows)
    kept = [s.path for s in cl.file_io.list_status(cl.file_io.join(cl.path, "changelog"))
            if s.path.rsplit("/", 1)[-1].startswith("changelog-")]
    assert kept, "expired snapshots were not kept as changelog files"
    # the branch still reads its rows after main's expiry and orphan removal
    assert _sorted(fresh["flink.branched"].branch("b")).equals(branch_rows)
    assert _ids(fresh["flink.branched"]) == [1, 2, 3, 4]
    # postpone records assigned to buckets: visible now
    assert _ids(fresh["flink.postpone"]) == [3, 4, 5, 6, 13, 14, 15, 16]
    assert {f["bucket"] for f in fresh["flink.postpone"].files()} <= {0, 1}
    # records older than a day dropped by the compaction; today's stays
    assert _ids(fresh["flink.ttl"]) == [200]
    # the partition last written three days ago is gone; the ones written today stay, whatever
    # their values
    parts = set(fresh["flink.updated"].read(columns=["dt"])["dt"].to_pylist())
    assert parts == {"2024-01-01", "2024-01-03"}
    for name, before in first_rows.items():  # first rows still win
        assert _sorted(fresh[name]).equals(before), name
    assert _sorted(fresh["flink.input"]).equals(input_rows)
    # tags past their two days are gone, the younger ones stay
    assert 0 < len(fresh["flink.tagged"].list_tags()) < 4
