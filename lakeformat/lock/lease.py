"""`lock.type=s3`: a lease object on the warehouse's own storage; no extra service.

The lock is one small JSON object, `<warehouse>/.lakeformat/locks/<database>/<table>/<kind>.lease`,
outside every table directory (Paimon lists only `<database>.db` directories of a warehouse,
so no Paimon tool takes it for a table file). Its body names the holder, the purpose and when
the lease runs out. Every change is a compare-and-swap on the object's version (ETag):

* acquire: create with `If-None-Match: *` — one of several contenders creates it;
* renew: replace with `If-Match: <our etag>` every third of the lease, pushing the expiry on;
* take over an expired lease: replace with `If-Match: <the stale etag>` — exactly one
  contender wins, the others see a new version and wait again;
* release: delete with `If-Match: <our etag>` — a lease taken over meanwhile is left alone.

The same calls work on local disk (`LocalFileIO` compares content digests under an flock), so
a warehouse on a shared disk is locked the same way. Contenders judge expiry by their own wall
clock against the expiry the holder wrote: hosts are assumed to keep time (NTP); the holder
counts on only 80 % of its lease (`LeaseKeeper`), which absorbs a few seconds of drift.
"""

from __future__ import annotations

import json
import time

from lakeformat import clock
from lakeformat.errors import CorruptLeaseError
from lakeformat.lock.base import (
    KeptLease,
    Lease,
    LeaseKeeper,
    LockHolder,
    TableLock,
    new_holder,
)
from lakeformat.lock.options import LockConfig
from lakeformat.storage import FileIO

__all__ = ["LeaseLock", "S3Lease", "lease_path", "LOCKS_DIR"]

#: below the warehouse root: not a `<name>.db` directory, so not a database to Paimon
LOCKS_DIR = ".lakeformat/locks"


def lease_path(file_io: FileIO, warehouse: str, database: str, table: str, kind: str) -> str:
    """Where the `kind` ("commit" / "maintenance") lease of `database.table` lives."""
    return file_io.join(warehouse, LOCKS_DIR, database, table, f"{kind}.lease")


def _parse(path: str, data: bytes) -> LockHolder:
    try:
        body = json.loads(data)
        return LockHolder(owner=str(body["owner"]), purpose=str(body["purpose"]),
                          host=str(body.get("host", "")), pid=int(body.get("pid", 0)),
                          since_ms=int(body["since_ms"]), expires_ms=int(body["expires_ms"]))
    except (ValueError, KeyError, TypeError) as e:
        raise CorruptLeaseError(
            f"lease object {path} is not a lakeformat lease ({e.__class__.__name__}: {e}); "
            "nothing was done to the table. If no lakeformat job is running on this table, "
            "delete the object to free the lock.") from None


class S3Lease(KeptLease):
    """A lease held through the object's version: renewed in the background, checked before
    every publish, released by a conditional delete."""

    def __init__(self, lock: LeaseLock, holder: LockHolder, etag: str, started: float):
        self.lock = lock
        self.holder = holder
        self._etag = etag
        self._keeper = LeaseKeeper(lock.location, lock.config.lease_ms, self._renew, started)

    def _renew(self) -> bool:
        now = clock.now_millis()
        renewed = LockHolder(self.holder.owner, self.holder.purpose, self.holder.host,
                             self.holder.pid, self.holder.since_ms,
                             now + self.lock.config.lease_ms)
        etag = self.lock.file_io.replace_versioned(self.lock.location, renewed.to_json(),
                                                   self._etag)
        if etag is None:
            return False
        self._etag, self.holder = etag, renewed
        return True

    def _give_back(self) -> None:
        self.lock.file_io.delete_versioned(self.lock.location, self._etag)


class LeaseLock(TableLock):
    """The lease lock of one table and kind."""

    def __init__(self, file_io: FileIO, location: str, what: str, config: LockConfig):
        self.file_io = file_io
        self.location = location
        self.what = what  # "maintenance of db.t", for messages
        self.config = config

    def __repr__(self) -> str:
        return f"LeaseLock({self.location!r})"

    def _try(self, purpose: str) -> Lease | LockHolder | None:
        """One attempt: a lease, or the holder that keeps us out (None: gone meanwhile)."""
        started = time.monotonic()
        holder = new_holder(purpose, self.config.lease_ms)
        etag = self.file_io.create_versioned(self.location, holder.to_json())
        if etag is not None:
            return S3Lease(self, holder, etag, started)
        try:
            current = self.file_io.read_versioned(self.location)
        except FileNotFoundError:  # released between our create and read: try again
            return None
        seen = _parse(self.location, current.data)
        if seen.expires_ms is not None and seen.expires_ms < clock.now_millis():
            started = time.monotonic()
            holder = new_holder(purpose, self.config.lease_ms)
            etag = self.file_io.replace_versioned(self.location, holder.to_json(), current.etag)
            if etag is not None:
                return S3Lease(self, holder, etag, started)
        return seen
