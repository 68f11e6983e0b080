"""FileIO over the local file system (tests, single machines, NFS-like mounts).

Writes go through a temp file in the target directory named ``.<name>.<uuid>.tmp`` — the
pattern Paimon's orphan cleaner recognises — so a crash never leaves a half-written file
under its final name.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import shutil
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pyarrow as pa

from lakeformat.errors import UnsupportedError
from lakeformat.storage.fileio import (
    LOCAL_SCHEMES,
    FileIO,
    FileStatus,
    PendingFiles,
    Versioned,
    register_file_io,
    split_scheme,
)
from lakeformat.storage.metadata_cache import forget

__all__ = ["LocalFileIO", "local_path"]

#: one in-process mutex per directory of versioned objects (see `LocalFileIO._exclusive`)
_CAS_MUTEX = threading.Lock()
_CAS_MUTEXES: dict[str, threading.Lock] = {}

#: write buffer of `LocalFileIO.open_output` streams
OUTPUT_BUFFER = 1 << 20
#: `open_output` flushes a file being written to disk whenever this many more bytes reached
#: the OS, from a helper thread, so the disk works while the writer encodes (see `_Trickle`)
SYNC_STEP = 2 << 20
#: how often that helper looks at the file's size (seconds): each look takes the GIL from the
#: encoders for a moment; 10 ms lets ~1 MB more reach the OS between looks
SYNC_POLL = 0.01

#: errno values meaning "this file system cannot make hard links".
_NO_LINK_ERRNOS = {errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EMLINK}


def local_path(path: str) -> str:
    """Strip ``file:`` / ``file://`` / ``file://localhost`` from ``path``; reject other schemes.

    Plain paths pass through unchanged so callers' relative paths keep working.
    """
    scheme, rest = split_scheme(path)
    if scheme == "":
        return path
    if scheme != "file":
        raise UnsupportedError(f"LocalFileIO cannot handle scheme {scheme!r} in {path!r}")
    if rest.startswith("//"):
        host, slash, tail = rest[2:].partition("/")
        if host not in ("", "localhost"):
            raise UnsupportedError(f"remote host {host!r} in file URI {path!r} is not supported")
        return "/" + tail if slash else "/"
    return rest if rest else "/"


class LocalFileIO(FileIO):
    """Local disk implementation; stateless, hence trivially picklable and thread-safe."""

    #: no metadata cache unless the catalog asks for one: a local read costs no round trip
    metadata_cache_default = 0

    def __init__(self, fsync: bool = True) -> None:
        """``fsync`` flushes file data before publishing, so a committed snapshot survives a
        power cut; turn it off only for throwaway data."""
        self._fsync = fsync

    def join(self, *parts: str) -> str:
        """Join with '/', first stripping a ``file:`` scheme so results are plain paths."""
        if parts and parts[0]:
            parts = (local_path(parts[0]),) + tuple(parts[1:])
        return super().join(*parts)

    # ------------------------------------------------------------------ read / stat

    def read_bytes(self, path: str) -> bytes:
        """Read the whole file; a missing file raises ``FileNotFoundError`` with the path."""
        p = local_path(path)
        try:
            with open(p, "rb") as f:
                return f.read()
        except FileNotFoundError:
            raise FileNotFoundError(errno.ENOENT, f"file not found: {path}", path) from None

    def exists(self, path: str) -> bool:
        """True for files and directories alike, as in Paimon's FileIO."""
        return os.path.exists(local_path(path))

    def status(self, path: str) -> FileStatus:
        """``os.stat`` as a FileStatus (path as given, scheme stripped)."""
        p = local_path(path)
        try:
            st = os.stat(p)
        except FileNotFoundError:
            raise FileNotFoundError(errno.ENOENT, f"file not found: {path}", path) from None
        return FileStatus(p, st.st_size, st.st_mtime)

    def is_dir(self, path: str) -> bool:
        """True if ``path`` is an existing directory."""
        return os.path.isdir(local_path(path))

    def open_input(self, path: str) -> Any:
        """A ``pyarrow.OSFile``: seekable, so Parquet footers are read without loading the file."""
        p = local_path(path)
        if not os.path.isfile(p):
            raise FileNotFoundError(errno.ENOENT, f"file not found: {path}", path)
        return pa.OSFile(p, "rb")

    # ------------------------------------------------------------------ listing

    def _scan(self, dir_path: str) -> list[os.DirEntry[str]]:
        """Entries of a directory, [] when it is missing or not a directory (like S3)."""
        try:
            with os.scandir(local_path(dir_path)) as it:
                return sorted(it, key=lambda e: e.name)
        except (FileNotFoundError, NotADirectoryError):
            return []

    def list_status(self, dir_path: str) -> list[FileStatus]:
        """Direct child files sorted by name; symlinks to files count as files."""
        out: list[FileStatus] = []
        for e in self._scan(dir_path):
            try:
                if not e.is_file():
                    continue
                st = e.stat()
            except FileNotFoundError:  # deleted while we listed
                continue
            out.append(FileStatus(self.join(dir_path, e.name), st.st_size, st.st_mtime,
                                  f"{st.st_ino}:{st.st_mtime_ns}"))
        return out

    def list_dirs(self, dir_path: str) -> list[str]:
        """Direct child directories sorted by name."""
        return [self.join(dir_path, e.name) for e in self._scan(dir_path) if e.is_dir()]

    def list_recursive(self, dir_path: str) -> list[FileStatus]:
        """Every file below ``dir_path``, sorted by path."""
        root = local_path(dir_path).rstrip("/") or "/"
        out: list[FileStatus] = []
        for cur, _dirs, files in os.walk(root):
            for name in files:
                full = os.path.join(cur, name)
                try:
                    st = os.stat(full)
                except FileNotFoundError:
                    continue
                out.append(FileStatus(full, st.st_size, st.st_mtime))
        out.sort(key=lambda s: s.path)
        return out

    # ------------------------------------------------------------------ write

    def _temp_path(self, target: str) -> str:
        """Temp name in the target's directory (created if missing), so the final rename/link
        stays on one device."""
        d, name = os.path.split(target)
        if d:
            os.makedirs(d, exist_ok=True)
        return os.path.join(d, f".{name}.{uuid.uuid4().hex}.tmp")

    def _write_temp(self, target: str, data: bytes) -> str:
        """Write ``data`` to a fresh temp file next to ``target``; removed again on failure."""
        tmp = self._temp_path(target)
        try:
            with open(tmp, "xb") as f:
                f.write(data)
                if self._fsync:
                    f.flush()
                    os.fsync(f.fileno())
        except BaseException:
            _unlink_quietly(tmp)
            raise
        return tmp

    def write_bytes(self, path: str, data: bytes) -> None:
        """Overwrite atomically: temp file + ``os.replace``; readers never see a partial file."""
        forget(self, path)
        target = local_path(path)
        tmp = self._write_temp(target, data)
        try:
            os.replace(tmp, target)
        except BaseException:
            _unlink_quietly(tmp)
            raise

    @contextmanager
    def open_output(self, path: str, pending: PendingFiles | None = None) -> Iterator[Any]:
        """Bytes stream straight into the temp file (buffered; no copy of the whole file in
        memory), which is flushed and renamed to ``path`` as `write_bytes` does. With
        `pending`, the last flush and the rename run on the file's flushing thread while the
        caller goes on (`PendingFiles.wait`)."""
        target = local_path(path)
        tmp = self._temp_path(target)
        try:
            if not self._fsync:
                with pa.output_stream(tmp, buffer_size=OUTPUT_BUFFER) as out:
                    yield out
            else:
                with pa.output_stream(tmp, buffer_size=OUTPUT_BUFFER) as out, _Trickle(tmp) as sync:
                    yield out
                    out.close()
                    if pending is not None:
                        pending.add(sync.publish_later(tmp, target))
                        return
                    sync.finish()
            os.replace(tmp, target)
        except BaseException:
            _unlink_quietly(tmp)
            raise

    def write_if_absent(self, path: str, data: bytes) -> bool:
        """Exclusive create via ``os.link(temp, target)``: the link either appears complete or
        fails with EEXIST, unlike ``O_EXCL`` which exposes the file while it is being written."""
        target = local_path(path)
        tmp = self._write_temp(target, data)
        try:
            os.link(tmp, target)
            return True
        except FileExistsError:
            return False
        except OSError as e:
            if e.errno in _NO_LINK_ERRNOS:
                raise UnsupportedError(
                    f"file system of {path!r} does not support hard links, which "
                    f"write_if_absent needs for an atomic exclusive create: {e}"
                ) from e
            raise
        finally:
            _unlink_quietly(tmp)

    # ------------------------------------------------------------------ versioned objects

    @contextmanager
    def _exclusive(self, target: str) -> Iterator[None]:
        """Hold the object's compare-and-swap lock: an flock on its directory (other
        processes; no sidecar file is left behind) and a per-directory mutex (other threads
        of this process: flock locks belong to open files, not threads)."""
        directory = os.path.abspath(os.path.dirname(target) or ".")
        with _CAS_MUTEX:
            mutex = _CAS_MUTEXES.setdefault(directory, threading.Lock())
        os.makedirs(directory, exist_ok=True)
        with mutex:
            fd = os.open(directory, os.O_RDONLY)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                yield
            finally:
                os.close(fd)  # closing drops the flock

    @staticmethod
    def _etag(data: bytes) -> str:
        return hashlib.sha256(data).hexdigest()[:32]

    def _current_etag(self, target: str) -> str | None:
        try:
            with open(target, "rb") as f:
                return self._etag(f.read())
        except FileNotFoundError:
            return None

    def read_versioned(self, path: str) -> Versioned:
        """Content and its digest (a lease body carries a unique token, so equal digests mean
        the same write)."""
        data = self.read_bytes(path)
        return Versioned(data, self._etag(data))

    def create_versioned(self, path: str, data: bytes) -> str | None:
        """Exclusive create (the same link-based publish as ``write_if_absent``)."""
        return self._etag(data) if self.write_if_absent(path, data) else None

    def replace_versioned(self, path: str, data: bytes, etag: str) -> str | None:
        """Compare the digest and replace atomically while holding the object's lock."""
        target = local_path(path)
        with self._exclusive(target):
            if self._current_etag(target) != etag:
                return None
            self.write_bytes(target, data)
        return self._etag(data)

    def delete_versioned(self, path: str, etag: str) -> bool:
        """Compare the digest and unlink while holding the object's lock."""
        target = local_path(path)
        with self._exclusive(target):
            if self._current_etag(target) != etag:
                return False
            os.unlink(target)
        return True

    # ------------------------------------------------------------------ delete / mkdirs

    def delete(self, path: str) -> bool:
        """Delete a file (or an empty directory); False if nothing was there.

        A non-empty directory raises ``OSError`` (ENOTEMPTY): use :meth:`delete_dir`.
        """
        p = local_path(path)
        try:
            os.unlink(p)
            return True
        except FileNotFoundError:
            return False
        except IsADirectoryError:
            pass
        except PermissionError:
            if not os.path.isdir(p) or os.path.islink(p):  # macOS reports EPERM for dirs
                raise
        try:
            os.rmdir(p)
            return True
        except FileNotFoundError:
            return False

    def delete_dir(self, dir_path: str) -> None:
        """``rm -r``; refuses the file-system root because that is always a bug upstream."""
        forget(self, dir_path, prefix=True)
        p = local_path(dir_path)
        if os.path.abspath(p) == os.path.abspath(os.sep):
            raise UnsupportedError(f"refusing to delete the root directory {dir_path!r}")
        try:
            shutil.rmtree(p)
        except FileNotFoundError:
            return
        except NotADirectoryError:
            os.unlink(p)

    def mkdirs(self, dir_path: str) -> None:
        """``mkdir -p``."""
        os.makedirs(local_path(dir_path), exist_ok=True)


# plain paths and file:// URIs (the options carry nothing a local disk needs)
register_file_io(sorted(LOCAL_SCHEMES), lambda options: LocalFileIO())


def _datasync(fd: int) -> None:
    """`os.fdatasync`, or `os.fsync` where there is none (macOS)."""
    getattr(os, "fdatasync", os.fsync)(fd)


class _Trickle:
    """Flushes a file to disk while it is being written, and once more at the end.

    An fsync of a freshly written file waits for the disk to take all of its bytes (about
    2 ms a MB here), time the writer's thread spends idle. A helper thread instead flushes what
    has reached the OS every `SYNC_STEP` bytes while the writer goes on encoding; the last
    flush (`finish`) then waits for the tail only, or the helper takes the tail and the
    rename too (`publish_later`) and the writer does not wait at all. The descriptor is
    opened before any byte is written, so a write-back error on any of those flushes is
    reported by a later one on it (Linux reports such an error to every descriptor opened
    before it) or re-raised."""

    def __init__(self, path: str) -> None:
        self._fd = os.open(path, os.O_RDONLY)
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self._publish: tuple[str, str] | None = None  # (temp, target): the helper finishes
        self._thread = threading.Thread(target=self._run, name="lakeformat-sync", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        synced = 0
        while not self._stop.wait(SYNC_POLL):
            try:
                size = os.fstat(self._fd).st_size
                if size - synced >= SYNC_STEP:
                    _datasync(self._fd)
                    synced = size
            except OSError as e:
                self._error = e
                self._stop.wait()  # the writer still ends the file (finish or publish_later)
                break
        if self._publish is not None:
            self._finish_publish(*self._publish)

    def _finish_publish(self, tmp: str, target: str) -> None:
        try:
            if self._error is None:
                os.fsync(self._fd)
                os.replace(tmp, target)
        except BaseException as e:  # noqa: BLE001 - handed to the waiter
            self._error = e
        finally:
            os.close(self._fd)
            if self._error is not None:
                _unlink_quietly(tmp)

    def _join(self) -> None:
        self._stop.set()
        self._thread.join()

    def finish(self) -> None:
        """Wait for the helper, then flush the rest (and the file's size) to disk."""
        self._join()
        if self._error is not None:
            raise self._error
        os.fsync(self._fd)

    def publish_later(self, tmp: str, target: str) -> Callable[[], None]:
        """Hand the last flush and the rename of `tmp` to `target` to the helper; the
        returned function waits for them and raises what failed (`tmp` then removed)."""
        self._publish = (tmp, target)
        self._stop.set()

        def wait() -> None:
            self._thread.join()
            if self._error is not None:
                raise self._error
        return wait

    def __enter__(self) -> _Trickle:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._publish is None:
            self._join()
            os.close(self._fd)


def _unlink_quietly(path: str) -> None:
    """Remove a temp file, ignoring that it may already be gone."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
