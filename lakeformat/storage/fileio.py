"""The storage abstraction every other layer talks to.

Table code never touches ``os`` or boto3 directly: it holds a :class:`FileIO` chosen by
:func:`get_file_io` from the warehouse URI, so the same commit, scan and expiry code runs on
local disks (tests, single machines) and on S3-compatible object stores.

The implementations are found through a registry of URI schemes: each one registers its
schemes with :func:`register_file_io` when its module is imported (``lakeformat.storage``
imports the local and the S3 one), so this module knows no implementation and imports none.
"""

from __future__ import annotations

import re
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from lakeformat.errors import InvalidArgumentError, LakeformatError, UnsupportedError

__all__ = [
    "FileIO",
    "PendingFiles",
    "FileStatus",
    "Versioned",
    "StorageError",
    "get_file_io",
    "register_file_io",
    "registered_schemes",
    "split_scheme",
    "check_uri",
    "LOCAL_SCHEMES",
    "S3_SCHEMES",
]

#: Schemes served by :class:`~lakeformat.storage.local.LocalFileIO` ("" = a plain path).
LOCAL_SCHEMES: frozenset[str] = frozenset({"", "file"})
#: Schemes served by :class:`~lakeformat.storage.s3.S3FileIO` (Hadoop's aliases included,
#: because Paimon tables written from Spark/Flink often carry s3a:// paths).
S3_SCHEMES: frozenset[str] = frozenset({"s3", "s3a", "s3n"})

#: the registry: scheme -> factory of a FileIO from the catalog options, in registration order
_FACTORIES: dict[str, Callable[[dict[str, str] | None], FileIO]] = {}

_SCHEME_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):")


class PendingFiles:
    """Files whose writing finishes in the background (`FileIO.open_output`): the writer goes
    on with its next work while the disk takes a file's tail. `wait()` returns once every
    file is durable at its path, or raises the first failure after all have ended (a file
    that failed is not at its path). Thread-safe; one per job, waited for before its commit."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waits: list[Callable[[], None]] = []

    def add(self, wait: Callable[[], None]) -> None:
        """`wait`: blocks until one file is finished, raising what made it fail."""
        with self._lock:
            self._waits.append(wait)

    def wait(self) -> None:
        with self._lock:
            waits, self._waits = self._waits, []
        error: BaseException | None = None
        for w in waits:
            try:
                w()
            except BaseException as e:  # noqa: BLE001 - every file ends before the first raises
                error = error or e
        if error is not None:
            raise error


class StorageError(LakeformatError):
    """A storage operation whose outcome could not be determined or completed.

    Raised instead of guessing, e.g. when a conditional put keeps hitting conflicts: reporting
    "already exists" there could make a committer skip a snapshot id nobody wrote.
    """


@dataclass(frozen=True)
class FileStatus:
    """One file as seen by a listing; ``mtime`` is epoch seconds (orphan cleaning uses it)."""

    path: str
    size: int
    mtime: float
    #: what tells two contents at this path apart where the store says (S3: the ETag of a
    #: listing; local disk: inode and nanosecond mtime); "" when unknown
    version: str = ""


@dataclass(frozen=True)
class Versioned:
    """An object's content with the version tag that a conditional replace or delete names
    (S3: the ETag; local disk: a digest of the content)."""

    data: bytes
    etag: str


def split_scheme(uri: str) -> tuple[str, str]:
    """Return ``(scheme, rest)`` with the scheme lower-cased; ``("", uri)`` for plain paths.

    A single letter before ':' is a Windows drive, not a scheme, so it counts as a plain path.
    """
    m = _SCHEME_RE.match(uri)
    if m is None or len(m.group(1)) == 1:
        return "", uri
    return m.group(1).lower(), uri[m.end():]


def check_uri(uri: str) -> str:
    """Refuse a malformed storage URI with an error naming it and the right form, before any
    request: `s3:/bucket/wh` or `s3:bucket` would otherwise surface as a storage failure."""
    if not isinstance(uri, str) or not uri.strip():
        raise InvalidArgumentError(f"storage URI must be a non-empty path or URI, got {uri!r}")
    scheme, rest = split_scheme(uri)
    if scheme in S3_SCHEMES:
        bucket = rest[2:].split("/", 1)[0] if rest.startswith("//") else ""
        if not bucket:
            raise InvalidArgumentError(
                f"malformed S3 URI {uri!r}: write {scheme}://bucket/path (two slashes, then "
                "the bucket name)")
    elif scheme == "file" and not rest.startswith("/"):
        raise InvalidArgumentError(f"malformed file URI {uri!r}: write file:///absolute/path "
                                   "or a plain path")
    return uri


class FileIO(ABC):
    """Operations the table format needs from a file system, and nothing more.

    Implementations must be picklable (they are shipped to Spark tasks) and thread-safe
    (work units run in thread pools).
    """

    @property
    def metadata_cache(self) -> Any:
        """The :class:`~lakeformat.storage.metadata_cache.MetadataCache` of this FileIO (one
        per instance, so per catalog; made on first use)."""
        from lakeformat.storage.metadata_cache import cache_of

        return cache_of(self)

    def join(self, *parts: str) -> str:
        """Join path parts with exactly one '/' between them (object keys must not get '//')."""
        pieces = [p for p in parts if p]
        if not pieces:
            return ""
        out = pieces[0]
        for part in pieces[1:]:
            seg = part.strip("/")
            if not seg:
                continue
            base = out.rstrip("/")
            if base == "" or base.endswith(":"):  # "/", "s3://", "file:/": keep the root as is
                out = out + seg
            else:
                out = base + "/" + seg
        return out

    @abstractmethod
    def read_bytes(self, path: str) -> bytes:
        """Whole file content; ``FileNotFoundError`` naming ``path`` if absent."""

    @abstractmethod
    def write_bytes(self, path: str, data: bytes) -> None:
        """Create or overwrite ``path`` so readers see either the old or the new content."""

    @contextmanager
    def open_output(self, path: str, pending: PendingFiles | None = None) -> Iterator[Any]:
        """A writable pyarrow stream whose bytes become ``path`` when the block ends without
        an error, as `write_bytes` would write them; nothing is written when it raises.
        Writers of large files (data files) stream into it; this default buffers in memory.
        With `pending`, a storage may finish the file (its last flush, its publication at
        ``path``) in the background: the file is there once `pending.wait()` returned."""
        import pyarrow as pa

        sink = pa.BufferOutputStream()
        yield sink
        self.write_bytes(path, sink.getvalue().to_pybytes())

    @abstractmethod
    def write_if_absent(self, path: str, data: bytes) -> bool:
        """Create ``path`` only if nobody has; True if this call created it.

        This is the commit primitive (snapshot files, hints): it must be atomic and must never
        expose a partially written file.
        """

    def publish_locked(self, path: str, data: bytes) -> bool:
        """`write_if_absent` for a caller that holds the table's commit lock (`lock.enabled`).

        Under the lock nobody else publishes, so a store that ignores conditional writes may
        fall back to "exists? then put" here, as Paimon's renaming commit does under its
        catalog lock. Stores with a real exclusive create keep using it."""
        return self.write_if_absent(path, data)

    # -- versioned objects: compare-and-swap on one small object (lease locks) -----------------
    def supports_versioned(self, path: str) -> bool:
        """Whether the store under ``path`` enforces the conditions the versioned calls send
        (local disk always; an S3 store per its probe)."""
        return True

    @abstractmethod
    def read_versioned(self, path: str) -> Versioned:
        """Content and version tag; ``FileNotFoundError`` naming ``path`` if absent."""

    @abstractmethod
    def create_versioned(self, path: str, data: bytes) -> str | None:
        """Create ``path`` only if absent (S3 ``If-None-Match: *``); its version tag, or None
        when it already exists. Exactly one of several concurrent callers gets a tag."""

    @abstractmethod
    def replace_versioned(self, path: str, data: bytes, etag: str) -> str | None:
        """Replace ``path`` only if its version is still ``etag`` (S3 ``If-Match``); the new
        tag, or None when the object changed or is gone. Exactly one of several concurrent
        callers naming the same tag wins."""

    @abstractmethod
    def delete_versioned(self, path: str, etag: str) -> bool:
        """Delete ``path`` only if its version is still ``etag``; False when it changed or is
        gone (then whatever is there now is left alone)."""

    @abstractmethod
    def exists(self, path: str) -> bool:
        """True if ``path`` is a file or a (non-empty, for object stores) directory."""

    @abstractmethod
    def status(self, path: str) -> FileStatus:
        """Size and mtime of one file; ``FileNotFoundError`` naming ``path`` if absent."""

    @abstractmethod
    def list_status(self, dir_path: str) -> list[FileStatus]:
        """Direct child files (not directories) of ``dir_path``; [] if it does not exist."""

    @abstractmethod
    def list_dirs(self, dir_path: str) -> list[str]:
        """Paths of direct child directories of ``dir_path``; [] if it does not exist."""

    @abstractmethod
    def list_recursive(self, dir_path: str) -> list[FileStatus]:
        """Every file anywhere below ``dir_path``; [] if it does not exist."""

    @abstractmethod
    def delete(self, path: str) -> bool:
        """Delete one file; True if something was deleted, False if it was already gone."""

    def delete_many(self, paths: list[str]) -> list[str]:
        """Delete files, returning the paths that could NOT be deleted (missing ones count as
        deleted). Object stores override this with batch requests."""
        failed: list[str] = []
        for p in paths:
            try:
                self.delete(p)
            except OSError:
                failed.append(p)
            except LakeformatError:
                failed.append(p)
        return failed

    @abstractmethod
    def delete_dir(self, dir_path: str) -> None:
        """Recursively delete ``dir_path``; a missing directory is not an error."""

    @abstractmethod
    def mkdirs(self, dir_path: str) -> None:
        """Make ``dir_path`` exist where directories are real (no-op on object stores)."""

    @abstractmethod
    def is_dir(self, path: str) -> bool:
        """True if ``path`` is a directory (object stores: any key below ``path/``)."""

    @abstractmethod
    def open_input(self, path: str) -> Any:
        """A pyarrow-readable, seekable input (e.g. for ``pyarrow.parquet.ParquetFile``)."""

    def read_range(self, path: str, offset: int, length: int) -> bytes:
        """``length`` bytes of ``path`` from ``offset`` (footers); object stores override this
        with a ranged GET so a footer never costs the whole object."""
        source = self.open_input(path)
        try:
            source.seek(offset)
            return source.read(length)
        finally:
            source.close()


def register_file_io(schemes: tuple[str, ...] | list[str],
                     factory: Callable[[dict[str, str] | None], FileIO]) -> None:
    """Serve ``schemes`` (lower-case; "" for a plain path) with ``factory(options)``. An
    implementation registers itself when its module is imported; a later registration of a
    scheme replaces the earlier one."""
    for scheme in schemes:
        _FACTORIES[scheme.lower()] = factory


def registered_schemes() -> list[str]:
    """The schemes :func:`get_file_io` serves, in registration order ("" = plain paths)."""
    return list(_FACTORIES)


def get_file_io(uri: str, options: dict[str, str] | None = None) -> FileIO:
    """Pick the FileIO registered for ``uri``'s scheme; unknown schemes and malformed URIs
    fail loudly rather than guess."""
    scheme, _ = split_scheme(check_uri(uri))
    factory = _FACTORIES.get(scheme)
    if factory is not None:
        return factory(options)
    supported = ", ".join("plain paths" if s == "" else f"{s}://" for s in _FACTORIES)
    raise UnsupportedError(
        f"unsupported storage scheme {scheme!r} in {uri!r}: supported are {supported}"
    )
