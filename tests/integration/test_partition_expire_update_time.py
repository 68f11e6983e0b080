"""Partition expiry by update time (`partition.expiration-strategy=update-time`, Java's
`PartitionUpdateTimeExpireStrategy`): a partition expires when its newest file was created
before now - `partition.expiration-time`, whatever its values say; writing to it again makes it
young again. The clock is moved (`lakeformat.clock.now_millis`) so files are created days
apart.

The first test runs on local disk and the moto S3 server (it commits and reads manifests on
the store); the others only vary the rule, the limits and the reports (`@local_disk`).
"""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat import clock
from lakeformat.health import perform
from lakeformat.meta.binary_row import to_avro_bytes
from lakeformat.meta.data_file_meta import DataFileMeta, FileKind, ManifestEntry, SimpleStats
from lakeformat.operation.maintain import expired_partitions, partition_update_times

local_disk = pytest.mark.parametrize("catalog", ["local"], indirect=True)

DAY_MS = 86_400_000
T0 = 1_700_000_000_000  # 2023-11-14 (UTC)
SCHEMA = pa.schema([("region", pa.string()), ("id", pa.int64()), ("v", pa.string())])


@pytest.fixture
def at(monkeypatch):
    """`at(days)`: the library's clock set to T0 + days."""
    def move(days: float) -> None:
        monkeypatch.setattr(clock, "now_millis", lambda: T0 + int(days * DAY_MS))
    move(0)
    return move


def table(catalog, **options) -> lf.Table:
    return catalog.create_table(
        "db.t", SCHEMA, primary_keys=["region", "id"], partition_keys=["region"],
        options={"bucket": "1", "partition.expiration-strategy": "update-time",
                 "partition.expiration-time": "5 d", **options})


def rows(regions, ids=(1, 2), tag="a") -> pa.Table:
    return pa.table({"region": [r for r in regions for _ in ids],
                     "id": [i for _ in regions for i in ids],
                     "v": [f"{tag}{i}" for _ in regions for i in ids]}, schema=SCHEMA)


def regions(t: lf.Table, snapshot_id=None) -> set:
    return set(t.read(snapshot_id=snapshot_id).column("region").to_pylist())


def test_partitions_expire_by_their_last_update_not_their_values(catalog, at):
    t = table(catalog)
    t.write(rows(["2099-01-01", "eu", "x"]))  # a far-future "date", values without a time
    at(3)
    t.write(rows(["us"]))
    at(4)
    t.write(rows(["eu"], ids=(3,)))  # eu written again: young again
    at(7)  # cut-off: day 2
    res = t.expire_partitions()
    assert res.partitions_expired == ["region=2099-01-01", "region=x"]
    assert not res.skipped
    assert regions(t) == {"eu", "us"}
    assert t.read().num_rows == 5
    assert t.snapshots()[-1].commit_kind == "OVERWRITE"
    assert regions(t, snapshot_id=3) == {"2099-01-01", "eu", "x", "us"}  # time travel keeps them
    at(8.5)  # cut-off: day 3.5; us (day 3) expires, eu (day 4) stays
    assert t.expire_partitions().partitions_expired == ["region=us"]
    assert regions(t) == {"eu"}


@local_disk
def test_a_compaction_rewrites_files_and_so_updates_the_partition(catalog, at):
    """Java's update time is the newest file's creation time: a compaction's new files count."""
    t = table(catalog)
    t.write(rows(["a", "b"]))
    t.write(rows(["a", "b"], tag="b"))
    at(6)
    t.compact(full=True, partitions=[{"region": "a"}])
    at(7)
    assert t.expire_partitions(dry_run=True).partitions_expired == ["region=b"]


@local_disk
def test_max_num_batch_size_and_the_order_of_joined_values(catalog, at):
    t = table(catalog, **{"partition.expiration-max-num": "3",
                          "partition.expiration-batch-size": "2"})
    t.write(rows(["d", "b", "a", "c"]))
    at(1)
    t.write(rows(["e"]))
    at(10)
    before = len(t.snapshots())
    res = t.expire_partitions()
    assert res.partitions_expired == ["region=a", "region=b", "region=c"]
    assert res.skipped == ["2 more expired partitions left for the next run "
                           "(partition.expiration-max-num=3)"]
    # two OVERWRITE snapshots: a and b, then c
    snaps = t.snapshots()[before:]
    assert [s.commit_kind for s in snaps] == ["OVERWRITE", "OVERWRITE"]
    assert regions(t, snapshot_id=snaps[0].id) == {"c", "d", "e"}
    assert res.latest_snapshot == snaps[-1].id and res.data_files_dropped == 3
    assert regions(t) == {"d", "e"}
    assert t.expire_partitions().partitions_expired == ["region=d", "region=e"]
    assert t.read().num_rows == 0


@local_disk
def test_dry_run_says_what_would_expire_and_why_and_commits_nothing(catalog, at):
    t = table(catalog)
    t.write(rows(["old"]))
    at(2)
    t.write(rows(["new"]))
    at(6.5)
    plan = t.expire_partitions(dry_run=True)
    assert plan.dry_run and plan.partitions_expired == ["region=old"]
    assert plan.data_files_dropped == 1 and plan.bytes_dropped > 0
    local_t0 = dt.datetime.fromtimestamp(T0 / 1000).isoformat(" ", "milliseconds")
    cutoff = dt.datetime.fromtimestamp((T0 + 1.5 * DAY_MS) / 1000).isoformat(" ", "milliseconds")
    assert plan.notes == [f"update-time: the newest file of each was created before the cut-off "
                          f"{cutoff} (region=old last updated {local_t0})"]
    assert len(t.snapshots()) == 2 and regions(t) == {"old", "new"}
    # an explicit age and the run's options overlay go through the same rule
    assert t.expire_partitions("7 d", dry_run=True).partitions_expired == []
    assert t.expire_partitions(dry_run=True, options={
        "partition.expiration-time": "1 d"}).partitions_expired == ["region=new", "region=old"]
    values = t.expire_partitions(dry_run=True, options={
        "partition.expiration-strategy": "values-time"})
    assert values.partitions_expired == [] and len(values.skipped) == 2  # no time in "old"


@local_disk
def test_health_rule_agrees_and_its_action_drops_the_same_partitions(catalog, at):
    t = table(catalog, **{"partition.expiration-max-num": "2"})
    t.write(rows(["x", "y", "z"]))
    at(3)
    t.write(rows(["w"]))
    at(4)
    due = t.maintenance_due()
    assert "expire-partitions" not in [a.kind for a in due.actions]
    assert "no partition not updated within" in due.not_due["partition.expiration-time"]
    at(6)
    plan = t.expire_partitions(dry_run=True)
    found = [a for a in t.maintenance_due().actions if a.kind == "expire-partitions"]
    assert len(found) == 1
    action = found[0]
    assert action.figures["partitions"] == plan.partitions_expired == ["region=x", "region=y"]
    assert action.reason.startswith("2 partitions not updated within partition.expiration-time")
    assert perform(t, action).partitions_expired == ["region=x", "region=y"]
    assert regions(t) == {"z", "w"}


@local_disk
def test_compaction_is_not_proposed_for_the_partitions_expiry_drops(catalog, at):
    """Compacting a partition about to be dropped is wasted work, and by update time the
    rewrite would make it look freshly written: the compaction rules leave it to expiry."""
    t = table(catalog, **{"num-sorted-run.compaction-trigger": "2"})
    for i in range(3):  # three sorted runs in each partition
        t.write(rows(["old", "new"], ids=(i,)))
    at(6)
    t.write(rows(["new"], ids=(9,)))
    due = t.maintenance_due()
    kinds = {a.kind: a for a in due.actions}
    assert kinds["expire-partitions"].figures["partitions"] == ["region=old"]
    assert [p["region"] for p in kinds["compact"].arguments["partitions"]] == ["new"]
    assert "region=old" not in kinds["compact"].reason
    for action in due.actions:  # in the order the maintenance DAG runs them
        perform(t, action)
    assert regions(t) == {"new"}
    t.write(rows(["old"], ids=(5,)))
    assert t.maintenance_due().not_due.get("partition.expiration-time", "").startswith("no ")


def test_the_rule_needs_the_update_times(tmp_path):
    cat = lf.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = table(cat)
    types = [f.type for f in t.table_schema.partition_fields()]
    a, b = to_avro_bytes(["a"], types), to_avro_bytes(["b"], types)
    now = dt.datetime(2024, 1, 10)
    day1 = (dt.datetime(2024, 1, 1) - dt.datetime(1970, 1, 1)) // dt.timedelta(milliseconds=1)
    found = expired_partitions(t.table_schema, {b: day1, a: day1 + 8 * DAY_MS}, now=now)
    assert found.expired == [("region=b", b)] and found.kept == []
    with pytest.raises(lf.InvalidArgumentError, match="last update time"):
        expired_partitions(t.table_schema, [a, b], now=now)
    with pytest.raises(lf.InvalidOptionError, match="partition.expiration-batch-size"):
        t.expire_partitions(options={"partition.expiration-batch-size": "many"})


def test_update_times_are_javas_partition_entries(tmp_path):
    """`partition_update_times` over a snapshot's unmerged entries: the newest creation time
    among ADD and DELETE entries (as Java's `PartitionEntry.merge`), only for partitions with
    more ADD than DELETE entries; a file without a creation time makes it unknown, and the rule
    then keeps the partition."""
    cat = lf.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = table(cat)
    types = [f.type for f in t.table_schema.partition_fields()]
    a, b, c, d = (to_avro_bytes([x], types) for x in "abcd")
    empty = SimpleStats.EMPTY

    def entry(kind, partition, name, created):
        meta = DataFileMeta(name, 1, 1, b"", b"", empty, empty, 0, 0, 0, 0,
                            creation_time=created)
        return ManifestEntry(kind, partition, 0, 1, meta)

    add, delete = FileKind.ADD, FileKind.DELETE
    times = partition_update_times([
        entry(add, a, "a1", 100), entry(add, a, "a2", 300), entry(delete, a, "a2", 300),
        entry(add, a, "a3", 200),                       # a: a2 was deleted, still newest
        entry(add, b, "b1", 50), entry(delete, b, "b1", 50),  # b: nothing live
        entry(add, c, "c1", 70), entry(add, c, "c2", None),   # c: unknown
        entry(add, d, "d1", 10)])
    assert times == {a: 300, c: None, d: 10}
    found = expired_partitions(t.table_schema, times, dt.datetime(1970, 1, 1, 0, 0, 1))
    assert found.expired == [("region=a", a), ("region=d", d)]
    assert found.kept == ["region=c: kept, a file of it records no creation time"]
