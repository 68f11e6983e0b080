"""A lakeformat `delete(where=...)` read back by pypaimon 2.1.0: the partitions an OVERWRITE
dropped and the keys the -D records retracted are gone for pypaimon too, time travel to the
snapshot before still shows them, and pypaimon keeps writing on top."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("pypaimon")  # collected only in the interop venv

import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402

from tests.support.pypaimon_helpers import (  # noqa: E402
    DAYS,
    assert_same_rows,
    paimon_read,
    paimon_write,
)

KEYS = ["dt", "id"]
SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False),
                    pa.field("id", pa.int64(), nullable=False), ("v", pa.string()),
                    ("amount", pa.int64())])


def seed(lake: Any, **options: str) -> Any:
    t = lake.create_table("db.t", SCHEMA, primary_keys=KEYS, partition_keys=["dt"],
                          options={"bucket": "2", **options})
    for version in range(2):  # two sorted runs per bucket: the merge matters
        t.write(pa.table({"dt": [d for d in DAYS for _ in range(20)],
                          "id": [i for _ in DAYS for i in range(20)],
                          "v": [f"{d}/{i}/{version}" for d in DAYS for i in range(20)],
                          "amount": [i * 10 + version for _ in DAYS for i in range(20)]},
                         schema=SCHEMA))
    return t


def same_for_both(lake_table: Any, paimon: Any, snapshot_id: int | None = None) -> pa.Table:
    mine = lake_table.read(snapshot_id=snapshot_id)
    theirs = paimon_read(paimon.get_table("db.t"), snapshot_id)
    assert_same_rows(theirs, mine, KEYS, f"snapshot {snapshot_id or 'latest'}")
    return mine


def test_pypaimon_reads_a_partition_drop(paimon, lake):
    t = seed(lake)
    res = t.delete(where=pc.field("dt") == DAYS[1])
    assert res.commit_kind == "OVERWRITE" and res.partitions_dropped == (f"dt={DAYS[1]}",)
    rows = same_for_both(t, paimon)
    assert set(rows.column("dt").to_pylist()) == {DAYS[0], DAYS[2]} and rows.num_rows == 40
    assert same_for_both(t, paimon, res.snapshot_id - 1).num_rows == 60
    snap = paimon.get_table("db.t").snapshot_manager().get_latest_snapshot()
    assert snap.id == res.snapshot_id and snap.commit_kind == "OVERWRITE"


def test_pypaimon_reads_retracts_of_a_predicate(paimon, lake):
    t = seed(lake)
    res = t.delete(where=[("amount", ">=", 150)])
    assert res.commit_kind == "APPEND" and res.rows_deleted == 15
    rows = same_for_both(t, paimon)
    assert rows.num_rows == 45 and max(rows.column("amount").to_pylist()) < 150
    # pypaimon writes on top: a deleted key comes back, a kept one is updated
    table = paimon.get_table("db.t")
    paimon_write(table, [{"dt": DAYS[0], "id": 19, "v": "back", "amount": 1},
                         {"dt": DAYS[0], "id": 0, "v": "upd", "amount": 2}])
    rows = same_for_both(t, paimon)
    assert rows.num_rows == 46
    again = t.delete(where=[("v", "=", "upd")])
    assert again.rows_deleted == 1
    assert same_for_both(t, paimon).num_rows == 45
