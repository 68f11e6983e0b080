"""Paimon's JDBC lock (`lock.type=jdbc`) on SQLite and on a real PostgreSQL server: the rows
are the ones Java Paimon writes, a Java holder blocks us (and is named), real processes take
turns, leases are renewed, and a killed holder frees the lock after its lease."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lakeformat.errors import InvalidOptionError, LockLostError, LockTimeoutError
from lakeformat.lock.jdbc import JdbcLock, paimon_lock_id
from lakeformat.lock.jdbc_client import JdbcClient
from lakeformat.lock.options import LockConfig
from tests.support import postgres

ROOT = Path(__file__).resolve().parents[2]
jdbc_uri = postgres.jdbc_uri  # fixture: a SQLite file and a database on the session's server
postgres_server = postgres.postgres_server

LOCK_ID = paimon_lock_id("jdbc", "db", "t")
#: a timestamp `seconds` in the past, by the database's clock
_AGO = {"sqlite": "datetime('now', '-{s} seconds')",
        "postgresql": "NOW() - INTERVAL '{s} seconds'"}


def _config(timeout_ms: int = 2000, lease_ms: int = 10_000) -> LockConfig:
    return LockConfig(enabled=True, type="jdbc", acquire_timeout_ms=timeout_ms,
                      check_max_sleep_ms=100, lease_ms=lease_ms)


def _lock(uri: str, **config: int) -> JdbcLock:
    return JdbcLock(JdbcClient(uri), LOCK_ID, "commits of db.t", _config(**config))


def _rows(client: JdbcClient) -> list[tuple]:
    return client.query("SELECT lock_id, expire_time_seconds, lock_owner "
                        "FROM paimon_distributed_locks")


def _insert_java_row(client: JdbcClient, ago_s: int = 0) -> None:
    """What Java's plain commit lock inserts: no owner, lock-acquire-timeout in seconds."""
    if ago_s:
        at = _AGO[client.dialect].format(s=ago_s)
        client.execute("INSERT INTO paimon_distributed_locks (lock_id, acquired_at, "
                       f"expire_time_seconds) VALUES (:id, {at}, 480)", {"id": LOCK_ID})
    else:
        client.execute("INSERT INTO paimon_distributed_locks (lock_id, expire_time_seconds) "
                       "VALUES (:id, 480)", {"id": LOCK_ID})


# a process of its own: `contend` takes the lock N times and records when it held it;
# `hold` takes it and waits to be killed
_CHILD = r"""
import json, sys, time
from lakeformat.lock.jdbc import JdbcLock
from lakeformat.lock.jdbc_client import JdbcClient
from lakeformat.lock.options import LockConfig
mode, uri, lock_id, lease_ms, arg = sys.argv[1:6]
config = LockConfig(enabled=True, type="jdbc", acquire_timeout_ms=120_000,
                    check_max_sleep_ms=50, lease_ms=int(lease_ms))
lock = JdbcLock(JdbcClient(uri), lock_id, "commits of db.t", config)
if mode == "contend":
    held = []
    for _ in range(int(arg.split(":")[0])):
        with lock.acquire("compact") as lease:
            start = time.monotonic()
            time.sleep(0.03)
            lease.check()
            held.append((start, time.monotonic()))
        time.sleep(0.03)
    with open(arg.split(":", 1)[1], "w") as out:
        json.dump(held, out)
else:
    lease = lock.acquire("expire_snapshots")
    print("held", flush=True)
    time.sleep(600)
"""


def _child(mode: str, uri: str, lease_ms: int, arg: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-c", _CHILD, mode, uri, LOCK_ID, str(lease_ms),
                             arg], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)


def test_the_lock_table_is_paimons(jdbc_uri):
    lock = _lock(jdbc_uri)
    cols = {c["name"]: c for c in lock.client.columns("paimon_distributed_locks")}
    assert list(cols) == ["lock_id", "acquired_at", "expire_time_seconds", "lock_owner"]
    assert type(cols["lock_id"]["type"]).__name__ == "VARCHAR"
    assert cols["lock_id"]["type"].length == 255 and not cols["lock_id"]["nullable"]
    assert type(cols["acquired_at"]["type"]).__name__ == "TIMESTAMP"
    assert "CURRENT_TIMESTAMP" in str(cols["acquired_at"]["default"]).upper() or \
        "now()" in str(cols["acquired_at"]["default"]).lower()
    assert type(cols["expire_time_seconds"]["type"]).__name__ == "BIGINT"
    assert str(cols["expire_time_seconds"]["default"]).strip("'") == "0"
    assert cols["lock_owner"]["type"].length == 36 and cols["lock_owner"]["nullable"]
    pk = lock.client._run(lambda c: lock.client._sa.inspect(c).get_pk_constraint(
        "paimon_distributed_locks"))["constrained_columns"]
    assert pk == ["lock_id"]


def test_lock_key_max_length_sizes_the_key(tmp_path):
    client = JdbcClient.from_options({"uri": f"jdbc:sqlite:{tmp_path}/c.db",
                                      "lock-key-max-length": "20"})
    with pytest.raises(InvalidOptionError, match="'lock-key-max-length'"):
        JdbcLock(client, "jdbc.a_database.a_long_table_name", "x", _config())
    JdbcLock(client, "jdbc.db.t", "x", _config())
    lock_id = {c["name"]: c for c in client.columns("paimon_distributed_locks")}["lock_id"]
    assert lock_id["type"].length == 20


def test_a_lease_writes_the_row_an_owned_java_lease_writes(jdbc_uri):
    lock = _lock(jdbc_uri, lease_ms=10_000)
    with lock.acquire("compact") as lease:
        assert _rows(lock.client) == [(LOCK_ID, 12, lease.holder.owner)]  # lease s + 2
        age = lock.client.query(f"SELECT {lock.dialect.age} FROM paimon_distributed_locks")
        assert 0 <= float(age[0][0]) <= 5  # acquired_at: the database's own now
        side = lock.client.query("SELECT lock_id, lock_owner, holder "
                                 "FROM lakeformat_lock_holders")
        assert [(r[0], r[1]) for r in side] == [(LOCK_ID, lease.holder.owner)]
        body = json.loads(side[0][2])
        assert body["purpose"] == "compact" and body["pid"] == os.getpid()
        assert body["host"] == socket.gethostname()
    assert _rows(lock.client) == []
    assert lock.client.query("SELECT * FROM lakeformat_lock_holders") == []


def test_an_old_lock_table_gains_lock_owner(jdbc_uri):
    client = JdbcClient(jdbc_uri)
    client.execute("CREATE TABLE paimon_distributed_locks (lock_id VARCHAR(255) NOT NULL, "
                   "acquired_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL, "
                   "expire_time_seconds BIGINT DEFAULT 0 NOT NULL, PRIMARY KEY (lock_id))")
    client.execute("INSERT INTO paimon_distributed_locks (lock_id, expire_time_seconds) "
                   "VALUES ('jdbc.other.t', 480)")
    lock = JdbcLock(client, LOCK_ID, "commits of db.t", _config())
    assert [c["name"] for c in client.columns("paimon_distributed_locks")][-1] == "lock_owner"
    assert _rows(client) == [("jdbc.other.t", 480, None)]
    with lock.acquire("commit"):
        assert len(_rows(client)) == 2


def test_two_processes_take_turns_and_never_hold_it_at_once(jdbc_uri, tmp_path):
    _lock(jdbc_uri)  # the tables exist before the race (the children make them too)
    turns = 12
    outs = [tmp_path / f"held-{i}.json" for i in range(2)]
    children = [_child("contend", jdbc_uri, 5000, f"{turns}:{out}") for out in outs]
    for child in children:
        assert child.wait(240) == 0
    held = [(start, end, i) for i, out in enumerate(outs)
            for start, end in json.loads(out.read_text())]
    assert sorted(i for _, _, i in held) == [0] * turns + [1] * turns
    held.sort()
    for (_, end, _), (start, _, _) in zip(held, held[1:]):
        assert start >= end, "two processes held the lock at the same time"
    handovers = sum(1 for a, b in zip(held, held[1:]) if a[2] != b[2])
    print(f"{len(held)} turns, {handovers} hand-overs between the two processes")
    assert handovers >= 1


def test_a_java_row_blocks_us_and_we_name_it(jdbc_uri):
    lock = _lock(jdbc_uri, timeout_ms=300)
    _insert_java_row(lock.client)
    with pytest.raises(LockTimeoutError) as info:
        lock.acquire("compact")
    message = str(info.value)
    assert "'jdbc.db.t'" in message and "not a lakeformat job" in message
    assert "expire_time_seconds 480" in message and "owner none" in message
    assert info.value.holder is not None
    assert _rows(lock.client) == [(LOCK_ID, 480, None)]  # a live lock is never deleted


def test_a_lakeformat_holder_is_named_host_pid_and_purpose(jdbc_uri):
    holder = _lock(jdbc_uri)
    waiter = _lock(jdbc_uri, timeout_ms=500)
    with holder.acquire("expire_snapshots") as lease:
        with pytest.raises(LockTimeoutError) as info:
            waiter.acquire("compact")
    message = str(info.value)
    assert f"held by expire_snapshots (owner {lease.holder.owner}" in message
    assert f"host {socket.gethostname()}, pid {os.getpid()}" in message
    assert info.value.holder.owner == lease.holder.owner


def test_an_expired_row_is_taken_over(jdbc_uri):
    lock = _lock(jdbc_uri, timeout_ms=5000)
    _insert_java_row(lock.client, ago_s=600)  # 600 s old, 480 s to live: expired
    with lock.acquire("compact") as lease:
        assert _rows(lock.client) == [(LOCK_ID, 12, lease.holder.owner)]


def _age_s(client: JdbcClient) -> float:
    """Seconds since the lock row's `acquired_at`, by the database's clock."""
    dialect = JdbcLock(client, LOCK_ID, "commits of db.t", _config()).dialect
    return float(client.query(f"SELECT {dialect.age} FROM paimon_distributed_locks")[0][0])


def test_renewal_keeps_a_lease_alive_past_its_length(jdbc_uri):
    """The row lives 3 s in the table (lease 1.5 s + 2 s). Rather than wait those 3 s, the row is
    aged 2 s at once (its `acquired_at` moved back, by the database's clock): unrenewed, it would
    be expired within 2 s more (SQLite counts whole seconds), and the waiter would take it over.
    Renewals (every 0.5 s) move `acquired_at` forward again, so 2 s later the lease is still
    ours."""
    lock = _lock(jdbc_uri, lease_ms=1500)  # 3 s in the table (lease + 2 s)
    waiter = _lock(jdbc_uri, timeout_ms=300)
    with lock.acquire("compact") as lease:
        at = _AGO[lock.client.dialect].format(s=2)
        lock.client.execute(f"UPDATE paimon_distributed_locks SET acquired_at = {at}")
        assert _age_s(lock.client) >= 2
        aged = time.monotonic()
        deadline = aged + 60
        while _age_s(lock.client) >= 2:  # the next renewal brings it back to now
            assert time.monotonic() < deadline, "the lease was not renewed within 60 s"
            time.sleep(0.05)
        time.sleep(max(0.0, 2.0 - (time.monotonic() - aged)))  # an unrenewed row: age >= 4
        lease.check()
        with pytest.raises(LockTimeoutError):
            waiter.acquire("compact")
        assert _rows(lock.client) == [(LOCK_ID, 3, lease.holder.owner)]
        assert _age_s(lock.client) < 2


def test_a_lease_taken_over_fails_its_check_and_is_not_released(jdbc_uri):
    lock = _lock(jdbc_uri, lease_ms=1500)
    lease = lock.acquire("compact")
    lock.client.execute("DELETE FROM paimon_distributed_locks")  # an operator's cleanup ...
    _insert_java_row(lock.client)  # ... and a Java commit took it
    deadline = time.monotonic() + 60
    while True:  # the next renewal (every 0.5 s) finds the row is not ours
        try:
            lease.check()
        except LockLostError as lost:
            assert "jdbc.db.t" in str(lost), lost
            break
        assert time.monotonic() < deadline, "the lease still passed its check after 60 s"
        time.sleep(0.05)
    lease.release()
    assert _rows(lock.client) == [(LOCK_ID, 480, None)]


def test_a_holder_killed_with_sigkill_frees_the_lock_after_its_lease(jdbc_uri):
    lease_ms = 2000
    lock = _lock(jdbc_uri, timeout_ms=300)
    child = _child("hold", jdbc_uri, lease_ms, "-")
    try:
        assert child.stdout.readline().strip() == "held"
        child.send_signal(signal.SIGKILL)
        child.wait(30)
        with pytest.raises(LockTimeoutError, match=f"pid {child.pid}"):
            lock.acquire("compact")  # its row outlives it ...
        # ... until its time in the table (lease + 2 s) has passed by the database's clock:
        # rather than wait for it, the dead holder's row is aged by that long (nobody renews
        # it any more, so this is the row as the database would see it then)
        (_, lifetime_s, owner), = _rows(lock.client)
        assert lifetime_s == lease_ms // 1000 + 2 and owner is not None
        at = _AGO[lock.client.dialect].format(s=lifetime_s + 1)
        lock.client.execute(f"UPDATE paimon_distributed_locks SET acquired_at = {at}")
        patient = JdbcLock(lock.client, LOCK_ID, "commits of db.t", _config(timeout_ms=30_000))
        with patient.acquire("compact") as lease:  # taken over
            assert _rows(lock.client) == [(LOCK_ID, 12, lease.holder.owner)]
            assert lease.holder.owner != owner
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


# -- through the public API: a catalog with lock.enabled=true on a JDBC catalog --------------
def _locked_catalog(warehouse: str, uri: str):
    import lakeformat as lf

    return lf.Catalog(warehouse, options={"metastore": "jdbc", "uri": uri,
                                          "lock.enabled": "true",
                                          "lock-acquire-timeout": "300 ms",
                                          "lock-check-max-sleep": "100 ms"})


def test_a_java_commit_lock_stops_our_commit_until_it_is_released(jdbc_uri, tmp_path):
    import pyarrow as pa

    rows = pa.table({"id": pa.array([1, 2], pa.int64()), "v": ["a", "b"]})
    with _locked_catalog(str(tmp_path / "wh"), jdbc_uri) as cat:
        cat.create_database("db")
        t = cat.create_table("db.t", schema=rows.schema, primary_keys=["id"],
                             options={"bucket": "1"})
        t.write(rows)
        client = cat._jdbc_client()
        assert _rows(client) == []  # every commit gave its lock back
        _insert_java_row(client)  # a Java writer holds `jdbc.db.t` for its commit
        with pytest.raises(LockTimeoutError, match="not a lakeformat job"):
            t.write(pa.table({"id": pa.array([3], pa.int64()), "v": ["c"]}))
        assert len(t.snapshots()) == 1 and t.read().num_rows == 2  # nothing committed
        client.execute("DELETE FROM paimon_distributed_locks")  # the Java commit is done
        t.write(pa.table({"id": pa.array([3], pa.int64()), "v": ["c"]}))
        assert len(t.snapshots()) == 2 and t.read().num_rows == 3
        assert _rows(client) == []


def test_a_maintenance_job_waits_for_the_maintenance_lock_and_names_its_holder(jdbc_uri,
                                                                              tmp_path):
    import pyarrow as pa

    rows = pa.table({"id": pa.array([1, 2], pa.int64()), "v": ["a", "b"]})
    with _locked_catalog(str(tmp_path / "wh"), jdbc_uri) as cat:
        cat.create_database("db")
        t = cat.create_table("db.t", schema=rows.schema, primary_keys=["id"],
                             options={"bucket": "1"})
        t.write(rows)
        t.write(rows)
        with cat.table_locks("db.t").maintenance.acquire("expire_snapshots"):
            with pytest.raises(LockTimeoutError, match=f"expire_snapshots .*pid {os.getpid()}"):
                t.compact(full=True)
        assert t.compact(full=True) is not None  # free again
        assert _rows(cat._jdbc_client()) == []
