"""Full compaction of lakeformat against its floors, DuckDB, Polars and pypaimon, in one run.

Data: `--commits` overlapping upsert batches of `--rows` rows (the data of
`bench/write_read.py`; for partial-update 30% of `qty` and `city` values are null) written
into a `--bucket`-bucket table, once per merge engine (deduplicate, partial-update). Then,
`--repeat` times, each contender timed on the same data files of that table (the table's
files as written, before any compaction), the best time kept:

* lakeformat: `t.compact()` (full compaction: every bucket merged into the top level and
  written back, with manifests and a snapshot) on a fresh copy of the table;
* the floor: for each bucket, pyarrow reads the bucket's data files, a numpy/pyarrow merge
  kernel (sort by key and sequence number; last row, or last non-null value per column)
  merges them, and pyarrow writes the result as zstd Parquet — no LSM bookkeeping, no stats,
  no manifests;
* the I/O floor: for each bucket, pyarrow decodes every data file of the bucket (all
  columns, read and dropped) and encodes, as one zstd Parquet file, that bucket's merged rows
  with every column of the data files (`_KEY_id`, `_SEQUENCE_NUMBER`, `_VALUE_KIND` and the
  table's columns, as lakeformat's compacted files hold them) and the same encodings
  (dictionary only where lakeformat's writer keeps one, DELTA_BINARY_PACKED where it picks
  it). The merged rows are computed
  before the clock starts (with the floor's kernel): timed are the decode of every run and
  the encode of the result, no merge at all;
* DuckDB: for each bucket, one `COPY (SELECT id, arg_max...(col, _SEQUENCE_NUMBER) ... FROM
  read_parquet([the bucket's files]) GROUP BY id ORDER BY id) TO '...' (FORMAT parquet,
  COMPRESSION zstd)`: `arg_max_null` per column for deduplicate (the latest row's value, null
  or not), `arg_max(col, _SEQUENCE_NUMBER) FILTER (WHERE col IS NOT NULL)` for
  partial-update. DuckDB runs with its default thread count (one per core: 2 here);
* Polars: for each bucket, `pl.scan_parquet(files)`, sort by (id, _SEQUENCE_NUMBER),
  `group_by("id", maintain_order=True).agg(col.last())` (deduplicate) or
  `.agg(col.drop_nulls().last())` (partial-update), sort by id, `sink_parquet` with zstd;
  Polars' default thread pool (one thread per core);
* pypaimon 2.1.0 merge-on-read of the same batches, pure Python (scaled down with
  `--pypaimon-rows`, rates per row) and with `pypaimon-rust` (neither has compaction), in
  their own venvs through `bench/_pypaimon_side.py`.

DuckDB and Polars write the table's columns (`id`, `qty`, `price`, `name`, `city`) — what a
user rewriting the table with them would write — where lakeformat and both floors also write
the three system columns. All of them use zstd at level 1 (lakeformat's default
`file.compression.zstd-level`). Every peer's output is read back after its run and compared,
row by row and column by column, with lakeformat's compacted table read through lakeformat: a
wrong peer query is reported as MISMATCH, left out of the ratios, and makes the script exit 1.

Targets (2-core machine): compaction <= 1.3x the floor, >= 20x faster than pure pypaimon's
read per row, faster than pypaimon-rust's read; against the peers: compaction <= 1.0x the faster of
DuckDB and Polars, and <= 1.3x the I/O floor (printed as PASS/MISS, never asserted).
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

from _peers import (  # noqa: E402
    ZSTD_LEVEL,
    duckdb_copy_sql,
    duckdb_label,
    duckdb_merge_sql,
    import_peer,
    polars_label,
    polars_merge,
)
from write_read import (  # noqa: E402
    check_rows,
    default_pypaimon_python,
    key_prefix,
    make_commits,
    run_pypaimon,
    say,
    warn_if_busy,
)

import lakeformat as lf  # noqa: E402
from lakeformat.data.formats import parquet_encodings  # noqa: E402

ENGINES = ("deduplicate", "partial-update")
TARGET_FLOOR = 1.3  # lakeformat / floor, and lakeformat / I/O floor
TARGET_PEERS = 1.0  # lakeformat / the faster of DuckDB and Polars


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


def bucket_files(t: lf.Table) -> dict[int, list[str]]:
    """The table's data files by bucket (the table is not partitioned)."""
    by_bucket: dict[int, list[str]] = {}
    for f in t.files():
        by_bucket.setdefault(f["bucket"], []).append(f["path"])
    return by_bucket


def run_floor(t: lf.Table, engine: str, out_dir: Path) -> float:
    by_bucket = bucket_files(t)
    out_dir.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    for bucket, paths in by_bucket.items():
        kv = pa.concat_tables([pq.read_table(p) for p in paths])
        merged = floor_merge(kv, engine)
        pq.write_table(merged, out_dir / f"bucket-{bucket}.parquet", compression="zstd",
                       compression_level=ZSTD_LEVEL)
    return time.perf_counter() - start


def merged_by_bucket(t: lf.Table, engine: str) -> dict[int, pa.Table]:
    """Each bucket's merged rows, all columns of the data files (the I/O floor's output)."""
    return {bucket: floor_merge(pa.concat_tables([pq.read_table(p) for p in paths]), engine)
            for bucket, paths in bucket_files(t).items()}


def run_io_floor(t: lf.Table, merged: dict[int, pa.Table], out_dir: Path) -> float:
    """Per bucket: decode every data file (all columns), encode the precomputed merged rows
    as zstd Parquet with the encodings lakeformat's writer picks (`parquet_encodings`: a
    dictionary only where values repeat, never for the key and sequence columns; delta for
    integer columns of close neighbours). No merge is timed."""
    by_bucket = bucket_files(t)
    out_dir.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    for bucket, paths in by_bucket.items():
        runs = [pq.read_table(p) for p in paths]
        rows = merged[bucket]
        plain = {"_SEQUENCE_NUMBER", "id", "_KEY_id"}
        encodings = parquet_encodings(rows, [c for c in rows.column_names if c not in plain],
                                      rows.column_names)
        pq.write_table(rows, out_dir / f"bucket-{bucket}.parquet", compression="zstd",
                       compression_level=ZSTD_LEVEL, **encodings)
        del runs
    return time.perf_counter() - start


def run_duckdb(con, t: lf.Table, engine: str, columns: Sequence[str], out_dir: Path) -> float:
    """Per bucket: read the bucket's data files, merge in SQL, COPY to zstd Parquet."""
    by_bucket = bucket_files(t)
    out_dir.mkdir(parents=True, exist_ok=True)
    statements = [duckdb_copy_sql(duckdb_merge_sql(paths, columns[0], columns[1:], engine),
                                  str(out_dir / f"bucket-{bucket}.parquet"))
                  for bucket, paths in by_bucket.items()]
    start = time.perf_counter()
    for sql in statements:
        con.execute(sql)
    return time.perf_counter() - start


def run_polars(pl, t: lf.Table, engine: str, columns: Sequence[str], out_dir: Path) -> float:
    """Per bucket: scan the bucket's data files, sort, group by id, sink to zstd Parquet."""
    by_bucket = bucket_files(t)
    out_dir.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    for bucket, paths in by_bucket.items():
        polars_merge(pl, paths, columns[0], columns[1:], engine).sink_parquet(
            out_dir / f"bucket-{bucket}.parquet", compression="zstd",
            compression_level=ZSTD_LEVEL)
    return time.perf_counter() - start


def check_output(out_dir: Path, expected: pa.Table) -> str:
    """'OK' when the Parquet files in `out_dir` hold exactly `expected`'s rows."""
    files = sorted(out_dir.glob("*.parquet"))
    if not files:
        return "MISMATCH: no output"
    got = pa.concat_tables([pq.read_table(f, columns=expected.column_names) for f in files],
                           promote_options="permissive")
    return check_rows(got, expected)


def ratio_line(name: str, target: float, value: float | None) -> str:
    if value is None:
        return f"  {name:<58} <= {target:.1f}x  measured     -  not run"
    verdict = "PASS" if value <= target else "MISS"
    return f"  {name:<58} <= {target:.1f}x  measured {value:5.2f}x  {verdict}"


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
    p.add_argument("--skip-duckdb", action="store_true")
    p.add_argument("--skip-polars", action="store_true")
    p.add_argument("--peer-timeout", type=float, default=3600.0)
    args = p.parse_args(argv)
    warn_if_busy()
    duckdb, duckdb_missing = (None, "skipped") if args.skip_duckdb else import_peer("duckdb")
    pl, polars_missing = (None, "skipped") if args.skip_polars else import_peer("polars")
    con = duckdb.connect() if duckdb is not None else None
    labels = {"duckdb": duckdb_label(duckdb, con) if con is not None else "DuckDB",
              "polars": polars_label(pl) if pl is not None else "Polars"}
    missing = {"duckdb": duckdb_missing, "polars": polars_missing}
    key_space = int(args.rows * args.key_space)
    base_tables = make_commits(args.rows, args.commits, key_space, args.seed)
    columns = base_tables[0].column_names  # the table's columns, key first
    tmp = Path(tempfile.mkdtemp(prefix="lf-bench-compact-"))
    lines: list[str] = []
    targets: list[str] = []
    failed = False
    try:
        for engine in args.engines.split(","):
            tables = base_tables if engine == "deduplicate" else with_nulls(base_tables, 7)
            total = sum(b.num_rows for b in tables)
            say(f"{engine}: {args.commits} commits x {args.rows:,} rows, {args.bucket} buckets")
            src = tmp / f"{engine}-src"
            t = write_table(src, engine, tables, args.bucket)
            expected = t.read().num_rows
            merged = merged_by_bucket(t, engine)  # the I/O floor's output, untimed
            ours: list[float] = []
            times: dict[str, list[float]] = {"floor": [], "io_floor": [], "duckdb": [],
                                             "polars": []}
            checks: dict[str, str] = {}
            lf_rows: pa.Table | None = None
            for i in range(args.repeat):
                copy = tmp / f"{engine}-run{i}"
                shutil.copytree(src, copy)
                tc = lf.Catalog(str(copy)).get_table("bench.t")
                start = time.perf_counter()
                result = tc.compact()
                ours.append(time.perf_counter() - start)
                if lf_rows is None:
                    lf_rows = tc.read().sort_by("id")
                    assert lf_rows.num_rows == expected, "compaction changed the rows"
                else:
                    assert tc.read().num_rows == expected, "compaction changed the rows"
                ts = lf.Catalog(str(src)).get_table("bench.t")  # the uncompacted files
                for name in times:
                    out = tmp / f"{engine}-{name}{i}"
                    if name == "floor":
                        times[name].append(run_floor(ts, engine, out))
                    elif name == "io_floor":
                        times[name].append(run_io_floor(ts, merged, out))
                    elif name == "duckdb" and con is not None:
                        times[name].append(run_duckdb(con, ts, engine, columns, out))
                    elif name == "polars" and pl is not None:
                        times[name].append(run_polars(pl, ts, engine, columns, out))
                    else:
                        continue
                    check = check_output(out, lf_rows)
                    if checks.get(name, "OK") == "OK":
                        checks[name] = check
                    shutil.rmtree(out, ignore_errors=True)
                say(f"  run {i + 1}: lakeformat compact {ours[-1]:.2f}s "
                    f"({result.total.files_in} -> {result.total.files_out} files), "
                    + ", ".join(f"{name} {ts_[-1]:.2f}s" for name, ts_ in times.items() if ts_))
                shutil.rmtree(copy, ignore_errors=True)
            best = min(ours)
            best_of = {name: min(ts_) for name, ts_ in times.items() if ts_}
            ok = {name: best_of[name] for name in best_of if checks.get(name) == "OK"}
            failed = failed or any(c != "OK" for c in checks.values())
            best_floor = best_of["floor"]
            line = [f"{engine}: {total:,} rows -> {expected:,}; lakeformat full compaction "
                    f"{best:.2f}s ({total / best:,.0f} input rows/s); floor {best_floor:.2f}s; "
                    f"ratio {best / best_floor:.2f}x the floor (target <= 1.3x)"]
            if checks["floor"] != "OK":
                line.append(f"  floor: {checks['floor']}")
            io = ok.get("io_floor")
            line.append(f"  I/O floor (decode every run + encode the merged rows, no merge): "
                        f"{best_of['io_floor']:.2f}s, rows {checks['io_floor']}"
                        + ("" if io else " (left out of the ratios below)"))
            for name in ("duckdb", "polars"):
                if name not in best_of:
                    line.append(f"  {labels[name]}: not run: {missing[name]}")
                    continue
                line.append(f"  {labels[name]} merge + zstd Parquet write: {best_of[name]:.2f}s, "
                            f"rows {checks[name]}; lakeformat / {labels[name].split()[0]} = "
                            f"{best / best_of[name]:.2f}x"
                            + ("" if name in ok else " (left out of the ratios below)"))
            fastest = min((ok[n] for n in ("duckdb", "polars") if n in ok), default=None)
            vs_peers = best / fastest if fastest else None
            vs_io = best / io if io else None
            line.append("  lakeformat / min(DuckDB, Polars) = "
                        + (f"{vs_peers:.2f}x" if vs_peers else "-")
                        + "; lakeformat / I/O floor = " + (f"{vs_io:.2f}x" if vs_io else "-"))
            targets.append(ratio_line(f"{engine}: compaction / faster of DuckDB and Polars",
                                      TARGET_PEERS, vs_peers))
            targets.append(ratio_line(f"{engine}: compaction / I/O floor", TARGET_FLOOR, vs_io))
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
    print(f"\nTargets (2-core machine; this one has {os.cpu_count()} cores):")
    print("  compaction <= 1.3x the floor, >= 20x faster than pure pypaimon's read per row, "
          "faster than pypaimon-rust's read")
    print("  against DuckDB and Polars (same run; a peer whose rows mismatch is left out):")
    print("\n".join(targets))
    if failed:
        print("\nMISMATCH: a peer's merged rows differ from lakeformat's compacted table "
              "(see above)")
    return 1 if failed else 0


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
