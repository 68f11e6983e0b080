"""lakeformat's Spark jobs (`lakeformat.spark.write`, `.compact`) against their peers, in one run.

Data (numpy, seeded; the generators of `bench/write_read.py`): `id BIGINT NOT NULL` primary key,
`qty INT`, `price DOUBLE`, `name STRING`, `city STRING`; tables with `--bucket` buckets (8).

1. Ingest of `--rows` rows (5 M, distinct ids) into a deduplicate table, against
   * Spark's own `df.write.parquet` (zstd) of the same DataFrame: the Spark floor;
   * `df.write.format("lakeformat")` (the data source: no shuffle, a file per task and bucket);
   * in-process `Table.write(arrow_table)` of the same rows.
   The rows are handed to Spark as one Parquet file, read, repartitioned round-robin into
   `--partitions` (8) and cached; the cache is counted before anything is timed, so both Spark
   contenders read the same cached rows. Target: Spark write <= 2x the Spark floor.
2. Full compaction of `--runs` (5) overlapping partial-update runs of rows / runs rows each
   (30% nulls in `qty` and `city`), written in-process: `compact(spark, table)` at local[1] and
   local[2], and in-process `Table.compact()`, each on its own copy of the table. The merged
   rows of every contender must equal those of the others. Targets: local[2] over local[1]
   speed-up >= 1.6x; local[2] <= 1.5x in-process. `SparkRunner.map` of no-op units shows
   Spark's fixed cost per job.
3. Peak RSS of the Python workers (descendants of the Spark driver process, sampled from /proc
   every 20 ms) during the timed Spark jobs, against the jobs' memory budget (`--memory-budget`,
   default the table's `write-buffer-size`): target peak per worker <= budget + MARGIN.

Each Spark master runs in a child process of this script (one session per JVM), with
`spark.sql.shuffle.partitions` = `--shuffle-partitions` (8) and `spark.driver.memory` 4g; the
session start and a warm-up job (same job on a tiny table: starts and imports the workers) are
not timed. Every contender runs `--repeat` times and keeps its best time; each time is shown
with the CPU seconds of the driver process, its JVM and its Python workers (from /proc).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from compaction import with_nulls  # noqa: E402
from write_read import SCHEMA, make_commits, say, warn_if_busy  # noqa: E402

import lakeformat as lf  # noqa: E402
from lakeformat.options import CoreOptions  # noqa: E402

TARGET_WRITE = 2.0  # Spark write / Spark floor
TARGET_SPEEDUP = 1.6  # local[1] / local[2] compaction
TARGET_VS_INPROC = 1.5  # local[2] compaction / in-process
MARGIN = 256 << 20  # interpreter + pyspark + pyarrow + lakeformat, Arrow batches in flight
NAME = "bench.t"
MiB = 1 << 20


# -- worker memory and CPU ------------------------------------------------------------------
TICK = os.sysconf("SC_CLK_TCK")


def _descendants(root: int) -> dict[int, tuple[int, str, float]]:
    """pid -> (parent pid, command name, CPU seconds) of every descendant of `root`."""
    procs = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        rest = stat[stat.rindex(")") + 2:].split()
        procs[int(entry.name)] = (int(rest[1]), stat[stat.index("(") + 1:stat.rindex(")")],
                                  (int(rest[11]) + int(rest[12])) / TICK)
    out = {}
    for pid, info in procs.items():
        p = info[0]
        while p not in (0, 1, root) and p in procs:
            p = procs[p][0]
        if p == root:
            out[pid] = info
    return out


def cpu_seconds() -> dict[str, float]:
    """CPU seconds so far of this process (driver), its JVM and its Python workers (+ daemon)."""
    own = os.times()
    out = {"driver": own.user + own.system, "jvm": 0.0, "python": 0.0}
    for _, comm, cpu in _descendants(os.getpid()).values():
        out["python" if comm.startswith("python") else "jvm"] += cpu
    return out


def timed(fn, *a, **kw) -> tuple[object, dict]:
    """fn's result and {wall, driver, jvm, python} seconds of the call."""
    before, start = cpu_seconds(), time.perf_counter()
    result = fn(*a, **kw)
    wall, after = time.perf_counter() - start, cpu_seconds()
    return result, {"wall": wall, **{k: after[k] - before[k] for k in after}}


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return 0


class WorkerMemory:
    """Samples the RSS of this process's Python descendants every `every` seconds in a thread
    (the process tree is re-read every `rescan` seconds). Workers are the ones whose parent is
    also a Python descendant (forked by the pyspark daemon)."""

    def __init__(self, every: float = 0.02, rescan: float = 0.5):
        self.every, self.rescan, self.root = every, rescan, os.getpid()
        self.peak_worker = self.peak_total = self.workers = 0

    def _run(self) -> None:
        scanned, tree = 0.0, {}
        while not self._stop.is_set():
            if time.monotonic() - scanned > self.rescan:
                tree = {pid: pp for pid, (pp, comm, _) in _descendants(self.root).items()
                        if comm.startswith("python")}
                scanned = time.monotonic()
            rss = {pid: _rss(pid) for pid in tree}
            workers = [rss[p] for p, pp in tree.items() if pp in tree]
            self.workers = max(self.workers, len(workers))
            self.peak_worker = max([self.peak_worker, *workers])
            self.peak_total = max(self.peak_total, sum(rss.values()))
            self._stop.wait(self.every)

    @contextlib.contextmanager
    def resume(self) -> Iterator[None]:
        """Sample while the block runs (the peaks carry over from earlier blocks)."""
        self._stop = threading.Event()
        thread = threading.Thread(target=self._run, daemon=True)
        thread.start()
        try:
            yield
        finally:
            self._stop.set()
            thread.join()

    def report(self) -> dict:
        return {"peak_worker": self.peak_worker, "peak_total": self.peak_total,
                "workers": self.workers}


# -- child: one Spark session ----------------------------------------------------------------
def session(args: argparse.Namespace):
    import lakeformat.spark as lfs

    conf = {"spark.sql.shuffle.partitions": args.shuffle_partitions,
            "spark.driver.memory": "4g"}
    conf.update(kv.split("=", 1) for kv in args.spark_conf)
    spark = lfs.local_session(args.master, "lakeformat-bench", conf)
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def child_write(args: argparse.Namespace) -> dict:
    import lakeformat.spark as lfs

    spark = session(args)
    work = Path(args.dir)
    src = spark.read.parquet(str(work / "input")).repartition(args.partitions).cache()
    rows = src.count()
    warm = spark.read.parquet(str(work / "input")).limit(2000).repartition(2)
    lfs.write(warm, create(work / "warm", SCHEMA, "deduplicate", args.bucket))
    warm.write.parquet(str(work / "warm-floor"))
    create(work / "warm-source", SCHEMA, "deduplicate", args.bucket)
    (warm.write.format("lakeformat").mode("append")
     .option("warehouse", str(work / "warm-source")).save(NAME))
    out: dict = {"rows": rows, "floor_s": [], "spark_s": [], "source_s": []}
    job_mem, source_mem = WorkerMemory(), WorkerMemory()
    for i in range(args.repeat):
        _, t = timed((src.write.option("compression", "zstd")
                      .option("parquet.compression.codec.zstd.level", "1").parquet),
                     str(work / f"floor-{i}"))
        out["floor_s"].append(t)
        shutil.rmtree(work / f"floor-{i}", ignore_errors=True)
        table = create(work / f"spark-{i}", SCHEMA, "deduplicate", args.bucket)
        with job_mem.resume():
            res, t = timed(lfs.write, src, table, memory_budget=args.memory_budget)
        out["spark_s"].append(t)
        out["files"] = res.files_added
        create(work / f"source-{i}", SCHEMA, "deduplicate", args.bucket)
        writer = (src.write.format("lakeformat").mode("append")
                  .option("warehouse", str(work / f"source-{i}")))
        with source_mem.resume():
            out["source_s"].append(timed(writer.save, NAME)[1])
        if i < args.repeat - 1:
            for name in ("spark", "source"):
                shutil.rmtree(work / f"{name}-{i}", ignore_errors=True)
    out["mem"] = {"job": job_mem.report(), "source": source_mem.report()}
    src.unpersist()
    spark.stop()
    return out


def child_compact(args: argparse.Namespace) -> dict:
    import lakeformat.spark as lfs

    spark = session(args)
    work = Path(args.dir)
    lfs.compact(spark, lf.Catalog(str(work / "warm")).get_table(NAME))
    out: dict = {"compact_s": []}
    mem = WorkerMemory()
    for i in range(args.repeat):
        table = lf.Catalog(str(work / f"copy-{i}")).get_table(NAME)
        with mem.resume():
            res, t = timed(lfs.compact, spark, table, memory_budget=args.memory_budget)
        out["compact_s"].append(t)
        out["files"] = [res.total.files_in, res.total.files_out]
    out["mem"] = mem.report()
    from lakeformat.spark.runner import SparkRunner

    units = list(range(args.bucket))  # Spark's fixed cost of one SparkRunner.map
    out["noop_s"] = [timed(SparkRunner(spark).map, abs, units)[1] for _ in range(args.repeat)]
    spark.stop()
    return out


def run_child(mode: str, master: str, work: Path, args: argparse.Namespace) -> dict:
    """This script as `--child MODE` under `master`; its JSON line back. The child is in its own
    process group (it starts a JVM and the Python workers), killed on a timeout."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", mode, "--master", master,
           "--dir", str(work), "--repeat", str(args.repeat), "--bucket", str(args.bucket),
           "--partitions", str(args.partitions),
           "--shuffle-partitions", str(args.shuffle_partitions)]
    if args.memory_budget:
        cmd += ["--memory-budget", str(args.memory_budget)]
    for kv in args.spark_conf:
        cmd += ["--spark-conf", kv]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]))
    log = work / f"child-{mode}.log"
    with open(log, "w") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True, env=env,
                                start_new_session=True)
        try:
            stdout, _ = proc.communicate(timeout=args.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
            raise SystemExit(f"{mode} at {master}: timed out after {args.timeout:.0f}s") from None
    lines = [ln for ln in stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = "\n".join(log.read_text().splitlines()[-25:])
        raise SystemExit(f"{mode} at {master} exited {proc.returncode}:\n{tail}")
    return json.loads(lines[-1])


# -- parent ----------------------------------------------------------------------------------
def create(base: Path, schema: pa.Schema, engine: str, bucket: int, rows=()) -> lf.Table:
    cat = lf.Catalog(str(base))
    cat.create_database("bench", exist_ok=True)
    t = cat.create_table(NAME, schema, primary_keys=["id"],
                         options={"bucket": str(bucket), "merge-engine": engine})
    for batch in rows:
        t.write(batch)
    return t


def merged(base: Path) -> pa.Table:
    return lf.Catalog(str(base)).get_table(NAME).read().sort_by("id")


def best(runs: list[dict]) -> dict:
    return min(runs, key=lambda t: t["wall"])


def fmt(t: dict) -> str:
    cpu = f"driver {t['driver']:.1f}"
    if t["jvm"] or t["python"]:
        cpu += f", JVM {t['jvm']:.1f}, workers {t['python']:.1f}"
    return f"{t['wall']:.2f}s (CPU s: {cpu})"


def mem_line(what: str, m: dict, budget: int) -> str:
    ok = m["peak_worker"] <= budget + MARGIN
    return (f"  {what:<18} peak RSS of one worker {m['peak_worker'] / MiB:5.0f} MiB "
            f"(target <= {budget / MiB:.0f} + {MARGIN / MiB:.0f} MiB)  {'PASS' if ok else 'MISS'}"
            f";  {m['workers']} workers + daemon together {m['peak_total'] / MiB:.0f} MiB")


def row(label: str, t: dict, rows: int, unit: str) -> str:
    return f"  {label:<34} {rows / t['wall']:>11,.0f} {unit:<12}  {fmt(t)}"


def ratio(label: str, value: float, op: str, target: float) -> str:
    ok = value <= target if op == "<=" else value >= target
    return f"  {label} = {value:.2f}x (target {op} {target}x)  {'PASS' if ok else 'MISS'}"


def ingest(args: argparse.Namespace, tmp: Path) -> tuple[list[str], dict]:
    n = args.rows
    data = make_commits(n, 1, n, args.seed)[0]
    work = tmp / "ingest"
    (work / "input").mkdir(parents=True)
    pq.write_table(data, work / "input" / "part-0.parquet", compression="zstd")
    say(f"ingest: {n:,} rows, {data.nbytes / MiB:,.0f} MiB in Arrow, bucket={args.bucket}")
    inproc = []
    for i in range(args.repeat):
        t = create(work / f"inproc-{i}", data.schema, "deduplicate", args.bucket)
        inproc.append(timed(t.write, data)[1])
        say(f"  in-process Table.write run {i + 1}: {fmt(inproc[-1])}")
    say("  Spark write and floor at local[2] (child process) ...")
    res = run_child("write", "local[2]", work, args)
    for i in range(args.repeat):
        say(f"  run {i + 1}: Spark floor {fmt(res['floor_s'][i])}; lakeformat.spark.write "
            f"{fmt(res['spark_s'][i])}; data source {fmt(res['source_s'][i])}")
    last = args.repeat - 1
    want = merged(work / f"inproc-{last}")
    bad = [name for name in ("spark", "source")
           if not merged(work / f"{name}-{last}").equals(want) or want.num_rows != n]
    check = "OK" if not bad else f"MISMATCH: {', '.join(bad)}"
    sw, fl, ip = best(res["spark_s"]), best(res["floor_s"]), best(inproc)
    lines = [f"Ingest of {n:,} rows ({res['rows']:,} cached in Spark, {res['files']} files "
             f"written by Spark), {args.bucket} buckets, best of {args.repeat}; rows check {check}",
             row("lakeformat.spark.write local[2]", sw, n, "rows/s"),
             row("Spark df.write.parquet (floor)", fl, n, "rows/s"),
             row("df.write.format('lakeformat')", best(res["source_s"]), n, "rows/s"),
             row("in-process Table.write", ip, n, "rows/s"),
             ratio("spark write / Spark floor", sw["wall"] / fl["wall"], "<=", TARGET_WRITE),
             f"  spark write / in-process = {sw['wall'] / ip['wall']:.2f}x"]
    shutil.rmtree(work, ignore_errors=True)
    return lines, res["mem"]


def compaction(args: argparse.Namespace, tmp: Path) -> tuple[list[str], dict]:
    per_run = args.rows // args.runs
    tables = with_nulls(make_commits(per_run, args.runs, int(per_run * 1.25), args.seed), 7)
    total = sum(t.num_rows for t in tables)
    work = tmp / "compact"
    start = time.perf_counter()
    create(work / "src", tables[0].schema, "partial-update", args.bucket, tables)
    say(f"compaction: {args.runs} runs x {per_run:,} rows, partial-update, {args.bucket} "
        f"buckets (written in-process in {time.perf_counter() - start:.1f}s, untimed)")
    expected = merged(work / "src")
    small = [t.slice(0, 1000) for t in tables[:2]]
    results, mems, times, files, noop = {}, {}, {}, {}, {}
    for who in ("in-process", "local[1]", "local[2]"):
        side = work / who.replace("[", "").replace("]", "")
        for i in range(args.repeat):
            shutil.copytree(work / "src", side / f"copy-{i}")
        if who == "in-process":
            times[who] = []
            for i in range(args.repeat):
                t = lf.Catalog(str(side / f"copy-{i}")).get_table(NAME)
                res, took = timed(t.compact, memory_budget=args.memory_budget)
                times[who].append(took)
            files[who] = [res.total.files_in, res.total.files_out]
        else:
            create(side / "warm", tables[0].schema, "partial-update", args.bucket, small)
            out = run_child("compact", who, side, args)
            times[who], files[who], mems[who] = out["compact_s"], out["files"], out["mem"]
            noop[who] = best(out["noop_s"])
        say(f"  {who}: " + "; ".join(fmt(t) for t in times[who])
            + f" ({files[who][0]} -> {files[who][1]} files)")
        results[who] = merged(side / "copy-0")
        shutil.rmtree(side, ignore_errors=True)
    bad = [w for w, r in results.items() if not r.equals(expected) or files[w][0] <= files[w][1]]
    check = "OK" if not bad else f"MISMATCH or no-op: {', '.join(bad)}"
    one, two, ip = (best(times[w]) for w in ("local[1]", "local[2]", "in-process"))
    lines = [f"Full compaction of {total:,} partial-update rows -> {expected.num_rows:,} in "
             f"{args.bucket} buckets, best of {args.repeat}; merged rows equal: {check}",
             row("lakeformat.spark.compact local[1]", one, total, "input rows/s"),
             row("lakeformat.spark.compact local[2]", two, total, "input rows/s"),
             row("in-process Table.compact()", ip, total, "input rows/s"),
             *(f"  Spark's fixed cost at {w}: SparkRunner.map of {args.bucket} no-op units "
               f"{fmt(noop[w])}" for w in noop),
             ratio("local[2] speed-up over local[1]", one["wall"] / two["wall"], ">=",
                   TARGET_SPEEDUP),
             ratio("local[2] / in-process", two["wall"] / ip["wall"], "<=", TARGET_VS_INPROC)]
    shutil.rmtree(work, ignore_errors=True)
    return lines, mems


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=5_000_000,
                   help="rows ingested; rows compacted (in --runs runs)")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--bucket", type=int, default=8)
    p.add_argument("--partitions", type=int, default=8,
                   help="partitions of the cached DataFrame written")
    p.add_argument("--shuffle-partitions", type=int, default=8)
    p.add_argument("--memory-budget", type=int, default=None,
                   help="bytes per task (default: the table's write-buffer-size)")
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--seed", type=int, default=20240601)
    p.add_argument("--skip", choices=("ingest", "compaction"), default=None)
    p.add_argument("--spark-conf", action="append", default=[], metavar="KEY=VALUE",
                   help="extra Spark setting for the child sessions (repeatable)")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds per child process")
    p.add_argument("--child", choices=("write", "compact"), help=argparse.SUPPRESS)
    p.add_argument("--master", default="local[2]", help=argparse.SUPPRESS)
    p.add_argument("--dir", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.rows < args.runs or args.repeat < 1 or args.runs < 1:
        p.error("--rows >= --runs >= 1 and --repeat >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child:
        out = (child_write if args.child == "write" else child_compact)(args)
        print(json.dumps(out), flush=True)
        return 0
    import pyspark

    say(f"lakeformat {lf.__version__} | pyspark {pyspark.__version__} | pyarrow "
        f"{pa.__version__} | {os.cpu_count()} cores | spark.sql.shuffle.partitions="
        f"{args.shuffle_partitions}")
    budget = args.memory_budget or CoreOptions({}).write_buffer_size
    warn_if_busy()
    tmp = Path(tempfile.mkdtemp(prefix="lf-bench-spark-"))
    lines, mems = [], {}
    try:
        if args.skip != "ingest":
            part, mem = ingest(args, tmp)
            lines += part
            mems["write local[2]"], mems["data source local[2]"] = mem["job"], mem["source"]
        if args.skip != "compaction":
            part, mem = compaction(args, tmp)
            lines += part
            mems.update({f"compact {k}": v for k, v in mem.items()})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    say("")
    print("\n".join(lines))
    print(f"Peak Python worker memory (per worker: budget + {MARGIN / MiB:.0f} MiB margin)")
    for what, m in mems.items():
        print(mem_line(what, m, budget))
    return 0


if __name__ == "__main__":
    sys.exit(main())
