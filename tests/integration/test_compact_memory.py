"""Bounded memory: a bucket many times the memory budget compacts with a peak RSS under the
budget plus a fixed margin, measured in a fresh subprocess (its VmHWM), never by time.

The margin covers what does not scale with the bucket: the interpreter and pyarrow after
import, the output file being built (target-file-size 8 mb here), allocator slack. Loading
the bucket whole would need several times its Arrow size (about 9x the budget here).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import lakeformat as lf
from tests.support.memory import run_child

BUDGET = 16 << 20
MARGIN = 160 << 20
ROWS_PER_COMMIT = 300_000

CHILD = """
import json, sys
from tests.support.memory import high_water
import lakeformat as lf

t = lf.Catalog(sys.argv[1]).get_table("db.t")
t.files()
base = high_water()
result = t.compact(memory_budget=int(sys.argv[2]), workers=1)
peak = high_water()
print(json.dumps({"base": base, "peak": peak, "rows_out": result.total.rows_out}))
"""


def _bucket(tmp_path, name: str, commits: int) -> tuple[str, int, int]:
    """A one-bucket table of `commits` x ROWS_PER_COMMIT overlapping rows: (warehouse, Arrow
    bytes written, rows a read returns)."""
    wh = str(tmp_path / name)
    cat = lf.Catalog(wh)
    cat.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.int64()), ("s", pa.string())])
    t = cat.create_table("db.t", schema, primary_keys=["id"],
                         options={"bucket": "1", "target-file-size": "8 mb"})
    rng = np.random.default_rng(0)
    arrow_bytes = 0
    for _ in range(commits):
        ids = rng.permutation(ROWS_PER_COMMIT * 2)[:ROWS_PER_COMMIT]
        s = pa.array(rng.integers(0, 1 << 60, ROWS_PER_COMMIT).astype(str)).cast(pa.string())
        batch = pa.table({"id": ids, "v": rng.integers(0, 100, ROWS_PER_COMMIT),
                          "s": pc.binary_join_element_wise(s, s, s, s, "")}, schema=schema)
        arrow_bytes += batch.nbytes
        t.write(batch)
    return wh, arrow_bytes, t.read().num_rows


def _compact_in_subprocess(wh: str) -> dict:
    return run_child(CHILD, wh, str(BUDGET))


def test_peak_rss_of_a_large_bucket_stays_under_budget_plus_margin(tmp_path):
    small_wh, small_bytes, small_rows = _bucket(tmp_path, "small", 3)
    wh, arrow_bytes, expected = _bucket(tmp_path, "large", 6)
    assert arrow_bytes > 8 * BUDGET
    small = _compact_in_subprocess(small_wh)
    m = _compact_in_subprocess(wh)
    assert small["rows_out"] == small_rows and m["rows_out"] == expected
    grew = m["peak"] - m["base"]
    assert grew < BUDGET + MARGIN, (
        f"compaction of {arrow_bytes >> 20} MiB (Arrow) raised peak RSS by {grew >> 20} MiB; "
        f"budget {BUDGET >> 20} MiB + margin {MARGIN >> 20} MiB")
    # the margin alone could hide a bucket loaded whole (reading this bucket whole raises the
    # peak by ~3x its Arrow size): doubling the bucket (and its sorted runs) must raise the
    # peak by well under the extra data (measured here: ~15 MiB for ~80 MiB more)
    extra = m["peak"] - small["peak"]
    assert extra < (arrow_bytes - small_bytes) // 3, (
        f"{(arrow_bytes - small_bytes) >> 20} MiB more data raised peak RSS by {extra >> 20} MiB")
    assert lf.Catalog(wh).get_table("db.t").read().num_rows == expected
