"""A real PostgreSQL server on 127.0.0.1 for the JDBC catalog tests, and the catalog URLs.

The server comes from Debian's `postgresql` package (`make test` installs it when no `initdb`
is found): `initdb` makes a throw-away cluster in a fresh temporary directory, `postgres`
serves it on a free port of 127.0.0.1 with trust authentication, and it is stopped (and the
directory removed) when the last test that used it is done. PostgreSQL refuses to run as
root, so under root the cluster belongs to the `postgres` user and both programs run as it.
A server that cannot start fails the test with the reason; it never skips.

Fixtures (import them into a test module)::

    postgres_server   the session's server (one for all modules that import it)
    jdbc_uri          parametrized: a fresh SQLite file and a fresh PostgreSQL database,
                      as JDBC URLs ("jdbc:sqlite:/...", "jdbc:postgresql://127.0.0.1:p/db?...")
"""

from __future__ import annotations

import atexit
import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

__all__ = ["PostgresServer", "PostgresStartError", "find_bin_dir", "postgres_server",
           "jdbc_uri", "JDBC_BACKENDS"]

JDBC_BACKENDS = ("sqlite", "postgresql")
_START_TIMEOUT_S = 60


class PostgresStartError(RuntimeError):
    pass


def find_bin_dir() -> Path:
    """The directory holding `initdb` and `postgres`: Debian's newest version, else PATH."""
    def version(path: str) -> float:
        try:
            return float(Path(path).parts[-3])
        except ValueError:
            return 0.0
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=version, reverse=True)
    on_path = shutil.which("initdb")
    if on_path:
        found.append(os.path.realpath(on_path))
    for initdb in found:
        bin_dir = Path(initdb).parent
        if (bin_dir / "postgres").exists():
            return bin_dir
    raise PostgresStartError(
        "no PostgreSQL server found (initdb and postgres in /usr/lib/postgresql/*/bin or on "
        "PATH): `make test` installs Debian's postgresql package, or run "
        "`apt-get install postgresql` yourself")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    """One throw-away PostgreSQL cluster, served on 127.0.0.1."""

    host = "127.0.0.1"
    user = "postgres"  # the superuser initdb makes

    def __init__(self) -> None:
        self.bin_dir = find_bin_dir()
        self.port = 0
        self.root = ""
        self.proc: subprocess.Popen[bytes] | None = None
        self._as: dict[str, object] = {}

    def _log_tail(self) -> str:
        try:
            text = Path(self.root, "server.log").read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.strip().splitlines()[-15:])

    def start(self) -> None:
        self.root = tempfile.mkdtemp(prefix="lakeformat-pg-")  # under /tmp: reachable
        if os.geteuid() == 0:  # PostgreSQL refuses root: everything runs as `postgres`
            try:
                import pwd
                pw = pwd.getpwnam("postgres")
            except KeyError:
                raise PostgresStartError("running as root and there is no `postgres` user to "
                                         "run the server as (Debian's postgresql package "
                                         "makes it)") from None
            os.chown(self.root, pw.pw_uid, pw.pw_gid)
            self._as = {"user": pw.pw_uid, "group": pw.pw_gid, "extra_groups": []}
        data = os.path.join(self.root, "data")
        init = subprocess.run(
            [str(self.bin_dir / "initdb"), "-D", data, "-U", self.user, "--auth=trust",
             "--no-locale", "-E", "UTF8", "--no-sync"],
            cwd=self.root, capture_output=True, text=True, **self._as)
        if init.returncode != 0:
            raise PostgresStartError(f"initdb failed ({init.returncode}): "
                                     f"{(init.stderr or init.stdout).strip()[-2000:]}")
        for _ in range(3):  # a free port can be taken between the probe and the bind
            self.port = _free_port()
            if self._serve(data):
                return
        raise PostgresStartError(f"PostgreSQL did not start:\n{self._log_tail()}")

    def _serve(self, data: str) -> bool:
        with open(os.path.join(self.root, "server.log"), "ab") as log:
            self.proc = subprocess.Popen(
                [str(self.bin_dir / "postgres"), "-D", data, "-h", self.host, "-p",
                 str(self.port), "-k", self.root, "-c", "fsync=off", "-c",
                 "synchronous_commit=off", "-c", "full_page_writes=off"],
                cwd=self.root, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                **self._as)
        import psycopg

        deadline = time.monotonic() + _START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.proc = None
                return False
            try:
                psycopg.connect(host=self.host, port=self.port, user=self.user,
                                dbname="postgres", connect_timeout=2).close()
                return True
            except psycopg.OperationalError:
                time.sleep(0.1)
        self.stop(remove=False)
        raise PostgresStartError(f"PostgreSQL did not answer on {self.host}:{self.port} within "
                                 f"{_START_TIMEOUT_S} s:\n{self._log_tail()}")

    def new_database(self) -> str:
        """Create an empty database; its name."""
        import psycopg

        name = "lf_" + uuid.uuid4().hex[:12]
        with psycopg.connect(host=self.host, port=self.port, user=self.user, dbname="postgres",
                             autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return name

    def jdbc_url(self, database: str) -> str:
        return f"jdbc:postgresql://{self.host}:{self.port}/{database}?user={self.user}"

    def sqlalchemy_url(self, database: str) -> str:
        return f"postgresql+psycopg://{self.user}@{self.host}:{self.port}/{database}"

    def stop(self, remove: bool = True) -> None:
        """Fast shutdown (SIGINT: the server ends its sessions and children), then SIGQUIT,
        then SIGKILL if it still runs."""
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            for sig, wait in ((signal.SIGINT, 30), (signal.SIGQUIT, 10), (signal.SIGKILL, 10)):
                proc.send_signal(sig)
                try:
                    proc.wait(wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        if remove and self.root:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = ""


_shared: PostgresServer | None = None
_users = 0


def _stop_shared() -> None:
    global _shared
    if _shared is not None:
        _shared.stop()
        _shared = None


atexit.register(_stop_shared)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """The session's PostgreSQL server, shared by every module that imports this fixture
    (each import is a fixture of its own: the last one done stops the server)."""
    global _shared, _users
    if _shared is None:
        server: PostgresServer | None = None
        failure = ""
        try:
            server = PostgresServer()
            server.start()
        except PostgresStartError as e:
            failure = str(e)
        if failure or server is None:
            if server is not None:
                server.stop()
            pytest.fail(f"cannot start the test PostgreSQL server: {failure}", pytrace=False)
        _shared = server
    _users += 1
    try:
        yield _shared
    finally:
        _users -= 1
        if _users == 0:
            _stop_shared()


@pytest.fixture(params=JDBC_BACKENDS)
def jdbc_uri(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A JDBC URL of an empty catalog database: a SQLite file, or a PostgreSQL database on
    the session's server."""
    if request.param == "sqlite":
        return f"jdbc:sqlite:{tmp_path / 'catalog.db'}"
    server: PostgresServer = request.getfixturevalue("postgres_server")
    return server.jdbc_url(server.new_database())
