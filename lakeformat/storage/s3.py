"""FileIO over S3-compatible object stores (AWS S3, MinIO, Ceph, moto) through boto3.

Spark here has no S3 file system (no hadoop-aws), so Spark tasks do their I/O through this
class: it is picklable (the boto3 client is dropped and rebuilt lazily) and thread-safe.
Options use Paimon's names (``s3.endpoint``, ``s3.access-key`` ...); credentials fall back
to the standard AWS chain (environment, profile, instance role).
"""

from __future__ import annotations

import logging
import os
import random
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from lakeformat.errors import InvalidOptionError, UnsupportedError, shown_value
from lakeformat.storage.fileio import S3_SCHEMES, FileIO, FileStatus, StorageError, split_scheme

__all__ = ["S3FileIO", "S3_OPTIONS", "split_s3_path"]

_log = logging.getLogger(__name__)

_DELETE_BATCH = 1000  # S3's hard limit of keys per DeleteObjects request
_CONFLICT_RETRIES = 5  # 409 ConditionalRequestConflict: a concurrent conditional write
_TOKEN_META = "lakeformat-write-token"  # user metadata proving which writer created a key

# Each option may be spelled Paimon's way ("s3.access-key") or Hadoop's ("s3.access.key"),
# since Paimon itself accepts both and users copy configs between the two.
_OPT_NAMES: dict[str, tuple[str, ...]] = {
    "endpoint": ("s3.endpoint",),
    "access_key": ("s3.access-key", "s3.access.key"),
    "secret_key": ("s3.secret-key", "s3.secret.key"),
    "session_token": ("s3.session-token", "s3.session.token"),
    "region": ("s3.region", "s3.endpoint.region"),
    "path_style": ("s3.path-style-access", "s3.path.style.access"),
    "ssl": ("s3.connection.ssl.enabled",),
    "attempts": ("s3.attempts.maximum",),
    "max_connections": ("s3.connection.maximum",),
}
#: every `s3.*` option S3FileIO reads (a catalog refuses other `s3.*` keys as typos)
S3_OPTIONS: frozenset[str] = frozenset(k for names in _OPT_NAMES.values() for k in names)


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


def _file_key(path: str) -> tuple[str, str]:
    """(bucket, key) of a path that must name an object, not a bucket."""
    _, bucket, key = split_s3_path(path)
    if not key:
        raise ValueError(f"invalid S3 file path {path!r}: no key after the bucket")
    return bucket, key


def _uri(scheme: str, bucket: str, key: str) -> str:
    """Inverse of :func:`split_s3_path`."""
    return f"{scheme}://{bucket}/{key}" if key else f"{scheme}://{bucket}"


def _dir_prefix(key: str) -> str:
    """Listing prefix of a directory key: "" for the bucket root, else "key/"."""
    return key + "/" if key else ""


def _error_code(e: Exception) -> tuple[str, int | None]:
    """(S3 error code, HTTP status) of a botocore ClientError; ("", None) for anything else."""
    resp = getattr(e, "response", None)
    if not isinstance(resp, dict):
        return "", None
    code = str(resp.get("Error", {}).get("Code", ""))
    status = resp.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return code, status


def _is_not_found(e: Exception) -> bool:
    code, status = _error_code(e)
    return status == 404 or code in ("NoSuchKey", "NotFound", "404", "NoSuchBucket")


def _parse_bool(key: str, value: str) -> bool:
    v = value.strip().lower()
    if v in ("true", "1", "yes"):
        return True
    if v in ("false", "0", "no"):
        return False
    raise InvalidOptionError(f"option {key!r} must be 'true' or 'false', "
                             f"got {shown_value(key, value)}")


def _parse_int(key: str, value: str) -> int:
    n = int(value) if value.strip().isdigit() else 0
    if n <= 0:
        raise InvalidOptionError(f"option {key!r} must be a positive integer, "
                                 f"got {shown_value(key, value)}")
    return n


class S3FileIO(FileIO):
    """One FileIO serves every bucket reachable with its options; the client is per instance."""

    def __init__(self, options: dict[str, str] | None = None) -> None:
        """Validate options now, so a typo fails at catalog creation rather than in a task."""
        self._options: dict[str, str] = {
            k: str(v) for k, v in (options or {}).items() if k.startswith("s3.")
        }
        self._endpoint = self._endpoint_url()
        self._access_key = self._opt("access_key")
        self._secret_key = self._opt("secret_key")
        self._session_token = self._opt("session_token")
        if (self._access_key is None) != (self._secret_key is None):
            raise InvalidOptionError(
                "options 's3.access-key' and 's3.secret-key' must be given together"
            )
        self._region = self._opt("region") or ("us-east-1" if self._endpoint else None)
        ps = self._opt("path_style")
        self._path_style: bool | None = (
            _parse_bool("s3.path-style-access", ps) if ps is not None
            else (True if self._endpoint else None)
        )
        att = self._opt("attempts")
        self._attempts = _parse_int("s3.attempts.maximum", att) if att else 5
        mc = self._opt("max_connections")
        self._max_connections = _parse_int("s3.connection.maximum", mc) if mc else 32
        self._client_obj: Any = None
        self._client_pid = -1
        self._lock = threading.Lock()

    def _opt(self, name: str) -> str | None:
        for key in _OPT_NAMES[name]:
            v = self._options.get(key)
            if v is not None and v != "":
                return v
        return None

    def _endpoint_url(self) -> str | None:
        """Hadoop-style endpoints may omit the scheme; then ``s3.connection.ssl.enabled``
        (default true) chooses https or http."""
        ep = self._opt("endpoint")
        if ep is None or "://" in ep:
            return ep
        ssl = self._opt("ssl")
        secure = _parse_bool("s3.connection.ssl.enabled", ssl) if ssl is not None else True
        return ("https://" if secure else "http://") + ep

    def __repr__(self) -> str:
        """No secrets: FileIO objects end up in logs and Spark plans."""
        return f"S3FileIO(endpoint={self._endpoint!r}, region={self._region!r})"

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
        """The boto3 S3 client, built on first use and rebuilt after a fork (its pooled
        connections belong to the parent process)."""
        pid = os.getpid()
        if self._client_obj is None or self._client_pid != pid:
            with self._lock:
                if self._client_obj is None or self._client_pid != pid:
                    self._client_obj = self._make_client()
                    self._client_pid = pid
        return self._client_obj

    def _make_client(self) -> Any:
        import boto3
        from botocore.config import Config

        cfg: dict[str, Any] = {
            "retries": {"max_attempts": self._attempts, "mode": "standard"},
            "connect_timeout": 10,
            "read_timeout": 60,
            "max_pool_connections": self._max_connections,
        }
        if self._path_style is not None:
            cfg["s3"] = {"addressing_style": "path" if self._path_style else "virtual"}
        if self._endpoint:
            # Non-AWS stores (MinIO, Ceph, older gateways) often reject the CRC trailers
            # botocore >= 1.36 sends by default; only send checksums where S3 demands them.
            cfg["request_checksum_calculation"] = "when_required"
            cfg["response_checksum_validation"] = "when_required"
        try:
            config = Config(**cfg)
        except TypeError:  # older botocore without the checksum settings
            cfg.pop("request_checksum_calculation", None)
            cfg.pop("response_checksum_validation", None)
            config = Config(**cfg)
        session = boto3.session.Session(
            aws_access_key_id=self._access_key,
            aws_secret_access_key=self._secret_key,
            aws_session_token=self._session_token,
            region_name=self._region,
        )
        return session.client("s3", endpoint_url=self._endpoint, config=config)

    # ------------------------------------------------------------------ read / stat

    def read_bytes(self, path: str) -> bytes:
        """GET the whole object; missing key or bucket -> ``FileNotFoundError`` naming path."""
        return self._get(path)

    def read_range(self, path: str, offset: int, length: int) -> bytes:
        """A ranged GET of ``length`` bytes from ``offset``."""
        if length <= 0:
            return b""
        return self._get(path, Range=f"bytes={offset}-{offset + length - 1}")

    def _get(self, path: str, **extra: Any) -> bytes:
        bucket, key = _file_key(path)
        try:
            resp = self.client.get_object(Bucket=bucket, Key=key, **extra)
        except Exception as e:
            if _is_not_found(e):
                raise FileNotFoundError(f"file not found: {path}") from e
            raise
        body = resp["Body"]
        try:
            return body.read()
        finally:
            body.close()

    def _call_or_none(self, operation: str, **kwargs: Any) -> Any:
        """Call a client operation; None when the key or bucket does not exist (404)."""
        try:
            return getattr(self.client, operation)(**kwargs)
        except Exception as e:
            if _is_not_found(e):
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
        """list_objects_v2 pages; a missing bucket is an error, not an empty directory,
        so a typo in the warehouse URI is not mistaken for an empty table."""
        kwargs: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix}
        if delimiter:
            kwargs["Delimiter"] = "/"
        try:
            yield from self.client.get_paginator("list_objects_v2").paginate(**kwargs)
        except Exception as e:
            if _is_not_found(e):
                raise FileNotFoundError(f"S3 bucket {bucket!r} does not exist") from e
            raise

    def _files(self, dir_path: str, recursive: bool) -> list[FileStatus]:
        """Objects below the prefix in key order; zero-byte "dir/" markers are skipped."""
        scheme, bucket, key = split_s3_path(dir_path)
        return [
            FileStatus(_uri(scheme, bucket, o["Key"]), int(o["Size"]),
                       o["LastModified"].timestamp())
            for page in self._pages(bucket, _dir_prefix(key), delimiter=not recursive)
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
            _uri(scheme, bucket, cp["Prefix"].rstrip("/"))
            for page in self._pages(bucket, _dir_prefix(key), delimiter=True)
            for cp in page.get("CommonPrefixes", [])
            if cp["Prefix"].rstrip("/")
        ]

    # ------------------------------------------------------------------ write

    def write_bytes(self, path: str, data: bytes) -> None:
        """Single PUT: S3 publishes an object atomically, so no temp key is needed."""
        bucket, key = _file_key(path)
        self.client.put_object(Bucket=bucket, Key=key, Body=data)

    def write_if_absent(self, path: str, data: bytes) -> bool:
        """Conditional PUT (``If-None-Match: *``): 412 means somebody else created the key.

        Each call tags its object with a random token, so when botocore's own retry of a PUT
        that had in fact succeeded comes back 412, we recognise our object and still say True.
        409 (a concurrent conditional write in flight) is retried; if it persists we raise
        :class:`StorageError` instead of guessing, because a wrong False would make a
        committer skip an id.
        """
        bucket, key = _file_key(path)
        token = uuid.uuid4().hex
        for attempt in range(_CONFLICT_RETRIES):
            try:
                self.client.put_object(
                    Bucket=bucket, Key=key, Body=data, IfNoneMatch="*",
                    Metadata={_TOKEN_META: token},
                )
                return True
            except Exception as e:
                code, status = _error_code(e)
                if status == 412 or code == "PreconditionFailed":
                    return self._created_by(bucket, key, token)
                if status == 409 or code == "ConditionalRequestConflict":
                    time.sleep(0.05 * (2**attempt) * (1 + random.random()))
                    continue
                raise
        raise StorageError(
            f"write_if_absent({path!r}) kept conflicting with concurrent writers "
            f"after {_CONFLICT_RETRIES} attempts; outcome unknown, retry the operation"
        )

    def _created_by(self, bucket: str, key: str, token: str) -> bool:
        head = self._head(bucket, key)
        return head is not None and head.get("Metadata", {}).get(_TOKEN_META) == token

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
