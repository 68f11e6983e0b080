"""Merge-on-read cost of lakeformat's merge engines against plain partial-update, in one run.

Data: `--runs` upsert runs of `--rows` rows each (numpy, seeded), columns `id BIGINT NOT NULL`
(primary key), `a STRING` (8-16 letters from a pool of 50,000), `a_ts BIGINT`, `b DOUBLE`,
`c INT`, `bc_ts BIGINT`. Every run holds distinct ids drawn from `--key-space` x rows ids, so
most keys repeat across runs. Value columns `a`, `b`, `c` are null in ~`--null-frac` of the
records, the ordering columns `a_ts`, `bc_ts` in ~`--ordering-null-frac`; ordering values are
uniform in `range(--ts-range)`, hence out of order across runs (and sometimes tied).

The SAME Arrow tables feed three tables that differ only in their options:

1. `merge-engine=partial-update` (the baseline): every value column keeps its last non-null;
2. partial-update with two sequence groups, `fields.a_ts.sequence-group=a` and
   `fields.bc_ts.sequence-group=b,c`;
3. `merge-engine=aggregation`: `a` last_non_null_value, `a_ts` max, `b` max (the "price"),
   `c` sum (the "sales"), `bc_ts` the default (last_non_null_value).

Two levels, both timed best of `--repeat`, the engines interleaved within every repetition:

* engine: `merge_engine(schema).merge(kv)` on one in-memory table holding all runs
  (`_SEQUENCE_NUMBER` ascending run after run, `_VALUE_KIND` 0): a single bucket, one thread;
* end-to-end: `Catalog(tmp)` tables with `bucket=--bucket` (default 4), one `Table.write` per
  run (untimed setup, printed), then `Table.read()` on a fresh handle: files read and merged per
  bucket in lakeformat's thread pool.

Rates are input rows (all records of all runs) / seconds. The target is engines (2) and (3)
taking <= 2x the time of (1) at each level (PASS/MISS). Correctness: for `--sample` keys the
merged rows of both levels are compared with a plain-Python per-key fold of each engine's rule;
the script exits non-zero on a mismatch. `--profile` adds cProfile summaries of one
engine-level call per engine (and `--profile-read` of one serial read per engine).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import platform
import pstats
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as `python bench/merge.py` from a checkout
    sys.path.insert(0, str(REPO))

import lakeformat as lf  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling bench scripts
from write_read import random_strings, say, warn_if_busy  # noqa: E402

from lakeformat.merge import merge_engine  # noqa: E402
from lakeformat.schema.table_schema import SEQUENCE_NUMBER, VALUE_KIND  # noqa: E402

TARGET_RATIO = 2.0  # engines (2) and (3) may take at most this many times (1)'s time
SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    pa.field("a", pa.string()),
    pa.field("a_ts", pa.int64()),
    pa.field("b", pa.float64()),
    pa.field("c", pa.int32()),
    pa.field("bc_ts", pa.int64()),
])
COLUMNS = SCHEMA.names
VALUE_COLUMNS = COLUMNS[1:]
GROUPS = {"a_ts": ("a",), "bc_ts": ("b", "c")}  # ordering column -> protected columns


# -- engines and their per-key reference folds -----------------------------------------------
def fold_last_non_null(records: list[dict]) -> dict:
    """Plain partial-update: every column keeps its last non-null value."""
    if len(records) == 1:
        return dict(records[0])
    row = dict.fromkeys(COLUMNS)
    row["id"] = records[0]["id"]
    for r in records:
        for c in VALUE_COLUMNS:
            if r[c] is not None:
                row[c] = r[c]
    return row


def fold_sequence_groups(records: list[dict]) -> dict:
    """Per group, the record with the greatest non-null ordering value wins (ties: the later
    record) and its protected columns are copied even when null; records whose ordering value
    is null leave the group alone. A key with a single record keeps it unchanged."""
    if len(records) == 1:
        return dict(records[0])
    row = dict.fromkeys(COLUMNS)
    row["id"] = records[0]["id"]
    for r in records:
        for ts, protected in GROUPS.items():
            v = r[ts]
            if v is None:
                continue
            if row[ts] is None or v >= row[ts]:
                row[ts] = v
                for c in protected:
                    row[c] = r[c]
    return row


def fold_aggregation(records: list[dict]) -> dict:
    """a last_non_null_value, a_ts max, b max, c sum, bc_ts last_non_null_value (default)."""
    def present(c: str) -> list:
        return [r[c] for r in records if r[c] is not None]

    a, a_ts, b, c, bc_ts = (present(c) for c in VALUE_COLUMNS)
    return {"id": records[0]["id"], "a": a[-1] if a else None,
            "a_ts": max(a_ts) if a_ts else None, "b": max(b) if b else None,
            "c": sum(c) if c else None, "bc_ts": bc_ts[-1] if bc_ts else None}


@dataclass
class Engine:
    key: str
    label: str
    options: dict[str, str]
    fold: Callable[[list[dict]], dict]
    schema: object = None  # TableSchema of the catalog table, set once it is created
    engine_s: list[float] = field(default_factory=list)
    presorted_s: list[float] = field(default_factory=list)
    read_s: list[float] = field(default_factory=list)
    write_s: list[float] = field(default_factory=list)
    engine_check: str = "not run"
    presorted_check: str = "not run"
    read_check: str = "not run"


def make_engines() -> list[Engine]:
    return [
        Engine("pu", "(1) partial-update", {"merge-engine": "partial-update"},
               fold_last_non_null),
        Engine("pu-groups", "(2) partial-update, 2 sequence groups",
               {"merge-engine": "partial-update", "fields.a_ts.sequence-group": "a",
                "fields.bc_ts.sequence-group": "b,c"}, fold_sequence_groups),
        Engine("agg", "(3) aggregation max/sum/last_non_null",
               {"merge-engine": "aggregation",
                "fields.a.aggregate-function": "last_non_null_value",
                "fields.a_ts.aggregate-function": "max",
                "fields.b.aggregate-function": "max",
                "fields.c.aggregate-function": "sum"}, fold_aggregation),
    ]


# -- data ----------------------------------------------------------------------------------------
def make_runs(args: argparse.Namespace) -> list[pa.Table]:
    """One table per run; each holds `rows` distinct ids out of `range(key_space)`."""
    rng = np.random.default_rng(args.seed)
    pool = random_strings(rng, 50_000, 8, 16)
    rows = args.rows
    out = []
    for _ in range(args.runs):
        def nulls(frac: float) -> np.ndarray:
            return rng.random(rows) < frac

        ids = rng.permutation(args.key_space_rows)[:rows].astype(np.int64)
        a = pool.take(pa.array(rng.integers(0, len(pool), rows), mask=nulls(args.null_frac)))
        a_ts = pa.array(rng.integers(0, args.ts_range, rows, dtype=np.int64),
                        mask=nulls(args.ordering_null_frac))
        b = pa.array(np.round(rng.random(rows) * 1000.0, 2), mask=nulls(args.null_frac))
        c = pa.array(rng.integers(0, 10_000, rows, dtype=np.int32), mask=nulls(args.null_frac))
        bc_ts = pa.array(rng.integers(0, args.ts_range, rows, dtype=np.int64),
                         mask=nulls(args.ordering_null_frac))
        out.append(pa.table([pa.array(ids), a, a_ts, b, c, bc_ts], schema=SCHEMA))
    return out


def kv_input(runs: Sequence[pa.Table]) -> pa.Table:
    """All runs as one key-value table, as a read hands a bucket's files to the engine:
    `_SEQUENCE_NUMBER` ascending run after run, `_VALUE_KIND` 0 (+I), then the columns."""
    parts, seq = [], 0
    for t in runs:
        n = t.num_rows
        parts.append(pa.table(
            [pa.array(np.arange(seq, seq + n, dtype=np.int64)), pa.array(np.zeros(n, np.int8))]
            + t.columns, names=[SEQUENCE_NUMBER, VALUE_KIND] + t.column_names))
        seq += n
    return pa.concat_tables(parts)


@dataclass
class Sample:
    keys: pa.Array  # int64
    records: dict[int, list[dict]]  # per key, its records in run order
    distinct: int  # distinct ids of all runs
    lone: int  # sampled keys with a single record
    sizes: dict[int, int]  # records per key -> sampled keys


def draw_sample(runs: Sequence[pa.Table], n: int, seed: int) -> Sample:
    """`n` random keys, at least min(50, all) of them keys with a single record (the reducer
    rule), and their records in run order (= `_SEQUENCE_NUMBER` order)."""
    ids = np.concatenate([t["id"].to_numpy() for t in runs])
    uniq, counts = np.unique(ids, return_counts=True)
    rng = np.random.default_rng(seed + 1)  # its own stream: the data does not depend on it
    lone_ids = uniq[counts == 1]
    n = min(n, len(uniq))
    n_lone = min(50, len(lone_ids), n)
    picked = set(rng.choice(lone_ids, n_lone, replace=False).tolist()) if n_lone else set()
    others = uniq[counts > 1]
    picked |= set(rng.choice(others, min(n - len(picked), len(others)), replace=False).tolist())
    keys = pa.array(sorted(picked), pa.int64())
    records: dict[int, list[dict]] = {k: [] for k in picked}
    for t in runs:
        for r in t.filter(pc.is_in(t["id"], value_set=keys)).to_pylist():
            records[r["id"]].append(r)
    sizes: dict[int, int] = {}
    for recs in records.values():
        sizes[len(recs)] = sizes.get(len(recs), 0) + 1
    return Sample(keys, records, len(uniq), sizes.get(1, 0), dict(sorted(sizes.items())))


def group_ties(sample: Sample) -> int:
    """Sampled keys where some group's greatest ordering value is held by 2+ records."""
    tied = 0
    for recs in sample.records.values():
        for ts in GROUPS:
            values = [r[ts] for r in recs if r[ts] is not None]
            if len(recs) > 1 and values and values.count(max(values)) > 1:
                tied += 1
                break
    return tied


def check_sample(result: pa.Table, engine: Engine, sample: Sample) -> str:
    """'OK' when every sampled key has exactly the row the engine's fold gives."""
    if result.num_rows != sample.distinct:
        return f"MISMATCH: {result.num_rows:,} rows, expected {sample.distinct:,} distinct ids"
    if VALUE_KIND in result.column_names:
        kinds = result[VALUE_KIND]
        if pc.any(pc.not_equal(kinds, 0)).as_py():
            return "MISMATCH: merged rows with a _VALUE_KIND other than +I"
    got = result.filter(pc.is_in(result["id"], value_set=sample.keys)).select(COLUMNS)
    rows = {r["id"]: r for r in got.to_pylist()}
    missing = [k for k in sample.records if k not in rows]
    bad = []
    for k, recs in sample.records.items():
        if k in rows:
            expected = engine.fold(recs)
            if rows[k] != expected:
                bad.append((k, rows[k], expected))
    if not missing and not bad:
        return "OK"
    msg = f"MISMATCH: {len(missing)} sampled keys missing, {len(bad)} differ"
    if bad:
        k, got_row, expected = bad[0]
        diff = {c: (got_row[c], expected[c]) for c in COLUMNS if got_row[c] != expected[c]}
        msg += f"; e.g. id={k} (got, expected): {diff}, records {sample.records[k]}"
    return msg


# -- timing --------------------------------------------------------------------------------------
def load() -> float:
    return os.getloadavg()[0]


def run_engine_level(engines: list[Engine], kv: pa.Table, repeat: int, sample: Sample) -> None:
    """`merge_engine(schema).merge(kv)` per engine, interleaved, `repeat` times."""
    for i in range(repeat):
        parts = []
        for e in engines:
            start = time.perf_counter()
            try:
                merged = merge_engine(e.schema).merge(kv)
            except Exception as ex:  # an engine being finished: report it, time the others
                e.engine_check = f"FAILED: {type(ex).__name__}: {ex}"[:300]
                parts.append(f"{e.key} failed")
                continue
            took = time.perf_counter() - start
            e.engine_s.append(took)
            parts.append(f"{e.key} {took:.2f}s")
            if i == 0:
                e.engine_check = check_sample(merged, e, sample)
            del merged
        say(f"  engine-level run {i + 1}: " + ", ".join(parts) + f" (load {load():.2f})")


def run_presorted(engines: list[Engine], kv: pa.Table, repeat: int, sample: Sample) -> None:
    """`merge_engine(schema).merge_sorted(kv in merge order)`: the engine without the sort and the
    gather every engine shares. None of the tables has `sequence.field`, so the merge order
    (key, then `_SEQUENCE_NUMBER`) is the same for all and is computed once, untimed."""
    ordered = merge_engine(engines[0].schema).sort(kv).combine_chunks()
    for i in range(repeat):
        parts = []
        for e in engines:
            start = time.perf_counter()
            try:
                merged = merge_engine(e.schema).merge_sorted(ordered)
            except Exception as ex:
                e.presorted_check = f"FAILED: {type(ex).__name__}: {ex}"[:300]
                parts.append(f"{e.key} failed")
                continue
            took = time.perf_counter() - start
            e.presorted_s.append(took)
            parts.append(f"{e.key} {took:.2f}s")
            if i == 0:
                e.presorted_check = check_sample(merged, e, sample)
            del merged
        say(f"  presorted run {i + 1}: " + ", ".join(parts) + f" (load {load():.2f})")


def write_tables(engines: list[Engine], runs: Sequence[pa.Table], catalog: lf.Catalog) -> None:
    """One `Table.write` (= one commit) per run; untimed setup, printed."""
    for e in engines:
        if not e.schema:
            continue
        t = catalog.get_table(f"bench.{e.key.replace('-', '_')}")
        try:
            for batch in runs:
                start = time.perf_counter()
                t.write(batch)
                e.write_s.append(time.perf_counter() - start)
        except Exception as ex:
            e.read_check = f"FAILED (write): {type(ex).__name__}: {ex}"[:300]
            e.write_s = []
            continue
        say(f"  write {e.key}: " + " ".join(f"{s:.2f}s" for s in e.write_s)
            + f" = {sum(e.write_s):.2f}s")


def run_end_to_end(engines: list[Engine], warehouse: Path, repeat: int, sample: Sample) -> None:
    """`Table.read()` on a fresh handle per engine, interleaved, `repeat` times."""
    live = [e for e in engines if e.write_s]
    for i in range(repeat):
        parts = []
        for e in live:
            t = lf.Catalog(str(warehouse)).get_table(f"bench.{e.key.replace('-', '_')}")
            start = time.perf_counter()
            try:
                result = t.read()
            except Exception as ex:
                e.read_check = f"FAILED: {type(ex).__name__}: {ex}"[:300]
                parts.append(f"{e.key} failed")
                continue
            took = time.perf_counter() - start
            e.read_s.append(took)
            parts.append(f"{e.key} {took:.2f}s")
            if i == 0:
                e.read_check = check_sample(result, e, sample)
            del result
        say(f"  end-to-end run {i + 1}: " + ", ".join(parts) + f" (load {load():.2f})")


# -- profile ---------------------------------------------------------------------------------
def print_profile(title: str, prof: cProfile.Profile, took: float, top: int,
                  out_dir: Path | None, name: str) -> None:
    for order, n in (("cumulative", top), ("tottime", max(8, top // 2))):
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).strip_dirs().sort_stats(order).print_stats(n)
        say(f"\n== cProfile, {title}, {took:.2f}s under the profiler, by {order} ==")
        lines = buf.getvalue().splitlines()
        start = next((k for k, ln in enumerate(lines) if ln.lstrip().startswith("ncalls")), 0)
        say("\n".join(ln for ln in lines[start:] if ln.strip())[:20_000])
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        prof.dump_stats(str(out_dir / f"{name}.prof"))


def profile(engines: list[Engine], kv: pa.Table, warehouse: Path | None, top: int,
            out_dir: Path | None) -> None:
    """cProfile of one engine-level call per engine; with a warehouse, also of one read per
    engine with `os.cpu_count` patched to 1 so lakeformat reads the buckets in this thread."""
    for e in engines:
        if e.schema and not e.engine_check.startswith("FAILED"):
            prof = cProfile.Profile()
            start = time.perf_counter()
            prof.runcall(lambda e=e: merge_engine(e.schema).merge(kv))
            print_profile(f"engine-level {e.label}", prof, time.perf_counter() - start, top,
                          out_dir, f"engine-{e.key}")
    if warehouse is None:
        return
    real_cpu_count = os.cpu_count
    os.cpu_count = lambda: 1
    try:
        for e in engines:
            if e.read_s:
                t = lf.Catalog(str(warehouse)).get_table(f"bench.{e.key.replace('-', '_')}")
                prof = cProfile.Profile()
                start = time.perf_counter()
                prof.runcall(t.read)
                print_profile(f"read {e.label}, serial", prof, time.perf_counter() - start,
                              top, out_dir, f"read-{e.key}")
    finally:
        os.cpu_count = real_cpu_count


# -- report --------------------------------------------------------------------------------------
def report(engines: list[Engine], total: int, levels: list[str], runs: int) -> None:
    header = ("level", "engine", "best s", "input rows/s", "time/(1)", f"<= {TARGET_RATIO:g}x",
              "check")
    rows = [header]
    verdicts = []
    base = engines[0]
    for level in levels:
        base_s = min(getattr(base, f"{level}_s"), default=None)
        for e in engines:
            times = getattr(e, f"{level}_s")
            check = getattr(e, f"{level}_check")
            if not times:
                rows.append((level, e.label, "-", "-", "-", "-", check))
                continue
            best = min(times)
            ratio = best / base_s if base_s else None
            verdict = "-" if e is base or ratio is None else (
                "PASS" if ratio <= TARGET_RATIO else "MISS")
            if e is not base:
                verdicts.append((level, e, ratio, verdict))
            rows.append((level, e.label, f"{best:.2f}", f"{total / best:,.0f}",
                         "-" if ratio is None else f"{ratio:.2f}x", verdict, check))
    widths = [max(len(r[i]) for r in rows) for i in range(len(header) - 1)]
    say("")
    for k, r in enumerate(rows):
        cells = [c.ljust(w) if i in (0, 1) else c.rjust(w)
                 for i, (c, w) in enumerate(zip(r[:-1], widths, strict=True))]
        say("  ".join(cells + [r[-1]]).rstrip())
        if k == 0:
            say("  ".join("-" * w for w in widths) + "  -----")
    say("  engine: merge_engine(schema).merge(all runs in one table: one bucket, one "
        "thread); presorted: merge_engine(schema).merge_sorted on the same records already in "
        "merge order (the engine alone, without the shared sort and gather); read: "
        f"Table.read() of the {runs}-commit table, buckets in lakeformat's thread pool.")
    say("  input rows/s = all records of all runs / best seconds; time/(1) = best time over "
        "the best time of (1) at the same level.")
    say(f"\nTarget: (2) and (3) <= {TARGET_RATIO:g}x the time of plain partial-update (1):")
    for level, e, ratio, verdict in verdicts:
        shown = "-" if ratio is None else f"{ratio:.2f}x"
        say(f"  {level:<9} {e.label:<40} {shown:>7}  {verdict if ratio is not None else 'n/a'}")


# -- main ------------------------------------------------------------------------------------
def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=1_000_000, help="rows per run")
    p.add_argument("--runs", type=int, default=5, help="runs (commits end-to-end)")
    p.add_argument("--key-space", type=float, default=1.25,
                   help="ids are drawn from range(key_space x rows), distinct within a run")
    p.add_argument("--bucket", type=int, default=4, help="buckets of the end-to-end tables")
    p.add_argument("--null-frac", type=float, default=0.3,
                   help="share of nulls in the value columns a, b, c")
    p.add_argument("--ordering-null-frac", type=float, default=0.1,
                   help="share of nulls in the ordering columns a_ts, bc_ts")
    p.add_argument("--ts-range", type=int, default=1000,
                   help="ordering values are uniform in range(ts_range): out of order, some ties")
    p.add_argument("--seed", type=int, default=20240601)
    p.add_argument("--repeat", type=int, default=3,
                   help="timed repetitions of every engine at every level; the best is kept")
    p.add_argument("--sample", type=int, default=1000,
                   help="keys checked against the plain-Python per-key folds")
    p.add_argument("--level", choices=("all", "engine", "presorted", "read"), default="all",
                   help="what to time (default: all three levels)")
    p.add_argument("--profile", action="store_true",
                   help="after the timings, cProfile one engine-level call per engine")
    p.add_argument("--profile-read", action="store_true",
                   help="with --profile, also cProfile one serial read per engine")
    p.add_argument("--profile-top", type=int, default=25)
    p.add_argument("--profile-out", type=Path, default=None,
                   help="also dump the .prof files into this directory")
    args = p.parse_args(argv)
    if args.rows <= 0 or args.runs <= 0 or args.repeat <= 0 or args.key_space < 1 \
            or args.ts_range <= 0:
        p.error("--rows, --runs, --repeat and --ts-range must be positive, --key-space >= 1")
    args.key_space_rows = int(args.rows * args.key_space)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    say(f"lakeformat {lf.__version__} | python {platform.python_version()} | pyarrow "
        f"{pa.__version__} | numpy {np.__version__} | {os.cpu_count()} cores")
    warn_if_busy()
    start = time.perf_counter()
    runs = make_runs(args)
    total = sum(t.num_rows for t in runs)
    sample = draw_sample(runs, args.sample, args.seed)
    say(f"data: {args.runs} runs x {args.rows:,} rows = {total:,} records, ids from "
        f"range({args.key_space_rows:,}), {sample.distinct:,} distinct keys, "
        f"{sum(t.nbytes for t in runs) / 2**20:,.0f} MiB in Arrow; nulls ~{args.null_frac:.0%} "
        f"in a/b/c, ~{args.ordering_null_frac:.0%} in a_ts/bc_ts; ordering values in "
        f"range({args.ts_range:,}) (generated in {time.perf_counter() - start:.1f}s, untimed)")
    say(f"sample: {len(sample.records):,} keys by records per key {sample.sizes} "
        f"({sample.lone} with a single record); {group_ties(sample)} with a tie at a group's "
        "greatest ordering value")

    engines = make_engines()
    base = Path(tempfile.mkdtemp(prefix="lakeformat-bench-merge-"))
    warehouse = base / "warehouse"
    levels = ["engine", "presorted", "read"] if args.level == "all" else [args.level]
    try:
        catalog = lf.Catalog(str(warehouse))
        catalog.create_database("bench", exist_ok=True)
        for e in engines:
            try:
                t = catalog.create_table(f"bench.{e.key.replace('-', '_')}", schema=SCHEMA,
                                         primary_keys=["id"],
                                         options={"bucket": str(args.bucket), **e.options})
                e.schema = t.table_schema
            except Exception as ex:
                e.engine_check = e.read_check = f"FAILED (create): {type(ex).__name__}: {ex}"
        live = [e for e in engines if e.schema]
        kv = kv_input(runs) if {"engine", "presorted"} & set(levels) or args.profile else None
        if "engine" in levels:
            say(f"engine level: {kv.num_rows:,} records in one table, "
                f"{kv.nbytes / 2**20:,.0f} MiB ...")
            run_engine_level(live, kv, args.repeat, sample)
        if "presorted" in levels and live:
            say("presorted: the same records in merge order (sorted once, untimed) ...")
            run_presorted(live, kv, args.repeat, sample)
        if "read" in levels:
            say(f"end-to-end: {args.runs} commits into bucket={args.bucket} tables ...")
            write_tables(live, runs, catalog)
            run_end_to_end(live, warehouse, args.repeat, sample)
        report(engines, total, levels, args.runs)
        if args.profile:
            profile(live, kv, warehouse if args.profile_read and "read" in levels else None,
                    args.profile_top, args.profile_out)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    checks = [getattr(e, f"{lv}_check") for e in engines for lv in levels]
    return 0 if all(c == "OK" for c in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
