"""A per-FileIO cache of parsed table metadata, bounded by bytes.

Reading a table's metadata on an object store costs one request and one round trip per file,
and most of it never changes: manifest lists, manifests, index manifests and statistics files
carry a UUID in their name, so a path names one content forever. Those are cached by path and
written through by the commits that write them, so the next job of the same process (an Airflow
worker, a Spark driver) reads none of them again.

Files whose names are reused — ``snapshot-N`` after a rollback, ``schema-N`` of a table dropped
and created again — are cached only under a *validator*: something a cheaper request already
returned that proves the content (the size, modification time and ETag of a listing). A lookup
whose validator differs from the stored one misses and drops the entry. Hints (``LATEST``),
listings, consumer and lock objects are never put here.

One cache per FileIO instance (:func:`cache_of`), so per catalog, shared by every thread and job
that uses it; ``lakeformat.metadata-cache.max-size`` (bytes, or a size such as ``64 mb``) bounds
it and ``0`` turns it off. Unset, the FileIO's ``metadata_cache_default`` applies: 64 mb on an
object store, none on local disk (a local read costs no round trip, and a cache there would
only hide a file edited in place on disk). The cache is not pickled with its FileIO: a copy
shipped to another process starts empty (with the same bound). A file written over or a
directory deleted through the FileIO leaves its cache (`forget`).

API::

    cache = file_io.metadata_cache
    value = cache.get(key, validator=None)          # None on a miss
    cache.put(key, value, size, validator=None)     # size: bytes the entry stands for
    value = cache.get_or_load(key, load, validator=None)  # load() -> (value, size)
    cache.invalidate(key); cache.invalidate_path(path); cache.invalidate_prefix(path)
    cache.clear()
    cache.stats()                                   # hits, misses, evictions, bytes, entries

Values are shared between callers: treat them as immutable (never mutate a list you got).
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

__all__ = [
    "MetadataCache",
    "cache_of",
    "configure",
    "forget",
    "MAX_SIZE_OPTION",
    "DEFAULT_MAX_BYTES",
]

#: the catalog option bounding the cache of each FileIO (bytes; 0 turns the cache off)
MAX_SIZE_OPTION = "lakeformat.metadata-cache.max-size"
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
#: an entry larger than this share of the bound is not kept (it would evict everything)
_LARGEST_SHARE = 4

T = TypeVar("T")

class MetadataCache:
    """Thread-safe LRU of parsed metadata objects, bounded by the bytes they stand for."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES):
        self.max_bytes = max(0, int(max_bytes))
        self._lock = threading.Lock()
        self._entries: OrderedDict[Hashable, tuple[Any, int, Any]] = OrderedDict()
        self._by_path: dict[str, set[Hashable]] = {}  # path -> its keys (`invalidate_path`)
        self._bytes = 0
        self.hits = 0
        self.misses = 0
        self.evictions = 0

    @property
    def enabled(self) -> bool:
        return self.max_bytes > 0

    def get(self, key: Hashable, validator: Any = None) -> Any:
        """The cached value, or None. With a validator the entry must have been stored with an
        equal one; a differing validator drops the entry (the file changed)."""
        if not self.enabled:
            return None
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                self.misses += 1
                return None
            value, size, stored = entry
            if stored != validator:
                self._drop(key)
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return value

    def put(self, key: Hashable, value: Any, size: int, validator: Any = None) -> None:
        """Keep `value` (standing for `size` bytes) under `key`, evicting the least recently
        used entries beyond the bound. Too large an entry is not kept."""
        if not self.enabled or value is None:
            return
        size = max(1, int(size))
        with self._lock:
            self._drop(key)
            if size * _LARGEST_SHARE > self.max_bytes:
                return
            self._entries[key] = (value, size, validator)
            self._by_path.setdefault(_path_of(key), set()).add(key)
            self._bytes += size
            while self._bytes > self.max_bytes and self._entries:
                self._drop(next(iter(self._entries)))
                self.evictions += 1

    def _drop(self, key: Hashable) -> None:
        """Remove one entry (lock held)."""
        entry = self._entries.pop(key, None)
        if entry is None:
            return
        self._bytes -= entry[1]
        path = _path_of(key)
        keys = self._by_path.get(path)
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self._by_path[path]

    def get_or_load(self, key: Hashable, load: Callable[[], tuple[T, int]],
                    validator: Any = None) -> T:
        """The cached value, else ``load()`` -> (value, size), kept and returned. Loads run
        outside the lock (two threads may both load a missing key; both get equal values)."""
        value = self.get(key, validator)
        if value is not None:
            return value  # type: ignore[no-any-return]
        value, size = load()
        self.put(key, value, size, validator)
        return value

    def invalidate(self, key: Hashable) -> None:
        with self._lock:
            self._drop(key)

    def invalidate_path(self, path: str) -> None:
        """Drop every entry of one file (keys that are `path` or a tuple starting with it)."""
        with self._lock:
            for key in list(self._by_path.get(path, ())):
                self._drop(key)

    def invalidate_prefix(self, prefix: str) -> None:
        """Drop every entry whose key is a path (or a tuple starting with a path) under
        `prefix` — a dropped table, a deleted directory."""
        with self._lock:
            for path in [p for p in self._by_path if p.startswith(prefix)]:
                for key in list(self._by_path.get(path, ())):
                    self._drop(key)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._by_path.clear()
            self._bytes = 0

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {"hits": self.hits, "misses": self.misses, "evictions": self.evictions,
                    "bytes": self._bytes, "entries": len(self._entries),
                    "max_bytes": self.max_bytes}


def _path_of(key: Hashable) -> str:
    if isinstance(key, tuple) and key:
        key = key[0]
    return key if isinstance(key, str) else ""


# one cache per FileIO object, kept beside it (not in it: a FileIO pickles, a lock does not)
_CACHES: weakref.WeakKeyDictionary[Any, MetadataCache] = weakref.WeakKeyDictionary()
_CACHES_LOCK = threading.Lock()
_SIZE_ATTR = "_metadata_cache_max_bytes"


def configure(file_io: Any, max_bytes: int) -> None:
    """Bound the cache of `file_io` (a catalog's option); an existing cache is replaced when
    the bound changes."""
    object.__setattr__(file_io, _SIZE_ATTR, max(0, int(max_bytes)))
    with _CACHES_LOCK:
        cache = _CACHES.get(file_io)
        if cache is not None and cache.max_bytes != max_bytes:
            del _CACHES[file_io]


def forget(file_io: Any, path: str, prefix: bool = False) -> None:
    """A FileIO wrote over or deleted `path` (or everything under it): its cache, if it has
    made one, drops what it held for it. Storages call this from their overwriting calls, so a
    file changed through the same FileIO is never served from before."""
    cache = _CACHES.get(file_io)
    if cache is not None and cache.enabled:
        if prefix:
            cache.invalidate_prefix(path.rstrip("/") + "/")
        else:
            cache.invalidate_path(path)


def cache_of(file_io: Any) -> MetadataCache:
    """The cache of `file_io`, made on first use with its configured bound."""
    cache = _CACHES.get(file_io)
    if cache is None:
        with _CACHES_LOCK:
            cache = _CACHES.get(file_io)
            if cache is None:
                default = getattr(file_io, "metadata_cache_default", DEFAULT_MAX_BYTES)
                cache = MetadataCache(getattr(file_io, _SIZE_ATTR, default))
                _CACHES[file_io] = cache
    return cache
