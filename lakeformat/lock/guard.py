"""The FileIO a table's jobs write through: publishes under the commit lock, and every
publish and delete fenced by the leases the job holds.

Every commit of the format goes through one primitive, `write_if_absent` (snapshot, schema,
tag and rollback files), as every Java commit goes through `SnapshotCommit` under
`Lock.runWithLock`. Guarding that primitive, and the deletes of cleanup jobs, covers every
operation without threading a lock through each of them:

* with a commit lock (`lock.enabled=true`) each publish takes it for the moment of the write
  and writes through `FileIO.publish_locked` (a store without conditional writes then falls
  back to "exists? then put", safe only because everybody publishing holds the lock);
* with fences (the maintenance lease of the running job) each publish and delete first checks
  that the lease is still held, so a job that lost its lock stops before it acts.

A guard does not travel: pickled (to a Spark task), a `GuardedFileIO` becomes its plain inner
FileIO — tasks write data files and never publish.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from lakeformat.lock.base import Lease, TableLock
from lakeformat.storage import FileIO, FileStatus, PendingFiles, Versioned

__all__ = ["GuardedFileIO", "unguarded"]


def _plain(file_io: FileIO) -> FileIO:
    return file_io


def unguarded(file_io: FileIO) -> FileIO:
    """The storage under any guard."""
    while isinstance(file_io, GuardedFileIO):
        file_io = file_io.inner
    return file_io


class GuardedFileIO(FileIO):
    """`inner` with its publishes locked and fenced (see the module docstring)."""

    def __init__(self, inner: FileIO, commit_lock: TableLock | None = None,
                 fences: tuple[Lease, ...] = ()):
        self.inner = unguarded(inner)
        self.commit_lock = commit_lock
        self.fences = fences

    def __repr__(self) -> str:
        return f"GuardedFileIO({self.inner!r}, commit_lock={self.commit_lock!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_plain, (self.inner,))

    def with_fence(self, lease: Lease) -> GuardedFileIO:
        """The same guard, also fenced by `lease`."""
        return GuardedFileIO(self.inner, self.commit_lock, self.fences + (lease,))

    @property
    def metadata_cache(self) -> Any:
        return self.inner.metadata_cache

    def check_fences(self) -> None:
        for lease in self.fences:
            lease.check()

    # -- guarded: publish and delete ------------------------------------------------------
    def write_if_absent(self, path: str, data: bytes) -> bool:
        if self.commit_lock is None:
            self.check_fences()
            return self.inner.write_if_absent(path, data)
        with self.commit_lock.acquire("commit") as lease:
            self.check_fences()
            lease.check()
            return self.inner.publish_locked(path, data)

    def publish_locked(self, path: str, data: bytes) -> bool:
        return self.write_if_absent(path, data)

    def delete(self, path: str) -> bool:
        self.check_fences()
        return self.inner.delete(path)

    def delete_many(self, paths: list[str]) -> list[str]:
        self.check_fences()
        return self.inner.delete_many(paths)

    def delete_dir(self, dir_path: str) -> None:
        self.check_fences()
        self.inner.delete_dir(dir_path)

    # -- passed through -------------------------------------------------------------------
    def join(self, *parts: str) -> str:
        return self.inner.join(*parts)

    def read_bytes(self, path: str) -> bytes:
        return self.inner.read_bytes(path)

    def read_range(self, path: str, offset: int, length: int) -> bytes:
        return self.inner.read_range(path, offset, length)

    def write_bytes(self, path: str, data: bytes) -> None:
        self.inner.write_bytes(path, data)

    def open_output(self, path: str, pending: PendingFiles | None = None
                    ) -> AbstractContextManager[Any]:
        return self.inner.open_output(path, pending)

    def read_versioned(self, path: str) -> Versioned:
        return self.inner.read_versioned(path)

    def create_versioned(self, path: str, data: bytes) -> str | None:
        return self.inner.create_versioned(path, data)

    def replace_versioned(self, path: str, data: bytes, etag: str) -> str | None:
        return self.inner.replace_versioned(path, data, etag)

    def delete_versioned(self, path: str, etag: str) -> bool:
        return self.inner.delete_versioned(path, etag)

    def supports_versioned(self, path: str) -> bool:
        return self.inner.supports_versioned(path)

    def exists(self, path: str) -> bool:
        return self.inner.exists(path)

    def status(self, path: str) -> FileStatus:
        return self.inner.status(path)

    def list_status(self, dir_path: str) -> list[FileStatus]:
        return self.inner.list_status(dir_path)

    def list_dirs(self, dir_path: str) -> list[str]:
        return self.inner.list_dirs(dir_path)

    def list_recursive(self, dir_path: str) -> list[FileStatus]:
        return self.inner.list_recursive(dir_path)

    def mkdirs(self, dir_path: str) -> None:
        self.inner.mkdirs(dir_path)

    def is_dir(self, path: str) -> bool:
        return self.inner.is_dir(path)

    def open_input(self, path: str) -> Any:
        return self.inner.open_input(path)
