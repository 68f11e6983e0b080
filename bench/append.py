"""Append-table compaction of many small files against pyarrow's read + concat + write floor.

Data: a bucket-unaware append table (no primary key) partitioned by `dt`, written by
`--writes` commits of `--partitions` small files each (one file per partition per commit,
`--rows` rows per file): `--writes` x `--partitions` small files, 2,000 by default. Then, best
of `--repeat` runs, each on a fresh copy of the table:

* lakeformat: `t.compact(full=True)` — plan from the manifests, each partition's small files
  read and rewritten into one file (stats, sequence numbers), one COMPACT snapshot;
* the floor: for each partition, pyarrow reads the same files, concatenates them and writes one
  zstd Parquet file — no manifests, no stats, no commit — on a thread pool of the same size.

Target (2-core machine): lakeformat <= 1.3x the floor. Rows are checked equal after both.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from write_read import say, warn_if_busy  # noqa: E402

import lakeformat as lf  # noqa: E402
from lakeformat.operation.scan import FileStoreScan  # noqa: E402

TARGET = 1.3
SCHEMA = pa.schema([("dt", pa.string()), ("ts", pa.int64()), ("user", pa.int64()),
                    ("event", pa.string()), ("amount", pa.float64())])


def make_table(root: Path, writes: int, partitions: int, rows: int, seed: int) -> lf.Table:
    catalog = lf.Catalog(str(root))
    catalog.create_database("db")
    t = catalog.create_table("db.events", SCHEMA, partition_keys=["dt"])
    rng = np.random.default_rng(seed)
    days = [f"2024-01-{d + 1:02d}" for d in range(partitions)]
    kinds = np.array(["view", "click", "cart", "buy"], dtype=object)
    n = rows * partitions
    for w in range(writes):
        t.write(pa.table({
            "dt": np.repeat(np.array(days, dtype=object), rows),
            "ts": np.arange(w * n, (w + 1) * n, dtype=np.int64),
            "user": rng.integers(0, 100_000, n),
            "event": kinds[rng.integers(0, 4, n)],
            "amount": np.round(rng.random(n) * 100, 2)}, schema=SCHEMA))
    return t


def partition_files(t: lf.Table) -> dict[str, list[str]]:
    """Data file paths of the latest snapshot, per partition directory."""
    out: dict[str, list[str]] = {}
    for row in t.inspect.files().select(["partition", "file_path"]).to_pylist():
        out.setdefault(row["partition"], []).append(row["file_path"])
    return out


def run_floor(t: lf.Table, workers: int, out_dir: Path) -> float:
    groups = partition_files(t)
    out_dir.mkdir(parents=True, exist_ok=True)

    def one(item: tuple[str, list[str]]) -> int:
        name, paths = item
        table = pa.concat_tables([pq.read_table(p) for p in paths])
        pq.write_table(table, out_dir / f"{name.replace('/', '_')}.parquet",
                       compression="zstd")
        return table.num_rows

    start = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        rows = sum(pool.map(one, groups.items()))
    elapsed = time.perf_counter() - start
    assert rows == t.inspect.files().column("record_count").to_numpy().sum()
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--writes", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=20)
    ap.add_argument("--rows", type=int, default=500, help="rows per small file")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="a smaller run (CI smoke)")
    args = ap.parse_args()
    if args.quick:
        args.writes, args.partitions, args.repeat = 20, 10, 1
    warn_if_busy()
    workers = os.cpu_count() or 2
    base = Path(tempfile.mkdtemp(prefix="lakeformat-bench-append-"))
    try:
        say(f"append-table compaction: {args.writes * args.partitions} small files "
            f"({args.writes} writes x {args.partitions} partitions, {args.rows} rows each), "
            f"{workers} workers")
        start = time.perf_counter()
        src = base / "src"
        t = make_table(src, args.writes, args.partitions, args.rows, args.seed)
        say(f"  setup: {time.perf_counter() - start:.1f} s")
        expected = t.read().sort_by("ts")
        best_lf = best_floor = float("inf")
        for r in range(args.repeat):
            copy = base / f"run{r}"
            shutil.copytree(src, copy)
            table = lf.Catalog(str(copy)).get_table("db.events")
            best_floor = min(best_floor, run_floor(table, workers, base / f"floor{r}"))
            start = time.perf_counter()
            result = table.compact(full=True)
            best_lf = min(best_lf, time.perf_counter() - start)
            live = FileStoreScan(table.file_io, table.path, table.table_schema).live_entries(
                table.snapshot_manager.latest_snapshot())
            assert len(live) == args.partitions, len(live)
            assert result.total.files_in == args.writes * args.partitions
            assert table.read().sort_by("ts").equals(expected)
            shutil.rmtree(copy)
        ratio = best_lf / best_floor
        say(f"  lakeformat compact(full=True): {best_lf:.3f} s")
        say(f"  pyarrow read+concat+write:     {best_floor:.3f} s")
        say(f"  ratio {ratio:.2f}x (target <= {TARGET}x): "
            f"{'met' if ratio <= TARGET else 'NOT met'}")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
