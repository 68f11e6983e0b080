"""Full compaction of lakeformat against its floor and pypaimon's merge-on-read, in one run.

Data: `--commits` overlapping upsert batches of `--rows` rows (the data of
`bench/write_read.py`; for partial-update 30% of `qty` and `city` values are null) written
into a `--bucket`-bucket table, once per merge engine (deduplicate, partial-update). Then:

* lakeformat: `t.compact()` (full compaction: every bucket merged into the top level and
  written back), best of `--repeat` runs on fresh copies of the table;
* the floor: for each bucket, pyarrow reads the same data files, a numpy/pyarrow merge
  kernel (sort by key and sequence number; last row, or last non-null value per column)
  merges them, and pyarrow writes the result as zstd Parquet — no LSM bookkeeping, no stats,
  no manifests;
* pypaimon 2.1.0 merge-on-read of the same batches, pure Python (scaled down with
  `--pypaimon-rows`, rates per row) and with `pypaimon-rust` (neither has compaction), in
  their own venvs through `bench/_pypaimon_side.py`.

Targets (2-core machine): compaction <= 1.3x the floor, >= 20x faster than pure pypaimon's
read per row, faster than pypaimon-rust's read.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from write_read import (  # noqa: E402
    default_pypaimon_python,
    key_prefix,
    make_commits,
    run_pypaimon,
    say,
    warn_if_busy,
)

import lakeformat as lf  # noqa: E402

ENGINES = ("deduplicate", "partial-update")


def with_nulls(tables: list[pa.Table], seed: int) -> list[pa.Table]:
    rng = np.random.default_rng(seed)
    out = []
    for t in tables:
        for name in ("qty", "city"):
            mask = pa.array(rng.random(t.num_rows) < 0.3)
            i = t.schema.get_field_index(name)
            t = t.set_column(i, t.schema.field(i), pc.if_else(mask, None, t[name]))
        out.append(t)
    return out


def write_table(base: Path, engine: str, tables: Sequence[pa.Table], bucket: int) -> lf.Table:
    cat = lf.Catalog(str(base))
    cat.create_database("bench", exist_ok=True)
    t = cat.create_table("bench.t", tables[0].schema, primary_keys=["id"],
                         options={"bucket": str(bucket), "merge-engine": engine})
    for b in tables:
        t.write(b)
    return t


def floor_merge(kv: pa.Table, engine: str) -> pa.Table:
    """Merge one bucket's rows: sort by (id, _SEQUENCE_NUMBER), then per key either the last
    row or the last non-null value of each column."""
    order = pc.sort_indices(kv, sort_keys=[("id", "ascending"),
                                           ("_SEQUENCE_NUMBER", "ascending")])
    kv = kv.take(order)
    ids = kv["id"].to_numpy()
    n = len(ids)
    new = np.ones(n, dtype=bool)
    new[1:] = ids[1:] != ids[:-1]
    starts = np.flatnonzero(new)
    ends = np.append(starts[1:], n) - 1
    if engine == "deduplicate":
        return kv.take(pa.array(ends))
    cols = []
    for name in kv.column_names:
        col = kv[name]
        if col.null_count == 0:
            cols.append(col.take(pa.array(ends)))
            continue
        valid = ~np.asarray(col.is_null().to_numpy(zero_copy_only=False))
        pos = np.where(valid, np.arange(n), -1)
        last = np.maximum.reduceat(pos, starts)
        cols.append(col.take(pa.array(np.where(last >= starts, last, ends))))
        if (last < starts).any():
            cols[-1] = pc.if_else(pa.array(last < starts), None, cols[-1])
    return pa.table(cols, names=kv.column_names)


def run_floor(t: lf.Table, engine: str, out_dir: Path) -> float:
    files = t.files()
    by_bucket: dict[int, list[str]] = {}
    for f in files:
        by_bucket.setdefault(f["bucket"], []).append(f["path"])
    out_dir.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    for bucket, paths in by_bucket.items():
        kv = pa.concat_tables([pq.read_table(p) for p in paths])
        merged = floor_merge(kv, engine)
        pq.write_table(merged, out_dir / f"bucket-{bucket}.parquet", compression="zstd")
    return time.perf_counter() - start


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--commits", type=int, default=5)
    p.add_argument("--key-space", type=float, default=1.25)
    p.add_argument("--bucket", type=int, default=4)
    p.add_argument("--seed", type=int, default=20240601)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--engines", default=",".join(ENGINES))
    p.add_argument("--pypaimon-python", default=default_pypaimon_python())
    p.add_argument("--pypaimon-rows", type=int, default=200_000)
    p.add_argument("--pypaimon-rust-python", default=None)
    p.add_argument("--skip-pypaimon", action="store_true")
    p.add_argument("--peer-timeout", type=float, default=3600.0)
    args = p.parse_args(argv)
    warn_if_busy()
    key_space = int(args.rows * args.key_space)
    base_tables = make_commits(args.rows, args.commits, key_space, args.seed)
    tmp = Path(tempfile.mkdtemp(prefix="lf-bench-compact-"))
    lines = []
    try:
        for engine in args.engines.split(","):
            tables = base_tables if engine == "deduplicate" else with_nulls(base_tables, 7)
            total = sum(b.num_rows for b in tables)
            say(f"{engine}: {args.commits} commits x {args.rows:,} rows, {args.bucket} buckets")
            src = tmp / f"{engine}-src"
            t = write_table(src, engine, tables, args.bucket)
            expected = t.read().num_rows
            ours, floor = [], []
            for i in range(args.repeat):
                copy = tmp / f"{engine}-run{i}"
                shutil.copytree(src, copy)
                tc = lf.Catalog(str(copy)).get_table("bench.t")
                start = time.perf_counter()
                result = tc.compact()
                ours.append(time.perf_counter() - start)
                assert tc.read().num_rows == expected, "compaction changed the rows"
                floor.append(run_floor(lf.Catalog(str(src)).get_table("bench.t"), engine,
                                       tmp / f"{engine}-floor{i}"))
                say(f"  run {i + 1}: lakeformat compact {ours[-1]:.2f}s "
                    f"({result.total.files_in} -> {result.total.files_out} files), "
                    f"floor {floor[-1]:.2f}s")
                shutil.rmtree(copy, ignore_errors=True)
                shutil.rmtree(tmp / f"{engine}-floor{i}", ignore_errors=True)
            best, best_floor = min(ours), min(floor)
            line = [f"{engine}: {total:,} rows -> {expected:,}; lakeformat full compaction "
                    f"{best:.2f}s ({total / best:,.0f} input rows/s); floor {best_floor:.2f}s; "
                    f"ratio {best / best_floor:.2f}x the floor (target <= 1.3x)"]
            if not args.skip_pypaimon:
                model = pa.table({"id": pa.array([], pa.int64())})
                for mode, python, rows in (("python", args.pypaimon_python, args.pypaimon_rows),
                                           ("rust", args.pypaimon_rust_python
                                            or args.pypaimon_python, 0)):
                    if python is None or not os.path.exists(python):
                        line.append(f"  pypaimon ({mode}): no interpreter")
                        continue
                    sub = tables
                    if 0 < rows < args.rows:
                        sub, _ = key_prefix(tables, rows, args.rows, key_space)
                    res = run_pypaimon_engine(python, mode, sub, model, args, tmp, engine)
                    if res.error or not res.read_s:
                        line.append(f"  pypaimon ({mode}): {res.error}")
                        continue
                    peer_rate = sum(b.num_rows for b in sub) / res.read_s
                    ours_rate = total / best
                    line.append(f"  {res.name} merge-on-read: {res.read_s:.2f}s for "
                                f"{sum(b.num_rows for b in sub):,} rows ({peer_rate:,.0f} "
                                f"rows/s); lakeformat compaction is {ours_rate / peer_rate:.1f}x"
                                " faster per row")
            lines += line
            shutil.rmtree(src, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("\n".join(lines))
    return 0


def run_pypaimon_engine(python, mode, tables, model, args, base, engine):
    """`write_read.run_pypaimon` with the table's merge engine set (row check skipped)."""
    import write_read

    original = write_read.SIDE_SCRIPT
    wrapper = base / f"side-{engine}.py"
    wrapper.write_text(
        "import sys\n"
        f"sys.argv += ['--merge-engine', {engine!r}]\n"
        f"sys.path.insert(0, {str(original.parent)!r})\n"
        "import runpy\n"
        f"runpy.run_path({str(original)!r}, run_name='__main__')\n")
    write_read.SIDE_SCRIPT = wrapper
    check = write_read.check_rows
    write_read.check_rows = lambda result, model: f"{result.num_rows:,} rows"
    try:
        return run_pypaimon(python, mode, tables, model, args.bucket, base, args.peer_timeout,
                            f"pypaimon ({mode})", 1)
    finally:
        write_read.SIDE_SCRIPT = original
        write_read.check_rows = check


if __name__ == "__main__":
    sys.exit(main())
