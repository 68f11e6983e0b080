"""FileIO over S3-compatible object stores (AWS S3, MinIO, Ceph, moto) through botocore.

Spark here has no S3 file system (no hadoop-aws), so Spark tasks do their I/O through this
class: it is picklable (the botocore client is dropped and rebuilt lazily) and thread-safe.
Options use Paimon's names (``s3.endpoint``, ``s3.access-key`` ...); credentials fall back
to the standard AWS chain (environment, profile, instance role).

Beside this module: ``s3_common`` (keys, errors, options, the client), ``s3_retry``
(retries and their counter), ``s3_conditional`` (conditional writes and the store probe).
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from lakeformat.errors import UnsupportedError
from lakeformat.storage.fileio import (
    S3_SCHEMES,
    FileIO,
    FileStatus,
    StorageError,
    Versioned,
    register_file_io,
    split_scheme,
)
from lakeformat.storage.metadata_cache import forget
from lakeformat.storage.s3_common import (
    S3_OPTIONS,
    S3Settings,
    dir_prefix,
    is_conflict,
    is_not_found,
    is_precondition_failed,
    make_client,
    parent_key,
    uri,
)
from lakeformat.storage.s3_conditional import (
    ProbeCache,
    conditional_put,
    etag_if_ours,
    probe_store,
    unsupported_store_error,
)
from lakeformat.storage.s3_retry import RetryCounter, RetryPolicy
from lakeformat.storage.s3_unreachable import AnsweringClient

__all__ = ["S3FileIO", "S3_OPTIONS", "split_s3_path"]

_log = logging.getLogger(__name__)

_DELETE_BATCH = 1000  # S3's hard limit of keys per DeleteObjects request
_CONFLICT_RETRIES = 5  # 409 ConditionalRequestConflict: a concurrent conditional write


def split_s3_path(path: str) -> tuple[str, str, str]:
    """``"s3a://b//x/y/"`` -> ``("s3a", "b", "x/y")``: empty segments dropped, so keys never
    contain '//' and "dir" and "dir/" mean the same prefix."""
    scheme, rest = split_scheme(path)
    if scheme not in S3_SCHEMES:
        raise UnsupportedError(f"S3FileIO cannot handle scheme {scheme!r} in {path!r}")
    if not rest.startswith("//"):
        raise ValueError(f"invalid S3 path {path!r}: expected {scheme}://bucket/key")
    bucket, _, key = rest[2:].partition("/")
    if not bucket:
        raise ValueError(f"invalid S3 path {path!r}: no bucket")
    return scheme, bucket, "/".join(seg for seg in key.split("/") if seg)


def file_key(path: str) -> tuple[str, str]:
    """(bucket, key) of a path that must name an object, not a bucket."""
    _, bucket, key = split_s3_path(path)
    if not key:
        raise ValueError(f"invalid S3 file path {path!r}: no key after the bucket")
    return bucket, key


class S3FileIO(FileIO):
    """One FileIO serves every bucket reachable with its options; the client is per instance.

    Every request is retried on throttling, 5xx, resets and timeouts (``s3.attempts.maximum``
    attempts, 10 by default); :attr:`retries` counts the retries made by this instance.
    """

    def __init__(self, options: dict[str, str] | None = None) -> None:
        """Validate options now, so a typo fails at catalog creation rather than in a task."""
        self._settings = S3Settings.from_options(options)
        self._endpoint = self._settings.endpoint
        self._retry = RetryPolicy(self._settings.attempts, RetryCounter(),
                                  retry_timeout_s=self._settings.retry_timeout_s)
        self._client_obj: Any = None
        self._client_pid = -1
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        """No secrets: FileIO objects end up in logs and Spark plans."""
        return f"S3FileIO(endpoint={self._endpoint!r}, region={self._settings.region!r})"

    # ------------------------------------------------------------------ client / pickling

    def __getstate__(self) -> dict[str, Any]:
        """Drop the client and lock: neither pickles, and a client must not cross processes."""
        state = self.__dict__.copy()
        state["_client_obj"] = None
        state["_client_pid"] = -1
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    @property
    def client(self) -> Any:
        """The botocore S3 client, built on first use and rebuilt after a fork (its pooled
        connections belong to the parent process)."""
        pid = os.getpid()
        if self._client_obj is None or self._client_pid != pid:
            with self._lock:
                if self._client_obj is None or self._client_pid != pid:
                    self._client_obj = self._make_client()
                    self._client_pid = pid
        return self._client_obj

    def _make_client(self) -> Any:
        client = make_client(self._settings)
        self._retry.install(client)
        return AnsweringClient(client, self._settings)

    # ------------------------------------------------------------------ retries

    @property
    def retries(self) -> int:
        """Retries this FileIO made so far (requests re-sent, bodies re-read, conflicts)."""
        return self._retry.counter.total

    def retry_counts(self) -> dict[str, int]:
        """:attr:`retries` by cause: ``request``, ``read`` (a body broke off), ``conflict``."""
        return self._retry.counter.by_cause()

    # ------------------------------------------------------------------ store probe

    def conditional_writes(self, bucket: str, directory: str = "") -> bool:
        """Does this store enforce ``If-None-Match: *`` and ``If-Match`` on ``bucket``?

        Asked once per store and bucket in a process (probe object in ``directory``, a key
        prefix), then answered from the cache."""
        return ProbeCache.answer(self._settings.store_id, bucket,
                                 lambda: probe_store(self.client, bucket, directory))

    def supports_versioned(self, path: str) -> bool:
        bucket, key = file_key(path)
        return self.conditional_writes(bucket, parent_key(key))

    def _require_conditional(self, bucket: str, key: str) -> None:
        if not self.conditional_writes(bucket, parent_key(key)):
            raise unsupported_store_error(self._endpoint or "(AWS S3)", bucket)

    def _conditional_put(self, bucket: str, key: str, data: bytes, *,
                         if_none_match: bool = False, if_match: str | None = None) -> str | None:
        """`conditional_put` on a store known to enforce conditions, retrying 409s. If they
        persist we raise :class:`StorageError` rather than guess: a wrong "lost" would make a
        committer skip an id nobody wrote."""
        self._require_conditional(bucket, key)
        token = uuid.uuid4().hex  # one per logical write: a 409'd attempt may still land
        for attempt in range(1, _CONFLICT_RETRIES + 1):
            try:
                return conditional_put(self.client, bucket, key, data,
                                       if_none_match=if_none_match, if_match=if_match,
                                       token=token)
            except Exception as e:
                if not is_conflict(e):
                    raise
                if attempt < _CONFLICT_RETRIES:
                    self._retry.conflict_wait(attempt)
        raise StorageError(
            f"conditional write of s3://{bucket}/{key} kept conflicting with concurrent "
            f"writers after {_CONFLICT_RETRIES} attempts; outcome unknown, retry the operation"
        )

    # ------------------------------------------------------------------ read / stat

    def read_bytes(self, path: str) -> bytes:
        """GET the whole object; missing key or bucket -> ``FileNotFoundError`` naming path."""
        return self._get(path)[0]

    def read_range(self, path: str, offset: int, length: int) -> bytes:
        """A ranged GET of ``length`` bytes from ``offset``."""
        if length <= 0:
            return b""
        return self._get(path, Range=f"bytes={offset}-{offset + length - 1}")[0]

    def _get(self, path: str, **extra: Any) -> tuple[bytes, str]:
        """(body, ETag) of one GET; a body that breaks off is fetched again."""
        bucket, key = file_key(path)

        def request() -> Any:
            try:
                return self.client.get_object(Bucket=bucket, Key=key, **extra)
            except Exception as e:
                if is_not_found(e):
                    raise FileNotFoundError(f"file not found: {path}") from e
                raise

        def read(resp: Any) -> tuple[bytes, str]:
            body = resp["Body"]
            try:
                return body.read(), str(resp.get("ETag", ""))
            finally:
                body.close()

        return self._retry.read_retry(request, read)

    def _call_or_none(self, operation: str, **kwargs: Any) -> Any:
        """Call a client operation; None when the key or bucket does not exist (404)."""
        try:
            return getattr(self.client, operation)(**kwargs)
        except Exception as e:
            if is_not_found(e):
                return None
            raise

    def _head(self, bucket: str, key: str) -> dict[str, Any] | None:
        return self._call_or_none("head_object", Bucket=bucket, Key=key)

    def _bucket_exists(self, bucket: str) -> bool:
        return self._call_or_none("head_bucket", Bucket=bucket) is not None

    def exists(self, path: str) -> bool:
        """True for an object or a non-empty prefix (a directory), as on a file system."""
        _, bucket, key = split_s3_path(path)
        if not key:
            return self._bucket_exists(bucket)
        return self._head(bucket, key) is not None or self._has_children(bucket, key)

    def status(self, path: str) -> FileStatus:
        """HEAD the object; directories (prefixes) are not objects and raise FileNotFoundError."""
        _, bucket, key = split_s3_path(path)
        head = self._head(bucket, key) if key else None
        if head is None:
            raise FileNotFoundError(f"file not found: {path}")
        return FileStatus(path, int(head["ContentLength"]), head["LastModified"].timestamp())

    def is_dir(self, path: str) -> bool:
        """True if any key lives below ``path/`` (the bucket root: if the bucket exists)."""
        _, bucket, key = split_s3_path(path)
        if not key:
            return self._bucket_exists(bucket)
        return self._has_children(bucket, key)

    def _has_children(self, bucket: str, key: str) -> bool:
        resp = self._call_or_none("list_objects_v2", Bucket=bucket, Prefix=key + "/", MaxKeys=1)
        return bool(resp and (resp.get("KeyCount") or resp.get("Contents")))

    def open_input(self, path: str) -> Any:
        """The whole object in memory: our metadata and data files are small enough, and this
        avoids pyarrow's S3 file system (its global state breaks under fork)."""
        return pa.BufferReader(self.read_bytes(path))

    # ------------------------------------------------------------------ listing

    def _pages(self, bucket: str, prefix: str, delimiter: bool) -> Iterator[dict[str, Any]]:
        """list_objects_v2 pages, each asked with the previous page's continuation token, so a
        page that fails is asked again (by the retry policy) and the listing resumes there.
        A missing bucket is an error, not an empty directory, so a typo in the warehouse URI
        is not mistaken for an empty table."""
        kwargs: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix,
                                  "MaxKeys": self._settings.page_size}
        if delimiter:
            kwargs["Delimiter"] = "/"
        while True:
            try:
                page = self.client.list_objects_v2(**kwargs)
            except Exception as e:
                if is_not_found(e):
                    raise FileNotFoundError(f"S3 bucket {bucket!r} does not exist") from e
                raise
            yield page
            token = page.get("NextContinuationToken")
            if not page.get("IsTruncated") or not token:
                return
            kwargs["ContinuationToken"] = token

    def _files(self, dir_path: str, recursive: bool) -> list[FileStatus]:
        """Objects below the prefix in key order; zero-byte "dir/" markers are skipped."""
        scheme, bucket, key = split_s3_path(dir_path)
        return [
            FileStatus(uri(scheme, bucket, o["Key"]), int(o["Size"]),
                       o["LastModified"].timestamp(), str(o.get("ETag", "")))
            for page in self._pages(bucket, dir_prefix(key), delimiter=not recursive)
            for o in page.get("Contents", [])
            if not o["Key"].endswith("/")
        ]

    def list_status(self, dir_path: str) -> list[FileStatus]:
        """Objects directly below the prefix."""
        return self._files(dir_path, recursive=False)

    def list_recursive(self, dir_path: str) -> list[FileStatus]:
        """Every object below the prefix."""
        return self._files(dir_path, recursive=True)

    def list_dirs(self, dir_path: str) -> list[str]:
        """Common prefixes directly below the prefix, as paths without a trailing '/'."""
        scheme, bucket, key = split_s3_path(dir_path)
        return [
            uri(scheme, bucket, cp["Prefix"].rstrip("/"))
            for page in self._pages(bucket, dir_prefix(key), delimiter=True)
            for cp in page.get("CommonPrefixes", [])
            if cp["Prefix"].rstrip("/")
        ]

    # ------------------------------------------------------------------ write

    def write_bytes(self, path: str, data: bytes) -> None:
        """Single PUT: S3 publishes an object atomically, so no temp key is needed."""
        bucket, key = file_key(path)
        forget(self, path)
        self.client.put_object(Bucket=bucket, Key=key, Body=data)
        forget(self, path)

    def write_if_absent(self, path: str, data: bytes) -> bool:
        """Conditional PUT (``If-None-Match: *``): False when somebody else created the key.

        The store must enforce the condition (probed once per bucket); one that ignores it
        raises :class:`UnsupportedError` naming the fix (a JDBC catalog lock). A PUT whose
        answer was lost and whose retry met our own object still says True (see
        ``s3_conditional``).
        """
        bucket, key = file_key(path)
        return self._conditional_put(bucket, key, data, if_none_match=True) is not None

    def _created_by(self, bucket: str, key: str, token: str) -> bool:
        """Whether the object carries the write token ``token`` (its creator's)."""
        return etag_if_ours(self.client, bucket, key, token) is not None

    def publish_locked(self, path: str, data: bytes) -> bool:
        """`write_if_absent` for a caller holding the table's commit lock. On a store that
        ignores conditional writes: HEAD, then PUT if absent (nobody else publishes under the
        lock, as in Paimon's renaming commit)."""
        bucket, key = file_key(path)
        if self.conditional_writes(bucket, parent_key(key)):
            return self.write_if_absent(path, data)
        if self._head(bucket, key) is not None:
            return False
        self.client.put_object(Bucket=bucket, Key=key, Body=data)
        return True

    # ------------------------------------------------------------------ versioned objects

    def read_versioned(self, path: str) -> Versioned:
        """Content and ETag, from one GET (so they always belong together)."""
        data, etag = self._get(path)
        return Versioned(data, etag)

    def create_versioned(self, path: str, data: bytes) -> str | None:
        """PUT with ``If-None-Match: *``: the new ETag, or None when the key exists."""
        bucket, key = file_key(path)
        return self._conditional_put(bucket, key, data, if_none_match=True)

    def replace_versioned(self, path: str, data: bytes, etag: str) -> str | None:
        """PUT with ``If-Match: etag``: the new ETag, or None when the object changed or is
        gone. Of several callers naming the same ETag exactly one gets a tag."""
        bucket, key = file_key(path)
        return self._conditional_put(bucket, key, data, if_match=etag)

    def delete_versioned(self, path: str, etag: str) -> bool:
        """DELETE with ``If-Match: etag``; False when the object changed or is gone.

        A delete whose answer was lost and whose retry found the key gone also says False:
        S3 cannot tell who deleted it, and either way it is gone."""
        bucket, key = file_key(path)
        self._require_conditional(bucket, key)
        try:
            self.client.delete_object(Bucket=bucket, Key=key, IfMatch=etag)
        except Exception as e:
            if is_precondition_failed(e) or is_not_found(e):
                return False
            raise
        return True

    # ------------------------------------------------------------------ delete / mkdirs

    def delete(self, path: str) -> bool:
        """HEAD then DELETE: S3 answers 204 for missing keys too, and callers want to know."""
        _, bucket, key = split_s3_path(path)
        if not key or self._head(bucket, key) is None:
            return False
        self.client.delete_object(Bucket=bucket, Key=key)
        return True

    def delete_many(self, paths: list[str]) -> list[str]:
        """DeleteObjects per bucket in batches of 1,000 keys, Quiet mode; returns the input
        paths that failed (unparseable paths, per-key errors, failed requests), in input order.
        """
        by_bucket: dict[str, dict[str, None]] = {}
        failed: set[str] = set()
        key_of: dict[str, tuple[str, str]] = {}
        for p in paths:
            try:
                _, bucket, key = split_s3_path(p)
            except (ValueError, UnsupportedError):
                failed.add(p)
                continue
            if not key:
                failed.add(p)
                continue
            key_of[p] = (bucket, key)
            by_bucket.setdefault(bucket, {})[key] = None
        failed_keys: set[tuple[str, str]] = set()
        for bucket, keys_d in by_bucket.items():
            keys = list(keys_d)
            for i in range(0, len(keys), _DELETE_BATCH):
                batch = keys[i:i + _DELETE_BATCH]
                failed_keys.update((bucket, k) for k in self._delete_batch(bucket, batch))
        failed.update(p for p, bk in key_of.items() if bk in failed_keys)
        return [p for p in paths if p in failed]

    def _delete_batch(self, bucket: str, keys: list[str]) -> list[str]:
        """One DeleteObjects request; returns the keys that were not deleted."""
        try:
            resp = self.client.delete_objects(
                Bucket=bucket,
                Delete={"Objects": [{"Key": k} for k in keys], "Quiet": True},
            )
        except Exception as e:  # the caller reports the keys; keep the reason in the log
            _log.warning("DeleteObjects of %d keys in bucket %r failed: %s", len(keys), bucket, e)
            return keys
        for err in resp.get("Errors", [])[:3]:
            _log.warning("could not delete s3://%s/%s: %s", bucket, err.get("Key"),
                         err.get("Message") or err.get("Code"))
        return [err["Key"] for err in resp.get("Errors", []) if "Key" in err]

    def delete_dir(self, dir_path: str) -> None:
        """Delete every key below ``dir_path/`` page by page (memory stays flat); refuses a
        bucket root, because wiping a bucket is always a bug upstream."""
        forget(self, dir_path, prefix=True)
        _, bucket, key = split_s3_path(dir_path)
        if not key:
            raise UnsupportedError(f"refusing to delete the whole bucket {dir_path!r}")
        failed: list[str] = []
        try:
            for page in self._pages(bucket, key + "/", delimiter=False):
                keys = [obj["Key"] for obj in page.get("Contents", [])]
                if keys:
                    failed.extend(self._delete_batch(bucket, keys))
        except FileNotFoundError:  # no bucket: nothing to delete
            return
        if failed:
            raise StorageError(
                f"could not delete {len(failed)} object(s) under {dir_path!r}, "
                f"e.g. {failed[:3]!r}"
            )

    def mkdirs(self, dir_path: str) -> None:
        """No-op: object stores have no directories, and marker objects would only confuse
        other readers' listings."""


# s3:// and Hadoop's aliases (Paimon tables written from Spark/Flink often carry s3a:// paths)
register_file_io(sorted(S3_SCHEMES), S3FileIO)
