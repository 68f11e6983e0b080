"""Write and merge-on-read throughput of lakeformat against its peers, timed in one run.

Data: `--commits` upsert batches of `--rows` rows each (numpy, seeded), columns
`id BIGINT NOT NULL` (primary key), `qty INT`, `price DOUBLE`, `name STRING` (16-24 random
letters, nearly unique) and `city STRING` (18-22 letters from a pool of 50,000). Every batch
holds distinct ids drawn from a key space of `--key-space` x rows, so most keys repeat
across batches. The Arrow tables are built once and fed to every peer:

* lakeformat: `Catalog(tmp).create_table("bench.t", primary_keys=["id"], bucket=4)`, one
  `t.write` per batch, then one `t.read()` (merge-on-read), checked against a
  last-writer-wins model computed with numpy;
* pypaimon 2.1.0, pure Python, in its own venv (`bench/_pypaimon_side.py`), same table and
  batches handed over as Parquet files read before timing; scaled down with
  `--pypaimon-rows` (every batch restricted to the same leading slice of the key space);
* pypaimon 2.1.0 with its Rust backend `pypaimon-rust` (write/commit/read `*.native.enabled`);
* DuckDB and Polars (the `bench` extra; default thread pools, one thread per core). Write:
  each batch sorted by id and written as one zstd Parquet file (one file per commit batch,
  like lakeformat's ingest of the same batches): DuckDB `COPY (SELECT * FROM batch ORDER BY
  id) TO '...' (FORMAT parquet, COMPRESSION zstd)` on the registered Arrow table, Polars
  `df.sort("id").write_parquet(..., compression="zstd")`; the batches are handed to each
  engine (registered in DuckDB, converted to Polars DataFrames) before the clock starts.
  Read: the same merge as lakeformat's merge-on-read (deduplicate: per id the row with the
  greatest `_SEQUENCE_NUMBER`) over the data files of lakeformat's table, into memory —
  DuckDB `SELECT id, arg_max_null(col, _SEQUENCE_NUMBER) ... FROM read_parquet([...]) GROUP
  BY id` fetched as an Arrow table, Polars `scan_parquet(...)`, sort by (id,
  _SEQUENCE_NUMBER), `group_by("id", maintain_order=True).agg(col.last())`, `collect()`.
  Neither orders the merged rows (lakeformat's are ordered within a bucket only). Written
  files are checked (row count, sorted by id) and merged rows compared with the model;
* the floor: pyarrow writing the batches as plain zstd Parquet files and reading them back;
* the encode floor (`_write_peers.py`): pyarrow encoding the rows of the data files
  lakeformat wrote in the same round (decoded before the clock) into as many files, with
  lakeformat's encodings, one thread per core: the part of an ingest that is the encoder's.

Every peer runs `--repeat` times (default 3), each time into a fresh warehouse, and keeps its
best write and best read: the machine may be shared. lakeformat, DuckDB, Polars and the floor
take turns (round 1 of each, then round 2, ...), so that a stretch of a slower machine falls
on every peer alike; pypaimon runs afterwards, in its own process. Rates are rows written /
seconds for writes and input rows (all rows of all batches) / seconds for reads, so a
scaled-down peer is compared per row. Ratios are lakeformat's rate over the peer's (> 1:
lakeformat is faster). `--profile` adds cProfile summaries of one lakeformat commit and one
read, run serially so that the worker threads' work is visible.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import math
import os
import platform
import pstats
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as `python bench/write_read.py` from a checkout
    sys.path.insert(0, str(REPO))

import lakeformat as lf  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _peers import (  # noqa: E402
    ZSTD_LEVEL,
    duckdb_copy_sql,
    duckdb_label,
    duckdb_merge_sql,
    duckdb_to_arrow,
    import_peer,
    polars_label,
    polars_merge,
)
from _write_peers import (  # noqa: E402
    EncodeFloor,
    ParquetFloor,
    PeerResult,
    fmt_rate,
    fmt_ratio,
    keep_best,
    say,
)

SIDE_SCRIPT = Path(__file__).resolve().parent / "_pypaimon_side.py"
TARGET_WRITE = 1_500_000  # rows/s, 2-core machine
TARGET_READ = 2_500_000  # input rows/s, 2-core machine
TARGET_INGEST_VS_PEERS = 1.3  # write time / the faster of DuckDB and Polars
SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    pa.field("qty", pa.int32()),
    pa.field("price", pa.float64()),
    pa.field("name", pa.string()),
    pa.field("city", pa.string()),
])


# -- data ----------------------------------------------------------------------------------------
def random_strings(rng: np.random.Generator, n: int, lo: int, hi: int) -> pa.StringArray:
    """`n` strings of lowercase letters, lengths uniform in [lo, hi], built from buffers."""
    lengths = rng.integers(lo, hi + 1, n)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    chars = rng.integers(ord("a"), ord("z") + 1, int(offsets[-1]), dtype=np.uint8)
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(chars))


def make_commits(rows: int, commits: int, key_space: int, seed: int) -> list[pa.Table]:
    """One table per commit; each holds `rows` distinct ids out of `range(key_space)`."""
    rng = np.random.default_rng(seed)
    city_pool = random_strings(rng, 50_000, 18, 22)
    out = []
    for _ in range(commits):
        ids = rng.permutation(key_space)[:rows].astype(np.int64)
        out.append(pa.table([
            pa.array(ids),
            pa.array(rng.integers(0, 10_000, rows, dtype=np.int32)),
            pa.array(np.round(rng.random(rows) * 1000.0, 2)),
            random_strings(rng, rows, 16, 24),
            city_pool.take(pa.array(rng.integers(0, len(city_pool), rows))),
        ], schema=SCHEMA))
    return out


def last_writer_wins(tables: Sequence[pa.Table]) -> pa.Table:
    """Expected merged rows, sorted by id: per id, the row of the latest commit.

    The tables are concatenated in commit order and sorted by id with a stable sort, so
    within an id the rows keep (commit index, arrival) order and the last one is the winner.
    """
    rows = pa.concat_tables(tables)
    ids = rows["id"].to_numpy()
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    last = np.ones(len(order), dtype=bool)
    last[:-1] = sorted_ids[:-1] != sorted_ids[1:]
    return rows.take(pa.array(order[last])).combine_chunks()


def key_prefix(tables: Sequence[pa.Table], rows_target: int, rows: int, key_space: int
               ) -> tuple[list[pa.Table], int]:
    """The same batches restricted to ids < K, K chosen for ~`rows_target` rows a batch."""
    limit = min(key_space, math.ceil(rows_target * key_space / rows))
    return [t.filter(pc.less(t["id"], limit)) for t in tables], limit


def check_rows(result: pa.Table, model: pa.Table) -> str:
    """'OK' when `result` holds exactly the model's rows (any order), else what differs."""
    if result.num_rows != model.num_rows:
        return f"MISMATCH: {result.num_rows:,} rows, expected {model.num_rows:,} distinct ids"
    missing = [c for c in model.column_names if c not in result.column_names]
    if missing:
        return f"MISMATCH: columns {missing} missing"
    got = result.select(model.column_names).sort_by("id")
    for name in model.column_names:
        a, b = got[name].combine_chunks(), model[name].combine_chunks()
        if a.type != b.type:
            a = a.cast(b.type)
        if not a.equals(b):
            bad = len(b) - pc.sum(pc.equal(a, b).fill_null(False)).as_py()
            return f"MISMATCH: column {name!r} differs in {bad:,} rows"
    return "OK"


# -- peers -----------------------------------------------------------------------------------
class LakeformatPeer:
    """lakeformat: one round = a fresh warehouse, the batches written, then merge-on-read;
    the last round's warehouse is kept (the engine peers merge its data files)."""

    def __init__(self, tables: Sequence[pa.Table], bucket: int, base: Path, model: pa.Table):
        self.tables, self.bucket, self.base, self.model = tables, bucket, base, model
        self.res = PeerResult("lakeformat " + lf.__version__, tables[0].num_rows,
                              sum(t.num_rows for t in tables))
        self.warehouse: Path | None = None

    def round(self, i: int) -> None:
        if self.warehouse is not None:
            shutil.rmtree(self.warehouse, ignore_errors=True)
        self.warehouse = self.base / f"lakeformat-{i}"
        catalog = lf.Catalog(str(self.warehouse))
        catalog.create_database("bench", exist_ok=True)
        table = catalog.create_table("bench.t", schema=SCHEMA, primary_keys=["id"],
                                     options={"bucket": str(self.bucket)})
        per_commit = []
        for batch in self.tables:
            start = time.perf_counter()
            table.write(batch)
            per_commit.append(time.perf_counter() - start)
        table = lf.Catalog(str(self.warehouse)).get_table("bench.t")  # a reader's fresh handle
        start = time.perf_counter()
        result = table.read()
        read_s = time.perf_counter() - start
        keep_best(self.res, sum(per_commit), read_s)
        say(f"  lakeformat run {i + 1}: commits "
            + " ".join(f"{s:.2f}s" for s in per_commit)
            + f" = {sum(per_commit):.2f}s; read {read_s:.2f}s ({result.num_rows:,} rows)")
        if i == 0:
            self.res.check = check_rows(result, self.model)

    def data_files(self) -> list[str]:
        return [f["path"] for f in lf.Catalog(str(self.warehouse)).get_table("bench.t").files()]


def check_sorted_files(paths: Sequence[Path], tables: Sequence[pa.Table]) -> str:
    """'OK' when each file holds its batch's row count, sorted by id."""
    for path, batch in zip(paths, tables, strict=True):
        ids = pq.read_table(path, columns=["id"])["id"].to_numpy()
        if len(ids) != batch.num_rows:
            return f"MISMATCH: {path.name} holds {len(ids):,} rows, not {batch.num_rows:,}"
        if len(ids) > 1 and not bool(np.all(ids[1:] >= ids[:-1])):
            return f"MISMATCH: {path.name} is not sorted by id"
    return "OK"


class EnginePeer:
    """DuckDB or Polars: one round = sorted zstd Parquet writes of the batches, then the merge
    of lakeformat's data files into memory."""

    def __init__(self, peer: str, tables: Sequence[pa.Table], base: Path, model: pa.Table):
        self.peer, self.tables, self.base, self.model = peer, tables, base, model
        self.module, why = import_peer(peer)
        self.res = PeerResult("DuckDB" if peer == "duckdb" else "Polars", tables[0].num_rows,
                              sum(t.num_rows for t in tables))
        self.values = [c for c in SCHEMA.names if c != "id"]
        self.con: Any = None
        self.checks: list[str] = []
        if self.module is None:
            self.res.error = why
        elif peer == "duckdb":
            self.con = self.module.connect()
            self.res.name = duckdb_label(self.module, self.con)
        else:
            self.res.name = polars_label(self.module)
            self.frames = [self.module.from_arrow(t) for t in tables]  # before the clock

    def round(self, i: int, data_files: Sequence[str]) -> None:
        if self.module is None:
            return
        folder = self.base / f"{self.peer}-{i}"
        folder.mkdir(parents=True)
        paths = [folder / f"commit-{j}.parquet" for j in range(len(self.tables))]
        if self.con is not None:
            con = self.con
            for j, batch in enumerate(self.tables):
                con.register(f"batch_{j}", batch)
            statements = [duckdb_copy_sql(f"SELECT * FROM batch_{j} ORDER BY id", str(path))
                          for j, path in enumerate(paths)]
            start = time.perf_counter()
            for sql in statements:
                con.execute(sql)
            write_s = time.perf_counter() - start
            for j in range(len(self.tables)):
                con.unregister(f"batch_{j}")
            start = time.perf_counter()
            merged = duckdb_to_arrow(con, duckdb_merge_sql(data_files, "id", self.values,
                                                           "deduplicate", order=False))
            read_s = time.perf_counter() - start
        else:
            start = time.perf_counter()
            for path, frame in zip(paths, self.frames, strict=True):
                frame.sort("id").write_parquet(path, compression="zstd",
                                               compression_level=ZSTD_LEVEL)
            write_s = time.perf_counter() - start
            start = time.perf_counter()
            frame = polars_merge(self.module, data_files, "id", self.values, "deduplicate",
                                 order=False).collect()
            read_s = time.perf_counter() - start
            merged = frame.to_arrow()
            del frame
        keep_best(self.res, write_s, read_s)
        say(f"  {self.res.name} run {i + 1}: write {write_s:.2f}s, merge {read_s:.2f}s "
            f"({merged.num_rows:,} rows)")
        self.checks.append(f"write {check_sorted_files(paths, self.tables)}, "
                           f"merge {check_rows(merged, self.model)}")
        shutil.rmtree(folder, ignore_errors=True)

    def close(self) -> None:
        bad = [c for c in self.checks if c != "write OK, merge OK"]
        self.res.check = bad[0] if bad else ("OK" if self.checks else "")
        if self.con is not None:
            self.con.close()


def run_pypaimon(python: str, mode: str, tables: Sequence[pa.Table], model: pa.Table,
                 bucket: int, base: Path, timeout: float, label: str, repeat: int
                 ) -> PeerResult:
    """Run `_pypaimon_side.py` under `python`; data is handed over as Parquet files."""
    res = PeerResult(label, max(t.num_rows for t in tables), sum(t.num_rows for t in tables))
    inputs = base / f"inputs-{mode}"
    inputs.mkdir(parents=True)
    for i, batch in enumerate(tables):
        pq.write_table(batch, inputs / f"commit-{i}.parquet", compression="zstd")
    warehouse = base / f"pypaimon-{mode}"
    result_path = base / f"pypaimon-{mode}-result.parquet"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    cmd = [python, str(SIDE_SCRIPT), "--inputs", str(inputs), "--warehouse", str(warehouse),
           "--result", str(result_path), "--bucket", str(bucket), "--mode", mode,
           "--repeat", str(repeat)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        res.error = f"timed out after {timeout:.0f}s (lower --pypaimon-rows)"
        return res
    finally:
        shutil.rmtree(inputs, ignore_errors=True)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        res.error = f"{python} exited {proc.returncode}: {tail}"
        return res
    out = json.loads(lines[-1])
    if "error" in out:
        res.error = out["error"]
        return res
    res.write_s, res.read_s = out["write_s"], out["read_s"]
    res.rows_written = out["rows_written"]
    version = f"pypaimon {out['pypaimon']}"
    if mode == "rust":
        version += f" + pypaimon-rust {out['pypaimon_rust']}"
        res.notes.append(f"paths: writer {'/'.join(out['writer'])}, "
                         f"native commits {out['native_commits']}/{out['commits']}, "
                         f"native reads {out['native_reads']} "
                         f"(Python fallbacks {out['fallback_reads']})")
    res.name = f"{version} ({mode})"
    for i, run in enumerate(out["runs"]):
        say(f"  {res.name} run {i + 1}: commits "
            + " ".join(f"{s:.2f}s" for s in run["commit_s"])
            + f" = {sum(run['commit_s']):.2f}s; read {run['read_s']:.2f}s")
    say(f"    ({out['rows_read']:,} rows read in {out['splits']} splits; "
        f"pyarrow {out['pyarrow']} in that venv)")
    res.check = check_rows(pq.read_table(result_path), model)
    result_path.unlink(missing_ok=True)
    shutil.rmtree(warehouse, ignore_errors=True)
    return res


def pypaimon_peer(python: str | None, mode: str, rows_target: int, args: argparse.Namespace,
                  tables: list[pa.Table], model: pa.Table, base: Path) -> PeerResult:
    """Scale the batches down to `rows_target` rows if asked, then run the side script."""
    label = f"pypaimon ({mode})"
    if python is None:
        return PeerResult(label, error="no interpreter: build .venv-interop (make "
                          "test-interop) or pass --pypaimon-python")
    if not Path(python).exists():
        return PeerResult(label, error=f"{python} does not exist")
    if 0 < rows_target < args.rows:
        sub, limit = key_prefix(tables, rows_target, args.rows, args.key_space_rows)
        sub_model = model.filter(pc.less(model["id"], limit))
        res = run_pypaimon(python, mode, sub, sub_model, args.bucket, base,
                           args.peer_timeout, label, args.repeat)
        res.notes.append(f"scaled down: ids < {limit:,} of {args.key_space_rows:,}, "
                         f"{res.rows_written:,} rows in {len(sub)} commits; rates are per row")
        return res
    return run_pypaimon(python, mode, tables, model, args.bucket, base, args.peer_timeout,
                        label, args.repeat)


# -- profile ---------------------------------------------------------------------------------
def profile_lakeformat(tables: Sequence[pa.Table], bucket: int, warehouse: Path, base: Path,
                       top: int, out_dir: Path | None) -> None:
    """cProfile of one commit (into a table holding one commit) and one full read.

    cProfile sees only the calling thread, so `os.cpu_count` is patched to 1 meanwhile:
    lakeformat then runs its per-bucket work serially, in this thread.
    """
    real_cpu_count = os.cpu_count
    os.cpu_count = lambda: 1
    try:
        wh = base / "lakeformat-profile"
        catalog = lf.Catalog(str(wh))
        catalog.create_database("bench", exist_ok=True)
        t = catalog.create_table("bench.t", schema=SCHEMA, primary_keys=["id"],
                                 options={"bucket": str(bucket)})
        t.write(tables[0])
        jobs: list[tuple[str, Callable[[], object]]] = [
            ("write (commit 2 of a 1-commit table)", lambda: t.write(tables[1 % len(tables)])),
            (f"read ({len(tables)} commits, merge-on-read)",
             lambda: lf.Catalog(str(warehouse)).get_table("bench.t").read()),
        ]
        for title, job in jobs:
            prof = cProfile.Profile()
            start = time.perf_counter()
            prof.runcall(job)
            took = time.perf_counter() - start
            buf = io.StringIO()
            stats = pstats.Stats(prof, stream=buf)
            stats.strip_dirs().sort_stats("cumulative").print_stats(top)
            say(f"\n== cProfile, lakeformat {title}, serial, {took:.2f}s under the profiler ==")
            say("\n".join(ln for ln in buf.getvalue().splitlines() if ln.strip())[:20_000])
            if out_dir is not None:
                out_dir.mkdir(parents=True, exist_ok=True)
                name = title.split()[0]
                prof.dump_stats(str(out_dir / f"lakeformat-{name}.prof"))
        shutil.rmtree(wh, ignore_errors=True)
    finally:
        os.cpu_count = real_cpu_count


def warn_if_busy() -> None:
    """Other processes share the cores: say so, since every figure here is CPU-bound."""
    load = os.getloadavg()[0]
    if load > 0.5:
        say(f"  note: 1-minute load average is {load:.2f} at start: other processes are using "
            "the CPU, figures will be noisy")


# -- main ------------------------------------------------------------------------------------
def default_pypaimon_python() -> str | None:
    candidate = REPO / ".venv-interop" / "bin" / "python"
    return str(candidate) if candidate.exists() else None


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=1_000_000, help="rows per commit")
    p.add_argument("--commits", type=int, default=5)
    p.add_argument("--key-space", type=float, default=1.25,
                   help="ids are drawn from range(key_space x rows), distinct within a commit")
    p.add_argument("--bucket", type=int, default=4)
    p.add_argument("--seed", type=int, default=20240601)
    p.add_argument("--repeat", type=int, default=3,
                   help="fresh runs of every peer (each in its own warehouse); the best write "
                        "and the best read are kept")
    p.add_argument("--pypaimon-python", default=default_pypaimon_python(),
                   help="interpreter of a venv holding pypaimon 2.1.0 "
                        "(default: .venv-interop/bin/python of the repo, if built)")
    p.add_argument("--pypaimon-rows", type=int, default=200_000,
                   help="rows per commit for pure-Python pypaimon (0: all); it writes at "
                        "~20-45k rows/s on 2 cores")
    p.add_argument("--skip-pypaimon", action="store_true",
                   help="skip both pypaimon peers")
    p.add_argument("--pypaimon-rust-python", default=None,
                   help="interpreter of a venv holding pypaimon 2.1.0 and pypaimon-rust "
                        "(default: --pypaimon-python)")
    p.add_argument("--pypaimon-rust-rows", type=int, default=0,
                   help="rows per commit for pypaimon with the Rust backend (0: all)")
    p.add_argument("--skip-pypaimon-rust", action="store_true")
    p.add_argument("--peer-timeout", type=float, default=3600.0,
                   help="seconds allowed to each pypaimon process")
    p.add_argument("--skip-duckdb", action="store_true", help="skip the DuckDB peer")
    p.add_argument("--skip-polars", action="store_true", help="skip the Polars peer")
    p.add_argument("--profile", action="store_true",
                   help="after the timings, cProfile one lakeformat commit and one read")
    p.add_argument("--profile-top", type=int, default=25)
    p.add_argument("--profile-out", type=Path, default=None,
                   help="also dump the .prof files into this directory")
    args = p.parse_args(argv)
    if args.rows <= 0 or args.commits <= 0 or args.repeat <= 0 or args.key_space < 1:
        p.error("--rows, --commits and --repeat must be positive and --key-space >= 1")
    args.key_space_rows = int(args.rows * args.key_space)
    return args


def print_table(results: list[PeerResult], ours: PeerResult,
                engine_peers: Sequence[PeerResult] = (),
                encode_floor: PeerResult | None = None) -> None:
    """The summary: one row per peer, lakeformat's ratios, notes and targets."""
    header = ("peer", "rows/commit", "write rows/s", "read input rows/s",
              "lf/peer write", "lf/peer read", "check")
    rows = [header]
    for r in results:
        if r.error:
            rows.append((r.name, "-", "-", "-", "-", "-", "not run"))
            continue
        rows.append((r.name + ("*" if any(n.startswith("scaled") for n in r.notes) else ""),
                     f"{r.rows_per_commit:,}", fmt_rate(r.write_rate), fmt_rate(r.read_rate),
                     fmt_ratio(ours.write_rate, r.write_rate),
                     fmt_ratio(ours.read_rate, r.read_rate), r.check))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    say("")
    for k, row in enumerate(rows):
        say("  ".join(c.ljust(w) if i in (0, 6) else c.rjust(w)
                      for i, (c, w) in enumerate(zip(row, widths, strict=True))).rstrip())
        if k == 0:
            say("  ".join("-" * w for w in widths))
    for r in results:
        for note in r.notes:
            say(f"  {r.name}{'*' if note.startswith('scaled') else ''}: {note}")
        if r.error:
            say(f"  {r.name}: not run: {r.error}")
    say("  lf/peer = lakeformat's rate / the peer's rate (> 1: lakeformat is faster). "
        "read input rows/s = all rows written / read seconds.")
    w_ok = (ours.write_rate or 0) >= TARGET_WRITE
    r_ok = (ours.read_rate or 0) >= TARGET_READ
    say(f"\nTargets (lakeformat on a 2-core machine; this one has {os.cpu_count()} cores):")
    say(f"  write         >= {TARGET_WRITE:>9,} rows/s        measured "
        f"{fmt_rate(ours.write_rate):>10}  {'PASS' if w_ok else 'MISS'}")
    say(f"  merge-on-read >= {TARGET_READ:>9,} input rows/s  measured "
        f"{fmt_rate(ours.read_rate):>10}  {'PASS' if r_ok else 'MISS'}")
    if encode_floor is not None and encode_floor.write_s and ours.write_s:
        say(f"  {'ingest time / the encode floor (no target)':<72}measured "
            f"{ours.write_s / encode_floor.write_s:5.2f}x")
    ran = [r for r in engine_peers if not r.error and r.check == "OK"]
    say("  against DuckDB and Polars (same run; a peer that did not run or whose rows "
        "mismatch is left out):")
    if not ran or not ours.write_s or not ours.read_s:
        say("    no DuckDB/Polars figures to compare with")
        return
    fastest = min(ran, key=lambda r: r.write_s or math.inf)
    ingest = ours.write_s / fastest.write_s if fastest.write_s else math.inf
    say(f"    {'ingest time / the faster of DuckDB and Polars (' + short(fastest) + ')':<58}"
        f"<= {TARGET_INGEST_VS_PEERS:.1f}x  measured {ingest:5.2f}x  "
        f"{'PASS' if ingest <= TARGET_INGEST_VS_PEERS else 'MISS'}")
    for r in ran:
        ratio = ours.read_s / r.read_s if r.read_s else math.inf
        say(f"    {'merge-on-read time / ' + short(r) + ' merge (stays ahead)':<58}"
            f"<  1.0x  measured {ratio:5.2f}x  {'PASS' if ratio < 1.0 else 'MISS'}")


def short(r: PeerResult) -> str:
    return r.name.split()[0]


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    say(f"lakeformat {lf.__version__} | python {platform.python_version()} | pyarrow "
        f"{pa.__version__} | numpy {np.__version__} | {os.cpu_count()} cores")
    warn_if_busy()
    start = time.perf_counter()
    tables = make_commits(args.rows, args.commits, args.key_space_rows, args.seed)
    model = last_writer_wins(tables)
    total = sum(t.num_rows for t in tables)
    say(f"data: {args.commits} commits x {args.rows:,} rows = {total:,} rows, ids from "
        f"range({args.key_space_rows:,}), {model.num_rows:,} distinct ids, "
        f"{sum(t.nbytes for t in tables) / 2**20:,.0f} MiB in Arrow, bucket={args.bucket} "
        f"(generated in {time.perf_counter() - start:.1f}s, untimed)")

    base = Path(tempfile.mkdtemp(prefix="lakeformat-bench-"))
    try:
        # the peers take turns round by round, so that each sees the same stretches of a
        # shared machine whose speed drifts (best of the rounds kept)
        ours_peer = LakeformatPeer(tables, args.bucket, base, model)
        engines = [EnginePeer(peer, tables, base, model) for peer in ("duckdb", "polars")
                   if not getattr(args, f"skip_{peer}")]
        floor = ParquetFloor(tables, base)
        encode_floor = EncodeFloor(tables, base)
        say("running lakeformat, " + ", ".join(e.res.name for e in engines)
            + f" and the pyarrow floors in turn, {args.repeat} rounds (DuckDB and Polars merge "
            "the data files lakeformat wrote in the same round) ...")
        for i in range(args.repeat):
            ours_peer.round(i)
            data_files = ours_peer.data_files()
            for engine in engines:
                engine.round(i, data_files)
            floor.round(i)
            encode_floor.round(i, data_files)
        for engine in engines:
            engine.close()
        ours, lf_warehouse = ours_peer.res, ours_peer.warehouse
        engine_peers = [e.res for e in engines]
        results = [ours]
        if not args.skip_pypaimon:
            say("running pypaimon (pure Python) ...")
            results.append(pypaimon_peer(args.pypaimon_python, "python", args.pypaimon_rows,
                                         args, tables, model, base))
            if not args.skip_pypaimon_rust:
                say("running pypaimon with pypaimon-rust ...")
                rust_python = args.pypaimon_rust_python or args.pypaimon_python
                results.append(pypaimon_peer(rust_python, "rust", args.pypaimon_rust_rows,
                                             args, tables, model, base))
        results += engine_peers + [floor.res, encode_floor.res]
        print_table(results, ours, engine_peers, encode_floor.res)
        if args.profile:
            profile_lakeformat(tables, args.bucket, lf_warehouse, base, args.profile_top,
                               args.profile_out)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    peers_ok = all(r.error or r.check == "OK" for r in engine_peers)
    if not peers_ok:
        say("MISMATCH: DuckDB's or Polars' rows are wrong (see the check column)")
    return 0 if ours.check == "OK" and peers_ok else 1


if __name__ == "__main__":
    sys.exit(main())
