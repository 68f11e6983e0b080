"""A real Airflow API server on 127.0.0.1 for tests that need one (the lake view's browser test):
`airflow api-server` in a child process of its own, with the provider's plugin loaded through
its entry point, the simple auth manager with known users, and `lakeformat_default` pointing at
a warehouse on the session's moto S3 server.

The server gets an Airflow home of its own, so nothing it records (DAG runs a test triggers,
the users' sessions) reaches the suite's metadata DB: its SQLite DB is a copy of the suite's
(already migrated by `tests/airflow/conftest.py`, so no `airflow db migrate` is paid), taken
after the DAGs a test triggers were serialized into the suite's DB the way `airflow dags
reserialize` does it (the same rows `dag.test()` writes for its DAG's bundle). The DAGs folder
and the DAG bundles are the suite's (inherited from the environment).

Configuration the server gets beyond the suite's: `[core] simple_auth_manager_users`, a
passwords file, `simple_auth_manager_all_admins = False` (else every request is an admin's and
nothing is refused), an explicit `[api_auth] jwt_secret`, `[api] host/port/base_url` on
127.0.0.1 and a free port, one worker. It is started with `start_new_session=True` and stopped
by signalling its whole process group (SIGINT, then SIGKILL); the fixture's teardown checks
that no process of the group is left. A server that does not become healthy fails the test
with the tail of its log; it never skips.

Fixtures (import them into a test module)::

    airflow_api_server   module scope: the started server (call `wait_ready()` before use),
                         its warehouse (`warehouse`, `options`) empty on a fresh bucket
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.s3server import new_bucket, s3_options

__all__ = ["AirflowApiServer", "AirflowServerError", "USERS", "DAG_BUNDLES",
           "serialize_bundles", "airflow_api_server"]

#: the server's users: name -> (role, password); the admin triggers runs, the viewer may look
USERS: dict[str, tuple[str, str]] = {"admin": ("admin", "admin-pw-5f2c"),
                                     "viewer": ("viewer", "viewer-pw-81ad")}
#: the DAG bundles (one DAG file each in the suite's config) serialized before the server starts:
#: the DAGs the lake view's buttons trigger
DAG_BUNDLES = ("lakeformat_on_debt", "lakeformat_maintenance")
_START_TIMEOUT_S = 90
_STOP_TIMEOUT_S = 15


class AirflowServerError(RuntimeError):
    pass


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serialize_bundles(names: tuple[str, ...] = DAG_BUNDLES) -> None:
    """Write the DAGs of the named bundles to this process's metadata DB, as `airflow dags
    reserialize --bundle-name ...` does (so a trigger through the REST API finds them)."""
    from airflow.dag_processing.bundles.manager import DagBundlesManager
    from airflow.dag_processing.dagbag import BundleDagBag, sync_bag_to_db
    from airflow.utils.session import create_session

    manager = DagBundlesManager()
    with create_session() as session:
        manager.sync_bundles_to_db(session=session)
    bundles = {b.name: b for b in manager.get_all_dag_bundles()}
    missing = [n for n in names if n not in bundles]
    if missing:
        raise AirflowServerError(f"no DAG bundle {missing} (bundles: {sorted(bundles)})")
    for name in names:
        bundle = bundles[name]
        bundle.initialize()
        bag = BundleDagBag(bundle.path, bundle_path=bundle.path, bundle_name=name)
        if bag.import_errors:
            raise AirflowServerError(f"DAG bundle {name} does not import: {bag.import_errors}")
        with create_session() as session:
            sync_bag_to_db(bag, name, bundle_version=None, session=session)


def _copy_suite_db(target: Path) -> None:
    """A consistent copy of this process's SQLite metadata DB (SQLite's backup API)."""
    from airflow.configuration import conf

    url = conf.get("database", "sql_alchemy_conn")
    if not url.startswith("sqlite:///"):
        raise AirflowServerError(f"the suite's metadata DB is not SQLite: {url.split(':')[0]}")
    source = sqlite3.connect(url.removeprefix("sqlite:///"))
    copy = sqlite3.connect(target)
    try:
        source.backup(copy)
    finally:
        copy.close()
        source.close()


class AirflowApiServer:
    """`airflow api-server` on 127.0.0.1 in an Airflow home of its own."""

    host = "127.0.0.1"

    def __init__(self, home: Path, connections: dict[str, str],
                 users: dict[str, tuple[str, str]] = USERS) -> None:
        self.home = home
        self.connections = connections
        self.users = users
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = home / "api-server.log"
        self._ready = False

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def environment(self) -> dict[str, str]:
        passwords = self.home / "passwords.json"
        passwords.write_text(json.dumps({u: pw for u, (_, pw) in self.users.items()}))
        env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW_CONN_")}
        env.update({
            "AIRFLOW_HOME": str(self.home),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{self.home / 'airflow.db'}",
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__AUTH_MANAGER": "airflow.api_fastapi.auth.managers.simple."
                                           "simple_auth_manager.SimpleAuthManager",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": ",".join(
                f"{u}:{role}" for u, (role, _) in self.users.items()),
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "False",
            "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(32),
            "AIRFLOW__API__HOST": self.host,
            "AIRFLOW__API__PORT": str(self.port),
            "AIRFLOW__API__BASE_URL": self.base_url,
            "AIRFLOW__LOGGING__LOGGING_LEVEL": "WARNING",
            "PYTHONUNBUFFERED": "1",
        })
        for conn_id, value in self.connections.items():
            env[f"AIRFLOW_CONN_{conn_id.upper()}"] = value
        return env

    def start(self) -> None:
        """Start the server (it is healthy after `wait_ready()`, ~10 s later)."""
        self.home.mkdir(parents=True, exist_ok=True)
        if not (self.home / "airflow.db").exists():
            _copy_suite_db(self.home / "airflow.db")
        self.port = _free_port()
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "airflow", "api-server", "--host", self.host,
                 "--port", str(self.port), "--workers", "1"],
                cwd=self.home, env=self.environment(), stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True)

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.strip().splitlines()[-lines:])

    def wait_ready(self, timeout: float = _START_TIMEOUT_S) -> None:
        """Until `/api/v2/monitor/health` reports a healthy metadata DB; raises with the log's
        tail when the server exits or does not answer in time."""
        if self._ready:
            return
        if self.proc is None:
            raise AirflowServerError("the API server was not started")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AirflowServerError(f"the API server exited ({self.proc.returncode}):\n"
                                         f"{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/api/v2/monitor/health",
                                            timeout=2) as r:
                    body = json.loads(r.read())
                if body.get("metadatabase", {}).get("status") == "healthy":
                    self._ready = True
                    return
            except (OSError, ValueError):
                pass
            time.sleep(0.2)
        raise AirflowServerError(f"the API server was not healthy within {timeout:.0f} s:\n"
                                 f"{self.log_tail()}")

    # -- the REST API, as a client of the server ------------------------------------------------
    def request(self, method: str, path: str, token: str | None = None,
                body: Any = None) -> tuple[int, Any]:
        """(status, parsed JSON body or text) of a request to the server."""
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base_url + path, data=data, method=method,
                                     headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                status, raw = r.status, r.read()
        except urllib.error.HTTPError as e:
            status, raw = e.code, e.read()
        try:
            return status, json.loads(raw)
        except ValueError:
            return status, raw.decode(errors="replace")

    def token(self, user: str = "admin") -> str:
        """A JWT of `user`, from the auth manager's own `/auth/token`."""
        status, body = self.request("POST", "/auth/token", body={
            "username": user, "password": self.users[user][1]})
        if status not in (200, 201):
            raise AirflowServerError(f"/auth/token for {user}: {status} {body}")
        return body["access_token"]

    # -- stopping ------------------------------------------------------------------------------
    def stop(self) -> None:
        """SIGINT to the server's process group (a graceful stop, as Ctrl-C), SIGKILL after a
        grace period; then wait until no process of the group is left."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        pgid = proc.pid  # start_new_session: the server leads its own group
        for sig, wait in ((signal.SIGINT, _STOP_TIMEOUT_S), (signal.SIGKILL, 10)):
            try:
                os.killpg(pgid, sig)
            except ProcessLookupError:
                break
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline and group_alive(pgid):
                if proc.poll() is None:
                    try:
                        proc.wait(0.1)
                    except subprocess.TimeoutExpired:
                        pass
                else:
                    time.sleep(0.1)
            if not group_alive(pgid):
                break
        proc.wait(10)

    @property
    def pgid(self) -> int | None:
        return None if self.proc is None else self.proc.pid


def group_alive(pgid: int) -> bool:
    """Whether any process of group `pgid` is left (zombies of other parents count: they are
    reaped by init soon)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@pytest.fixture(scope="module")
def airflow_api_server(s3_server: str, airflow_db: None,
                       tmp_path_factory: pytest.TempPathFactory) -> Iterator[AirflowApiServer]:
    """A started API server whose `lakeformat_default` points at `server.warehouse` (an empty
    warehouse on a fresh bucket of the session's moto server; `server.options` its catalog
    options). Call `server.wait_ready()` before the first request: it starts while the caller
    builds its tables."""
    options = s3_options(s3_server)
    warehouse = f"s3://{new_bucket(s3_server)}/wh"
    extra = {k: v for k, v in options.items() if k not in ("s3.access-key", "s3.secret-key")}
    conn = json.dumps({"conn_type": "lakeformat", "host": warehouse,
                       "login": options["s3.access-key"], "password": options["s3.secret-key"],
                       "extra": extra})
    try:
        serialize_bundles()
    except AirflowServerError as e:
        pytest.fail(f"cannot prepare the API server's DAGs: {e}", pytrace=False)
    server = AirflowApiServer(tmp_path_factory.mktemp("airflow-api-home"),
                              {"lakeformat_default": conn})
    server.warehouse, server.options = warehouse, options  # type: ignore[attr-defined]
    server.start()
    pgid = server.pgid
    try:
        yield server
    finally:
        server.stop()
        if pgid is not None and group_alive(pgid):
            pytest.fail(f"processes of the API server's group {pgid} are left", pytrace=False)
