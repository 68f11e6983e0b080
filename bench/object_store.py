"""Commits and maintenance at object-store cost: requests and round trips per operation, with a
latency added to every S3 request, lakeformat beside pypaimon 2.1.0.

An embedded moto S3 server on 127.0.0.1 sits behind the tests' fault proxy
(`tests/support/fault_proxy.py`, injecting no fault) whose `request_latency` delays every
request by `--latency` milliseconds (default 0, 20 and 50) in the handler thread of its
connection: requests on separate connections overlap as on a real store, so wall time follows
the round trips on the critical path. The proxy counts every request by verb (GET of an object,
PUT, HEAD, LIST = GET of a bucket, DELETE, POST = DeleteObjects) whatever the client. At each
latency, with everything set up at latency 0 beforehand:

* small commit, steady state: 1 row into a 1-bucket primary-key table the same catalog wrote
  before (median of `--repeat`);
* small commit after another writer (a second Catalog on the same warehouse) landed one;
* a burst of 10 small commits on one table object;
* expiry of 100 snapshots (`expire_snapshots(retain_min=1, older_than=0)` of a table of 101
  overwrite commits, 2 buckets each);
* orphan removal over 1,000 orphan files (`remove_orphan_files(older_than=0)`, no retention
  rail) in a small table;
* `health()` of a 10,000-file table (`bench/health.py`'s builder: 500 commits x 10 partitions
  x 2 buckets), a fresh catalog, then the same table again;
* pypaimon 2.1.0's small commit on the same proxy at the same latency, in its own venv
  (`bench/_pypaimon_commit.py`, driven line by line so its requests are counted per commit).

Tables are built once on local disk (fast) and copied into moto before each latency.
"trips" is wall time / latency; "net" is (wall time - wall time at 0 ms) / latency, the round
trips latency added (CPU and moto's own time left out; printed when 0 ms is measured).
Targets (issue 38): steady small commit <= 10 requests and <= 6 round trips at 20 ms; expiry
of 100 snapshots <= 10 s at 50 ms.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

REPO = Path(__file__).resolve().parent.parent
BENCH = Path(__file__).resolve().parent
for p in (str(REPO), str(BENCH)):
    if p not in sys.path:  # run as `python bench/object_store.py` from a checkout
        sys.path.insert(0, p)

from _s3_upload import upload  # noqa: E402
from health import write_table as write_health_table  # noqa: E402

import lakeformat as lf  # noqa: E402
from tests.support.fault_proxy import FaultProxy  # noqa: E402
from tests.support.s3_operations import VERBS  # noqa: E402
from tests.support.s3server import MotoS3Server, boto3_client, new_bucket, s3_options  # noqa: E402

SIDE_SCRIPT = BENCH / "_pypaimon_commit.py"
SMALL = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int64())])
ZERO = dt.timedelta(0)


def say(msg: str) -> None:
    print(msg, flush=True)


@dataclass
class Figure:
    """One measured operation at one latency."""

    name: str
    latency_ms: int
    wall_s: float = 0.0
    methods: dict[str, int] = field(default_factory=dict)
    note: str = ""
    commits: int = 1  # commits the figure covers (per-commit ratios against pypaimon)
    error: str = ""

    @property
    def requests(self) -> int:
        return sum(self.methods.values())

    @property
    def round_trips(self) -> float | None:
        return self.wall_s / (self.latency_ms / 1000) if self.latency_ms else None


class Store:
    """moto behind the proxy: `measure` runs a callable at a latency and records its requests."""

    def __init__(self, proxy: FaultProxy, moto_endpoint: str, bucket: str) -> None:
        self.proxy, self.moto, self.bucket = proxy, moto_endpoint, bucket

    def options(self) -> dict[str, str]:
        return s3_options(self.proxy.endpoint)

    def catalog(self, prefix: str) -> lf.Catalog:
        return lf.Catalog(f"s3://{self.bucket}/{prefix}", options=self.options())

    def measure(self, name: str, latency_ms: int, fn: Callable[[], Any]) -> tuple[Figure, Any]:
        self.proxy.request_latency = latency_ms / 1000
        self.proxy.reset_counters()
        start = time.perf_counter()
        try:
            out = fn()
        finally:
            wall = time.perf_counter() - start
            self.proxy.request_latency = 0.0
        return Figure(name, latency_ms, wall, self.proxy.methods), out

    def copy_in(self, root: Path, prefix: str) -> int:
        """A locally built warehouse into moto directly (not through the proxy)."""
        return upload(root, s3_options(self.moto), f"s3://{self.bucket}/{prefix}")


def median_of(figs: list[Figure], name: str, note: str = "") -> Figure:
    """The figure of median wall time, with the spread of the request counts in its note."""
    ordered = sorted(figs, key=lambda f: f.wall_s)
    mid = ordered[len(ordered) // 2]
    counts = sorted(f.requests for f in figs)
    spread = f"requests {counts[0]}-{counts[-1]}" if counts[0] != counts[-1] else ""
    return Figure(name, mid.latency_ms, mid.wall_s, mid.methods,
                  "; ".join(x for x in (f"median of {len(figs)}", spread, note) if x))


def row(i: int) -> pa.Table:
    return pa.table({"id": np.array([i % 1000], np.int64), "v": np.array([i], np.int64)},
                    schema=SMALL)


# -- lakeformat's commits -------------------------------------------------------------------
def commit_figures(store: Store, lat: int, repeat: int) -> list[Figure]:
    prefix = f"commits-{lat}ms-{uuid.uuid4().hex[:6]}"
    cat = store.catalog(prefix)
    cat.create_database("bench")
    t = cat.create_table("bench.small", SMALL, primary_keys=["id"], options={"bucket": "1"})
    for i in range(3):  # the same process wrote the table before
        t.write(row(i))
    n = 3
    steady = []
    for _ in range(repeat):
        steady.append(store.measure("small commit, steady", lat, lambda b=row(n): t.write(b))[0])
        n += 1
    out = [median_of(steady, "small commit, steady")]

    other = lf.Catalog(cat.warehouse, options=store.options()).get_table("bench.small")
    after = []
    for _ in range(repeat):
        other.write(row(n + 1))  # the other writer lands (latency 0, not measured)
        after.append(store.measure("commit after another writer", lat,
                                   lambda b=row(n): t.write(b))[0])
        n += 2
    out.append(median_of(after, "commit after another writer"))

    def burst() -> None:
        for i in range(10):
            t.write(row(n + i))

    fig, _ = store.measure("10-commit burst", lat, burst)
    fig.commits = 10
    fig.note = f"{fig.wall_s / 10:.2f} s and {fig.requests / 10:.1f} requests per commit"
    out.append(fig)
    return out


# -- maintenance ----------------------------------------------------------------------------
def build_expiry(root: Path, snapshots: int) -> None:
    cat = lf.Catalog(str(root))
    cat.create_database("bench")
    t = cat.create_table("bench.t", SMALL, primary_keys=["id"], options={"bucket": "2"})
    ids = np.arange(64, dtype=np.int64)
    for i in range(snapshots + 1):
        t.write(pa.table({"id": ids, "v": ids + i}, schema=SMALL), overwrite=True)


def build_orphans(root: Path) -> None:
    cat = lf.Catalog(str(root))
    cat.create_database("bench")
    t = cat.create_table("bench.t", SMALL, primary_keys=["id"], options={"bucket": "2"})
    ids = np.arange(64, dtype=np.int64)
    for i in range(10):
        t.write(pa.table({"id": ids, "v": ids + i}, schema=SMALL))


def expiry_figure(store: Store, lat: int, root: Path, snapshots: int) -> Figure:
    prefix = f"expire-{lat}ms"
    store.copy_in(root, prefix)
    t = store.catalog(prefix).get_table("bench.t")
    fig, res = store.measure(f"expire {snapshots} snapshots", lat, lambda: t.expire_snapshots(
        retain_min=1, older_than=ZERO, max_deletes=snapshots))
    fig.note = (f"{len(res.snapshots_deleted)} snapshots, {len(res.deleted)} files deleted "
                f"({res.data_files_deleted} data)")
    if len(res.snapshots_deleted) != snapshots:
        fig.error = f"expired {len(res.snapshots_deleted)} snapshots, not {snapshots}"
    return fig


def orphan_figure(store: Store, lat: int, root: Path, orphans: int) -> Figure:
    prefix = f"orphans-{lat}ms"
    store.copy_in(root, prefix)
    client = boto3_client(store.moto)
    base = f"{prefix}/bench.db/t"

    def put(i: int) -> None:
        client.put_object(Bucket=store.bucket, Key=f"{base}/bucket-{i % 2}/data-"
                          f"{uuid.uuid4()}-0.parquet", Body=b"orphan")

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(put, range(orphans)))
    time.sleep(1.1)  # S3 modification times are whole seconds: the cut-off must be after them
    t = store.catalog(prefix).get_table("bench.t")
    fig, res = store.measure(f"remove {orphans} orphan files", lat, lambda: t.remove_orphan_files(
        older_than=ZERO, enforce_retention_duration=False))
    fig.note = f"{len(res.deleted)} files deleted"
    if len(res.deleted) != orphans:
        fig.error = f"deleted {len(res.deleted)} files, not the {orphans} orphans"
    return fig


def health_figures(store: Store, lat: int, files: int) -> list[Figure]:
    t = store.catalog("health").get_table("bench.big")
    fig, h = store.measure(f"health() of {files:,} files", lat, t.health)
    fig.note = "fresh catalog"
    if h.totals["files"] != files:
        fig.error = f"health counts {h.totals['files']} files, the table has {files}"
    again, _ = store.measure("health() again", lat, t.health)
    again.note = "same table object"
    return [fig, again]


# -- pypaimon -------------------------------------------------------------------------------
def default_pypaimon_python() -> str | None:
    """`.venv-interop/bin/python` of this checkout, or of the main checkout of a worktree."""
    roots = [REPO]
    try:
        common = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--git-common-dir"],
                                capture_output=True, text=True, timeout=10).stdout.strip()
        if common:
            roots.append((REPO / common).resolve().parent)
    except OSError:
        pass
    for root in roots:
        candidate = root / ".venv-interop" / "bin" / "python"
        if candidate.exists():
            return str(candidate)
    return None


class PypaimonSide:
    """The side script in pypaimon's venv, writing through the same proxy."""

    def __init__(self, python: str, store: Store, warm: int = 3) -> None:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        self.store = store
        self.proc = subprocess.Popen(
            [python, str(SIDE_SCRIPT), "--warehouse", f"s3://{store.bucket}/pypaimon",
             "--options", json.dumps(store.options()), "--warm", str(warm)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=env)
        self.info = self._answer()
        if "error" in self.info:
            self.close()

    def _answer(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("{"):
                return json.loads(line)
        err = (self.proc.stderr.read() if self.proc.stderr else "").strip().splitlines()
        return {"error": f"pypaimon side ended: {(err or ['(no output)'])[-1]}"}

    def commit(self) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write("commit\n")
        self.proc.stdin.flush()
        return self._answer()

    def figure(self, lat: int, repeat: int) -> Figure:
        name = f"pypaimon {self.info.get('pypaimon', '?')} small commit"
        if "error" in self.info:
            return Figure(name, lat, error=self.info["error"])
        figs = []
        for _ in range(repeat):
            fig, ans = self.store.measure(name, lat, self.commit)
            if "error" in ans:
                return Figure(name, lat, error=ans["error"])
            figs.append(fig)
        return median_of(figs, name, "steady, its own venv")

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.communicate("quit\n", timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.communicate()


# -- report ---------------------------------------------------------------------------------
def report(figs: list[Figure], peer: Figure | None, base: dict[str, float]) -> None:
    """One latency's table; `base` holds the wall times at 0 ms by operation (net trips)."""
    lat = figs[0].latency_ms
    say(f"\n== latency {lat} ms per request ==")
    say(f"{'operation':<32}" + "".join(f"{v:>7}" for v in VERBS)
        + f"{'total':>7}{'wall s':>8}{'trips':>7}{'net':>7}  {'vs pypaimon':<22}note")
    for f in figs + ([peer] if peer else []):
        if f.error:
            say(f"{f.name:<32}  ERROR: {f.error}")
            continue
        trips = f"{f.round_trips:7.1f}" if f.round_trips is not None else f"{'-':>7}"
        net = f"{'-':>7}"
        if f.latency_ms and f.name in base:
            trips_net = (f.wall_s - base[f.name]) / (f.latency_ms / 1000)
            net = f"{trips_net:7.1f}" if trips_net > 0 else f"{'~0':>7}"  # noise of the load
        vs = ""
        if peer is not None and f is not peer and not peer.error and "commit" in f.name \
                and peer.requests and peer.wall_s:
            vs = (f"req x{f.requests / f.commits / peer.requests:.2f} "
                  f"wall x{f.wall_s / f.commits / peer.wall_s:.2f}")
        say(f"{f.name:<32}" + "".join(f"{f.methods.get(v, 0):>7}" for v in VERBS)
            + f"{f.requests:>7}{f.wall_s:>8.2f}{trips}{net}  {vs:<22}{f.note}")


def targets(all_figs: dict[int, list[Figure]], base: dict[str, float]) -> bool:
    say("\n== targets (issue 38) ==")
    ok = True
    for lat, figs in all_figs.items():
        steady = next(f for f in figs if f.name == "small commit, steady")
        line = f"steady small commit at {lat} ms: {steady.requests} requests [<= 10: " \
               f"{'PASS' if steady.requests <= 10 else 'MISS'}]"
        if lat == 20:
            trips = steady.round_trips or 0
            line += f", {trips:.1f} round trips [<= 6: {'PASS' if trips <= 6 else 'MISS'}]"
            if steady.name in base:
                net = (steady.wall_s - base[steady.name]) / 0.02
                line += f" ({net:.1f} net of the wall time at 0 ms)"
        say(line)
        if lat == 50:
            exp = next(f for f in figs if f.name.startswith("expire"))
            say(f"{exp.name} at 50 ms: {exp.wall_s:.2f} s [<= 10 s: "
                f"{'PASS' if exp.wall_s <= 10 else 'MISS'}], POST (DeleteObjects) "
                f"{exp.methods.get('POST', 0)}, DELETE {exp.methods.get('DELETE', 0)}")
        ok &= not any(f.error for f in figs)
    return ok


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--latency", default="0,20,50", help="milliseconds per request, comma list")
    p.add_argument("--quick", action="store_true",
                   help="smaller tables (2,000-file health table, 30 snapshots, 200 orphans), "
                        "3 repeats")
    p.add_argument("--repeat", type=int, default=None, help="commits per median (default 5)")
    p.add_argument("--pypaimon-python", default=default_pypaimon_python(),
                   help="interpreter of a venv holding pypaimon 2.1.0 (default: .venv-interop "
                        "of this checkout or of its main worktree)")
    p.add_argument("--skip-pypaimon", action="store_true")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    latencies = sorted({int(x) for x in args.latency.split(",") if x.strip()})
    repeat = args.repeat or (3 if args.quick else 5)
    health_snapshots, expire_n, orphans = (100, 30, 200) if args.quick else (500, 100, 1000)
    health_files = health_snapshots * 20
    say(f"latencies {latencies} ms; health table {health_files:,} files, expiry of {expire_n} "
        f"snapshots, {orphans} orphans; cpus {os.cpu_count()}, load {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory(prefix="lf-bench-objstore-") as tmp:
        base = Path(tmp)
        start = time.monotonic()
        hcat = lf.Catalog(str(base / "health"))
        hcat.create_database("bench")
        write_health_table(hcat, "bench.big", health_snapshots, 10, 2)
        build_expiry(base / "expire", expire_n)
        build_orphans(base / "orphans")
        say(f"built on local disk in {time.monotonic() - start:.0f}s")
        with MotoS3Server() as moto, FaultProxy(moto.endpoint, lifetime=6 * 3600) as proxy:
            store = Store(proxy, moto.endpoint, new_bucket(moto.endpoint, "lf-bench"))
            start = time.monotonic()
            n = store.copy_in(base / "health", "health")
            say(f"uploaded the health table ({n} objects) in {time.monotonic() - start:.0f}s")
            side = None
            if not args.skip_pypaimon and args.pypaimon_python:
                side = PypaimonSide(args.pypaimon_python, store)
                if "error" not in side.info:
                    say(f"pypaimon {side.info['pypaimon']} (pyarrow {side.info['pyarrow']}) "
                        f"from {args.pypaimon_python}")
            elif not args.skip_pypaimon:
                say("pypaimon: no interpreter (build .venv-interop or pass --pypaimon-python)")
            all_figs: dict[int, list[Figure]] = {}
            walls0: dict[str, float] = {}
            try:
                for lat in latencies:
                    figs = commit_figures(store, lat, repeat)
                    figs.append(expiry_figure(store, lat, base / "expire", expire_n))
                    figs.append(orphan_figure(store, lat, base / "orphans", orphans))
                    figs += health_figures(store, lat, health_files)
                    peer = side.figure(lat, repeat) if side else None
                    all_figs[lat] = figs
                    if lat == 0:
                        walls0 = {f.name: f.wall_s for f in figs + ([peer] if peer else [])}
                    report(figs, peer, walls0)
            finally:
                if side:
                    side.close()
    ok = targets(all_figs, walls0)
    say("\n" + ("OK" if ok else "FAILED: see above"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
