"""Bounded memory on read: one bucket of 5 M rows in five overlapping sorted runs, merged by
partial-update, is streamed through `Table.read_batches` with a peak RSS under the memory
budget plus a fixed margin, and `Table.read` needs its result plus that much, measured in
fresh subprocesses (VmHWM, as test_compact_memory does), never by time.

The budget is the table's `write-buffer-size` (32 mb). The margin covers what does not scale
with the bucket: open Parquet readers and their buffers, the slices waiting for the consumer,
allocator slack. Merging the bucket whole (the read path before slices) raised the peak by
about 770 MiB here, far past either bound.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import lakeformat as lf
from tests.support.memory import run_child

BUDGET = 32 << 20
MARGIN = 96 << 20
ROWS_PER_COMMIT = 1_000_000
COMMITS = 5

CHILD = """
import json, sys
from tests.support.memory import high_water
import pyarrow.compute as pc
import lakeformat as lf

t = lf.Catalog(sys.argv[1]).get_table("db.t")
t.files()
base = high_water()
rows = batches = both = size = 0
if sys.argv[2] == "batches":
    for b in t.read_batches():
        rows += b.num_rows
        batches += 1
        both += pc.sum(pc.and_(pc.is_valid(b["a"]), pc.is_valid(b["b"]))).as_py() or 0
else:
    r = t.read()
    rows, size = r.num_rows, r.nbytes
    both = pc.sum(pc.and_(pc.is_valid(r["a"]), pc.is_valid(r["b"]))).as_py() or 0
peak = high_water()
print(json.dumps({"grew": peak - base, "rows": rows, "batches": batches, "both": both,
                  "size": size}))
"""


@pytest.fixture(scope="module")
def big_bucket(tmp_path_factory) -> tuple[str, int]:
    """Five commits of 1 M keys each out of 2 M, alternately setting `a` and `b` (a
    dual-stream partial-update): (warehouse, distinct keys)."""
    wh = str(tmp_path_factory.mktemp("read_memory"))
    cat = lf.Catalog(wh)
    cat.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), False), ("a", pa.int64()),
                        ("b", pa.float64())])
    t = cat.create_table("db.t", schema, primary_keys=["id"],
                         options={"bucket": "1", "merge-engine": "partial-update",
                                  "write-buffer-size": f"{BUDGET >> 20} mb"})
    rng = np.random.default_rng(0)
    seen = []
    for c in range(COMMITS):
        ids = rng.permutation(2 * ROWS_PER_COMMIT)[:ROWS_PER_COMMIT]
        seen.append(ids)
        n = ROWS_PER_COMMIT
        a = pa.array(rng.integers(0, 100, n)) if c % 2 == 0 else pa.nulls(n, pa.int64())
        b = pa.array(rng.random(n)) if c % 2 == 1 else pa.nulls(n, pa.float64())
        t.write(pa.table({"id": ids, "a": a, "b": b}, schema=schema))
    assert len(t.files()) >= COMMITS  # one sorted run per commit at least: a real merge
    return wh, len(np.unique(np.concatenate(seen)))


def _measure(wh: str, mode: str) -> dict:
    return run_child(CHILD, wh, mode)


def test_read_batches_of_a_large_bucket_stays_under_budget_plus_margin(big_bucket):
    wh, keys = big_bucket
    m = _measure(wh, "batches")
    assert m["rows"] == keys
    assert m["both"] > 0  # keys written by both streams came out merged
    assert m["batches"] > 1
    assert m["grew"] < BUDGET + MARGIN, (
        f"streaming {COMMITS * ROWS_PER_COMMIT:,} rows raised peak RSS by {m['grew'] >> 20} "
        f"MiB; budget {BUDGET >> 20} MiB + margin {MARGIN >> 20} MiB")


def test_read_of_a_large_bucket_needs_its_result_plus_budget_plus_margin(big_bucket):
    wh, keys = big_bucket
    m = _measure(wh, "read")
    assert m["rows"] == keys and m["both"] > 0
    assert m["grew"] < m["size"] + BUDGET + MARGIN, (
        f"reading {COMMITS * ROWS_PER_COMMIT:,} rows raised peak RSS by {m['grew'] >> 20} MiB; "
        f"result {m['size'] >> 20} MiB + budget {BUDGET >> 20} MiB + margin {MARGIN >> 20} MiB")
