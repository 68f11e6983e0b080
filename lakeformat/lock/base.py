"""The lock seam: a named lock on one table, and the lease a job holds while it works.

Paimon serializes commits on stores without an atomic rename through a catalog lock
(`CatalogLock.runWithLock(database, table, ...)`, `lock.enabled` + `lock.type`). lakeformat
holds two locks per table, each a `TableLock`:

* the **commit lock** (Paimon's own, `lock.enabled=true`): held for the moment a snapshot,
  schema or tag file is published, under the name Java Paimon uses, so a Java writer on the
  same JDBC catalog and lakeformat exclude each other's commits;
* the **maintenance lock** (lakeformat's, always on): held for the whole of a compaction,
  expiry, schema or orphan clean, partition expiry, rollback or tag deletion, so one table is
  never maintained twice at once. Writers do not take it: they keep committing while a
  compaction runs, and optimistic concurrency settles the rest as in Paimon.

A `Lease` is held, not owned forever: it expires unless renewed (a background thread renews
it), so a killed process frees the lock after one lease length. Before a job publishes or
deletes, it calls `Lease.check()` (fencing): a holder that lost its lease (paused, partitioned)
stops with `LockLostError` instead of acting on a lock somebody else now holds.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import random
import socket
import threading
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import asdict, dataclass
from types import TracebackType

from lakeformat import clock
from lakeformat.errors import LockLostError, LockTimeoutError
from lakeformat.lock.options import LockConfig

__all__ = ["LockHolder", "Lease", "KeptLease", "TableLock", "LeaseKeeper", "acquire_with_retry",
           "new_holder"]

_log = logging.getLogger(__name__)


def _iso(ms: int | None) -> str:
    if ms is None:
        return "unknown"
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class LockHolder:
    """Who holds a lock: what an on-call engineer needs to find the process."""

    owner: str  # unique per acquisition
    purpose: str  # "compact", "expire_snapshots", "commit", ...
    host: str = ""
    pid: int = 0
    since_ms: int | None = None  # epoch millis of acquisition (the holder's clock)
    expires_ms: int | None = None  # epoch millis the lease runs out unless renewed

    def describe(self) -> str:
        where = f"host {self.host or 'unknown'}, pid {self.pid or 'unknown'}"
        return (f"{self.purpose} (owner {self.owner}, {where}, since {_iso(self.since_ms)}, "
                f"lease until {_iso(self.expires_ms)})")

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    def to_json(self) -> bytes:
        return json.dumps(self.to_dict(), sort_keys=True).encode()


def new_holder(purpose: str, lease_ms: int) -> LockHolder:
    """A holder for this process, acquiring now with a lease of `lease_ms`."""
    now = clock.now_millis()
    return LockHolder(uuid.uuid4().hex, purpose, socket.gethostname(), os.getpid(), now,
                      now + lease_ms)


class Lease(ABC):
    """A held lock. Use as a context manager; `check()` before every publish or delete."""

    holder: LockHolder

    @abstractmethod
    def check(self) -> None:
        """Raise `LockLostError` unless the lease is still ours and not run out."""

    @abstractmethod
    def release(self) -> None:
        """Give the lock up (idempotent); never frees a lock somebody else now holds."""

    def __enter__(self) -> Lease:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()


class KeptLease(Lease):
    """A lease renewed by a `LeaseKeeper` (`_keeper`): checked through it, released once by
    stopping it and then giving the lock back (`_give_back`, best effort: an unreleased lease
    runs out by itself)."""

    _keeper: LeaseKeeper
    _released = False

    @abstractmethod
    def _give_back(self) -> None:
        """Free the lock if it is still ours (never somebody else's)."""

    def check(self) -> None:
        self._keeper.check()

    def release(self) -> None:
        if self._released:
            return
        self._released = True
        self._keeper.stop()
        try:
            self._give_back()
        except Exception as e:
            _log.warning("could not give back %s (it runs out by itself): %s",
                         self._keeper.what, e)


class TableLock(ABC):
    """A named lock on one table (one name per table and kind)."""

    #: where the lock lives, for messages ("s3://b/wh/.lakeformat/locks/db/t/commit.lease",
    #: "jdbc lock 'jdbc.db.t'")
    location: str
    #: what it locks, for messages ("maintenance of table db.t")
    what: str
    config: LockConfig

    def acquire(self, purpose: str) -> Lease:
        """Wait (up to `lock-acquire-timeout`) and take the lock; `LockTimeoutError` naming
        the holder when it stays taken."""
        return acquire_with_retry(lambda: self._try(purpose), what=f"{self.what} ({self.location})",
                                  timeout_ms=self.config.acquire_timeout_ms,
                                  max_sleep_ms=self.config.check_max_sleep_ms)

    @abstractmethod
    def _try(self, purpose: str) -> Lease | LockHolder | None:
        """One attempt: a lease, or the holder that keeps us out (None: cannot tell)."""


def acquire_with_retry(try_once: Callable[[], Lease | LockHolder | None], *, what: str,
                       timeout_ms: int, max_sleep_ms: int) -> Lease:
    """Call `try_once` until it returns a `Lease`, sleeping 50 ms doubling up to
    `max_sleep_ms` (Paimon's `lock-check-max-sleep`) with jitter between tries; after
    `timeout_ms` raise `LockTimeoutError` naming the last holder seen (`try_once` returns the
    holder, or None when it could not tell)."""
    start = time.monotonic()
    sleep_ms = 50.0
    holder: LockHolder | None = None
    while True:
        got = try_once()
        if isinstance(got, Lease):
            return got
        holder = got if got is not None else holder
        waited = (time.monotonic() - start) * 1000
        if waited >= timeout_ms:
            by = f"held by {holder.describe()}" if holder else "holder unknown"
            raise LockTimeoutError(
                f"could not lock {what} within lock-acquire-timeout "
                f"({timeout_ms / 1000:g} s): {by}", holder)
        pause = min(sleep_ms, max_sleep_ms, timeout_ms - waited) * (0.5 + random.random() / 2)
        time.sleep(max(pause, 1.0) / 1000)
        sleep_ms *= 2


class LeaseKeeper:
    """Renews a lease in a daemon thread every third of its length and knows, by this
    process's monotonic clock, until when it is surely still valid.

    `renew()` returns True when renewed, False when the lock was lost (taken over, deleted),
    and raises on a transient failure (tried again next period). `check()` fails once the
    lease was lost, or once the last renewal is older than the lease minus a safety margin —
    which is what a process paused for longer than its lease sees when it wakes up.
    """

    def __init__(self, what: str, lease_ms: int, renew: Callable[[], bool], started: float):
        """`started`: `time.monotonic()` taken before the request that acquired the lease
        was sent (its expiry counts from then, however late the answer came)."""
        self.what = what
        self.lease_ms = lease_ms
        self._renew = renew
        self._valid_until = started + self._safe_ms() / 1000
        self._lost: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"lease-{what}", daemon=True)
        self._thread.start()

    def _safe_ms(self) -> float:
        """The part of a lease a holder may count on: the rest absorbs clock drift between
        holder and contenders and the time a publish request takes."""
        return self.lease_ms * 0.8

    def _run(self) -> None:
        period = self.lease_ms / 3000
        while not self._stop.wait(period):
            started = time.monotonic()
            try:
                if not self._renew():
                    self._lost = "it was taken over or removed by another process"
                    return
                self._valid_until = started + self._safe_ms() / 1000
            except Exception as e:  # a failed request: try again next period
                _log.warning("could not renew the lease on %s (will retry): %s", self.what, e)

    def check(self) -> None:
        if self._lost is not None:
            raise LockLostError(f"lost the lock on {self.what}: {self._lost}; stopped before "
                                "publishing or deleting anything more")
        if time.monotonic() > self._valid_until:
            raise LockLostError(
                f"lost the lock on {self.what}: its lease ({self.lease_ms / 1000:g} s) was not "
                "renewed in time (a paused or partitioned process?); stopped before "
                "publishing or deleting anything more")

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join()
