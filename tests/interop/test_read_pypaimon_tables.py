"""Tables written by pypaimon 2.1.0 read by lakeformat give exactly pypaimon's rows.

Every test builds its table with pypaimon's public API, then compares lakeformat's rows with
pypaimon's rows (and with a Python model of the merge engine) after sorting by primary key,
at the latest snapshot and at every older snapshot id.
"""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from tests.support.pypaimon_helpers import (
    DAYS,
    KEY_TYPES,
    ORDER_KEYS,
    ORDERS,
    VALUE_COLUMNS,
    LastWriterWins,
    Row,
    assert_same_rows,
    assert_same_value_types,
    create_paimon_table,
    decimal_value,
    order,
    paimon_live_files,
    paimon_read,
    paimon_snapshots,
    paimon_write,
    sorted_model_rows,
    typed_values,
)


def order_commits() -> list[list[Row]]:
    """Commits mixing inserts, +U updates, -U/+U pairs, -D deletes and in-batch repeats."""
    d1, d2, d3 = DAYS
    first = [order(d, i) for d in DAYS for i in range(20)]
    second = (
        [order(d1, i, "+U", 1) for i in range(10)]                       # plain updates
        + [order(d2, i, "-D") for i in range(10, 15)]                    # deletes
        + [r for i in range(15, 18)                                       # -U/+U pairs
           for r in (order(d3, i, "-U", 0), order(d3, i, "+U", 1))]
        + [order(d, i) for d in (d1, d2) for i in range(20, 25)]         # new keys
    )
    third = (
        [order(d2, i, "+I", 2) for i in (10, 11)]                        # re-insert deleted
        + [order(d1, 99, "-D")]                                          # delete of no key
        + [order(d1, 0, "+U", 2), order(d1, 0, "+U", 3)]                 # same key twice
        + [order(d1, 1, "-D"), order(d1, 1, "+I", 3)]                    # delete then insert
        + [order(d1, 2, "+I", 3), order(d1, 2, "-D")]                    # insert then delete
        + [order(d3, 19, "-U", 0)]                                       # lone retract
    )
    fourth = [order(d, i, "+U", 4) for d in DAYS for i in range(0, 25, 3)]
    return [first, second, third, fourth]


@pytest.mark.parametrize("partitioned", [True, False], ids=["partitioned", "unpartitioned"])
@pytest.mark.parametrize("buckets", [2, 4])
def test_lakeformat_reads_pypaimon_updates_and_deletes_at_every_snapshot(
        paimon: Any, lake: Any, partitioned: bool, buckets: int) -> None:
    table = create_paimon_table(
        paimon, "db.orders", ORDERS, primary_keys=ORDER_KEYS,
        partition_keys=["dt"] if partitioned else [],
        options={"bucket": str(buckets), "rowkind.field": "rk"})
    model = LastWriterWins(ORDER_KEYS, ORDERS.names)
    expected_by_snapshot: dict[int, list[Row]] = {}
    for rows in order_commits():
        snapshot_id = paimon_write(table, rows)
        model.apply(rows, kind_field="rk")
        expected_by_snapshot[snapshot_id] = model.expected()

    lt = lake.get_table("db.orders")
    assert [s.id for s in lt.snapshots()] == [1, 2, 3, 4]
    assert_same_rows(lt.read(), paimon_read(table), ORDER_KEYS, "latest vs pypaimon")
    for snapshot_id, expected in expected_by_snapshot.items():
        theirs = paimon_read(table, snapshot_id=snapshot_id)
        assert_same_rows(theirs, expected, ORDER_KEYS, f"pypaimon@{snapshot_id} vs model")
        assert_same_rows(lt.read(snapshot_id=snapshot_id), expected, ORDER_KEYS,
                         f"lakeformat@{snapshot_id} vs model")


def test_lakeformat_reads_pypaimon_snapshot_metadata(paimon: Any, lake: Any) -> None:
    table = create_paimon_table(paimon, "db.orders", ORDERS, ORDER_KEYS, ["dt"],
                                {"bucket": "2", "rowkind.field": "rk"})
    for rows in order_commits():
        paimon_write(table, rows)
    ours = [(s.id, s.commit_kind, s.total_record_count, s.delta_record_count, s.schema_id)
            for s in lake.get_table("db.orders").snapshots()]
    theirs = [(s.id, s.commit_kind, s.total_record_count, s.delta_record_count, s.schema_id)
              for s in paimon_snapshots(table)]
    assert ours == theirs


def test_lakeformat_files_match_pypaimon_plan(paimon: Any, lake: Any) -> None:
    table = create_paimon_table(paimon, "db.orders", ORDERS, ORDER_KEYS, ["dt"],
                                {"bucket": "2", "rowkind.field": "rk"})
    for rows in order_commits():
        paimon_write(table, rows)
    ours = sorted(
        ((f["partition"]["dt"],), f["bucket"], f["file_name"], f["row_count"], f["level"],
         f["min_sequence_number"], f["max_sequence_number"])
        for f in lake.get_table("db.orders").files())
    theirs = sorted(
        (f["partition"], f["bucket"], f["file_name"], f["row_count"], f["level"],
         f["min_sequence_number"], f["max_sequence_number"])
        for f in paimon_live_files(table))
    assert ours == theirs


def test_lakeformat_filters_and_projects_pypaimon_table_like_pypaimon(
        paimon: Any, lake: Any) -> None:
    table = create_paimon_table(paimon, "db.orders", ORDERS, ORDER_KEYS, ["dt"],
                                {"bucket": "2", "rowkind.field": "rk"})
    model = LastWriterWins(ORDER_KEYS, ORDERS.names)
    for rows in order_commits():
        paimon_write(table, rows)
        model.apply(rows, kind_field="rk")
    lt = lake.get_table("db.orders")

    day2 = [r for r in model.expected() if r["dt"] == DAYS[1]]
    theirs = paimon_read(table, predicate=lambda pb: pb.equal("dt", DAYS[1]))
    assert_same_rows(theirs, day2, ORDER_KEYS, "pypaimon partition filter")
    assert_same_rows(lt.read(filter=[("dt", "=", DAYS[1])]), day2, ORDER_KEYS,
                     "lakeformat DNF partition filter")
    assert_same_rows(lt.read(filter=pc.field("dt") == DAYS[1]), day2, ORDER_KEYS,
                     "lakeformat expression partition filter")

    # a value filter must apply to the merged row: id 0 of day 1 was 0.0 and is now 4.0
    small = [r for r in model.expected() if r["amount"] < 5.0]
    assert_same_rows(lt.read(filter=pc.field("amount") < 5.0), small, ORDER_KEYS,
                     "lakeformat value filter after merge")

    projected = [{"id": r["id"], "dt": r["dt"], "amount": r["amount"]}
                 for r in model.expected()]
    ours = lt.read(columns=["id", "dt", "amount"])
    assert ours.column_names == ["id", "dt", "amount"]
    assert_same_rows(ours, projected, ORDER_KEYS, "lakeformat projection")
    theirs = paimon_read(table, columns=["id", "dt", "amount"])
    assert_same_rows(theirs, projected, ORDER_KEYS, "pypaimon projection")


def test_lakeformat_reads_many_pypaimon_sorted_runs_and_rolled_files(
        paimon: Any, lake: Any) -> None:
    """Twelve random commits over a small key space: up to twelve level-0 runs per bucket,
    several files per run (small target-file-size), every key updated or deleted often."""
    rng = random.Random(20240601)
    table = create_paimon_table(
        paimon, "db.orders", ORDERS, ORDER_KEYS, ["dt"],
        {"bucket": "4", "rowkind.field": "rk", "target-file-size": "8 kb"})
    model = LastWriterWins(ORDER_KEYS, ORDERS.names)
    snapshots: list[int] = []
    first_commit: list[Row] = []
    for version in range(12):
        rows = []
        for _ in range(300):
            day, i = rng.choice(DAYS), rng.randrange(120)
            kind = rng.choices(["+I", "+U", "-D", "-U"], weights=[5, 3, 2, 1])[0]
            rows.append(order(day, i, kind, version))
        snapshots.append(paimon_write(table, rows))
        model.apply(rows, kind_field="rk")
        first_commit = first_commit or rows
    assert any(f["row_count"] < 200 for f in paimon_live_files(table))
    lt = lake.get_table("db.orders")
    assert_same_rows(lt.read(), model.expected(), ORDER_KEYS, "lakeformat vs model")
    assert_same_rows(paimon_read(table), model.expected(), ORDER_KEYS, "pypaimon vs model")
    assert_same_rows(lt.read(snapshot_id=snapshots[5]),
                     paimon_read(table, snapshot_id=snapshots[5]), ORDER_KEYS,
                     "lakeformat vs pypaimon at snapshot 6")
    # snapshot 1: every bucket holds one file that contains retracts, which pypaimon itself
    # misreads (see test_lakeformat_drops_retracts_that_pypaimon_shows_for_a_lone_file)
    model_at_1 = LastWriterWins(ORDER_KEYS, ORDERS.names)
    model_at_1.apply(first_commit, kind_field="rk")
    assert_same_rows(lt.read(snapshot_id=snapshots[0]), model_at_1.expected(), ORDER_KEYS,
                     "lakeformat at snapshot 1 vs model")


def test_lakeformat_drops_retracts_that_pypaimon_shows_for_a_lone_file(
        paimon: Any, lake: Any) -> None:
    """pypaimon 2.1.0 writes _DELETE_ROW_COUNT = 0 even for files holding -D/-U records, and
    its split generator reads a bucket made of one such file "raw" (no merge, no
    DropDelete), so its own reader returns the retract rows. A retract is never a row of a
    primary-key table: lakeformat must merge and drop them."""
    table = create_paimon_table(paimon, "db.orders", ORDERS, ORDER_KEYS,
                                options={"bucket": "1", "rowkind.field": "rk"})
    d1 = DAYS[0]
    rows = [order(d1, 1), order(d1, 2, "-D"), order(d1, 3, "-U"), order(d1, 4),
            order(d1, 4, "-D", 1)]
    paimon_write(table, rows)
    assert sorted(paimon_read(table).column("rk").to_pylist()) == ["+I", "-D", "-D", "-U"]
    assert [f["row_count"] for f in paimon_live_files(table)] == [4]

    expected = [order(d1, 1)]
    assert_same_rows(lake.get_table("db.orders").read(), expected, ORDER_KEYS,
                     "lakeformat drops retract rows")


# -- the type matrix -------------------------------------------------------------------------------
@pytest.mark.parametrize("key_type", list(KEY_TYPES))
def test_lakeformat_reads_every_pypaimon_value_type_by_key_type(
        paimon: Any, lake: Any, key_type: str) -> None:
    arrow_type, key_of = KEY_TYPES[key_type]
    schema = pa.schema([("k", arrow_type), *VALUE_COLUMNS, ("rk", pa.string())])
    table = create_paimon_table(paimon, "db.types", schema, ["k"],
                                options={"bucket": "2", "rowkind.field": "rk"})
    model = LastWriterWins(["k"], schema.names)
    first = [{"k": key_of(i), **typed_values(i, 0), "rk": "+I"} for i in range(40)]
    second = ([{"k": key_of(i), **typed_values(i, 1), "rk": "+U"} for i in range(0, 40, 3)]
              + [{"k": key_of(i), **typed_values(i, 0), "rk": "-D"} for i in range(1, 40, 5)])
    for rows in (first, second):
        paimon_write(table, rows)
        model.apply(rows, kind_field="rk")

    lt = lake.get_table("db.types")
    ours, theirs = lt.read(), paimon_read(table)
    assert_same_value_types(ours.schema, theirs.schema)
    assert_same_rows(theirs, model.expected(), ["k"], "pypaimon vs model")
    assert_same_rows(ours, model.expected(), ["k"], "lakeformat vs model")
    assert_same_rows(lt.read(snapshot_id=1), paimon_read(table, snapshot_id=1), ["k"],
                     "lakeformat vs pypaimon at snapshot 1")


def test_lakeformat_reads_pypaimon_composite_key_of_int_bigint_string_date(
        paimon: Any, lake: Any) -> None:
    keys = ["k_date", "k_str", "k_int", "k_big"]
    schema = pa.schema([("k_date", pa.date32()), ("k_str", pa.string()), ("k_int", pa.int32()),
                        ("k_big", pa.int64()), ("v", pa.decimal128(10, 2))])
    table = create_paimon_table(paimon, "db.composite", schema, keys, ["k_date"],
                                {"bucket": "4"})
    model = LastWriterWins(keys, schema.names)
    for version in range(3):
        rows = [{"k_date": dt.date(2024, 1, 1 + i % 3), "k_str": f"s{i % 4}",
                 "k_int": i % 5 - 2, "k_big": i * 10**10, "v": decimal_value(i + version, 2, 9)}
                for i in range(version * 10, 60)]
        paimon_write(table, rows)
        model.apply(rows)
    lt = lake.get_table("db.composite")
    assert_same_rows(lt.read(), paimon_read(table), keys, "lakeformat vs pypaimon")
    assert_same_rows(lt.read(), model.expected(), keys, "lakeformat vs model")


# -- partial-update --------------------------------------------------------------------------------
# pypaimon 2.1.0 accepts merge-engine=partial-update only in its plain form (last non-null value
# per column). It raises NotImplementedError for fields.*.sequence-group, ignore-delete,
# fields.*.aggregate-function and partial-update.remove-record-on-delete /
# remove-record-on-sequence-group, so those combinations cannot be written by pypaimon and are
# not covered here. Plain partial-update also refuses -U/-D input (as Java does), so the two
# streams below only insert.
PROFILES = pa.schema([
    ("dt", pa.string()), ("id", pa.int64()),
    ("a_name", pa.string()), ("a_score", pa.int32()),      # stream A's columns
    ("b_city", pa.string()), ("b_balance", pa.decimal128(10, 2)),  # stream B's columns
])
PROFILE_KEYS = ["dt", "id"]


def stream_a(ids: range, version: int, day: str, skip_name: bool = False) -> list[Row]:
    return [{"dt": day, "id": i, "a_name": None if skip_name else f"name{i}-{version}",
             "a_score": i * 10 + version, "b_city": None, "b_balance": None} for i in ids]


def stream_b(ids: range, version: int, day: str) -> list[Row]:
    return [{"dt": day, "id": i, "a_name": None, "a_score": None,
             "b_city": None if i % 4 == 0 else f"city{i}-{version}",
             "b_balance": decimal_value(i + version, 2, 9)} for i in ids]


def partial_update(model: dict[tuple[Any, ...], Row], rows: list[Row]) -> None:
    """Java PartialUpdateMergeFunction without sequence groups: non-null values overwrite."""
    for row in rows:
        key = tuple(row[k] for k in PROFILE_KEYS)
        merged = model.setdefault(key, {c: None for c in PROFILES.names})
        for c, v in row.items():
            if v is not None:
                merged[c] = v


def test_lakeformat_merges_two_pypaimon_partial_update_streams_like_pypaimon(
        paimon: Any, lake: Any) -> None:
    table = create_paimon_table(paimon, "db.profiles", PROFILES, PROFILE_KEYS, ["dt"],
                                {"bucket": "2", "merge-engine": "partial-update"})
    d1, d2 = DAYS[:2]
    commits = [
        stream_a(range(0, 20), 0, d1),
        stream_b(range(10, 30), 0, d1),
        stream_a(range(0, 5), 1, d1, skip_name=True),   # null a_name keeps the old one
        stream_b(range(25, 35), 1, d1) + stream_b(range(0, 8), 1, d2),
        stream_a(range(0, 8), 2, d2) + stream_a(range(28, 32), 2, d1),
    ]
    model: dict[tuple[Any, ...], Row] = {}
    expected_by_snapshot: dict[int, list[Row]] = {}
    for rows in commits:
        snapshot_id = paimon_write(table, rows)
        partial_update(model, rows)
        expected_by_snapshot[snapshot_id] = sorted_model_rows(model, PROFILE_KEYS,
                                                              PROFILES.names)
    lt = lake.get_table("db.profiles")
    assert_same_rows(lt.read(), paimon_read(table), PROFILE_KEYS, "lakeformat vs pypaimon")
    for snapshot_id, expected in expected_by_snapshot.items():
        assert_same_rows(paimon_read(table, snapshot_id=snapshot_id), expected, PROFILE_KEYS,
                         f"pypaimon@{snapshot_id} vs partial-update model")
        assert_same_rows(lt.read(snapshot_id=snapshot_id), expected, PROFILE_KEYS,
                         f"lakeformat@{snapshot_id} vs partial-update model")
