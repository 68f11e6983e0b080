"""`make airflow` runs `python -m lakeformat_airflow.demo --serve`: the demo, then a real local
Airflow (API server, scheduler, triggerer, DAG processor) over the demo's warehouse and S3
server. It must come up healthy on the port it is given, print the login that works, serve the
Lake page's tables (the demo's table and the one with compaction debt), leave
`lakeformat_on_debt` unpaused — and on Ctrl-C (SIGINT to its process group, as a terminal
sends it) stop everything it started: its exit status 0, no process left whose working
directory is its Airflow home (where every service runs), its port free again.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
READY_LINE = "Ctrl-C stops Airflow and the S3 server."


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _processes_in(folder: Path) -> list[str]:
    """Processes whose working directory is `folder` (pid and command line)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if Path(os.readlink(entry / "cwd")) == folder:
                found.append(f"{entry.name} "
                             + (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode())
        except OSError:
            continue
    return found


def _call(base: str, method: str, path: str, token: str | None = None,
          body: object = None) -> tuple[int, object]:
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(base + path, method=method, headers=headers,
                                 data=None if body is None else json.dumps(body).encode())
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


def test_make_airflow_serves_the_lake_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    home = tmp_path / "airflow"
    port = _free_port()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AIRFLOW", "LAKEFORMAT_"))}
    proc = subprocess.Popen(
        [sys.executable, "-m", "lakeformat_airflow.demo", "--serve", "--port", str(port),
         "--home", str(home), "--engine", "local"],
        cwd=ROOT, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL, start_new_session=True)
    lines: list[str] = []
    ready = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if READY_LINE in line:
                ready.set()
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 600  # ~1 min alone; more on a loaded machine
        while not ready.is_set() and proc.poll() is None and time.monotonic() < deadline:
            ready.wait(0.5)
        out = "".join(lines)
        assert ready.is_set(), out[-4000:]
        base = f"http://127.0.0.1:{port}"
        assert f"the Lake page  {base}/plugin/lake" in out
        password = re.search(r"log in as +admin / (\S+)", out).group(1)

        status, body = _call(base, "POST", "/auth/token",
                             body={"username": "admin", "password": password})
        assert status == 201, body
        token = body["access_token"]
        status, health = _call(base, "GET", "/api/v2/monitor/health")
        assert status == 200 and all(health[k]["status"] == "healthy" for k in (
            "metadatabase", "scheduler", "triggerer", "dag_processor")), health
        status, tables = _call(base, "GET", "/lakeformat/api/tables", token)
        assert status == 200, tables
        by_name = {t["table"]: t for t in tables}
        assert sorted(by_name) == ["shop.clicks", "shop.orders_wide"], tables
        assert "compact" in [a["kind"] for a in by_name["shop.clicks"]["report"]["actions"]]
        assert by_name["shop.orders_wide"]["error"] is None
        status, dag = _call(base, "GET", "/api/v2/dags/lakeformat_on_debt", token)
        assert status == 200 and dag["is_paused"] is False, dag
        assert _call(base, "GET", "/lakeformat/api/tables")[0] == 401  # no login, no tables

        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C in the terminal `make airflow` runs in
        assert proc.wait(120) == 0, "".join(lines)[-4000:]
        reader.join(10)
        out = "".join(lines)
        assert "Airflow stopped; no process of it is left." in out
        assert _processes_in(home) == []
        with socket.socket() as s:  # free again for a server (closed connections may linger)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", port))
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        for line in _processes_in(home):  # never leave a service behind, even on failure
            os.kill(int(line.split()[0]), signal.SIGKILL)
