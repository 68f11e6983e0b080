"""Table health and due maintenance (`Table.health()`, `Table.maintenance_due()`,
`lakeformat.health`): exact figures of tables in known states, each rule due at its threshold
and not one below (table options and overrides move it), actions that do what their rule saw,
a broken table reported beside healthy ones, and proof that no data or deletion-vector file is
read.

Figures, rules and actions read metadata through the same FileIO calls on either store, so
most tests run on local disk only (`@local_disk`). Kept on the moto S3 server too: the figures
after writes and compactions (snapshot, manifest and listing reads over HTTP), the counting
FileIO (which paths health opens on S3) and the broken-manifest report among healthy tables.
"""

from __future__ import annotations

import datetime as dt
import os

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.health import maintenance_due_many, perform, rank_actions
from lakeformat.meta.bucket import bucket_ids
from lakeformat.meta.consumer import ConsumerManager
from lakeformat.schema.schema_change import SchemaChange
from lakeformat.schema.types import bigint
from lakeformat.table import Table
from tests.support.deletion_vectors import live_entries, mark_deleted

local_disk = pytest.mark.parametrize("catalog", ["local"], indirect=True)

KV = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])


def batch(ids, tag="a", day="d1") -> pa.Table:
    return pa.table({"dt": [day] * len(ids), "id": list(ids), "v": [f"{tag}{i}" for i in ids]},
                    schema=KV)


def pk_table(catalog, name="db.t", **options) -> lf.Table:
    return catalog.create_table(name, KV, primary_keys=["dt", "id"], partition_keys=["dt"],
                                options={"bucket": "1", **options})


def kinds(report) -> list[str]:
    return sorted(a.kind for a in report.actions)


def action(report, kind):
    found = [a for a in report.actions if a.kind == kind]
    assert len(found) == 1, report
    return found[0]


def same_as_inspect(h, t) -> None:
    """Per-bucket figures equal the `buckets` metadata table's (computed independently)."""
    rows = {(r["partition"], r["bucket"]): r for r in t.inspect.buckets().to_pylist()}
    assert {(b.partition, b.bucket) for b in h.buckets} == set(rows)
    for b in h.buckets:
        r = rows[(b.partition, b.bucket)]
        assert (b.files, b.sorted_runs, b.level0_files, b.rows, b.bytes) == (
            r["file_count"], r["sorted_runs"], r["level0_files"], r["record_count"],
            r["file_size_in_bytes"])


# -- figures -------------------------------------------------------------------------------------
def test_figures_after_writes_minor_and_full_compaction(catalog):
    t = pk_table(catalog, **{"num-sorted-run.compaction-trigger": "3",
                             "num-sorted-run.stop-trigger": "6"})
    for i in range(4):
        t.write(batch(range(i, i + 3), f"w{i}"))
    h = t.health()
    assert h.snapshot_id == 4 and h.kind == "primary-key" and h.errors == []
    b = h.bucket(0, "dt=d1")
    assert (b.sorted_runs, b.level0_files, b.files, b.rows, b.small_files, b.dv_rows) == (
        4, 4, 4, 12, 4, 0)
    assert b.last_compaction_time is None and b.last_compaction_snapshot is None
    assert h.totals == {"buckets": 1, "files": 4, "rows": 12, "bytes": b.bytes,
                        "small_files": 4, "dv_rows": 0, "level0_files": 4,
                        "max_sorted_runs": 4, "partitions": 1}
    assert h.snapshots["count"] == 4 and h.snapshots["earliest_id"] == 1
    assert h.snapshots["latest_id"] == 4 and h.snapshots["expirable"] == 0
    assert h.manifests["files"] == t.inspect.manifests().num_rows
    assert h.manifests["add_entries"] == 4 and h.manifests["delete_entries"] == 0
    assert h.schemas["files"] == 1 and h.schemas["removable"] == []
    assert h.tags["count"] == 0 and h.consumers == {} and h.orphans is None
    same_as_inspect(h, t)
    # 4 runs, T=3, S=6: d = (4 - 3 + 1) / (6 - 3 + 1) = 0.5 -> compaction 0.5; the 4 small
    # files of a picked bucket merge into 1: 3 of 4 files are excess -> small files 0.25
    assert h.components["compaction"]["health"] == 0.5
    assert h.components["small_files"]["health"] == 0.25
    assert h.components["metadata"]["health"] == 1.0
    assert h.score == round(100 * (0.4 * 0.5 + 0.2 * 0.25 + 0.25) / 0.85)
    assert h.worst_bucket is b and b.debt == 0.75

    t.compact(full=False)
    h = t.health()
    b = h.bucket(0, "dt=d1")
    assert b.level0_files == 0 and b.sorted_runs == 1
    assert b.last_compaction_snapshot == 5 and b.last_compaction_time is not None
    same_as_inspect(h, t)
    assert h.manifests["delete_entries"] == 4
    t.write(batch([100], "x"))
    t.compact(full=True)
    h = t.health()
    b = h.bucket(0, "dt=d1")
    assert (b.sorted_runs, b.level0_files, b.max_level, b.files) == (1, 0, 3, 1)
    assert b.last_compaction_snapshot == 7 and b.rows == 7
    assert h.score == 100 and t.maintenance_due().actions == []
    same_as_inspect(h, t)
    d = h.to_dict()
    assert d["buckets"][0]["sorted_runs"] == 1 and d["score"] == 100
    assert "health 100/100" in str(h)


@local_disk
def test_append_table_figures_and_min_file_num(catalog):
    t = catalog.create_table("db.a", KV, partition_keys=["dt"],
                             options={"bucket": "-1", "compaction.min.file-num": "3"})
    t.write(batch([1, 2]))
    t.write(batch([3]))
    r = t.maintenance_due()
    assert r.actions == [] and "compaction picks no files" in r.not_due["compaction.min.file-num"]
    h = r.health
    assert h.kind == "append" and "compaction" not in h.components
    assert h.components["small_files"]["weight"] == pytest.approx(0.6)
    t.write(batch([4]))
    r = t.maintenance_due()
    a = action(r, "compact")
    assert a.rule == "compaction.min.file-num" and a.work_files == 3
    assert "3 files below" in a.reason and a.arguments == {"full": False,
                                                           "partitions": [{"dt": "d1"}]}
    perform(t, a)
    assert t.health().totals["files"] == 1 and t.maintenance_due().actions == []


# -- compaction rules ----------------------------------------------------------------------------
@local_disk
def test_compaction_trigger_and_stop_trigger_thresholds(catalog):
    # equal files: at exactly T runs the size-ratio pick takes them (Java: nothing below T)
    t = pk_table(catalog, **{"num-sorted-run.compaction-trigger": "3",
                             "num-sorted-run.stop-trigger": "5", "compaction.size-ratio": "50"})
    t.write(batch([1], "a"))
    t.write(batch([1], "b"))
    r = t.maintenance_due()
    assert r.actions == []
    assert r.not_due["num-sorted-run.compaction-trigger"].startswith(
        "max sorted runs 2 < num-sorted-run.compaction-trigger 3 (bucket 0 of dt=d1)")
    t.write(batch([1], "c"))
    a = action(t.maintenance_due(), "compact")
    assert (a.rule, a.urgent) == ("num-sorted-run.compaction-trigger", False)
    assert "bucket 0 of dt=d1 has 3 sorted runs >= num-sorted-run.compaction-trigger 3" in a.reason
    assert a.buckets == [{"partition": "dt=d1", "bucket": 0}] and a.work_files == 3
    assert a.work_bytes == t.health().totals["bytes"] and a.engine == "local"
    t.write(batch([1], "d"))  # 4 runs = stop-trigger - 1: writers stall above 5
    a = action(t.maintenance_due(), "compact")
    assert (a.rule, a.urgent) == ("num-sorted-run.stop-trigger", True)
    assert "4 sorted runs >= num-sorted-run.stop-trigger 5 - 1" in a.reason
    assert a.expected_gain > 0 and a.benefit == a.expected_gain  # work < 1 MiB
    # the table's options move the threshold, and so do overrides
    t.alter(SchemaChange.set_option("num-sorted-run.compaction-trigger", "5"))
    assert t.maintenance_due().actions == []
    r = t.maintenance_due({"num-sorted-run.compaction-trigger": 2})
    a = action(r, "compact")
    assert a.arguments["options"] == {"num-sorted-run.compaction-trigger": "2"}
    perform(t, a)  # compacts under the override, as the rule saw it
    assert t.health().max_sorted_runs == 1
    assert t.maintenance_due({"num-sorted-run.compaction-trigger": 2}).actions == []


@local_disk
def test_full_compaction_delta_commits(catalog):
    t = pk_table(catalog, **{"full-compaction.delta-commits": "2",
                             "num-sorted-run.compaction-trigger": "10"})
    t.write(batch([1]))
    r = t.maintenance_due()
    assert r.actions == []
    assert r.not_due["full-compaction.delta-commits"] == (
        "at most 1 commits since a bucket's last full compaction < "
        "full-compaction.delta-commits 2")
    t.write(batch([2]))
    a = action(t.maintenance_due(), "full-compact")
    assert a.rule == "full-compaction.delta-commits" and a.arguments["full"] is True
    assert "has 2 commits since its last full compaction" in a.reason
    perform(t, a)
    t.write(batch([3]))
    assert t.maintenance_due().actions == []  # 1 commit since the full compaction
    assert action(t.maintenance_due({"full-compaction.delta-commits": 1}), "full-compact")
    t.write(batch([4]))
    assert kinds(t.maintenance_due()) == ["full-compact"]


@local_disk
def test_a_full_compaction_due_replaces_the_minor_one_and_keeps_its_urgency(catalog):
    t = pk_table(catalog, **{"full-compaction.delta-commits": "2",
                             "num-sorted-run.compaction-trigger": "2",
                             "num-sorted-run.stop-trigger": "3"})
    t.write(batch([1]))
    t.write(batch([2]))
    r = t.maintenance_due()
    assert kinds(r) == ["full-compact"] and r.actions[0].urgent
    assert r.not_due["num-sorted-run.compaction-trigger"] == (
        "the full compaction due covers bucket 0 of dt=d1")
    t.write(batch([3], day="d2"))  # 3 commits now: below 4 the minor compaction is due alone
    r = t.maintenance_due({"full-compaction.delta-commits": 4})
    assert kinds(r) == ["compact"] and r.actions[0].partitions == [{"dt": "d1"}]


@local_disk
def test_deletion_vectors_delete_ratio_and_level_0(catalog):
    t = pk_table(catalog, **{"deletion-vectors.enabled": "true", "write-only": "true"})
    t.write(batch(range(10)))
    a = action(t.maintenance_due(), "compact")  # level-0 files are invisible to DV reads
    assert "1 level-0 files" in a.reason and a.figures["picks"] == ["force-l0"]
    t.compact(full=True)
    top = [e.file.file_name for e in live_entries(t)]
    mark_deleted(t, {top[0]: [0, 1]})
    h = t.health()
    b = h.bucket(0, "dt=d1")
    assert (b.dv_rows, b.rows, b.dv_ratio, b.dv_unknown_files) == (2, 10, 0.2, 0)
    assert h.components["deleted_rows"]["health"] == 0.0  # R = 0.2 = the threshold
    r = t.maintenance_due()
    assert r.actions == []  # Java's rule: more than the threshold
    assert "0.20 <= compaction.delete-ratio-threshold 0.2" in r.not_due[
        "compaction.delete-ratio-threshold"]
    assert action(t.maintenance_due({"compaction.delete-ratio-threshold": 0.1}),
                  "full-compact")
    mark_deleted(t, {top[0]: [0, 1, 2]})
    a = action(t.maintenance_due(), "full-compact")
    assert a.rule == "compaction.delete-ratio-threshold"
    assert "has 3 of 10 rows deleted (0.30) > compaction.delete-ratio-threshold 0.2" in a.reason
    t.alter(SchemaChange.set_option("compaction.delete-ratio-threshold", "0.3"))
    assert t.maintenance_due().actions == []
    t.alter(SchemaChange.set_option("compaction.delete-ratio-threshold", "0.2"))
    perform(t, action(t.maintenance_due(), "full-compact"))
    h = t.health()
    assert h.totals["dv_rows"] == 0 and h.totals["rows"] == 7 and h.score == 100


def four_buckets(catalog, partitioned: bool, **options) -> tuple[lf.Table, list[list[int]]]:
    """A 4-bucket table (bucket key `id`) and ids 0..39 grouped by their bucket."""
    t = catalog.create_table("db.b", KV, primary_keys=["dt", "id"],
                             partition_keys=["dt"] if partitioned else [],
                             options={"bucket": "4", "bucket-key": "id", **options})
    ids = list(range(40))
    of = bucket_ids([pa.array(ids, pa.int64())], [bigint(False)], 4).tolist()
    return t, [[i for i in ids if of[i] == b] for b in range(4)]


@local_disk
@pytest.mark.parametrize("partitioned", [False, True])
@pytest.mark.parametrize("kind", ["compact", "full-compact"])
def test_compaction_work_is_what_the_verb_rewrites(catalog, kind, partitioned):
    """One bucket of four is due; the verb compacts its whole partition (the table, when
    unpartitioned), and its planner picks the other three too: the action's buckets and work
    are those of the planner's tasks there, equal to what the compaction rewrites."""
    if kind == "compact":  # buckets 0-2 were fully compacted just now: the rule holds them back
        t, by = four_buckets(catalog, partitioned, **{
            "compaction.optimization-interval": "1 d",
            "num-sorted-run.compaction-trigger": "10"})
        t.write(batch(by[0] + by[1] + by[2]))
        t.compact(full=True)
        t.write(batch(range(40), "b"))
        t.write(batch(range(40), "c"))
    else:  # bucket 3's deleted rows cross the ratio; every bucket has a level-0 file
        t, by = four_buckets(catalog, partitioned, **{"deletion-vectors.enabled": "true",
                                                      "write-only": "true"})
        t.write(batch(range(40)))
        t.compact(full=True)
        top = [e.file.file_name for e in live_entries(t) if e.bucket == 3]
        mark_deleted(t, {top[0]: list(range(len(by[3]) // 2))})
        t.write(batch([b[0] for b in by], "b"))
    h = t.health()
    a = action(t.maintenance_due(), kind)
    picks = "optimization-interval" if kind == "compact" else "full"
    where = ", ".join(f"bucket {b}{' of dt=d1' if partitioned else ''}" for b in range(3))
    assert f"also rewrites 3 more buckets its planner picks ({picks}: {where}; " in a.reason
    assert a.figures["buckets"] == 1 and a.figures["rewritten_buckets"] == 4
    part = "dt=d1" if partitioned else ""
    assert a.buckets == [{"partition": part, "bucket": b} for b in range(4)]
    assert (a.work_files, a.work_bytes) == (h.totals["files"], h.totals["bytes"])
    res = perform(t, a)
    assert (res.total.buckets_compacted, res.total.files_in, res.total.bytes_in) == (
        4, a.work_files, a.work_bytes)


@local_disk
def test_append_tables_never_get_the_delete_ratio_rule(catalog):
    t = catalog.create_table("db.a", KV, options={"bucket": "-1"})
    t.write(batch([1]))
    assert "not applied" not in t.maintenance_due().not_due["compaction.delete-ratio-threshold"]
    f = [e.file.file_name for e in live_entries(t)][0]
    mark_deleted(t, {f: [0]})
    r = t.maintenance_due()
    assert r.actions == [] and r.not_due["compaction.delete-ratio-threshold"] == (
        "append-table compaction does not rewrite files for their deleted rows, so this rule "
        "is not applied")


# -- snapshots, tags, consumers ------------------------------------------------------------------
@local_disk
def test_snapshot_expiry_rule_matches_the_dry_run(catalog):
    t = pk_table(catalog, **{"snapshot.num-retained.min": "4", "snapshot.time-retained": "1 ms",
                             "num-sorted-run.compaction-trigger": "20"})
    for i in range(4):
        t.write(batch([i]))
    r = t.maintenance_due()
    assert "snapshot-expiry" in r.not_due and not r.actions
    assert r.not_due["snapshot-expiry"].startswith("0 snapshots expirable: 4 retained")
    t.write(batch([9]))  # 5 snapshots, 4 retained: 1 expires
    h = t.health()
    dry = t.expire_snapshots(dry_run=True)
    assert h.snapshots["expirable"] == 1 == len(dry.snapshots_deleted)
    assert h.snapshots["expirable_bytes"] == dry.bytes_deleted
    assert h.components["metadata"]["figures"]["snapshots"] == 0.9  # 1 / expire.limit 10
    a = action(t.maintenance_due(), "expire-snapshots")
    assert a.rule == "snapshot-expiry" and a.figures["first"] == 1 and a.figures["last"] == 1
    assert t.maintenance_due({"snapshot.num-retained.min": 5}).actions == []
    # the limit is the one expiry uses (lakeformat's default 10)
    for i in range(3):
        t.write(batch([20 + i]))
    # 8 snapshots, 2 retained: 6 expire, 3 per run (the newest two's commit times may share a
    # millisecond with the cut-off, so retain_min 2 keeps the figures exact)
    r = t.maintenance_due({"snapshot.num-retained.min": 2, "snapshot.expire.limit": 3})
    a = action(r, "expire-snapshots")
    assert (a.figures["snapshots"], a.figures["beyond_limit"]) == (3, 3)
    assert a.arguments == {"retain_min": 2, "max_deletes": 3}
    assert "+3 more beyond snapshot.expire.limit 3" in a.reason
    res = perform(t, a)
    assert res.snapshots_deleted == [1, 2, 3]
    assert t.health().snapshots["earliest_id"] == 4


@local_disk
def test_tags_and_consumers(catalog):
    t = pk_table(catalog, **{"snapshot.num-retained.min": "1", "snapshot.time-retained": "1 ms"})
    for i in range(5):
        t.write(batch([i]))
    t.create_tag("keep", 2)
    t.create_tag("brief", 3, time_retained=dt.timedelta(milliseconds=1))
    ConsumerManager(t.file_io, t.path).set("reader", 3)
    h = t.health()
    assert h.consumers == {"reader": 3}
    assert h.tags == {"count": 2, "names": ["keep", "brief"], "expired": ["brief"]}
    assert h.snapshots["expirable"] == 2  # the consumer pins snapshot 3 and later
    ConsumerManager(t.file_io, t.path).set("reader", 1)
    r = t.maintenance_due()
    assert "expire-snapshots" not in kinds(r)
    assert "consumers pin snapshot 1" in r.not_due["snapshot-expiry"]


# -- schema files and manifests ------------------------------------------------------------------
@local_disk
def test_schema_files_after_alters(catalog):
    t = pk_table(catalog, **{"schema.num-retained.min": "2", "schema.time-retained": "1 ms"})
    for n in range(3):
        t.alter(SchemaChange.set_option("snapshot.num-retained.max", str(100 + n)))
    t.write(batch([1]))
    h = t.health()
    assert h.schemas["files"] == 4 and h.schemas["removable"] == [0, 1]
    assert h.schemas["kept_kinds"] == {"2": "retain-min", "3": "latest"}
    a = action(t.maintenance_due(), "clean-schemas")
    assert a.reason.startswith("schemas 0..1 removable (schema.num-retained.min 2")
    assert t.clean_schemas(dry_run=True).deleted == [
        t.schema_manager.schema_path(0), t.schema_manager.schema_path(1)]
    assert action(t.maintenance_due({"schema.num-retained.min": 3}),
                  "clean-schemas").figures["removable"] == [0]
    r = t.maintenance_due({"schema.num-retained.min": 4})
    assert "clean-schemas" not in kinds(r)
    assert r.not_due["schema-files"].startswith("no schema file removable: 4 files")
    perform(t, a)
    assert t.health().schemas["files"] == 2


@local_disk
def test_manifest_merge_rule_at_merge_min_count(catalog):
    t = pk_table(catalog)
    for i in range(3):
        t.write(batch([i]))
    t.compact(full=True)
    h = t.health()
    n = h.manifests["files"]
    assert h.manifests["delete_entries"] == 3 and n >= 2
    r = t.maintenance_due()
    assert "manifest-merge" in r.not_due and "compact-manifests" not in kinds(r)
    a = action(t.maintenance_due({"manifest.merge-min-count": n}), "compact-manifests")
    assert a.arguments == {} and "3 DELETE entries" in a.reason
    assert "compact-manifests" not in kinds(t.maintenance_due(
        {"manifest.merge-min-count": n + 1}))
    perform(t, a)
    assert t.health().manifests["delete_entries"] == 0
    assert "compact-manifests" not in kinds(t.maintenance_due({"manifest.merge-min-count": 1}))


# -- partitions and orphans ----------------------------------------------------------------------
@local_disk
def test_partition_expiry_rule(catalog):
    today = dt.date.today()
    days = [(today - dt.timedelta(days=k)).strftime("%Y%m%d") for k in (10, 3, 0)]
    t = catalog.create_table("db.p", KV, primary_keys=["dt", "id"], partition_keys=["dt"],
                             options={"bucket": "1", "partition.timestamp-formatter": "yyyyMMdd"})
    for d in [*days, "not-a-day"]:
        t.write(batch([1], day=d))
    r = t.maintenance_due()
    assert r.not_due["partition.expiration-time"] == "partition.expiration-time not set"
    t.alter(SchemaChange.set_option("partition.expiration-time", "4 d"))
    a = action(t.maintenance_due(), "expire-partitions")
    assert a.figures["partitions"] == [f"dt={days[0]}"] and a.partitions == [{"dt": days[0]}]
    assert a.figures["unreadable"] == ["dt=not-a-day"] and a.work_files == 1
    a = action(t.maintenance_due({"partition.expiration-time": "2 d"}), "expire-partitions")
    assert a.figures["partitions"] == [f"dt={days[0]}", f"dt={days[1]}"]
    assert a.arguments == {"expiration_time": "2 d"}
    r = t.maintenance_due({"partition.expiration-time": "11 d"})
    assert "expire-partitions" not in kinds(r)
    assert "no time in the values of dt=not-a-day" in r.not_due["partition.expiration-time"]
    res = perform(t, a)
    assert res.partitions_expired == [f"dt={days[0]}", f"dt={days[1]}"]
    assert t.health().totals["partitions"] == 2


@local_disk
def test_partition_expiry_actions_do_what_the_rule_saw_under_overrides(catalog):
    """Every `partition.*` override the rule reads reaches the verb (`options`): the run drops
    exactly the partitions proposed, and an override that keeps partitions keeps them."""
    days = [f"2020-01-0{d}" for d in range(1, 6)]
    t = catalog.create_table("db.p", KV, primary_keys=["dt", "id"], partition_keys=["dt"],
                             options={"bucket": "1", "partition.expiration-time": "1 d"})
    for d in days:
        t.write(batch([1], day=d))
    r = t.maintenance_due({"partition.timestamp-pattern": "$nosuch"})
    assert "expire-partitions" not in kinds(r)
    assert "no time in the values of dt=2020-01-01" in r.not_due["partition.expiration-time"]
    r = t.maintenance_due({"partition.expiration-strategy": "update-time"})
    assert "expire-partitions" not in kinds(r)  # every partition was written just now
    assert "no partition not updated within" in r.not_due["partition.expiration-time"]
    with pytest.raises(lf.InvalidArgumentError, match="'partition.timestamp-formatter'"):
        t.maintenance_due({"partition.timestamp-formatter": "yyyy-MMM"})
    a = action(t.maintenance_due({"partition.expiration-max-num": 2,
                                  "partition.timestamp-pattern": "$dt"}), "expire-partitions")
    assert a.figures["partitions"] == [f"dt={d}" for d in days[:2]]
    assert a.arguments == {"options": {"partition.expiration-max-num": "2",
                                       "partition.timestamp-pattern": "$dt"}}
    assert perform(t, a).partitions_expired == [f"dt={d}" for d in days[:2]]
    assert sorted(set(t.read()["dt"].to_pylist())) == days[2:]
    with pytest.raises(lf.InvalidArgumentError, match="'partition.default-name'"):
        t.expire_partitions(options={"partition.default-name": "x"})
    # the rule and the verb read the same overlay: a formatter over the values
    a = action(t.maintenance_due({"partition.timestamp-formatter": "yyyy-MM-dd",
                                  "partition.expiration-max-num": 1}), "expire-partitions")
    assert perform(t, a).partitions_expired == a.figures["partitions"] == [f"dt={days[2]}"]


@local_disk
def test_manifest_compaction_deletes_no_schema_file(catalog):
    """`compact-manifests` compacts manifests only: schema files go by `clean-schemas`, under
    the schema overrides its action carries."""
    t = pk_table(catalog, **{"schema.num-retained.min": "1", "schema.time-retained": "1 ms"})
    for i in range(4):
        t.alter(SchemaChange.set_option("snapshot.num-retained.max", str(100 + i)))
        t.write(batch([i]))
    t.compact(full=True)
    ids = [s.id for s in t.schemas()]
    keep = {"schema.num-retained.min": 100, "manifest.merge-min-count": 2}
    r = t.maintenance_due(keep)
    assert kinds(r) == ["compact-manifests"] and r.actions[0].arguments == {}
    assert r.not_due["schema-files"].startswith("no schema file removable")
    res = perform(t, r.actions[0])
    assert res.schema_files_deleted == 0 and res.manifest_compaction_snapshot is not None
    assert [s.id for s in t.schemas()] == ids and t.health().manifests["delete_entries"] == 0
    assert "committed COMPACT snapshot" in str(res)
    a = action(t.maintenance_due(), "clean-schemas")  # the table's own retention: due now
    assert perform(t, a).schema_files_deleted == len(a.figures["removable"]) > 0


@local_disk
def test_orphans_only_when_scanned(catalog):
    t = pk_table(catalog)
    t.write(batch([1]))
    stray = os.path.join(t.path, "dt=d1", "bucket-0", "data-stray.parquet")
    with open(stray, "wb") as f:
        f.write(b"x" * 10)
    old = (dt.datetime.now() - dt.timedelta(days=2)).timestamp()
    os.utime(stray, (old, old))
    r = t.maintenance_due()
    assert r.health.orphans is None and "orphan-files" in r.not_due
    r = t.maintenance_due(orphans=True)
    assert r.health.orphans["files"] == 1 and r.health.orphans["bytes"] == 10
    a = action(r, "remove-orphans")
    assert a.rule == "orphan-files"
    perform(t, a)
    assert not os.path.exists(stray)


# -- errors, overrides, what is read -------------------------------------------------------------
def test_unreadable_manifest_is_reported_beside_healthy_tables(catalog):
    good = pk_table(catalog, "db.good", **{"num-sorted-run.compaction-trigger": "2"})
    bad = pk_table(catalog, "db.bad")
    for t in (good, bad):
        t.write(batch([1]))
        t.write(batch([2]))
    name = bad.inspect.manifests().column("file_name")[0].as_py()
    bad.file_io.write_bytes(bad.file_io.join(bad.path, "manifest", name), b"not avro")
    with pytest.raises(lf.LakeformatError):
        bad.health()
    reports = maintenance_due_many(catalog, "db.*")
    assert [r.table for r in reports] == ["db.bad", "db.good"]
    broken, fine = reports
    assert broken.errors and broken.actions == [] and broken.score is None
    assert fine.errors == [] and kinds(fine) == ["compact"]
    assert [a.table for a in rank_actions(reports)] == ["db.good"]
    assert broken.to_dict()["errors"] == broken.errors


@local_disk
def test_bad_thresholds_are_refused_by_name_before_any_read(catalog):
    t = pk_table(catalog)
    t.write(batch([1]))
    with pytest.raises(lf.InvalidArgumentError, match="'num-sorted-run.compaction-trigr'.*did "
                       "you mean 'num-sorted-run.compaction-trigger'"):
        t.maintenance_due({"num-sorted-run.compaction-trigr": 3})
    with pytest.raises(lf.InvalidArgumentError, match="'snapshot.num-retained.min': bad value"):
        t.maintenance_due({"snapshot.num-retained.min": "zero"})
    with pytest.raises(lf.InvalidArgumentError, match="'compaction.delete-ratio-threshold'"):
        t.maintenance_due({"compaction.delete-ratio-threshold": 2})
    catalog.drop_table("db.t")  # nothing is read: the name is refused, not the missing table
    with pytest.raises(lf.InvalidArgumentError, match="'schema.time-retained'"):
        t.maintenance_due({"schema.time-retained": "soon"})
    with pytest.raises(lf.InvalidArgumentError, match="'num-levelz'"):
        maintenance_due_many(catalog, "*.*", {"num-levelz": 3})


class CountingIO:
    """A FileIO that records every path it opens for reading."""

    def __init__(self, inner):
        self.inner = inner
        self.read: list[str] = []

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def read_bytes(self, path):
        self.read.append(path)
        return self.inner.read_bytes(path)

    def open_input(self, path):
        self.read.append(path)
        return self.inner.open_input(path)

    def read_range(self, path, offset, length):
        self.read.append(path)
        return self.inner.read_range(path, offset, length)


def test_health_opens_no_data_or_deletion_vector_file(catalog):
    t = pk_table(catalog, **{"deletion-vectors.enabled": "true", "write-only": "true",
                             "snapshot.num-retained.min": "1", "snapshot.time-retained": "1 ms"})
    t.write(batch(range(5)))
    t.compact(full=True)
    mark_deleted(t, {live_entries(t)[0].file.file_name: [0, 1]})
    t.write(batch([7]))
    io = CountingIO(t.file_io)
    counted = Table(t.name, t.path, io)
    h = counted.health()
    r = counted.maintenance_due()
    assert h.totals["dv_rows"] == 2 and h.snapshots["expirable"] > 0 and r.actions
    assert io.read and not [p for p in io.read if "/bucket-" in p or "/index/" in p]


@local_disk
def test_schema_kept_only_by_delete_entries_asks_for_a_manifest_compaction(catalog):
    t = pk_table(catalog, **{"schema.num-retained.min": "1", "schema.time-retained": "1 ms",
                             "snapshot.num-retained.min": "1", "snapshot.time-retained": "1 ms"})
    t.write(batch([1]))  # files of schema 0, overlapping: a compaction rewrites them
    t.write(batch([1], "b"))
    t.alter(SchemaChange.set_option("snapshot.num-retained.max", "50"))
    t.compact(full=True)  # rewritten under schema 1; its ADD/DELETE entries stay listed
    t.expire_snapshots(older_than=dt.timedelta(0))
    h = t.health()
    assert h.snapshots["earliest_id"] == h.snapshots["latest_id"] == 3
    assert h.schemas["removable"] == [] and h.schemas["kept_kinds"]["0"] == "deleted-file"
    assert h.schemas["freed_by_manifest_compaction"] == [0]
    assert h.components["metadata"]["figures"]["schemas"] == 0.0
    r = t.maintenance_due()
    a = action(r, "compact-manifests")
    assert a.reason.startswith("schemas ['0'] are kept only by DELETE entries")
    perform(t, a)
    t.expire_snapshots(older_than=dt.timedelta(0))
    assert t.health().schemas["removable"] == [0]
    assert kinds(t.maintenance_due()) == ["clean-schemas"]
