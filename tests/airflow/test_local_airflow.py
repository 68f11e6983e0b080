"""`make airflow` runs `python -m lakeformat_airflow.demo --serve`: the demo, then a real local
Airflow (API server, scheduler, triggerer, DAG processor) over the demo's warehouse and S3
server. It must come up healthy on the port it is given, print the login that works, serve the
Lake page's tables (the demo's table and the one with compaction debt), leave
`lakeformat_on_debt` unpaused — and on Ctrl-C (SIGINT to its process group, as a terminal
sends it) stop everything it started: its exit status 0, no process left whose working
directory is its Airflow home (where every service runs), its port free again.

`LocalAirflow.stop` alone, over stand-in services (no Airflow): a group that ignores SIGTERM is
killed after the grace period, a group holding only a zombie (exited, its parent outside the
group never reaps it) does not hold the stop up, and what survives SIGKILL is reported
within the bounded wait.
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

import pytest

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


#: a service that ignores SIGTERM, with a child in its group that ignores it too
STUBBORN = """
import os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = os.fork()
if child:
    print(child, flush=True)
time.sleep(600)
"""

#: a parent (in its own group) whose child moves to a group of its own and exits: a zombie
#: that the parent, alive and outside the child's group, never reaps
ZOMBIE_PARENT = """
import os, time
child = os.fork()
if child == 0:
    os.setpgid(0, 0)
    os._exit(0)
print(child, flush=True)
time.sleep(600)
"""


def _state(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rfind(")") + 2:].split()[0]


class _Exited:
    """A `Popen` stand-in for a service whose process has exited."""

    def __init__(self, pid: int) -> None:
        self.pid, self.returncode = pid, 0

    def poll(self) -> int:
        return 0


def _spawn(script: str) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen([sys.executable, "-c", script], text=True, stdout=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    assert proc.stdout is not None
    return proc, int(proc.stdout.readline())


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def test_stop_kills_a_group_that_ignores_sigterm(tmp_path, capsys):
    from lakeformat_airflow.local_airflow import LocalAirflow, _live

    proc, child = _spawn(STUBBORN)
    airflow = LocalAirflow(tmp_path, 0, env={})
    airflow.procs = {"scheduler": proc}
    try:
        started = time.monotonic()
        assert airflow.stop(grace=0.5, kill_wait=10) == []
        assert time.monotonic() - started < 10
        assert proc.returncode == -signal.SIGKILL and _live(proc.pid) == []
        assert _state(child) in (None, "Z")  # killed (a zombie until its new parent reaps it)
        assert f"airflow scheduler did not stop in 0.5 s: killed (pid {proc.pid}, {child})" \
            in capsys.readouterr().out
        assert airflow.procs == {}
    finally:
        _kill_group(proc.pid)
        proc.wait(10)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
def test_stop_does_not_wait_for_a_zombie(tmp_path, capsys):
    """A group whose only process is a zombie (signal 0 to the group still succeeds) is
    stopped: it runs nothing. The old stop waited the whole grace period, then forever."""
    from lakeformat_airflow.local_airflow import LocalAirflow

    parent, zombie = _spawn(ZOMBIE_PARENT)
    try:
        deadline = time.monotonic() + 10
        while _state(zombie) != "Z" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _state(zombie) == "Z"
        os.killpg(zombie, 0)  # the group "exists"
        airflow = LocalAirflow(tmp_path, 0, env={})
        airflow.procs = {"triggerer": _Exited(zombie)}
        started = time.monotonic()
        assert airflow.stop(grace=30, kill_wait=10) == []
        assert time.monotonic() - started < 5  # no grace period spent, no SIGKILL
        out = capsys.readouterr().out
        assert "did not stop" not in out
        assert f"airflow triggerer: pid {zombie} exited, left as zombies" in out
    finally:
        _kill_group(parent.pid)
        parent.wait(10)


def test_stop_reports_what_survives_sigkill(tmp_path, monkeypatch):
    """A process SIGKILL does not end (stuck in the kernel: simulated) is reported by pid
    after the bounded wait, never waited for forever; `serve` then exits with 1."""
    from lakeformat_airflow import local_airflow

    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                            stdin=subprocess.DEVNULL, start_new_session=True)
    monkeypatch.setattr(local_airflow, "_live", lambda pgid: [pgid])
    airflow = local_airflow.LocalAirflow(tmp_path, 0, env={})
    airflow.procs = {"api-server": proc}
    try:
        started = time.monotonic()
        left = airflow.stop(grace=0.3, kill_wait=0.6)
        assert time.monotonic() - started < 5
        assert left == [f"airflow api-server: pid {proc.pid} still running after SIGKILL"]
        assert list(airflow.procs) == ["api-server"]  # still ours to look at
    finally:
        _kill_group(proc.pid)
        proc.wait(10)
