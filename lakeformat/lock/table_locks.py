"""The two locks of one table, as a `Table` holds them (see `lock/base.py`)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from lakeformat.lock.base import TableLock
from lakeformat.lock.guard import GuardedFileIO
from lakeformat.storage import FileIO

__all__ = ["TableLocks", "NO_LOCKS"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TableLocks:
    """`commit`: Paimon's commit lock (None unless `lock.enabled=true`); `maintenance`: held
    around every maintenance job (None only for a table opened without a catalog)."""

    commit: TableLock | None = None
    maintenance: TableLock | None = None

    def guarded(self, file_io: FileIO) -> FileIO:
        """The FileIO every write of the table goes through: publishes take the commit lock."""
        return GuardedFileIO(file_io, self.commit) if self.commit is not None else file_io

    @contextmanager
    def maintaining(self, file_io: FileIO, purpose: str) -> Iterator[FileIO]:
        """Hold the maintenance lock for the body; the FileIO it yields fences every publish
        and delete of the job with the lease, so a job that lost it stops before acting."""
        if self.maintenance is None:
            yield self.guarded(file_io)
            return
        with self.maintenance.acquire(purpose) as lease:
            _log.info("acquired %s for %s (owner %s)", self.maintenance.location, purpose,
                      lease.holder.owner)
            try:
                yield GuardedFileIO(file_io, self.commit, (lease,))
            finally:
                _log.info("releasing %s after %s (owner %s)", self.maintenance.location,
                          purpose, lease.holder.owner)


NO_LOCKS = TableLocks()
