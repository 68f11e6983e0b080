"""first-row tables compacted by lakeformat's lookup compaction, read by pypaimon 2.1.0.

pypaimon (as Java) reads a first-row bucket whose files are all above level 0 without merging
them: that is only right when each key is stored once above level 0, which the lookup
compaction keeps (a later record of a key already stored is dropped). Tables written by
pypaimon and by lakeformat (with `changelog-producer=lookup`), compacted over several rounds,
read the same rows in both libraries — each key's first row, computed here from the batches."""

from __future__ import annotations

import numpy as np
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
                    ("v", pa.string()), ("n", pa.int64())])
KEYS = ["dt", "id"]


def batch(rng: np.random.Generator, round_no: int, size: int = 25) -> pa.Table:
    """Distinct keys within a batch (pypaimon's writer keeps one per key), overlapping
    across batches."""
    ids = np.sort(rng.choice(60, size, replace=False))
    return pa.table({"dt": ["d1" if i % 3 else "d2" for i in ids], "id": ids,
                     "v": [f"r{round_no}-{i}" for i in ids], "n": np.full(size, round_no)},
                    schema=SCHEMA)


def first_rows(batches: list[pa.Table]) -> list[dict]:
    seen: dict[tuple, dict] = {}
    for b in batches:
        for r in b.to_pylist():
            seen.setdefault((r["dt"], r["id"]), r)
    return sorted(seen.values(), key=lambda r: (r["dt"], r["id"]))


@pytest.mark.parametrize("producer", ["none", "lookup"])
def test_pypaimon_first_row_table_compacted_in_rounds(warehouse, paimon, producer):
    table = create_paimon_table(paimon, "db.t", SCHEMA, KEYS, ["dt"],
                                {"bucket": "2", "merge-engine": "first-row",
                                 "changelog-producer": producer})
    rng = np.random.default_rng(5)
    batches: list[pa.Table] = []
    for round_no in range(6):
        batches.append(batch(rng, round_no))
        paimon_write(table, batches[-1])  # pypaimon leaves level-0 files
        result = lf.Catalog(warehouse).get_table("db.t").compact(full=False)
        assert result.snapshot_ids
        assert all(f["level"] > 0 for f in paimon_live_files(table))
        want = first_rows(batches)
        assert_same_rows(paimon_read(table), want, KEYS, f"pypaimon, round {round_no}")
        assert_same_rows(lf.Catalog(warehouse).get_table("db.t").read(), want, KEYS,
                         f"lakeformat, round {round_no}")
    lf.Catalog(warehouse).get_table("db.t").compact()
    assert_same_rows(paimon_read(table), first_rows(batches), KEYS, "after a full compaction")


def test_lakeformat_first_row_lookup_table_read_by_pypaimon(warehouse, paimon):
    t = lf.Catalog(warehouse).create_table(
        "db.t", SCHEMA, primary_keys=KEYS, partition_keys=["dt"],
        options={"bucket": "2", "merge-engine": "first-row", "changelog-producer": "lookup"})
    table = paimon.get_table("db.t")
    rng = np.random.default_rng(9)
    batches: list[pa.Table] = []
    for round_no in range(5):
        batches.append(batch(rng, round_no))
        assert len(t.write(batches[-1]).compaction_snapshot_ids) == 1
        assert_same_rows(paimon_read(table), first_rows(batches), KEYS,
                         f"pypaimon, round {round_no}")
    stored = sum(f["row_count"] for f in t.files())
    assert stored == len(first_rows(batches))
