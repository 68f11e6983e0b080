"""Tables written by pypaimon 2.1.0, compacted by lakeformat: pypaimon reads the same rows
before and after, keeps writing afterwards, and both libraries stay consistent."""

from __future__ import annotations

import pyarrow as pa
import pytest

import lakeformat as lf
from tests.support.pypaimon_helpers import (
    assert_same_rows,
    create_paimon_table,
    paimon_live_files,
    paimon_read,
    paimon_snapshots,
    paimon_write,
)

SCHEMA = pa.schema([pa.field("dt", pa.string(), False), pa.field("id", pa.int64(), False),
                    ("name", pa.string()), ("amount", pa.int64()), ("rk", pa.string())])
KEYS = ["dt", "id"]


def rows(dt: str, ids, version: int, rk: str = "+I", null_name: bool = False) -> list[dict]:
    return [{"dt": dt, "id": i, "name": None if null_name else f"n{i}-{version}",
             "amount": i * 10 + version, "rk": rk} for i in ids]


def lf_table(warehouse: str) -> lf.Table:
    return lf.Catalog(warehouse).get_table("db.t")


@pytest.mark.parametrize("engine", ["deduplicate", "partial-update"])
def test_pypaimon_table_compacted_reads_the_same_and_keeps_writing(warehouse, paimon, engine):
    options = {"bucket": "2", "merge-engine": engine}
    if engine == "deduplicate":
        options["rowkind.field"] = "rk"
    table = create_paimon_table(paimon, "db.t", SCHEMA, KEYS, ["dt"], options)
    for v in range(4):
        paimon_write(table, rows("d1", range(v * 5, v * 5 + 20), v, null_name=v == 2))
        paimon_write(table, rows("d2", range(0, 30, v + 1), v))
    if engine == "deduplicate":
        paimon_write(table, rows("d1", [1, 2, 3], 9, rk="-D"))
    before = paimon_read(table)
    result = lf_table(warehouse).compact()
    assert result.total.buckets_compacted == 4
    assert {f["level"] for f in paimon_live_files(table)} == {5}
    assert paimon_snapshots(table)[-1].commit_kind == "COMPACT"
    assert_same_rows(paimon_read(table), before, KEYS, "pypaimon after lakeformat compaction")
    assert_same_rows(lf_table(warehouse).read(), before, KEYS, "lakeformat after compaction")
    # pypaimon keeps writing (its sequence numbers continue after the compacted files)
    paimon_write(table, rows("d1", range(0, 40, 3), 20))
    paimon_write(table, rows("d3", range(5), 21))
    after_write = paimon_read(table)
    assert_same_rows(lf_table(warehouse).read(), after_write, KEYS, "both after more writes")
    lf_table(warehouse).compact(full=True)
    assert_same_rows(paimon_read(table), after_write, KEYS, "pypaimon after second compaction")


def test_first_row_data_becomes_visible_to_pypaimon_after_compaction(warehouse, paimon):
    table = create_paimon_table(paimon, "db.t", SCHEMA, KEYS, ["dt"],
                                {"bucket": "1", "merge-engine": "first-row"})
    for v in range(3):
        paimon_write(table, rows("d1", range(v * 3, v * 3 + 10), v))
    expected = lf_table(warehouse).read()
    lf_table(warehouse).compact()
    # pypaimon's batch read of first-row tables skips level 0; now everything is compacted
    assert_same_rows(paimon_read(table), expected, KEYS, "first-row after compaction")


def test_full_compaction_changelog_table_stays_readable_by_pypaimon(warehouse, paimon):
    table = create_paimon_table(paimon, "db.t", SCHEMA, KEYS, ["dt"],
                                {"bucket": "1", "changelog-producer": "full-compaction"})
    t = lf_table(warehouse)
    t.write(pa.Table.from_pylist(rows("d1", range(10), 0), schema=SCHEMA))
    t.compact()
    t.write(pa.Table.from_pylist(rows("d1", range(5, 15), 1), schema=SCHEMA))
    t.compact()
    snap = paimon_snapshots(table)[-1]
    assert snap.commit_kind == "COMPACT" and snap.changelog_manifest_list
    assert snap.changelog_record_count == 5 * 2 + 5  # 5 updates (-U/+U) and 5 inserts
    assert_same_rows(paimon_read(table), lf_table(warehouse).read(), KEYS, "changelog table")
