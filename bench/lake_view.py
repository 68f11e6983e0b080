"""The Lake view's serve times for `--tables` tables (default 50) on an embedded moto S3 server,
through Airflow's own API app (the provider's plugin mounted by `create_app()`) served by
uvicorn on 127.0.0.1 and asked over HTTP with a Bearer token, as a browser's page would be.

Timed, each the best of `--repeat` requests (the cold ones run once per repeat, on an emptied
cache — `lake_view.service.clear()`):

* the table list's JSON (`/lakeformat/api/tables`) and page (`/lakeformat/`): cold (the
  connection opened, the tables listed, every table's `maintenance_due()` computed), warm
  (within `[lakeformat] lake_view_ttl`: served from the cache), and revalidated (past the TTL,
  no table changed: each table's snapshot ids read, nothing computed);
* one table's page: cold and warm (it always revalidates its table's snapshot ids).

Target (issue 36): the warm table list of 50 tables in <= 1 s. There is no peer: no other
tool serves a page of Paimon tables' health. Tables are built on local disk (every third with
compaction debt) and uploaded, as `bench/health.py` does.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# the script's folder holds bench/airflow.py, which would shadow the airflow package
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != REPO / "bench"]
if str(REPO) not in sys.path:  # run as `python bench/lake_view.py` from a checkout
    sys.path.insert(0, str(REPO))

from bench._s3_upload import upload  # noqa: E402  (bench/ is off the path: see above)


def say(msg: str) -> None:
    print(msg, flush=True)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tables", type=int, default=50)
    p.add_argument("--commits", type=int, default=3,
                   help="commits of each table (every third gets 2x more: compaction due)")
    p.add_argument("--repeat", type=int, default=3)
    return p.parse_args(argv)


def airflow_env(home: Path) -> None:
    """A private Airflow home; set before anything imports airflow."""
    (home / "dags").mkdir(parents=True)
    os.environ.update({
        "AIRFLOW_HOME": str(home), "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(home / "dags"),
        "AIRFLOW__LOGGING__LOGGING_LEVEL": "ERROR",
        "AIRFLOW__API_AUTH__JWT_SECRET": "lake-view-bench-" + "k" * 64,
        "AIRFLOW__LAKEFORMAT__LAKE_VIEW_CONNECTIONS": "lakeformat_default",
    })


def build(root: Path, tables: int, commits: int) -> None:
    import numpy as np
    import pyarrow as pa

    import lakeformat as lf

    schema = pa.schema([pa.field("dt", pa.string(), nullable=False),
                        pa.field("id", pa.int64(), nullable=False), ("v", pa.int64())])
    cat = lf.Catalog(str(root))
    cat.create_database("bench")
    ids = np.arange(64, dtype=np.int64)
    batch = pa.table({"dt": np.repeat(["2024-01-01", "2024-01-02"], len(ids)),
                      "id": np.tile(ids, 2), "v": np.zeros(2 * len(ids), dtype=np.int64)},
                     schema=schema)
    for i in range(tables):
        t = cat.create_table(f"bench.t{i:02d}", schema, primary_keys=["dt", "id"],
                             partition_keys=["dt"], options={"bucket": "2"})
        for _ in range(commits * (2 if i % 3 == 0 else 1)):
            t.write(batch)


def serve(app) -> tuple[str, Callable[[], None]]:
    """Run `app` under uvicorn on 127.0.0.1 in a thread: (base URL, stop)."""
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)

    def stop() -> None:
        server.should_exit = True
        thread.join(10)
        sock.close()

    return f"http://127.0.0.1:{port}", stop


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="lf-bench-lake-view-") as tmp:
        airflow_env(Path(tmp) / "airflow")
        start = time.monotonic()
        build(Path(tmp) / "wh", args.tables, args.commits)
        say(f"{args.tables} tables built on local disk in {time.monotonic() - start:.0f}s; "
            f"cpus {os.cpu_count()}, load {os.getloadavg()[0]:.1f}")
        from lakeformat.demo import embedded_s3

        with embedded_s3() as (warehouse, options):
            n = upload(Path(tmp) / "wh", options, warehouse)
            say(f"uploaded {n} objects to moto")
            extra = {k: v for k, v in options.items()
                     if k not in ("s3.access-key", "s3.secret-key")}
            os.environ["AIRFLOW_CONN_LAKEFORMAT_DEFAULT"] = json.dumps(
                {"conn_type": "lakeformat", "host": warehouse,
                 "login": options["s3.access-key"], "password": options["s3.secret-key"],
                 "extra": extra})
            return run(args)


def run(args: argparse.Namespace) -> int:
    from airflow.api_fastapi.app import create_app, get_auth_manager
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser
    from airflow.utils.db import initdb

    from lakeformat_airflow.lake_view import service

    initdb()
    start = time.monotonic()
    app = create_app()
    say(f"Airflow's API app with the plugin built in {time.monotonic() - start:.1f}s")
    token = get_auth_manager().generate_jwt(SimpleAuthManagerUser(username="bench",
                                                                  role="viewer"))
    base, stop = serve(app)
    headers = {"Authorization": f"Bearer {token}"}

    def get(path: str) -> tuple[float, bytes, str]:
        request = urllib.request.Request(base + path, headers=headers)
        began = time.perf_counter()
        with urllib.request.urlopen(request, timeout=300) as resp:
            body = resp.read()
            cache = resp.headers.get("X-Lake-Cache", "")
        return time.perf_counter() - began, body, cache

    def timed(path: str, cold: bool) -> tuple[float, bytes, str]:
        best: tuple[float, bytes, str] | None = None
        for _ in range(args.repeat):
            if cold:
                service.clear()
            elif best is None:
                get(path)  # fill the cache
            took = get(path)
            if best is None or took[0] < best[0]:
                best = took
        assert best is not None
        return best

    results: list[tuple[str, float, str]] = []
    ok = True
    try:
        rows_s, body, cache = timed("/lakeformat/api/tables", cold=True)
        rows = json.loads(body)
        errors = [r for r in rows if r["error"]]
        due = [r for r in rows if r["report"] and r["report"]["actions"]]
        say(f"\ntable list: {len(rows)} tables, {len(due)} with maintenance due, "
            f"{len(errors)} errors")
        ok &= len(rows) == args.tables and not errors
        results.append(("list JSON, cold", rows_s, cache))
        results.append(("list JSON, warm", *timed("/lakeformat/api/tables", cold=False)[::2]))
        os.environ["AIRFLOW__LAKEFORMAT__LAKE_VIEW_TTL"] = "0"
        results.append(("list JSON, revalidated (TTL passed, nothing changed)",
                        *timed("/lakeformat/api/tables", cold=False)[::2]))
        del os.environ["AIRFLOW__LAKEFORMAT__LAKE_VIEW_TTL"]
        results.append(("list page, cold", *timed("/lakeformat/", cold=True)[::2]))
        warm_page = timed("/lakeformat/", cold=False)
        ok &= warm_page[1].count(b"<tr data-table=") == args.tables
        results.append(("list page, warm", warm_page[0], warm_page[2]))
        one = "/lakeformat/tables/bench/t00"
        results.append(("table page (t00), cold", *timed(one, cold=True)[::2]))
        results.append(("table page (t00), warm", *timed(one, cold=False)[::2]))
    finally:
        stop()
    say(f"\nbest of {args.repeat}, over HTTP on 127.0.0.1 (X-Lake-Cache says what the cache "
        "did):")
    for label, seconds, cache in results:
        say(f"  {label:<55} {seconds * 1000:8.0f} ms   {cache}")
    warm = max(s for label, s, _ in results if label.startswith("list") and "warm" in label)
    say(f"\nwarm table list of {args.tables} tables: {warm * 1000:.0f} ms  [target <= 1 s: "
        f"{'PASS' if warm <= 1 else 'MISS'}]")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
