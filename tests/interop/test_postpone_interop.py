"""Postpone-bucket tables (`bucket = -2`) between lakeformat and pypaimon 2.1.0: pypaimon reads
what lakeformat wrote and compacted (postpone files stay invisible to both until compacted);
lakeformat compacts the postpone files pypaimon writes, and both read the same rows."""

from __future__ import annotations

import pyarrow as pa
import pytest

import lakeformat as lf
from tests.support.pypaimon_helpers import (
    assert_same_rows,
    create_paimon_table,
    paimon_live_files,
    paimon_read,
    paimon_write,
)

SCHEMA = pa.schema([pa.field("dt", pa.string(), False), pa.field("id", pa.int64(), False),
                    ("name", pa.string()), ("amount", pa.int64())])
KEYS = ["dt", "id"]


def rows(dt: str, ids, version: int, null_name: bool = False) -> pa.Table:
    ids = list(ids)
    return pa.table({"dt": [dt] * len(ids), "id": ids,
                     "name": [None if null_name else f"n{i}-{version}" for i in ids],
                     "amount": [None if not null_name and version % 2 else i * 10 + version
                                for i in ids]}, schema=SCHEMA)


def model(*batches: pa.Table, partial: bool = False) -> pa.Table:
    """The rows a later-record-wins (or partial-update) merge of `batches` gives."""
    out: dict[tuple, dict] = {}
    for batch in batches:
        for r in batch.to_pylist():
            key = (r["dt"], r["id"])
            if partial and key in out:
                out[key] = {k: (v if v is not None else out[key][k]) for k, v in r.items()}
            else:
                out[key] = dict(r)
    return pa.Table.from_pylist(list(out.values()), schema=SCHEMA)


def test_pypaimon_reads_what_lakeformat_wrote_and_compacted(warehouse, lake, paimon):
    t = lake.create_table("db.t", SCHEMA, primary_keys=KEYS, partition_keys=["dt"],
                          options={"bucket": "-2", "postpone.batch-write-fixed-bucket": "false",
                                   "postpone.default-bucket-num": "3"})
    first, second = rows("a", range(20), 1), rows("a", range(10, 30), 2)
    t.write(first)
    t.write(pa.concat_tables([second, rows("b", range(5), 3)]))
    table = paimon.get_table("db.t")
    assert paimon_read(table).num_rows == 0  # pypaimon does not read postpone files either
    t.compact()
    expected = model(first, second, rows("b", range(5), 3))
    assert_same_rows(paimon_read(table), expected, KEYS, "pypaimon after lakeformat compaction")
    files = paimon_live_files(table)
    assert {f["bucket"] for f in files} <= {0, 1, 2}
    # a fixed-bucket batch write lands in the partitions' buckets, visible at once
    t.alter([lf.SchemaChange.set_option("postpone.batch-write-fixed-bucket", "true")])
    third = rows("a", range(25, 35), 4)
    t.write(third)
    assert_same_rows(paimon_read(table), model(first, second, rows("b", range(5), 3), third),
                     KEYS, "pypaimon after a fixed-bucket write")


@pytest.mark.parametrize("engine", ["deduplicate", "partial-update"])
def test_lakeformat_compacts_pypaimon_postpone_files(warehouse, lake, paimon, engine):
    table = create_paimon_table(paimon, "db.t", SCHEMA, KEYS, ["dt"],
                                {"bucket": "-2", "merge-engine": engine,
                                 "postpone.default-bucket-num": "2"})
    batches = [rows("a", range(v * 3, v * 3 + 8), v, null_name=v == 1) for v in range(3)]
    batches.append(rows("b", range(4), 7))
    for b in batches:
        paimon_write(table, b)
    t = lake.get_table("db.t")
    assert t.read().num_rows == 0 and paimon_read(table).num_rows == 0
    result = t.compact()
    assert result.snapshot_ids
    partial = engine == "partial-update"
    expected = model(*batches, partial=partial)
    assert_same_rows(t.read(), expected, KEYS, "lakeformat after compaction")
    assert_same_rows(paimon_read(table), expected, KEYS, "pypaimon after compaction")
    assert {(f["bucket"] >= 0) for f in paimon_live_files(table)} == {True}
    # pypaimon keeps writing postpone files; a second compaction merges them in
    more = rows("a", range(0, 20, 2), 9)
    paimon_write(table, more)
    lake.get_table("db.t").compact()
    expected = model(*batches, more, partial=partial)
    assert_same_rows(lake.get_table("db.t").read(), expected, KEYS, "lakeformat, round 2")
    assert_same_rows(paimon_read(table), expected, KEYS, "pypaimon, round 2")


def test_pypaimon_fixed_bucket_partition_keeps_its_bucket_count(warehouse, lake, paimon):
    """A partition pypaimon's fixed-bucket writer gave 2 buckets keeps them when lakeformat
    assigns postpone records there; a new partition gets postpone.default-bucket-num."""
    table = create_paimon_table(paimon, "db.t", SCHEMA, KEYS, ["dt"],
                                {"bucket": "-2", "postpone.default-bucket-num": "2"})
    builder = table.new_postpone_fixed_bucket_write_builder()
    write, commit = builder.new_write(), builder.new_commit()
    first = rows("a", range(12), 1)
    write.write_arrow(first)
    commit.commit(write.prepare_commit())
    write.close()
    commit.close()
    t = lake.get_table("db.t")
    t.alter([lf.SchemaChange.set_option("postpone.default-bucket-num", "4"),
             lf.SchemaChange.set_option("postpone.batch-write-fixed-bucket", "false")])
    second = pa.concat_tables([rows("a", range(6, 18), 2), rows("b", range(10), 3)])
    t.write(second)
    t.compact()
    totals = {(f["partition"]["dt"], f["total_buckets"]) for f in t.files()}
    assert totals == {("a", 2), ("b", 4)}
    expected = model(first, second)
    assert_same_rows(paimon_read(paimon.get_table("db.t")), expected, KEYS, "pypaimon")
    assert_same_rows(t.read(), expected, KEYS, "lakeformat")
