"""Snapshot expiry at scale: requests and seconds per expired snapshot, on S3 and local disk.

Builds a table of `--snapshots` commits (default 500) that together reference `--files` data
files (default 20,000): every commit is an overwrite of the whole table with `files /
snapshots` buckets, so each commit replaces the previous commit's files and expiring all but
the latest snapshot deletes (snapshots - 1) x files-per-commit data files plus their manifests,
manifest lists and snapshot files. The table is written once on local disk by lakeformat, then

* S3: uploaded object by object to an embedded moto S3 server on 127.0.0.1
  (`lakeformat.demo.embedded_s3`) and expired there with
  `expire_snapshots(retain_min=1, older_than=0, max_deletes=snapshots)`; every HTTP request
  the table's boto3 client sends is counted by operation (a botocore `before-send` handler),
  and GETs per manifest key are checked to be at most one;
* local disk: a copy of the directory expired the same way.

A dry run (planning only: snapshot and manifest reads) is timed before each real run. The
script exits non-zero when expiry deleted the wrong number of files or the latest snapshot no
longer reads back its rows. There is no Python peer (pypaimon never expires snapshots) and no
JVM here for Java Paimon: the figures are lakeformat's alone.
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import os
import shutil
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
if str(REPO) not in sys.path:  # run as `python bench/expire.py` from a checkout
    sys.path.insert(0, str(REPO))

from _s3_upload import upload  # noqa: E402

import lakeformat as lf  # noqa: E402

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int64())])


def say(msg: str) -> None:
    print(msg, flush=True)


class RequestLog:
    """HTTP requests a boto3 client sends, by operation; GETs by key."""

    def __init__(self, client) -> None:
        self.ops: Counter[str] = Counter()
        self.gets: Counter[str] = Counter()
        self._lock = threading.Lock()
        client.meta.events.register("before-send.s3", self._sent)

    def _sent(self, request, event_name: str, **_) -> None:
        op = event_name.rsplit(".", 1)[-1]
        with self._lock:
            self.ops[op] += 1
            if op == "GetObject":
                self.gets[unquote(urlsplit(request.url).path).split("/", 2)[2]] += 1

    def reset(self) -> None:
        self.ops.clear()
        self.gets.clear()


def build(root: Path, snapshots: int, per_commit: int) -> tuple[lf.Table, pa.Table]:
    cat = lf.Catalog(str(root))
    cat.create_database("bench")
    t = cat.create_table("bench.t", SCHEMA, primary_keys=["id"],
                         options={"bucket": str(per_commit)})
    ids = np.arange(per_commit * 32)
    start = time.monotonic()
    for i in range(snapshots):
        t.write(pa.table({"id": ids, "v": ids * 1000 + i}, schema=SCHEMA), overwrite=True)
        if (i + 1) % 100 == 0:
            say(f"  built {i + 1}/{snapshots} snapshots ({time.monotonic() - start:.0f}s)")
    files = len(t.files())
    if files != per_commit:
        raise SystemExit(f"expected {per_commit} live files, got {files}: raise rows per commit")
    want = pa.table({"id": ids, "v": ids * 1000 + snapshots - 1}, schema=SCHEMA)
    return t, want


def expire(t: lf.Table, snapshots: int, per_commit: int, want: pa.Table, what: str,
           log: RequestLog | None) -> dict:
    start = time.monotonic()
    dry = t.expire_snapshots(retain_min=1, older_than=dt.timedelta(0), max_deletes=snapshots,
                             dry_run=True)
    dry_s = time.monotonic() - start
    dry_ops = dict(log.ops) if log else {}
    if log:
        log.reset()
    start = time.monotonic()
    res = t.expire_snapshots(retain_min=1, older_than=dt.timedelta(0), max_deletes=snapshots)
    real_s = time.monotonic() - start
    ops, gets = (Counter(log.ops), Counter(log.gets)) if log else (Counter(), Counter())
    ok = (res.snapshots_deleted == list(range(1, snapshots))
          and res.data_files_deleted == (snapshots - 1) * per_commit
          and res.deleted == dry.deleted and not res.skipped
          and t.read().sort_by("id").equals(want))
    n = len(res.snapshots_deleted)
    out = {"what": what, "ok": ok, "expired": n, "files": len(res.deleted),
           "data": res.data_files_deleted, "manifests": res.manifest_files_deleted,
           "dry_s": dry_s, "real_s": real_s, "ms_per_snapshot": 1000 * real_s / max(n, 1),
           "dry_ops": dry_ops}
    if log:
        manifest_gets = [c for k, c in gets.items() if "/manifest/" in k]
        snapshot_gets = [c for k, c in gets.items() if "/snapshot/snapshot-" in k]
        out.update(ops=dict(ops), max_gets_per_manifest=max(manifest_gets, default=0),
                   manifests_read=len(manifest_gets),
                   max_gets_per_snapshot=max(snapshot_gets, default=0),
                   delete_floor=math.ceil(len(res.deleted) / 1000))
    return out


def report(r: dict) -> None:
    say(f"\n{r['what']}: expired {r['expired']} snapshots, deleted {r['files']} files "
        f"({r['data']} data, {r['manifests']} manifests/lists) -- "
        f"{'OK' if r['ok'] else 'WRONG RESULT'}")
    say(f"  dry run (plan only) {r['dry_s']:.2f}s; real run {r['real_s']:.2f}s = "
        f"{r['ms_per_snapshot']:.1f} ms per expired snapshot")
    if "ops" in r:
        say(f"  requests of the dry run: {r['dry_ops']}")
        say(f"  requests of the real run: {r['ops']} (total {sum(r['ops'].values())})")
        say(f"  DeleteObjects {r['ops'].get('DeleteObjects', 0)} for {r['files']} keys "
            f"(floor ceil(n/1000) = {r['delete_floor']}); {r['manifests_read']} manifests and "
            f"lists read, at most {r['max_gets_per_manifest']} GET each; snapshot files at "
            f"most {r['max_gets_per_snapshot']} GETs each")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--snapshots", type=int, default=500)
    p.add_argument("--files", type=int, default=20_000,
                   help="data files referenced by all snapshots together")
    p.add_argument("--upload-workers", type=int, default=8)
    p.add_argument("--skip-s3", action="store_true")
    p.add_argument("--skip-local", action="store_true")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    per_commit = max(1, args.files // args.snapshots)
    say(f"{args.snapshots} snapshots x {per_commit} data files "
        f"({args.snapshots * per_commit} data files), cpus {os.cpu_count()}, "
        f"load {os.getloadavg()[0]:.1f}")
    results = []
    with tempfile.TemporaryDirectory(prefix="lf-bench-expire-") as tmp:
        base = Path(tmp)
        start = time.monotonic()
        t, want = build(base / "wh", args.snapshots, per_commit)
        say(f"built on local disk in {time.monotonic() - start:.0f}s")
        table_dir = Path(t.path.removeprefix("file://"))
        if not args.skip_local:
            copy = base / "copy" / "bench.db" / "t"
            shutil.copytree(table_dir, copy)
            lt = lf.Catalog(str(base / "copy")).get_table("bench.t")
            results.append(expire(lt, args.snapshots, per_commit, want, "local disk", None))
            report(results[-1])
        if not args.skip_s3:
            from lakeformat.demo import embedded_s3

            with embedded_s3() as (warehouse, options):
                start = time.monotonic()
                n = upload(base / "wh", options, warehouse, args.upload_workers)
                say(f"uploaded {n} objects to moto in {time.monotonic() - start:.0f}s")
                st = lf.Catalog(warehouse, options=options).get_table("bench.t")
                log = RequestLog(st.file_io.client)
                results.append(expire(st, args.snapshots, per_commit, want,
                                      "S3 (moto on 127.0.0.1)", log))
                report(results[-1])
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
