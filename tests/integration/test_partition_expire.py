"""Partition expiry (values-time): old partitions leave the latest snapshot, time travel keeps
them, and nothing is committed when nothing expires. Local disk and the moto S3 server."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.meta.binary_row import to_avro_bytes
from lakeformat.operation.maintain import expired_partitions
from lakeformat.operation.maintain.partition_expire import TimeParseError, extract_time


def daily(catalog, name="db.daily", **options) -> lf.Table:
    schema = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])
    opts = {"bucket": "1", "partition.timestamp-formatter": "yyyyMMdd", **options}
    return catalog.create_table(name, schema, primary_keys=["dt", "id"], partition_keys=["dt"],
                                options=opts)


def day_rows(days, per_day=3) -> pa.Table:
    dts = [d for d in days for _ in range(per_day)]
    ids = [i for _ in days for i in range(per_day)]
    return pa.table({"dt": dts, "id": ids, "v": [f"{d}-{i}" for d, i in zip(dts, ids)]})


def partitions(t: lf.Table, snapshot_id=None) -> set:
    return set(t.read(snapshot_id=snapshot_id).column("dt").to_pylist())


def test_yyyymmdd_drops_exactly_old_partitions_and_time_travel_keeps_them(catalog):
    t = daily(catalog)
    days = ["20240101", "20240102", "20240103", "20240110", "not-a-day"]
    t.write(day_rows(days))
    before = t.read()
    cutoff = dt.datetime(2024, 1, 3)  # 20240103 00:00 is not before the cut-off: kept

    plan = t.expire_partitions(cutoff, dry_run=True)
    assert plan.dry_run and plan.partitions_expired == ["dt=20240101", "dt=20240102"]
    assert plan.data_files_dropped == 2 and plan.bytes_dropped > 0
    assert any("not-a-day" in s for s in plan.skipped)
    assert [s.id for s in t.snapshots()] == [1]  # a dry run commits nothing

    res = t.expire_partitions(cutoff)
    assert res.partitions_expired == plan.partitions_expired
    assert res.data_files_dropped == plan.data_files_dropped
    assert res.bytes_dropped == plan.bytes_dropped and res.latest_snapshot == 2
    snap = t.latest_snapshot()
    assert snap.id == 2 and snap.commit_kind == "OVERWRITE"
    assert partitions(t) == {"20240103", "20240110", "not-a-day"}
    assert t.read().num_rows == 9
    assert t.read(snapshot_id=1).sort_by("dt").equals(before.sort_by("dt"))
    # the dropped files are still on storage for the old snapshot
    assert len(t.files(snapshot_id=1)) == 5 and len(t.files()) == 3

    again = t.expire_partitions(cutoff)
    assert again.partitions_expired == [] and [s.id for s in t.snapshots()] == [1, 2]


def test_hourly_pattern_with_default_formatter(tmp_path):
    cat = lf.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    schema = pa.schema([("dt", pa.string()), ("hour", pa.int32()), ("id", pa.int64())])
    t = cat.create_table("db.hourly", schema, primary_keys=["dt", "hour", "id"],
                         partition_keys=["dt", "hour"],
                         options={"bucket": "1", "partition.timestamp-pattern": "$dt $hour:00:00"})
    parts = [("2024-01-01", h) for h in (0, 5, 11, 12, 23)] + [("2024-01-02", 1)]
    t.write(pa.table({"dt": [p[0] for p in parts], "hour": pa.array([p[1] for p in parts],
                                                                     pa.int32()),
                      "id": list(range(len(parts)))}))
    res = t.expire_partitions(dt.datetime(2024, 1, 1, 12))
    assert sorted(res.partitions_expired) == ["dt=2024-01-01/hour=0", "dt=2024-01-01/hour=11",
                                   "dt=2024-01-01/hour=5"]
    left = {(r["dt"], r["hour"]) for r in t.read().to_pylist()}
    assert left == {("2024-01-01", 12), ("2024-01-01", 23), ("2024-01-02", 1)}
    assert t.read(snapshot_id=1).num_rows == len(parts)


def test_option_expiration_time_and_max_num(tmp_path):
    cat = lf.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = daily(cat, **{"partition.expiration-time": "7 d", "partition.expiration-max-num": "2"})
    recent = (dt.date.today() - dt.timedelta(days=1)).strftime("%Y%m%d")
    t.write(day_rows(["20230101", "20230102", "20230103", recent]))
    first = t.expire_partitions()  # the option's 7 days; the oldest two of three first
    assert first.partitions_expired == ["dt=20230101", "dt=20230102"]
    assert any("1 more expired partitions" in s for s in first.skipped)
    second = t.expire_partitions("7 d")
    assert second.partitions_expired == ["dt=20230103"] and not second.skipped
    assert partitions(t) == {recent}
    assert t.expire_partitions(dt.timedelta(days=7)).partitions_expired == []
    assert [s.id for s in t.snapshots()] == [1, 2, 3]


def test_date_partitions_read_as_iso_dates(tmp_path):
    cat = lf.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    schema = pa.schema([("d", pa.date32()), ("id", pa.int64())])
    t = cat.create_table("db.dates", schema, primary_keys=["d", "id"], partition_keys=["d"],
                         options={"bucket": "1"})
    t.write(pa.table({"d": pa.array([dt.date(2020, 5, 1), dt.date(2024, 5, 1)], pa.date32()),
                      "id": [1, 2]}))
    res = t.expire_partitions(dt.datetime(2022, 1, 1))
    assert res.partitions_expired == ["d=2020-05-01"] and not res.skipped
    assert t.read().column("id").to_pylist() == [2]


def test_refusals_commit_nothing(tmp_path):
    cat = lf.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = daily(cat)
    t.write(day_rows(["20200101"]))
    with pytest.raises(lf.InvalidOptionError, match="partition.expiration-time"):
        t.expire_partitions()
    refused = [("partition.timestamp-formatter", "yyyy-MMM-dd", lf.UnsupportedError)]
    for key, value, err in refused:
        t.alter(lf.SchemaChange.set_option(key, value))
        with pytest.raises(err, match=key):
            t.expire_partitions("1 d")
        t.alter(lf.SchemaChange.remove_option(key))
    invalid = [("partition.expiration-strategy", "bogus", lf.InvalidOptionError),
               ("partition.expiration-max-num", "0", lf.InvalidOptionError)]
    for key, value, err in invalid:  # refused by alter already
        with pytest.raises(err, match=key):
            t.alter(lf.SchemaChange.set_option(key, value))
    # a run's options overlay is refused as the table's options are
    for key, value, err in refused + invalid:
        with pytest.raises(err, match=key):
            t.expire_partitions("1 d", options={key: value})
    plain = cat.create_table("db.plain", pa.schema([("id", pa.int64())]), primary_keys=["id"],
                             options={"bucket": "1"})
    with pytest.raises(lf.LakeformatError, match="no partition keys"):
        plain.expire_partitions("1 d")
    assert [s.id for s in t.snapshots()] == [1] and t.read().num_rows == 3


@pytest.mark.parametrize("keys, values, pattern, formatter, want", [
    (["dt"], ["20240131"], None, "yyyyMMdd", dt.datetime(2024, 1, 31)),
    (["dt"], ["2024-01-31"], None, None, dt.datetime(2024, 1, 31)),
    (["dt"], ["2024-1-5 7:08:09"], None, None, dt.datetime(2024, 1, 5, 7, 8, 9)),
    (["dt"], ["2024-13-01"], None, None, dt.datetime(2025, 1, 1)),  # lenient default
    (["dt", "hr"], ["20240131", "07"], "$dt$hr", "yyyyMMddHH", dt.datetime(2024, 1, 31, 7)),
    (["d", "dt"], ["x", "2024-02-30"], "$dt", "yyyy-MM-dd", dt.datetime(2024, 2, 29)),
    (["y", "m", "d"], ["2024", "3", "9"], "$y-$m-$d", "yyyy-M-d", dt.datetime(2024, 3, 9)),
    (["dt"], ["2024-01-31T10"], None, "yyyy-MM-dd'T'HH", dt.datetime(2024, 1, 31, 10)),
])
def test_extract_time_as_java(keys, values, pattern, formatter, want):
    assert extract_time(keys, values, pattern, formatter) == want


@pytest.mark.parametrize("values, pattern, formatter", [
    (["2024-01"], None, "yyyyMMdd"), (["abc"], None, None), (["20241301"], None, "yyyyMMdd"),
    ([None], None, None), (["2024-01-01 25:00:00"], None, "yyyy-MM-dd HH:mm:ss"),
])
def test_extract_time_failures_keep_partitions(values, pattern, formatter):
    with pytest.raises(TimeParseError):
        extract_time(["dt"], values, pattern, formatter)


def test_expired_partitions_is_the_rule_expire_partitions_applies(tmp_path):
    """The pure rule, given partitions the caller has: the same answer as a dry run, in the
    order a run drops them, with the reasons of the partitions it keeps; it reads no file."""
    cat = lf.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = daily(cat, **{"partition.expiration-time": "3 d", "partition.expiration-max-num": "1"})
    schema = t.table_schema
    types = [f.type for f in schema.partition_fields()]
    rows = {d: to_avro_bytes([d], types) for d in ["20240105", "20240101", "20240103", "x"]}
    now = dt.datetime(2024, 1, 6, 12)
    expired, kept = expired_partitions(schema, rows.values(), now=now)
    assert expired == [("dt=20240101", rows["20240101"]), ("dt=20240103", rows["20240103"])]
    assert len(kept) == 1 and kept[0].startswith("dt=x: kept, no time in its values")
    cutoff = expired_partitions(schema, rows.values(), dt.datetime(2024, 1, 2))
    assert cutoff.expired == [("dt=20240101", rows["20240101"])]
    assert expired_partitions(schema, [], "1 d").expired == []
    with pytest.raises(lf.InvalidOptionError, match="expiration_time"):
        expired_partitions(schema, rows.values(), 7)

    t.write(day_rows(list(rows)))
    plan = t.expire_partitions(dt.datetime(2024, 1, 4), dry_run=True)
    rule = expired_partitions(schema, rows.values(), dt.datetime(2024, 1, 4))
    assert plan.partitions_expired == [spec for spec, _ in rule.expired][:1]  # max-num 1
    assert any(r in plan.skipped for r in rule.kept)
