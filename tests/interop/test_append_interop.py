"""Append tables between lakeformat and pypaimon 2.1.0, both ways: tables one writes, the other
reads (rows, and for bucketed tables their order per bucket), compacts and expires, and the
first keeps writing on top."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

pytest.importorskip("pypaimon")  # collected only in the interop venv

import pyarrow as pa  # noqa: E402

from tests.support.pypaimon_helpers import (  # noqa: E402
    DAYS,
    create_paimon_table,
    paimon_live_files,
    paimon_read,
    paimon_write,
)

LOGS = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("msg", pa.string()),
                  ("score", pa.float64())])
NOW = dt.timedelta(0)


def batch(i: int, n: int = 5) -> pa.Table:
    return pa.table({"dt": [d for d in DAYS for _ in range(n)],
                     "id": [i * 100 + k for _ in DAYS for k in range(n)],
                     "msg": [f"{d}/{i}/{k}" for d in DAYS for k in range(n)],
                     "score": [k / 4 if k % 3 else None for _ in DAYS for k in range(n)]},
                    schema=LOGS)


def ordered(t: pa.Table) -> list[dict]:
    return sorted(t.to_pylist(), key=lambda r: (r["dt"], r["id"]))


def same_rows(lake_table: Any, paimon: Any, name: str, snapshot_id: int | None = None) -> int:
    mine = lake_table.read(snapshot_id=snapshot_id)
    theirs = paimon_read(paimon.get_table(name), snapshot_id)
    assert ordered(theirs) == ordered(mine)
    return mine.num_rows


def per_key_order(rows: list[dict]) -> dict[int, list[str]]:
    """msg values per id in read order: a bucketed table reads each bucket's files in sequence
    order, so a key's rows come back in write order (the order of buckets is not a contract)."""
    out: dict[int, list[str]] = {}
    for r in rows:
        out.setdefault(r["id"], []).append(r["msg"])
    return out


@pytest.mark.parametrize("options", [{}, {"file.format": "orc"}], ids=["parquet", "orc"])
def test_lakeformat_reads_and_compacts_what_pypaimon_appends(paimon, lake, options):
    pt = create_paimon_table(paimon, "db.logs", LOGS, [], ["dt"], options)
    for i in range(6):
        paimon_write(pt, batch(i))
    t = lake.get_table("db.logs")
    assert same_rows(t, paimon, "db.logs") == 90
    r = t.compact(full=False)  # 6 small files per partition >= compaction.min.file-num 5
    assert r.total.files_in == 18 and r.total.files_out == 3
    assert same_rows(t, paimon, "db.logs") == 90
    files = paimon_live_files(paimon.get_table("db.logs"))
    assert len(files) == 3 and all(f["level"] == 0 and f["row_count"] == 30 for f in files)
    paimon_write(paimon.get_table("db.logs"), batch(6))  # pypaimon keeps writing on top
    assert same_rows(t, paimon, "db.logs") == 105
    t.expire_snapshots(retain_min=1, older_than=NOW)
    assert same_rows(t, paimon, "db.logs") == 105


def test_bucketed_append_tables_keep_write_order_both_ways(paimon, lake):
    pt = create_paimon_table(paimon, "db.b", LOGS, [], [], {"bucket": "2", "bucket-key": "id"})
    for i in range(3):
        paimon_write(pt, batch(i, 2))
    t = lake.get_table("db.b")
    theirs = paimon_read(paimon.get_table("db.b")).to_pylist()
    assert per_key_order(t.read().to_pylist()) == per_key_order(theirs)
    for i in range(3, 5):
        t.write(batch(i, 2))
    mine = t.read().to_pylist()
    assert per_key_order(mine) == per_key_order(paimon_read(paimon.get_table("db.b")).to_pylist())
    t.compact(full=True)
    after = paimon_read(paimon.get_table("db.b")).to_pylist()
    assert per_key_order(after) == per_key_order(t.read().to_pylist()) == per_key_order(mine)
    files = paimon_live_files(paimon.get_table("db.b"))
    assert len(after) == 30 and sorted(f["bucket"] for f in files) == [0, 1]
    for key, msgs in per_key_order(after).items():  # each key's rows in write order
        assert [m.split("/")[1] for m in msgs] == sorted(m.split("/")[1] for m in msgs), key


def test_pypaimon_reads_and_appends_to_lakeformat_append_tables(paimon, lake):
    t = lake.create_table("db.lf", LOGS, partition_keys=["dt"])
    for i in range(3):
        t.write(batch(i))
    assert same_rows(t, paimon, "db.lf") == 45
    files = paimon_live_files(paimon.get_table("db.lf"))
    assert all((f["min_sequence_number"], f["max_sequence_number"]) == (0, 4) for f in files)
    paimon_write(paimon.get_table("db.lf"), batch(3))
    t.compact(full=True)
    assert same_rows(t, paimon, "db.lf") == 60
    t.write(batch(4).append_column("tag", pa.array(["new"] * 15)), merge_schema=True)
    got = paimon_read(paimon.get_table("db.lf"))
    assert got.num_rows == 75 and got.column("tag").null_count == 60
    assert same_rows(t, paimon, "db.lf") == 75
