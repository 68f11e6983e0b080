"""`make airflow`: a real local Airflow over the demo's warehouse, to click through the Lake page
and the DAGs — `python -m lakeformat_airflow.demo --serve [--port 8080]`.

The demo runs first (its S3 server on 127.0.0.1, the table `shop.orders_wide` ingested and
maintained by the DAGs; see `lakeformat_airflow.demo`), then a second table with compaction
debt is written beside it (`shop.clicks`: small commits, more sorted runs than
`num-sorted-run.compaction-trigger`), and this module starts Airflow's four services over the
same Airflow home and S3 server, each in a process group of its own:

    airflow api-server (127.0.0.1:PORT, the UI and the Lake page)   airflow scheduler
    airflow triggerer (the debt watcher of lakeformat_on_debt)      airflow dag-processor

The simple auth manager with one user, `admin`, whose password is made for the run and printed;
an explicit JWT secret shared by the services (the scheduler's task tokens must verify in the
API server's execution API); the LocalExecutor with 2 worker slots. Their logs go to
`<home>/logs/<service>.log`. `lakeformat_on_debt` is unpaused, so a run the Lake page's button
triggers (or the debt watcher) is executed; the other DAGs stay paused as the demo left them.

Ctrl-C (SIGINT), SIGTERM or SIGHUP stops every service (SIGTERM to each group, SIGKILL to what
still runs after a grace period, every wait bounded, every exited child reaped), then the S3
server: nothing keeps running. What could not be stopped is printed by pid and the exit status
is 1. A service that exits on its own stops the others too, and its log's tail is printed.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

__all__ = ["SERVICES", "LocalAirflow", "settings", "serve"]

SERVICES = ("api-server", "scheduler", "triggerer", "dag-processor")
HOST = "127.0.0.1"
USER = "admin"
#: the DAG the Lake page's button triggers: unpaused so its runs execute
UNPAUSED = ("lakeformat_on_debt",)
_READY_TIMEOUT_S = 180
_STOP_GRACE_S = 30
#: how long the SIGKILLed may take to go
_KILL_WAIT_S = 10


class LocalAirflowError(RuntimeError):
    pass


def port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind((HOST, port))
        except OSError:
            return False
    return True


def settings(home: Path, port: int) -> tuple[dict[str, str], str]:
    """The configuration every service (and the demo before them) runs with — set in this
    process's environment before anything imports airflow — and the admin's password (made
    for this run, written to the home's passwords file)."""
    password = secrets.token_urlsafe(9)
    passwords = home / "simple_auth_manager_passwords.json"
    passwords.write_text(json.dumps({USER: password}))
    passwords.chmod(0o600)
    base = f"http://{HOST}:{port}"
    env = {
        "AIRFLOW__CORE__AUTH_MANAGER": "airflow.api_fastapi.auth.managers.simple."
                                       "simple_auth_manager.SimpleAuthManager",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{USER}:admin",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "False",
        "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(32),
        "AIRFLOW__API__HOST": HOST,
        "AIRFLOW__API__PORT": str(port),
        "AIRFLOW__API__BASE_URL": base,
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{base}/execution/",
        "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
        "AIRFLOW__CORE__PARALLELISM": "2",  # each slot is a worker process
        "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(home / "logs"),
    }
    return env, password


def _members(pgid: int) -> dict[int, str] | None:
    """The processes of group `pgid` and their state letter (`Z`: a zombie — exited, not yet
    reaped by its parent; it runs nothing and holds no port), from /proc; None where there is
    no /proc to read."""
    proc = Path("/proc")
    if not proc.is_dir():
        return None
    found: dict[int, str] = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # gone meanwhile
            continue
        # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 2 and fields[2] == str(pgid):
            found[int(entry.name)] = fields[0]
    return found


def _live(pgid: int) -> list[int]:
    """The processes of group `pgid` still running (zombies are not)."""
    members = _members(pgid)
    if members is not None:
        return sorted(pid for pid, state in members.items() if state not in ("Z", "X"))
    try:  # no /proc: a signal 0 to the group (a zombie in it counts as running)
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return []
    except PermissionError:
        pass
    return [pgid]


def _reap(pgid: int, leader: Any) -> None:
    """Collect the exit status of this process's children in group `pgid` (the service, and
    its orphans when this process is their reaper), so none stays a zombie; never blocks. The
    service itself is reaped by its `Popen` (`leader`), which keeps its exit status."""
    for _ in range(10_000):  # bounded: a group has far fewer processes
        try:
            if hasattr(os, "waitid"):  # look first (WNOWAIT), then reap the one found
                info = os.waitid(os.P_PGID, pgid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
                pid = 0 if info is None else info.si_pid
                if pid and not (pid == leader.pid and leader.poll() is not None):
                    os.waitpid(pid, os.WNOHANG)
            else:
                pid, _ = os.waitpid(-pgid, os.WNOHANG)
        except ChildProcessError:  # no child of ours left in the group
            return
        if pid == 0:  # children left, none exited
            return


class LocalAirflow:
    """Airflow's services over one home, each in a process group of its own."""

    def __init__(self, home: Path, port: int, env: dict[str, str] | None = None) -> None:
        self.home = home
        self.port = port
        self.env = dict(os.environ if env is None else env)
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.logs = home / "logs"

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def start(self) -> None:
        if not port_free(self.port):
            raise LocalAirflowError(f"port {self.port} of {HOST} is taken: give another "
                                    "(`make airflow AIRFLOW_PORT=8090`, or --port)")
        self.logs.mkdir(parents=True, exist_ok=True)
        for name in SERVICES:
            args = [name, "--host", HOST, "--port", str(self.port), "--workers", "1"] \
                if name == "api-server" else [name]
            with open(self.logs / f"{name}.log", "ab") as log:
                self.procs[name] = subprocess.Popen(
                    [sys.executable, "-m", "airflow", *args], cwd=self.home, env=self.env,
                    stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                    start_new_session=True)

    def exited(self) -> str | None:
        """The name of a service that has exited (None: all run)."""
        for name, proc in self.procs.items():
            if proc.poll() is not None:
                return name
        return None

    def log_tail(self, name: str, lines: int = 20) -> str:
        try:
            text = (self.logs / f"{name}.log").read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.strip().splitlines()[-lines:])

    def health(self) -> dict[str, Any] | None:
        try:
            with urllib.request.urlopen(f"{self.base_url}/api/v2/monitor/health",
                                        timeout=3) as r:
                return json.loads(r.read())
        except (OSError, ValueError):
            return None

    def wait_ready(self, timeout: float = _READY_TIMEOUT_S) -> None:
        """Until the API server reports its DB, the scheduler, the triggerer and the DAG
        processor healthy."""
        deadline = time.monotonic() + timeout
        parts = ("metadatabase", "scheduler", "triggerer", "dag_processor")
        while time.monotonic() < deadline:
            name = self.exited()
            if name is not None:
                raise LocalAirflowError(f"airflow {name} exited "
                                        f"({self.procs[name].returncode}); its log's tail:\n"
                                        f"{self.log_tail(name)}")
            h = self.health() or {}
            if all((h.get(p) or {}).get("status") == "healthy" for p in parts):
                return
            time.sleep(0.5)
        h = self.health() or {}
        raise LocalAirflowError("Airflow was not healthy within "
                                f"{timeout:.0f} s: {json.dumps(h)}")

    def request(self, method: str, path: str, token: str | None = None,
                body: Any = None) -> tuple[int, Any]:
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        req = urllib.request.Request(self.base_url + path, method=method, headers=headers,
                                     data=None if body is None else json.dumps(body).encode())
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode(errors="replace")

    def token(self, password: str) -> str:
        status, body = self.request("POST", "/auth/token",
                                    body={"username": USER, "password": password})
        if status not in (200, 201):
            raise LocalAirflowError(f"cannot log in as {USER}: {status} {body}")
        return body["access_token"]

    def stop(self, grace: float = _STOP_GRACE_S, kill_wait: float = _KILL_WAIT_S) -> list[str]:
        """SIGTERM to every service's group, SIGKILL to what still runs after `grace` seconds,
        then at most `kill_wait` seconds more for the killed to go: every wait is bounded, and
        the exit status of every child of this process in the groups is collected. Returns
        what could not be stopped (empty: nothing of the services runs), one line per
        service; a zombie left for another reaper is printed but does not count, as it runs
        nothing."""
        groups = {name: p.pid for name, p in self.procs.items()}

        def settle() -> dict[str, list[int]]:
            """Reap what exited; {service: its processes still running}."""
            running = {}
            for name, pgid in groups.items():
                _reap(pgid, self.procs[name])
                live = _live(pgid)
                if live:
                    running[name] = live
                else:  # what died since the reap above is a zombie: ours are collected
                    _reap(pgid, self.procs[name])
            return running

        def wait(seconds: float) -> dict[str, list[int]]:
            deadline = time.monotonic() + seconds
            running = settle()
            while running and time.monotonic() < deadline:
                time.sleep(0.2)
                running = settle()
            return running

        for pgid in groups.values():
            try:
                os.killpg(pgid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        running = wait(grace)
        for name, pids in running.items():
            print(f"  airflow {name} did not stop in {grace:g} s: killed "
                  f"(pid {', '.join(map(str, pids))})", flush=True)
            try:
                os.killpg(groups[name], signal.SIGKILL)
            except ProcessLookupError:
                pass
        if running:
            running = wait(kill_wait)
        left = [f"airflow {name}: pid {', '.join(map(str, pids))} still running after "
                f"SIGKILL" for name, pids in running.items()]
        for name, pgid in groups.items():
            zombies = sorted(pid for pid, state in (_members(pgid) or {}).items()
                             if state == "Z")
            if zombies and name not in running:
                print(f"  airflow {name}: pid {', '.join(map(str, zombies))} exited, left as "
                      "zombies for their parent to reap (they run nothing)", flush=True)
        self.procs = {name: p for name, p in self.procs.items() if name in running}
        return left


#: the table `make airflow` writes beside the demo's, with compaction debt the page shows
DEBT_TABLE = "shop.clicks"


def write_debt_table(warehouse: str, options: dict[str, str], commits: int = 6) -> str:
    """`DEBT_TABLE`: `commits` small writes into one partition of a 2-bucket table, one sorted
    run each per bucket — more than Paimon's `num-sorted-run.compaction-trigger` (5), so a
    compaction is due. Its name."""
    import pyarrow as pa

    import lakeformat as lf

    catalog = lf.Catalog(warehouse, options=options)
    schema = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("page", pa.string())])
    catalog.create_database(DEBT_TABLE.split(".")[0], exist_ok=True)
    table = catalog.create_table(DEBT_TABLE, schema, primary_keys=["dt", "id"],
                                 partition_keys=["dt"], options={"bucket": "2"})
    for i in range(commits):
        ids = list(range(i * 8, i * 8 + 8))
        table.write(pa.table({"dt": ["2024-01-03"] * len(ids), "id": ids,
                              "page": [f"/p/{n % 5}" for n in ids]}, schema=schema))
    h = table.health()
    print(f"\n-- {DEBT_TABLE}: {commits} small commits beside it — health {h.score}/100, "
          f"{h.max_sorted_runs} sorted runs in the worst bucket: a compaction is due")
    return DEBT_TABLE


class _Stop(Exception):
    pass


def _raise_stop(signum: int, frame: Any) -> None:
    raise _Stop(signal.Signals(signum).name)


def serve(home: Path, port: int, password: str, warehouse: str,
          tables: list[str]) -> int:
    """Start the services, print where to go, and run until a signal (or a service exits);
    everything is stopped before this returns."""
    airflow = LocalAirflow(home, port)
    previous = {s: signal.signal(s, _raise_stop)
                for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    status = 0
    try:
        print(f"\n-- starting Airflow over {warehouse}: {', '.join(SERVICES)} "
              f"(logs in {airflow.logs})", flush=True)
        started = time.monotonic()
        airflow.start()
        airflow.wait_ready()
        token = airflow.token(password)
        for dag_id in UNPAUSED:
            code, body = airflow.request("PATCH", f"/api/v2/dags/{dag_id}", token,
                                         {"is_paused": False})
            if code != 200:
                print(f"  could not unpause {dag_id}: {code} {body}")
        base = airflow.base_url
        print(f"\nAirflow is up ({time.monotonic() - started:.0f} s) on {base}\n"
              f"  log in as      {USER} / {password}\n"
              f"  the Lake page  {base}/plugin/lake   (the page alone: {base}/lakeformat/)\n"
              f"  the DAGs       {base}/dags\n"
              f"  tables         {', '.join(tables)} — {tables[-1]} has compaction due: its "
              "page's button runs lakeformat_on_debt for it (unpaused)\n"
              "Ctrl-C stops Airflow and the S3 server.", flush=True)
        while True:
            name = airflow.exited()
            if name is not None:
                print(f"\nairflow {name} exited ({airflow.procs[name].returncode}); its log's "
                      f"tail:\n{airflow.log_tail(name)}", flush=True)
                status = 1
                break
            time.sleep(0.5)
    except _Stop as e:
        print(f"\n{e}: stopping Airflow ...", flush=True)
    except LocalAirflowError as e:
        print(f"\n{e}", file=sys.stderr, flush=True)
        status = 1
    finally:
        for s in previous:  # a second Ctrl-C must not cut the clean-up short
            signal.signal(s, signal.SIG_IGN)
        left = airflow.stop()
        for s, handler in previous.items():
            signal.signal(s, handler)
    if left:
        print("Airflow could not be stopped entirely:\n  " + "\n  ".join(left),
              file=sys.stderr, flush=True)
        return 1
    print("Airflow stopped; no process of it is left.", flush=True)
    return status
