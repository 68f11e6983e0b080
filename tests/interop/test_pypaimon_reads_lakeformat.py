"""Tables written by lakeformat read by pypaimon 2.1.0 give exactly lakeformat's rows.

Besides rows, the snapshot chain must look to pypaimon's SnapshotManager the way a pypaimon
writer would have left it: same ids, commit kinds and record counts as a twin table fed the
same operations through pypaimon.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pytest

from tests.support.pypaimon_helpers import (
    DAYS,
    KEY_TYPES,
    ORDER_KEYS,
    ORDERS,
    VALUE_COLUMNS,
    VALUE_PAIMON_TYPES,
    LastWriterWins,
    Row,
    assert_same_rows,
    assert_same_value_types,
    create_paimon_table,
    decimal_value,
    order,
    paimon_base_manifests,
    paimon_live_files,
    paimon_read,
    paimon_snapshots,
    paimon_write,
    sorted_model_rows,
    typed_values,
)


def key_table(keys: list[tuple[str, int]]) -> pa.Table:
    return pa.table({"dt": pa.array([d for d, _ in keys], pa.string()),
                     "id": pa.array([i for _, i in keys], pa.int64())})


@dataclass
class Op:
    """One commit: `write` (rows with rk), `delete` (keys) or `overwrite` (rows)."""

    kind: str
    rows: list[Row] = field(default_factory=list)
    keys: list[tuple[str, int]] = field(default_factory=list)


def apply_lake(lt: Any, op: Op) -> int:
    if op.kind == "write":
        res = lt.write(pa.Table.from_pylist(op.rows, schema=ORDERS))
    elif op.kind == "overwrite":
        res = lt.write(pa.Table.from_pylist(op.rows, schema=ORDERS), overwrite=True)
    else:
        res = lt.delete(key_table(op.keys))
    assert res.snapshot_id is not None
    return res.snapshot_id


def apply_paimon(table: Any, op: Op) -> int:
    if op.kind == "write":
        return paimon_write(table, op.rows)
    if op.kind == "overwrite":
        return paimon_write(table, op.rows, overwrite={})
    rows = [{"dt": d, "id": i, "name": None, "amount": None, "rk": "-D"} for d, i in op.keys]
    return paimon_write(table, rows)


def apply_model(model: LastWriterWins, op: Op, partitioned: bool) -> None:
    if op.kind == "write":
        model.apply(op.rows, kind_field="rk")
    elif op.kind == "delete":
        model.delete([{"dt": d, "id": i} for d, i in op.keys])
    elif partitioned:
        for day in sorted({r["dt"] for r in op.rows}):
            model.overwrite_partition({"dt": day}, [r for r in op.rows if r["dt"] == day])
    else:
        model.rows.clear()
        model.apply(op.rows)


def scripted_ops() -> list[Op]:
    d1, d2, d3 = DAYS
    return [
        Op("write", [order(d, i) for d in DAYS for i in range(20)]),
        Op("write", [order(d1, i, "+U", 1) for i in range(10)]
           + [order(d2, i, "-D") for i in range(10, 15)]
           + [r for i in range(15, 18) for r in (order(d3, i, "-U"), order(d3, i, "+U", 1))]
           + [order(d1, 99, "-D")]),
        Op("delete", keys=[(d1, 3), (d3, 5), (d3, 6), (d2, 77)]),
        Op("write", [order(d1, 0, "+U", 2), order(d1, 0, "+U", 3),
                     order(d1, 1, "-D"), order(d1, 1, "+I", 3),
                     order(d1, 2, "+I", 3), order(d1, 2, "-D"),
                     order(d3, 5, "+I", 3)]),
        Op("overwrite", [order(d2, i, "+I", 4) for i in range(5, 12)]),
        Op("write", [order(d, i, "+U", 5) for d in DAYS for i in range(0, 20, 4)]),
        Op("delete", keys=[(d2, 6), (d1, 8)]),
    ]


def snapshot_facts(snapshots: list[Any]) -> list[tuple[Any, ...]]:
    return [(s.id, s.commit_kind, s.total_record_count, s.delta_record_count, s.schema_id)
            for s in snapshots]


@pytest.mark.parametrize(("partitioned", "buckets"), [(True, 2), (False, 4)],
                         ids=["partitioned-bucket2", "unpartitioned-bucket4"])
def test_pypaimon_reads_lakeformat_updates_deletes_and_overwrite(
        paimon: Any, lake: Any, partitioned: bool, buckets: int) -> None:
    partition_keys = ["dt"] if partitioned else []
    options = {"bucket": str(buckets), "rowkind.field": "rk"}
    lt = lake.create_table("db.orders", schema=ORDERS, primary_keys=ORDER_KEYS,
                           partition_keys=partition_keys, options=options)
    twin = create_paimon_table(paimon, "db.twin", ORDERS, ORDER_KEYS, partition_keys, options)
    table = paimon.get_table("db.orders")
    model = LastWriterWins(ORDER_KEYS, ORDERS.names)
    expected_by_snapshot: dict[int, list[Row]] = {}

    for step, op in enumerate(scripted_ops(), start=1):
        snapshot_id = apply_lake(lt, op)
        assert apply_paimon(twin, op) == snapshot_id == step
        apply_model(model, op, partitioned)
        expected_by_snapshot[snapshot_id] = model.expected()

        assert_same_rows(lt.read(), model.expected(), ORDER_KEYS, f"lakeformat after step {step}")
        assert_same_rows(paimon_read(table), lt.read(), ORDER_KEYS,
                         f"pypaimon vs lakeformat after step {step} ({op.kind})")

    assert snapshot_facts(paimon_snapshots(table)) == snapshot_facts(lt.snapshots())
    assert snapshot_facts(paimon_snapshots(table)) == snapshot_facts(paimon_snapshots(twin))
    assert [s.commit_kind for s in lt.snapshots()] == [
        "OVERWRITE" if op.kind == "overwrite" else "APPEND" for op in scripted_ops()]
    for snapshot_id, expected in expected_by_snapshot.items():
        assert_same_rows(paimon_read(table, snapshot_id=snapshot_id), expected, ORDER_KEYS,
                         f"pypaimon at snapshot {snapshot_id}")


def test_lakeformat_snapshot_totals_match_the_files_pypaimon_plans(
        paimon: Any, lake: Any) -> None:
    lt = lake.create_table("db.orders", schema=ORDERS, primary_keys=ORDER_KEYS,
                           partition_keys=["dt"], options={"bucket": "2", "rowkind.field": "rk"})
    for op in scripted_ops():
        apply_lake(lt, op)
    table = paimon.get_table("db.orders")
    previous_total = 0
    for snap in paimon_snapshots(table):
        files = paimon_live_files(table, snapshot_id=snap.id)
        assert snap.total_record_count == sum(f["row_count"] for f in files), snap.id
        assert snap.delta_record_count == snap.total_record_count - previous_total, snap.id
        previous_total = snap.total_record_count


def test_pypaimon_hides_retracts_of_a_lone_lakeformat_file(paimon: Any, lake: Any) -> None:
    """Java counts -U/-D records in _DELETE_ROW_COUNT; pypaimon (like Java) reads a bucket made
    of one file with no deleted rows "raw", without dropping retracts. So a lakeformat file that
    holds retracts must say so, or pypaimon shows -D rows as table rows."""
    lt = lake.create_table("db.orders", schema=ORDERS, primary_keys=ORDER_KEYS,
                           options={"bucket": "1", "rowkind.field": "rk"})
    d1 = DAYS[0]
    lt.write(pa.Table.from_pylist(
        [order(d1, 1), order(d1, 2, "-D"), order(d1, 3, "-U"), order(d1, 4),
         order(d1, 4, "-D", 1)], schema=ORDERS))
    files = lt.files()
    assert [(f["row_count"], f["delete_row_count"]) for f in files] == [(4, 3)]
    expected = [order(d1, 1)]
    assert_same_rows(lt.read(), expected, ORDER_KEYS, "lakeformat")
    assert_same_rows(paimon_read(paimon.get_table("db.orders")), expected, ORDER_KEYS, "pypaimon")


def test_pypaimon_prunes_lakeformat_files_by_key_and_partition_stats_correctly(
        paimon: Any, lake: Any) -> None:
    """pypaimon skips files by _MIN_KEY/_MAX_KEY, key stats and partition stats: wrong stats in
    lakeformat's manifests would make it drop live rows."""
    lt = lake.create_table("db.orders", schema=ORDERS, primary_keys=ORDER_KEYS,
                           partition_keys=["dt"], options={"bucket": "2", "rowkind.field": "rk"})
    model = LastWriterWins(ORDER_KEYS, ORDERS.names)
    rng = random.Random(7)
    for version in range(6):
        rows = [order(rng.choice(DAYS), rng.randrange(-50, 200), rng.choice(["+I", "+U", "-D"]),
                      version) for _ in range(120)]
        lt.write(pa.Table.from_pylist(rows, schema=ORDERS))
        model.apply(rows, kind_field="rk")
    table = paimon.get_table("db.orders")
    cases: list[tuple[str, Callable[[Any], Any], Callable[[Row], bool]]] = [
        ("dt = day2", lambda pb: pb.equal("dt", DAYS[1]), lambda r: r["dt"] == DAYS[1]),
        ("id = 17", lambda pb: pb.equal("id", 17), lambda r: r["id"] == 17),
        ("id < 0", lambda pb: pb.less_than("id", 0), lambda r: r["id"] < 0),
        ("id between 40 and 60", lambda pb: pb.between("id", 40, 60),
         lambda r: 40 <= r["id"] <= 60),
        ("dt = day3 and id >= 150",
         lambda pb: pb.and_predicates([pb.equal("dt", DAYS[2]), pb.greater_or_equal("id", 150)]),
         lambda r: r["dt"] == DAYS[2] and r["id"] >= 150),
    ]
    for name, predicate, keep in cases:
        expected = [r for r in model.expected() if keep(r)]
        assert_same_rows(paimon_read(table, predicate=predicate), expected, ORDER_KEYS,
                         f"pypaimon filter {name}")


@pytest.mark.parametrize("full_compaction", [False, True], ids=["minor", "full"])
def test_pypaimon_reads_lakeformat_table_after_manifest_merging(
        paimon: Any, lake: Any, full_compaction: bool) -> None:
    """40 commits with merge-min-count=3 and an 8 kb manifest target: lakeformat rewrites the
    base manifests (Java's merger; pypaimon never merges), and pypaimon still reads the right
    rows at the latest and at older snapshots. With a tiny full-compaction threshold the
    merger also drops ADD/DELETE pairs left by overwrites."""
    options = {"bucket": "2", "rowkind.field": "rk", "manifest.merge-min-count": "3",
               "manifest.target-file-size": "8 kb"}
    if full_compaction:
        options["manifest.full-compaction-threshold-size"] = "4 kb"
    lt = lake.create_table("db.orders", schema=ORDERS, primary_keys=ORDER_KEYS,
                           partition_keys=["dt"], options=options)
    model = LastWriterWins(ORDER_KEYS, ORDERS.names)
    rng = random.Random(40)
    history: dict[int, list[Row]] = {}
    for version in range(40):
        if version % 13 == 12:
            op = Op("overwrite", [order(DAYS[1], i, "+I", version) for i in range(0, 30, 2)])
        elif version % 7 == 6:
            op = Op("delete", keys=[(rng.choice(DAYS), rng.randrange(30)) for _ in range(4)])
        else:
            op = Op("write", [order(rng.choice(DAYS), rng.randrange(30),
                                    rng.choices(["+I", "+U", "-D"], [4, 4, 1])[0], version)
                              for _ in range(12)])
        snapshot_id = apply_lake(lt, op)
        apply_model(model, op, partitioned=True)
        history[snapshot_id] = model.expected()

    table = paimon.get_table("db.orders")
    latest = paimon_snapshots(table)[-1]
    assert latest.id == 40
    base = paimon_base_manifests(table, latest)
    assert len(base) < 5, f"manifests were not merged: {base}"
    if full_compaction:
        assert sum(deleted for _, deleted, _ in base) == 0, f"ADD/DELETE pairs left: {base}"
    assert_same_rows(paimon_read(table), model.expected(), ORDER_KEYS, "pypaimon latest")
    assert_same_rows(lt.read(), model.expected(), ORDER_KEYS, "lakeformat latest")
    for snapshot_id in (1, 3, 13, 26, 39):
        assert_same_rows(paimon_read(table, snapshot_id=snapshot_id), history[snapshot_id],
                         ORDER_KEYS, f"pypaimon at snapshot {snapshot_id}")
    files = paimon_live_files(table)
    assert latest.total_record_count == sum(f["row_count"] for f in files)


# -- types ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("key_type", list(KEY_TYPES))
def test_pypaimon_reads_every_lakeformat_value_type_by_key_type(
        paimon: Any, lake: Any, key_type: str) -> None:
    arrow_type, key_of = KEY_TYPES[key_type]
    schema = pa.schema([("k", arrow_type), *VALUE_COLUMNS])
    lt = lake.create_table("db.types", schema=schema, primary_keys=["k"],
                           options={"bucket": "2"})
    model = LastWriterWins(["k"], schema.names)
    first = [{"k": key_of(i), **typed_values(i, 0)} for i in range(40)]
    second = [{"k": key_of(i), **typed_values(i, 1)} for i in range(0, 40, 3)]
    for rows in (first, second):
        lt.write(pa.Table.from_pylist(rows, schema=schema))
        model.apply(rows)
    lt.delete(pa.table({"k": pa.array([key_of(i) for i in range(1, 40, 5)], arrow_type)}))
    model.delete([{"k": key_of(i)} for i in range(1, 40, 5)])

    table = paimon.get_table("db.types")
    assert [str(f.type) for f in table.table_schema.fields] == [
        f"{key_type} NOT NULL", *VALUE_PAIMON_TYPES]
    theirs = paimon_read(table)
    assert_same_value_types(theirs.schema, lt.read().schema)
    assert_same_rows(theirs, model.expected(), ["k"], "pypaimon vs model")
    assert_same_rows(lt.read(), model.expected(), ["k"], "lakeformat vs model")
    assert_same_rows(paimon_read(table, snapshot_id=1), lt.read(snapshot_id=1), ["k"],
                     "pypaimon vs lakeformat at snapshot 1")


# -- partial-update -------------------------------------------------------------------------------
PROFILES = pa.schema([
    ("dt", pa.string()), ("id", pa.int64()),
    ("a_name", pa.string()), ("a_score", pa.int32()),
    ("b_city", pa.string()), ("b_balance", pa.decimal128(10, 2)),
])


def test_pypaimon_merges_two_lakeformat_partial_update_streams(paimon: Any, lake: Any) -> None:
    lt = lake.create_table("db.profiles", schema=PROFILES, primary_keys=ORDER_KEYS,
                           partition_keys=["dt"],
                           options={"bucket": "2", "merge-engine": "partial-update"})

    def stream_a(ids: range, version: int, day: str, skip_name: bool = False) -> list[Row]:
        return [{"dt": day, "id": i, "a_name": None if skip_name else f"name{i}-{version}",
                 "a_score": i * 10 + version, "b_city": None, "b_balance": None} for i in ids]

    def stream_b(ids: range, version: int, day: str) -> list[Row]:
        return [{"dt": day, "id": i, "a_name": None, "a_score": None,
                 "b_city": None if i % 4 == 0 else f"city{i}-{version}",
                 "b_balance": decimal_value(i + version, 2, 9)} for i in ids]

    d1, d2 = DAYS[:2]
    commits = [stream_a(range(0, 20), 0, d1), stream_b(range(10, 30), 0, d1),
               stream_a(range(0, 5), 1, d1, skip_name=True),
               stream_b(range(25, 35), 1, d1) + stream_b(range(0, 8), 1, d2),
               stream_a(range(0, 8), 2, d2) + stream_a(range(28, 32), 2, d1)]
    model: dict[tuple[Any, ...], Row] = {}
    table = paimon.get_table("db.profiles")
    for step, rows in enumerate(commits, start=1):
        lt.write(pa.Table.from_pylist(rows, schema=PROFILES))
        for row in rows:
            merged = model.setdefault((row["dt"], row["id"]), dict.fromkeys(PROFILES.names))
            merged.update({c: v for c, v in row.items() if v is not None})
        expected = sorted_model_rows(model, ORDER_KEYS, PROFILES.names)
        assert_same_rows(lt.read(), expected, ORDER_KEYS, f"lakeformat after stream commit {step}")
        assert_same_rows(paimon_read(table), expected, ORDER_KEYS,
                         f"pypaimon after stream commit {step}")


def test_pypaimon_reads_commits_made_with_a_commit_identity(paimon: Any, lake: Any) -> None:
    """A write with commit_user/commit_identifier (and the snapshot property naming the call)
    stays readable by pypaimon, which sees the same user and identifier; a retry adds no
    snapshot."""
    lt = lake.create_table("db.orders", schema=ORDERS, primary_keys=ORDER_KEYS,
                           options={"bucket": "2"})
    d1 = DAYS[0]
    rows = [order(d1, i) for i in range(6)]
    first = lt.write(pa.Table.from_pylist(rows, schema=ORDERS), commit_user="dag.task",
                     commit_identifier=20240101)
    again = lt.write(pa.Table.from_pylist(rows, schema=ORDERS), commit_user="dag.task",
                     commit_identifier=20240101)
    assert again.already_committed and again.snapshot_id == first.snapshot_id
    pt = paimon.get_table("db.orders")
    assert [(s.id, s.commit_user, s.commit_identifier) for s in paimon_snapshots(pt)] == [
        (1, "dag.task", 20240101)]
    assert_same_rows(paimon_read(pt), rows, ORDER_KEYS, "pypaimon")


def test_pypaimon_reads_lakeformat_null_partition_values(paimon: Any, lake: Any) -> None:
    """A null partition value is its own partition (BinaryRow null bit, directory named by
    `partition.default-name`): pypaimon finds it and reads its rows."""
    schema = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])
    lt = lake.create_table("db.nulls", schema=schema, primary_keys=["id"],
                           partition_keys=["dt"], options={"bucket": "1"})
    lt.write(pa.table({"dt": [None, "a", None], "id": [1, 2, 3], "v": ["x", "y", "z"]},
                      schema=schema))
    theirs = paimon_read(paimon.get_table("db.nulls")).to_pylist()
    assert sorted(theirs, key=lambda r: r["id"]) == \
        sorted(lt.read().to_pylist(), key=lambda r: r["id"])
    assert sorted(r["id"] for r in theirs if r["dt"] is None) == [1, 3]
