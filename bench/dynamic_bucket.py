"""Dynamic-bucket writes against fixed-bucket writes of the same data, in one run.

Data: `--commits` batches of `--rows` upserts each into a table partitioned by day (keys
overlap across batches, as an ingest of changing rows does), written into

* a fixed-bucket table (`bucket` = `--buckets`), and
* a dynamic-bucket table (`bucket` = -1) whose `dynamic-bucket.target-row-num` gives about
  the same number of buckets per partition,

best of `--repeat` runs each on a fresh warehouse. The dynamic write also reads each touched
partition's HASH index, assigns buckets (Java's HashBucketAssigner over whole columns) and
writes the changed index files and a new index manifest. Target (2-core machine): dynamic
<= 1.5x fixed. Both tables must read back the same rows.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from write_read import say, warn_if_busy  # noqa: E402

import lakeformat as lf  # noqa: E402

TARGET = 1.5
SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False),
                    pa.field("id", pa.int64(), nullable=False), ("name", pa.string()),
                    ("qty", pa.int32()), ("price", pa.float64())])


def batches(commits: int, rows: int, days: int, seed: int) -> list[pa.Table]:
    rng = np.random.default_rng(seed)
    keyspace = rows * 2
    out = []
    for c in range(commits):
        ids = rng.integers(0, keyspace, rows)
        out.append(pa.table({
            "dt": np.array([f"2024-01-{d + 1:02d}" for d in range(days)], dtype=object)[
                ids % days],
            "id": ids, "name": np.array([f"n{c}-{i}" for i in range(rows)], dtype=object),
            "qty": rng.integers(0, 100, rows, dtype=np.int32),
            "price": np.round(rng.random(rows) * 100, 2)}, schema=SCHEMA))
    return out


def run(root: Path, options: dict[str, str], data: list[pa.Table]) -> tuple[float, lf.Table]:
    catalog = lf.Catalog(str(root))
    catalog.create_database("db")
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                             options=options)
    start = time.perf_counter()
    for b in data:
        t.write(b)
    return time.perf_counter() - start, t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--commits", type=int, default=5)
    ap.add_argument("--rows", type=int, default=400_000)
    ap.add_argument("--days", type=int, default=4)
    ap.add_argument("--buckets", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--quick", action="store_true", help="a smaller run (CI smoke)")
    args = ap.parse_args()
    if args.quick:
        args.commits, args.rows, args.repeat = 3, 50_000, 1
    warn_if_busy()
    data = batches(args.commits, args.rows, args.days, args.seed)
    keys_per_day = args.rows * 2 // args.days
    target = max(1, keys_per_day // args.buckets + 1)
    say(f"dynamic vs fixed bucket: {args.commits} commits x {args.rows} upserts over "
        f"{args.days} partitions; fixed bucket={args.buckets}, dynamic target-row-num={target}")
    base = Path(tempfile.mkdtemp(prefix="lakeformat-bench-dynamic-"))
    try:
        best = {"fixed": float("inf"), "dynamic": float("inf")}
        tables = {}
        for r in range(args.repeat):
            for kind, options in (("fixed", {"bucket": str(args.buckets)}),
                                  ("dynamic", {"bucket": "-1",
                                               "dynamic-bucket.target-row-num": str(target)})):
                root = base / f"{kind}{r}"
                elapsed, t = run(root, options, data)
                best[kind] = min(best[kind], elapsed)
                tables[kind] = t
        rows = {k: t.read().sort_by([("dt", "ascending"), ("id", "ascending")])
                for k, t in tables.items()}
        assert rows["fixed"].equals(rows["dynamic"]), "the two tables read differently"
        buckets = sorted({(str(f["partition"]), f["bucket"]) for f in tables["dynamic"].files()})
        ratio = best["dynamic"] / best["fixed"]
        say(f"  fixed-bucket writes:   {best['fixed']:.3f} s")
        say(f"  dynamic-bucket writes: {best['dynamic']:.3f} s ({len(buckets)} buckets)")
        say(f"  ratio {ratio:.2f}x (target <= {TARGET}x): "
            f"{'met' if ratio <= TARGET else 'NOT met'}")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
