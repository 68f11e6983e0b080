"""What the table locks cost a commit: extra requests and latency, measured in one run.

* S3 (a moto server over HTTP on 127.0.0.1): the same small commits to one table without a
  commit lock and with `lock.enabled=true`, `lock.type=s3` (a lease object per commit:
  create, publish, conditional delete). Requests are counted at the client (botocore's
  `before-send` event), latency is the wall time of `Table.write`. Targets: <= 3 extra
  requests per commit and <= 1.3x the unlocked commit's latency.
* JDBC (`lock.type=jdbc`): one lock round trip (acquire + release) on SQLite and, when a
  PostgreSQL server can be started from Debian's binaries, on PostgreSQL.

    .venv/bin/python bench/lock.py [--commits 40]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import lakeformat as lf  # noqa: E402
from lakeformat.lock.guard import unguarded  # noqa: E402

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64())])


def _moto() -> Any:
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    return server


def s3_case(endpoint: str, locked: bool, commits: int) -> dict[str, float]:
    bucket = f"lf-bench-{uuid.uuid4().hex[:12]}"
    options = {"s3.endpoint": endpoint, "s3.access-key": "bench", "s3.secret-key": "bench",
               "s3.region": "us-east-1"}
    if locked:
        options.update({"lock.enabled": "true", "lock.type": "s3"})
    cat = lf.Catalog(f"s3://{bucket}/wh", options=options)
    client = unguarded(cat.file_io).client
    client.create_bucket(Bucket=bucket)
    sent = [0]
    client.meta.events.register("before-send.s3", lambda **_: sent.__setitem__(0, sent[0] + 1))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    for i in range(3):  # warm-up: connections, the store probe, caches
        t.write(pa.table({"id": [i], "v": [i]}))
    times, before = [], sent[0]
    for i in range(commits):
        start = time.perf_counter()
        t.write(pa.table({"id": [1000 + i], "v": [i]}))
        times.append(time.perf_counter() - start)
    return {"requests": (sent[0] - before) / commits, "median_ms": statistics.median(times) * 1e3,
            "mean_ms": statistics.fmean(times) * 1e3}


def jdbc_round_trip(uri: str, options: dict[str, str], rounds: int) -> float:
    from lakeformat.lock.jdbc import JdbcLock
    from lakeformat.lock.jdbc_client import JdbcClient
    from lakeformat.lock.options import LockConfig

    client = JdbcClient.from_options({"uri": uri, **options})
    try:
        lock = JdbcLock(client, "bench.db.t", "bench lock", LockConfig(type="jdbc"))
        lock.acquire("warm-up").release()
        times = []
        for _ in range(rounds):
            start = time.perf_counter()
            lock.acquire("bench").release()
            times.append(time.perf_counter() - start)
        return statistics.median(times) * 1e3
    finally:
        client.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--commits", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=50, help="JDBC lock round trips")
    args = ap.parse_args()

    server = _moto()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        plain = s3_case(endpoint, False, args.commits)
        locked = s3_case(endpoint, True, args.commits)
    finally:
        server.stop()
    extra = locked["requests"] - plain["requests"]
    ratio = locked["median_ms"] / plain["median_ms"]
    print(f"S3 commit (moto, {args.commits} commits each, same run)")
    print(f"  {'':22s} {'requests/commit':>16s} {'median ms':>10s} {'mean ms':>9s}")
    for name, r in (("no lock", plain), ("lock.type=s3", locked)):
        print(f"  {name:22s} {r['requests']:16.1f} {r['median_ms']:10.1f} {r['mean_ms']:9.1f}")
    print(f"  extra requests/commit {extra:.1f} (target <= 3: {'PASS' if extra <= 3 else 'MISS'})")
    print(f"  latency ratio {ratio:.2f}x (target <= 1.3x: {'PASS' if ratio <= 1.3 else 'MISS'})")

    print(f"JDBC lock round trip (acquire + release, median of {args.rounds})")
    with tempfile.TemporaryDirectory() as d:
        ms = jdbc_round_trip(f"jdbc:sqlite:{d}/catalog.db", {}, args.rounds)
        print(f"  sqlite      {ms:7.2f} ms")
    from tests.support.postgres import PostgresServer, PostgresStartError

    pg = PostgresServer()
    try:
        pg.start()
        ms = jdbc_round_trip(pg.jdbc_url(pg.new_database()), {}, args.rounds)
        print(f"  postgresql  {ms:7.2f} ms")
    except PostgresStartError as e:
        print(f"  postgresql  not measured: {e}")
    finally:
        pg.stop()


if __name__ == "__main__":
    main()
