"""Table health and due maintenance at scale, on an embedded moto S3 server: seconds and S3
requests, and proof that no data file is read.

* `health()` of one table with `--files` live data files (default 10,000) written by
  `--snapshots` commits (default 500): every commit adds one file to each of `--partitions` x
  `--buckets` buckets and nothing is compacted, so the files pile up as level-0 sorted runs —
  the state health exists to see. Timed cold (a fresh catalog, nothing cached) and again on the
  same table object.
* `maintenance_due` of `--tables` tables (default 50, a few commits each, some with
  compaction debt) through `lakeformat.health.maintenance_due_many`, cold.

Every HTTP request the tables' S3 client sends is counted by operation (a botocore
`before-send` handler); a GET of a key under a `bucket-N/` directory (a data file) or under
`index/` (deletion vectors, hash index) fails the run. Targets (issue 35): health of the
10,000-file table <= 2 s, due over 50 tables <= 10 s. There is no peer: neither pypaimon nor
any other Python tool computes a Paimon table's health, and no JVM runs here for Java's
system tables.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import unquote, urlsplit

import numpy as np
import pyarrow as pa

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as `python bench/health.py` from a checkout
    sys.path.insert(0, str(REPO))

from _s3_upload import upload  # noqa: E402

import lakeformat as lf  # noqa: E402
from lakeformat.health import maintenance_due_many  # noqa: E402

SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False),
                    pa.field("id", pa.int64(), nullable=False), ("v", pa.int64())])


def say(msg: str) -> None:
    print(msg, flush=True)


class RequestLog:
    """HTTP requests of a boto3/botocore client by operation, and GETs of data files."""

    def __init__(self, client) -> None:
        self.ops: Counter[str] = Counter()
        self.data_reads: list[str] = []
        self._lock = threading.Lock()
        client.meta.events.register("before-send.s3", self._sent)

    def _sent(self, request, event_name: str, **_) -> None:
        op = event_name.rsplit(".", 1)[-1]
        key = unquote(urlsplit(request.url).path)
        with self._lock:
            self.ops[op] += 1
            if op == "GetObject" and ("/bucket-" in key or "/index/" in key):
                self.data_reads.append(key)

    def reset(self) -> None:
        with self._lock:
            self.ops.clear()
            self.data_reads.clear()


def write_table(cat: lf.Catalog, name: str, commits: int, partitions: int, buckets: int,
                rows: int = 4) -> None:
    t = cat.create_table(name, SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                         options={"bucket": str(buckets)})
    # ids 0..rows*buckets-1 land in every bucket of every partition (checked below)
    ids = np.arange(rows * buckets * 8, dtype=np.int64)
    dts = [f"2024-01-{d + 1:02d}" for d in range(partitions)]
    batch = pa.table({"dt": np.repeat(dts, len(ids)), "id": np.tile(ids, partitions),
                      "v": np.zeros(len(ids) * partitions, dtype=np.int64)}, schema=SCHEMA)
    for i in range(commits):
        t.write(batch.set_column(2, "v", pa.array(np.full(batch.num_rows, i, np.int64))))


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--snapshots", type=int, default=500)
    p.add_argument("--partitions", type=int, default=10)
    p.add_argument("--buckets", type=int, default=2)
    p.add_argument("--tables", type=int, default=50)
    p.add_argument("--table-commits", type=int, default=4,
                   help="commits of each of the --tables tables (every third gets 3x more)")
    p.add_argument("--upload-workers", type=int, default=8)
    p.add_argument("--repeat", type=int, default=3)
    return p.parse_args(argv)


def timed_health(warehouse: str, options: dict[str, str], repeat: int) -> dict:
    cold_s, warm_s, ops, reads, result = [], [], Counter(), [], None
    for _ in range(repeat):
        t = lf.Catalog(warehouse, options=options).get_table("bench.big")
        log = RequestLog(t.file_io.client)
        start = time.monotonic()
        result = t.health()
        cold_s.append(time.monotonic() - start)
        ops, reads = Counter(log.ops), list(log.data_reads)
        start = time.monotonic()
        t.health()
        warm_s.append(time.monotonic() - start)
    return {"cold_s": min(cold_s), "warm_s": min(warm_s), "ops": ops, "data_reads": reads,
            "health": result}


def timed_due(warehouse: str, options: dict[str, str], repeat: int) -> dict:
    best, reports, ops, reads = None, [], Counter(), []
    for _ in range(repeat):
        cat = lf.Catalog(warehouse, options=options)
        log = RequestLog(cat.file_io.client)
        start = time.monotonic()
        reports = maintenance_due_many(cat, "bench.t*")
        took = time.monotonic() - start
        if best is None or took < best:
            best, ops, reads = took, Counter(log.ops), list(log.data_reads)
    return {"s": best, "ops": ops, "data_reads": reads, "reports": reports}


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    per_commit = args.partitions * args.buckets
    files = args.snapshots * per_commit
    say(f"health of 1 table: {args.snapshots} snapshots x {per_commit} files = {files} live "
        f"data files; due over {args.tables} tables; cpus {os.cpu_count()}, load "
        f"{os.getloadavg()[0]:.1f}")
    ok = True
    with tempfile.TemporaryDirectory(prefix="lf-bench-health-") as tmp:
        root = Path(tmp) / "wh"
        cat = lf.Catalog(str(root))
        cat.create_database("bench")
        start = time.monotonic()
        write_table(cat, "bench.big", args.snapshots, args.partitions, args.buckets)
        for i in range(args.tables):
            write_table(cat, f"bench.t{i:02d}", args.table_commits * (3 if i % 3 == 0 else 1),
                        2, 2)
        say(f"built on local disk in {time.monotonic() - start:.0f}s")
        from lakeformat.demo import embedded_s3

        with embedded_s3() as (warehouse, options):
            start = time.monotonic()
            n = upload(root, options, warehouse, args.upload_workers)
            say(f"uploaded {n} objects to moto in {time.monotonic() - start:.0f}s")

            h = timed_health(warehouse, options, args.repeat)
            health = h["health"]
            live = health.totals["files"]
            if live != files:
                say(f"WRONG: health counts {live} live files, the table has {files}")
                ok = False
            say(f"\nhealth(): score {health.score}, {live} files in {health.totals['buckets']} "
                f"buckets, worst bucket {health.max_sorted_runs} sorted runs, "
                f"{health.snapshots['count']} snapshots")
            say(f"  cold {h['cold_s']:.2f}s (best of {args.repeat}, fresh catalog), same "
                f"table again {h['warm_s']:.2f}s  [target <= 2 s: "
                f"{'PASS' if h['cold_s'] <= 2 else 'MISS'}]")
            say(f"  S3 requests (cold): {dict(h['ops'])} (total {sum(h['ops'].values())})")
            say(f"  data or index files read: {len(h['data_reads'])}")
            ok &= not h["data_reads"]

            d = timed_due(warehouse, options, args.repeat)
            due = [r for r in d["reports"] if r.actions]
            errors = [r for r in d["reports"] if r.errors]
            say(f"\nmaintenance_due over {len(d['reports'])} tables: {len(due)} with actions "
                f"due, {len(errors)} errors")
            say(f"  {d['s']:.2f}s (best of {args.repeat}, fresh catalog)  [target <= 10 s: "
                f"{'PASS' if d['s'] <= 10 else 'MISS'}]")
            say(f"  S3 requests: {dict(d['ops'])} (total {sum(d['ops'].values())})")
            say(f"  data or index files read: {len(d['data_reads'])}")
            ok &= not d["data_reads"] and not errors and len(d["reports"]) == args.tables
            # every third table has 3x the commits: above the compaction trigger, the rest not
            want_due = {f"bench.t{i:02d}" for i in range(args.tables) if i % 3 == 0}
            got_due = {r.table for r in due}
            if args.table_commits < 5 <= args.table_commits * 3 and got_due != want_due:
                say(f"WRONG: due tables {sorted(got_due)} != {sorted(want_due)}")
                ok = False
    say("\n" + ("OK" if ok else "FAILED: see above"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
