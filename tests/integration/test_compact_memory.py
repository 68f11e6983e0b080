"""Bounded memory: a bucket many times the memory budget compacts with a peak RSS under the
budget plus a fixed margin, measured in a fresh subprocess (ru_maxrss), never by time.

The margin covers what does not scale with the bucket: the interpreter and pyarrow after
import, the output file being built (target-file-size 8 mb here), allocator slack. Loading
the bucket whole would need several times its Arrow size (about 9x the budget here).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import lakeformat as lf

BUDGET = 16 << 20
MARGIN = 160 << 20
ROWS_PER_COMMIT = 300_000

CHILD = """
import json, resource, sys
import lakeformat as lf
t = lf.Catalog(sys.argv[1]).get_table("db.t")
t.files()
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
result = t.compact(memory_budget=int(sys.argv[2]), workers=1)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"base": base, "peak": peak, "rows_out": result.total.rows_out}))
"""


def test_peak_rss_of_a_large_bucket_stays_under_budget_plus_margin(tmp_path):
    cat = lf.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.int64()), ("s", pa.string())])
    t = cat.create_table("db.t", schema, primary_keys=["id"],
                         options={"bucket": "1", "target-file-size": "8 mb"})
    rng = np.random.default_rng(0)
    arrow_bytes = 0
    for _ in range(5):
        ids = rng.permutation(ROWS_PER_COMMIT * 2)[:ROWS_PER_COMMIT]
        s = pa.array(rng.integers(0, 1 << 60, ROWS_PER_COMMIT).astype(str)).cast(pa.string())
        batch = pa.table({"id": ids, "v": rng.integers(0, 100, ROWS_PER_COMMIT),
                          "s": pc.binary_join_element_wise(s, s, s, s, "")}, schema=schema)
        arrow_bytes += batch.nbytes
        t.write(batch)
    assert arrow_bytes > 8 * BUDGET
    expected = t.read().num_rows
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.getcwd(), env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "wh"), str(BUDGET)],
                         check=True, capture_output=True, text=True, env=env)
    m = json.loads(out.stdout.strip().splitlines()[-1])
    assert m["rows_out"] == expected
    grew = m["peak"] - m["base"]
    assert grew < BUDGET + MARGIN, (
        f"compaction of {arrow_bytes >> 20} MiB (Arrow) raised peak RSS by {grew >> 20} MiB; "
        f"budget {BUDGET >> 20} MiB + margin {MARGIN >> 20} MiB")
    assert t.read().num_rows == expected
