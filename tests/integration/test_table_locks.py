"""Table locks on local disk (`lock.type=s3` semantics on a shared disk), with real processes:
maintenance jobs one at a time, a holder named on timeout, fencing of a paused holder,
takeover after a killed holder's lease, the commit lock around concurrent writers, and bad
input refused without touching the table."""

from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lakeformat as lf
import lakeformat.clock
from lakeformat.lock.base import TableLock
from lakeformat.lock.guard import GuardedFileIO
from lakeformat.storage import LocalFileIO
from tests.support.depth import examples

ROOT = Path(__file__).resolve().parents[2]
LEASE = {"lock.lease-duration": "2 s", "lock-check-max-sleep": "200 ms"}
#: for the tests where a child holds a lock while this process is refused it. The holder renews
#: every third of its lease, and on S3 its renewals go through the moto server, a thread of this
#: very process: they queue behind this process's own work (its GIL) and the machine's load. With
#: 2 s a renewal late by 1.3 s let the refused writer take the expired lease over (a correct
#: takeover, but not what the test asks). 8 s lasts through the 1 s waits with renewals late by
#: 5 s, and the test still sees the holder renew it.
HOLD_LEASE = {"lock.lease-duration": "8 s"}
#: commits per writer of the concurrent-writers test (STRESS_COMMITS; 8 in make test-deep)
COMMITS = examples(5, 8, "STRESS_COMMITS")


@pytest.fixture(params=["local", "s3"])
def where(request, tmp_path) -> tuple[str, dict[str, str]]:
    """(warehouse, catalog options with a 2 s lease) on local disk and on the moto S3 server."""
    if request.param == "local":
        return str(tmp_path / "wh"), dict(LEASE)
    uri, options = request.getfixturevalue("s3_warehouse")
    return uri, {**options, **LEASE}


def make_table(wh: str, options: dict[str, str] | None = None, commits: int = 4) -> lf.Table:
    cat = lf.Catalog(wh, options=options)
    cat.create_database("db", exist_ok=True)
    t = cat.create_table("db.t", pa.schema([("id", pa.int64()), ("v", pa.int64())]),
                         primary_keys=["id"], options={"bucket": "2"})
    for i in range(commits):
        t.write(pa.table({"id": [i, 100 + i], "v": [i, i]}))
    return t


class Child:
    """A job of `tests.support.lock_jobs` in its own process, its events read line by line."""

    def __init__(self, job: str, wh: str, options: dict[str, str], arg: str = ""):
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.support.lock_jobs", job, wh, json.dumps(options), arg],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=env, cwd=ROOT)
        self.events: list[dict[str, Any]] = []

    def go(self) -> None:
        """Start a job that waits for a line on its stdin (`write`)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def wait_for(self, event: str, timeout: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        assert self.proc.stdout is not None
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                raise AssertionError(f"child ended before {event!r}: {self.proc.stderr.read()}")
            self.events.append(json.loads(line))
            if self.events[-1]["event"] == event:
                return self.events[-1]
        raise AssertionError(f"no {event!r} within {timeout} s")

    def finish(self, timeout: float = 120) -> dict[str, Any]:
        out, err = self.proc.communicate(timeout=timeout)
        self.events += [json.loads(line) for line in out.splitlines() if line.strip()]
        last = self.events[-1] if self.events else {}
        assert last.get("event") in ("done", "error"), f"child failed: {err}"
        return last

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def rows(t: lf.Table) -> list[dict[str, Any]]:
    return sorted(t.read().to_pylist(), key=lambda r: r["id"])


def lease_body(t: lf.Table, lock: TableLock | None) -> dict[str, Any]:
    """The lease object of `lock` (one of `t.locks`) as its holder last wrote it."""
    assert lock is not None
    return json.loads(t.file_io.read_bytes(lock.location))


def wait_for_renewal(t: lf.Table, lock: TableLock | None, held: dict[str, Any],
                     timeout: float = 30) -> dict[str, Any]:
    """Read the lease object until its holder has pushed the expiry past `held`'s; fails if
    the lease changed hands (or was removed) meanwhile."""
    deadline = time.monotonic() + timeout
    while True:
        now = lease_body(t, lock)
        assert now["owner"] == held["owner"], f"the lease changed hands: {held} -> {now}"
        if now["expires_ms"] > held["expires_ms"]:
            return now
        assert time.monotonic() < deadline, f"the holder did not renew within {timeout} s: {now}"
        time.sleep(0.1)


def test_maintenance_jobs_started_together_run_one_after_another(where, capsys):
    wh, base = where
    t = make_table(wh, base, commits=6)
    before = rows(t)
    jobs = [Child(job, wh, base) for job in ("expire", "compact", "expire", "orphans")]
    results = [c.finish() for c in jobs]
    assert [r["event"] for r in results] == ["done"] * 4, results
    spans = []
    for name, c in zip(("expire", "compact", "expire", "orphans"), jobs):
        got = {e["event"]: e["t"] for e in c.events if e["event"] in ("acquired", "releasing")}
        spans.append((got["acquired"], got["releasing"], name))
    spans.sort()
    t0 = spans[0][0]
    with capsys.disabled():
        print("\nmaintenance timeline (s from first acquisition):")
        for start, end, name in spans:
            print(f"  {name:8s} held {start - t0:6.3f} .. {end - t0:6.3f}")
    for (_, end, _), (start, _, _) in zip(spans, spans[1:]):
        assert end <= start, f"two maintenance jobs held the lock at once: {spans}"
    assert rows(t.refresh()) == before  # nothing live deleted, nothing lost
    assert all(s.id >= t.snapshots()[0].id for s in t.snapshots())


def test_timeout_names_the_holder(where):
    wh, base = where
    base = {**base, **HOLD_LEASE}
    t = make_table(wh, base, commits=2)
    holder = Child("hold", wh, base, "30")
    try:
        holder.wait_for("holding")
        held = lease_body(t, t.locks.maintenance)
        assert held["pid"] == holder.proc.pid and held["purpose"] == "hold"
        mine = lf.Catalog(wh, options={**base, "lock-acquire-timeout": "1 s"}).get_table("db.t")
        snaps = [s.id for s in t.snapshots()]
        with pytest.raises(lf.LockTimeoutError) as err:
            mine.expire_snapshots(retain_min=1, older_than="0 s")
        msg = str(err.value)
        assert "maintenance of table db.t" in msg and "held by hold (owner " in msg
        assert f"pid {holder.proc.pid}" in msg and "since 20" in msg and "host " in msg
        assert err.value.holder.pid == holder.proc.pid
        assert [s.id for s in t.snapshots()] == snaps  # nothing expired
        assert isinstance(err.value, lf.RETRYABLE_ERRORS)
        assert err.value.holder.owner == held["owner"]
        wait_for_renewal(t, t.locks.maintenance, held)  # renewed, never taken over
    finally:
        holder.kill()


def test_paused_holder_loses_its_lease_and_commits_nothing(where):
    """A compaction paused (SIGSTOP) past its lease: another job takes the lock over; when the
    compaction wakes up it stops with LockLostError instead of committing."""
    wh, base = where
    t = make_table(wh, base, commits=4)
    before_rows, before_last = rows(t), t.latest_snapshot().id
    child = Child("compact-hang", wh, base, "0.5")
    try:
        child.wait_for("executed")
        os.kill(child.proc.pid, signal.SIGSTOP)
        # no sleep: `other` waits (polling) until the stopped child's 2 s lease has run out,
        # takes it over, then releases; the child stays stopped all that time
        other = lf.Catalog(wh, options={**base, "lock-acquire-timeout": "10 s"}).get_table("db.t")
        other.expire_snapshots(retain_min=10)
        os.kill(child.proc.pid, signal.SIGCONT)
        result = child.finish()
    finally:
        child.kill()
    assert result["event"] == "error" and result["type"] == "LockLostError", result
    t.refresh()
    assert t.latest_snapshot().id == before_last
    assert all(s.commit_kind != "COMPACT" for s in t.snapshots())
    assert rows(t) == before_rows


def set_clock(monkeypatch: pytest.MonkeyPatch, *, stopped_at: int | None = None,
              past: int | None = None) -> None:
    """Set this process's clock (`lakeformat.clock`). Contenders judge a lease's expiry by
    their own clock against the expiry its holder wrote, so

    * `stopped_at`: time stands still at that instant (each reading 1 ms after the one before,
      as the suite's clock does when no time passed): a contender there sees the lease as it
      was then, however long a loaded machine took to get to the check;
    * `past`: the clock runs on, at least 1 ms past that instant (never behind real time):
      what a contender sees once a dead holder's lease has run out, without waiting for it.
    """
    now = lakeformat.clock.now_millis
    suite = getattr(now, "suite", now)  # conftest's `advancing_clock`
    if stopped_at is not None:
        readings = iter(range(stopped_at, stopped_at + 10**9))

        def moved() -> int:
            return next(readings)
    else:
        assert past is not None
        skew = max(0, past + 1 - suite())

        def moved() -> int:
            return suite() + skew

    moved.suite = suite  # type: ignore[attr-defined]
    monkeypatch.setattr(lakeformat.clock, "now_millis", moved)


def test_killed_holder_is_taken_over_after_its_lease(where, monkeypatch):
    wh, base = where
    t = make_table(wh, base, commits=4)
    before_rows, before_last = rows(t), t.latest_snapshot().id
    child = Child("compact-hang", wh, base, "60")
    try:
        child.wait_for("executed")
        child.proc.send_signal(signal.SIGKILL)
        child.proc.wait()
    finally:
        child.kill()
    dead = lease_body(t, t.locks.maintenance)
    assert dead["pid"] == child.proc.pid
    # the killed holder's lease outlives it: a contender is refused, and told who holds it
    set_clock(monkeypatch, stopped_at=dead["expires_ms"] - 500)
    soon = lf.Catalog(wh, options={**base, "lock-acquire-timeout": "100 ms"}).get_table("db.t")
    with pytest.raises(lf.LockTimeoutError, match=f"pid {child.proc.pid}"):
        soon.compact(full=True)
    # ... until the lease has run out (the clock past its end): then it is taken over
    set_clock(monkeypatch, past=dead["expires_ms"])
    mine = lf.Catalog(wh, options={**base, "lock-acquire-timeout": "20 s"}).get_table("db.t")
    assert rows(mine) == before_rows and mine.latest_snapshot().id == before_last
    result = mine.compact(full=True)
    assert result.snapshot_ids and rows(mine) == before_rows
    data_files = {f.path for f in mine.file_io.list_recursive(mine.path) if "bucket-" in f.path}
    live = {f["path"] for f in mine.files()}
    assert data_files - live  # the killed compaction's files (and the replaced ones) remain
    mine.expire_snapshots(retain_min=1, older_than="0 s")
    mine.remove_orphan_files(older_than="0 s", enforce_retention_duration=False)
    left = {f.path for f in mine.file_io.list_recursive(mine.path) if "bucket-" in f.path}
    assert left == {f["path"] for f in mine.files()}
    assert rows(mine) == before_rows


def test_commit_lock_around_concurrent_writers(where):
    wh, base = where
    opts = {**base, "lock.enabled": "true"}
    t = make_table(wh, opts, commits=0)
    assert isinstance(t.file_io, GuardedFileIO) and t.locks.commit is not None
    # COMMITS each (8 in make test-deep), the three started at once (after their interpreters
    # are up)
    writers = [Child("write", wh, opts, f"{1000 * (w + 1)},{COMMITS}") for w in range(3)]
    for c in writers:
        c.wait_for("ready")
    for c in writers:
        c.go()
    results = [c.finish() for c in writers]
    assert [r["event"] for r in results] == ["done"] * 3, results
    t.refresh()
    ids = [s.id for s in t.snapshots()]
    assert ids == list(range(1, 3 * COMMITS + 1))
    want = sorted(1000 * (w + 1) + i for w in range(3) for i in range(COMMITS))
    assert [r["id"] for r in rows(t)] == want
    for sid in ids:  # every snapshot readable
        t.read(snapshot_id=sid)


def test_a_held_commit_lock_keeps_writes_from_publishing(where, monkeypatch):
    wh, base = where
    opts = {**base, "lock.enabled": "true", **HOLD_LEASE}
    t = make_table(wh, opts, commits=1)
    holder = Child("hold-commit", wh, opts, "30")
    try:
        holder.wait_for("holding")
        held = lease_body(t, t.locks.commit)
        assert held["pid"] == holder.proc.pid and held["purpose"] == "hold-commit"
        mine = lf.Catalog(wh, options={**opts, "lock-acquire-timeout": "1 s"}).get_table("db.t")
        with pytest.raises(lf.LockTimeoutError, match="commit of table db.t") as err:
            mine.write(pa.table({"id": [7], "v": [7]}))
        assert err.value.holder.owner == held["owner"]
        assert [s.id for s in mine.snapshots()] == [1]
        with pytest.raises(lf.LockTimeoutError, match="commit of table db.t"):
            mine.alter(lf.SchemaChange.set_option("snapshot.num-retained.min", "3"))
        assert [s.id for s in mine.schemas()] == [0]
        wait_for_renewal(t, t.locks.commit, held)  # the holder renews it, nobody took it over
    finally:
        holder.kill()
    # The killed holder's lease stays valid for up to 8 s more: rather than wait them out, the
    # clock moves past it, and the write finds a stale lease and takes it over (a write that
    # ignored the lease would leave it there; one that waited for a release would time out).
    dead = lease_body(t, t.locks.commit)
    assert dead["owner"] == held["owner"]
    set_clock(monkeypatch, past=dead["expires_ms"])
    after = lf.Catalog(wh, options={**opts, "lock-acquire-timeout": "30 s"}).get_table("db.t")
    after.write(pa.table({"id": [7], "v": [7]}))
    assert [s.id for s in after.snapshots()] == [1, 2]
    # the dead lease was taken over (only its taker can delete it), then given back
    assert not t.file_io.exists(t.locks.commit.location)


def test_bad_lock_input_is_refused_and_leaves_the_table_alone(tmp_path):
    wh = str(tmp_path / "wh")
    t = make_table(wh, commits=3)
    with pytest.raises(lf.UnsupportedError, match="'lock.type' = 'zookeeper'"):
        lf.Catalog(wh, options={"lock.type": "zookeeper"})
    with pytest.raises(lf.UnsupportedError, match="'metastore' = 'hive'"):
        lf.Catalog(wh, options={"metastore": "hive"})
    with pytest.raises(lf.InvalidOptionError, match="needs catalog option 'uri'"):
        lf.Catalog(wh, options={"lock.type": "jdbc"})
    with pytest.raises(lf.InvalidOptionError, match="did you mean 'lock.enabled'"):
        lf.Catalog(wh, options={"lock.enable": "true"})
    with pytest.raises(lf.InvalidOptionError, match="lock.enabled"):
        lf.Catalog(wh, options={"lock.enabled": "yes please"})
    lease = Path(wh) / ".lakeformat" / "locks" / "db" / "t" / "maintenance.lease"
    lease.parent.mkdir(parents=True, exist_ok=True)
    lease.write_bytes(b"\x00 not json")
    files = {f.path for f in t.file_io.list_recursive(t.path)}
    snaps = [s.id for s in t.snapshots()]
    for verb in (lambda: t.compact(), lambda: t.expire_snapshots(retain_min=1, older_than="0 s"),
                 lambda: t.remove_orphan_files(older_than="0 s",
                                               enforce_retention_duration=False)):
        with pytest.raises(lf.CorruptFileError, match="not a lakeformat lease"):
            verb()
    assert {f.path for f in t.file_io.list_recursive(t.path)} == files
    assert [s.id for s in t.snapshots()] == snaps
    assert lease.read_bytes() == b"\x00 not json"  # left for a person to look at


class Pauses:
    """The `time` module for lakeformat's modules, except that every sleep is recorded."""

    def __init__(self) -> None:
        self.seconds: list[float] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)

    def sleep(self, seconds: float) -> None:
        self.seconds.append(seconds)
        time.sleep(seconds)


def record_pauses(monkeypatch: pytest.MonkeyPatch) -> Pauses:
    """Record every `time.sleep` of lakeformat's modules (lock waits, commit back-offs)."""
    pauses = Pauses()
    for name, module in list(sys.modules.items()):
        if name.split(".")[0] == "lakeformat" and getattr(module, "time", None) is time:
            monkeypatch.setattr(module, "time", pauses)
    return pauses


def test_a_garbage_commit_lease_fails_writes_at_once_and_leaves_no_file(where, monkeypatch):
    """An unreadable commit lease is not a commit that "may still land": every publish is
    refused before it is sent, so the job fails at once and removes what it wrote."""
    wh, base = where
    t = make_table(wh, {**base, "lock.enabled": "true"}, commits=2)
    assert t.locks.commit is not None
    where_lease = t.locks.commit.location
    t.file_io.write_bytes(where_lease, b"{not a lease")
    files = {f.path for f in t.file_io.list_recursive(t.path)}
    verbs = {"write": lambda: t.write(pa.table({"id": [7, 8], "v": [7, 8]})),
             "compact": lambda: t.compact(full=True),
             "alter": lambda: t.alter(lf.SchemaChange.set_option("snapshot.num-retained.min",
                                                                "3"))}
    pauses = record_pauses(monkeypatch)
    for verb, call in verbs.items():
        started = time.monotonic()
        with pytest.raises(lf.CorruptFileError) as err:
            call()
        # at once: no wait for the lock, no commit back-off (a count of lakeformat's sleeps) —
        # and, for the waits a count cannot see (the S3 client's retry back-off binds its sleep
        # when defined), far less than the lock's acquire timeout (8 min): a hang guard, not a
        # stopwatch
        assert pauses.seconds == [], f"{verb} paused {pauses.seconds} s before failing"
        assert time.monotonic() - started < 60, verb
        assert where_lease in str(err.value) and "delete the object" in str(err.value), verb
        assert not isinstance(err.value, lf.RETRYABLE_ERRORS), verb
        t.refresh()
        assert {f.path for f in t.file_io.list_recursive(t.path)} == files, verb
        assert [s.id for s in t.snapshots()] == [1, 2], verb
    assert t.file_io.read_bytes(where_lease) == b"{not a lease"  # left for a person to see


def test_guard_does_not_travel_to_tasks(tmp_path):
    t = make_table(str(tmp_path / "wh"), {"lock.enabled": "true"}, commits=1)
    plain = pickle.loads(pickle.dumps(t.file_io))
    assert type(plain) is LocalFileIO


class _LateAnswer(LocalFileIO):
    """A store whose create lands at once but answers `delay` seconds later."""

    delay = 1.5

    def create_versioned(self, path: str, data: bytes) -> str | None:
        etag = super().create_versioned(path, data)
        time.sleep(self.delay)
        return etag


def test_a_lease_counts_from_its_request_not_its_late_answer(tmp_path):
    """The expiry a holder writes is computed before its request; if the answer comes back
    after the lease ran out and a contender took it over, the first holder must already see
    its lease as lost — never two holders passing `check()` at once."""
    from lakeformat.lock.lease import LeaseLock
    from lakeformat.lock.options import LockConfig

    cfg = LockConfig(lease_ms=1000, acquire_timeout_ms=10_000, check_max_sleep_ms=100)
    path = str(tmp_path / "locks" / "maintenance.lease")
    slow, fast = LeaseLock(_LateAnswer(), path, "t", cfg), LeaseLock(LocalFileIO(), path, "t", cfg)
    got: dict[str, Any] = {}
    import threading

    first = threading.Thread(target=lambda: got.setdefault("a", slow.acquire("compact")))
    first.start()
    time.sleep(0.05)
    b = fast.acquire("expire")  # takes the expired lease over while A waits for its answer
    first.join()
    a = got["a"]
    try:
        with pytest.raises(lf.LockLostError):
            a.check()
        b.check()
    finally:
        a.release()
        b.release()
