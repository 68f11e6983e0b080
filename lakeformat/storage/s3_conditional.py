"""Conditional writes on S3: create-if-absent and compare-and-swap, and the store probe.

Every conditional PUT carries a fresh random token in its user metadata. When the answer to a
PUT that did land is lost (a reset after the store acted), botocore retries it, and the retry
meets the object the first attempt wrote: 412. Reading the token back tells "somebody else
won" from "that was my own write", so exactly one caller wins even under faults.

Some S3-compatible stores accept ``If-None-Match``/``If-Match`` and ignore them. On such a store
two committers both "win" and one commit is lost without a trace, so the first conditional
write to a bucket in a process asks the store first (:func:`probe_store`), and the answer is
kept per store and bucket for the life of the process (:class:`ProbeCache`).
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable
from typing import Any, ClassVar

from lakeformat.errors import UnsupportedError
from lakeformat.storage.s3_common import (
    error_code,
    is_not_found,
    is_not_implemented,
    is_precondition_failed,
)

__all__ = ["TOKEN_META", "PROBE_PREFIX", "conditional_put", "etag_if_ours", "probe_store",
           "ProbeCache", "unsupported_store_error"]

_log = logging.getLogger(__name__)

TOKEN_META = "lakeformat-write-token"  # user metadata proving which writer created a key
#: probe objects start with a dot and this prefix: Paimon's listings (``snapshot-``,
#: ``schema-``, ``tag-`` ...) never take them for table files
PROBE_PREFIX = ".lakeformat-probe-"
_NO_SUCH_ETAG = '"00000000000000000000000000000000"'  # no MD5 ETag is this


def conditional_put(client: Any, bucket: str, key: str, data: bytes, *,
                    if_none_match: bool = False, if_match: str | None = None,
                    token: str | None = None) -> str | None:
    """PUT ``data`` under ``If-None-Match: *`` or ``If-Match: <if_match>``; the new ETag,
    or None when the condition did not hold (the key exists / changed / is gone).

    A 412 whose object carries this call's token was this call's own earlier attempt (botocore
    retried a PUT whose answer was lost): it won. Other errors propagate, among them 409
    ``ConditionalRequestConflict`` (a concurrent conditional write in flight), which the caller
    may retry — with the same ``token``: an earlier attempt may still land, and only its token
    lets a later 412 be recognised as our own write.
    """
    token = token or uuid.uuid4().hex
    kwargs: dict[str, Any] = {"Bucket": bucket, "Key": key, "Body": data,
                              "Metadata": {TOKEN_META: token}}
    if if_none_match:
        kwargs["IfNoneMatch"] = "*"
    if if_match is not None:
        kwargs["IfMatch"] = if_match
    try:
        return str(client.put_object(**kwargs)["ETag"])
    except Exception as e:
        if is_precondition_failed(e):
            return etag_if_ours(client, bucket, key, token)
        if if_match is not None and is_not_found(e):  # If-Match on a missing key: 404
            return None
        raise


def etag_if_ours(client: Any, bucket: str, key: str, token: str) -> str | None:
    """The object's ETag if its token is ``token`` (our write landed), else None."""
    try:
        head = client.head_object(Bucket=bucket, Key=key)
    except Exception as e:
        if is_not_found(e):
            return None
        raise
    if head.get("Metadata", {}).get(TOKEN_META) != token:
        return None
    return str(head["ETag"])


def _ignored(request: Any) -> bool:
    """Send a request under a condition that cannot hold: True when the store carried it out
    anyway (or refuses conditional headers outright with 501)."""
    try:
        request()
    except Exception as e:
        if is_precondition_failed(e):
            return False
        if is_not_implemented(e):
            return True
        raise
    return True


def _condition_ignored(client: Any, bucket: str, key: str, **condition: str) -> bool:
    """PUT over the existing probe object under a condition that cannot hold."""
    return _ignored(lambda: client.put_object(
        Bucket=bucket, Key=key, Body=b"lakeformat probe: must be refused", **condition))


def _delete_condition_ignored(client: Any, bucket: str, key: str) -> bool:
    """DELETE the probe object under a wrong `If-Match` (AWS has honoured it on general
    purpose buckets since 2025-09). Lease release depends on it: a paused holder must not
    delete its successor's lease."""
    return _ignored(lambda: client.delete_object(Bucket=bucket, Key=key, IfMatch=_NO_SUCH_ETAG))


def probe_store(client: Any, bucket: str, directory: str) -> bool:
    """Does the store enforce ``If-None-Match: *`` and ``If-Match``? A probe object in
    ``directory`` is created, created again (must be refused), overwritten under a wrong
    ``If-Match`` (must be refused), deleted under a wrong ``If-Match`` (must be refused),
    then deleted. Other errors (no access, no bucket) propagate
    and nothing is concluded."""
    key = (directory + "/" if directory else "") + PROBE_PREFIX + uuid.uuid4().hex
    try:
        created = conditional_put(client, bucket, key, b"lakeformat probe", if_none_match=True)
    except Exception as e:
        if is_not_implemented(e):
            return False
        raise
    try:
        if created is None:  # a fresh random key refused as existing: not a sane store
            _log.warning("S3 bucket %r: the new probe key %r was refused as existing",
                         bucket, key)
            return False
        if _condition_ignored(client, bucket, key, IfNoneMatch="*"):
            _log.warning("S3 bucket %r: a second If-None-Match: * PUT was accepted", bucket)
            return False
        if _condition_ignored(client, bucket, key, IfMatch=_NO_SUCH_ETAG):
            _log.warning("S3 bucket %r: a PUT with a wrong If-Match was accepted", bucket)
            return False
        if _delete_condition_ignored(client, bucket, key):
            _log.warning("S3 bucket %r: a DELETE with a wrong If-Match was carried out", bucket)
            return False
        return True
    finally:
        try:
            client.delete_object(Bucket=bucket, Key=key)
        except Exception as e:  # a stray probe object harms nobody; keep the reason
            _log.warning("could not delete the probe object s3://%s/%s: %s (%s)", bucket, key,
                         e, error_code(e)[0])


def unsupported_store_error(store: str, bucket: str) -> UnsupportedError:
    return UnsupportedError(
        f"the S3 store {store} does not enforce conditional writes (If-None-Match: * and "
        f"If-Match) on bucket {bucket!r}: two concurrent commits could both succeed and one "
        f"would be lost without a trace, so lakeformat will not commit through it alone. "
        f"Fix: take a catalog lock instead, with the catalog options lock.enabled=true, "
        f"lock.type=jdbc and uri=<JDBC URL of the lock database>"
    )


class ProbeCache:
    """The probe's answer per (store, bucket), for the whole process and every FileIO in it.

    The first caller for a (store, bucket) probes while later callers for the same pair wait
    for its answer; a probe that raised leaves no answer, so the next caller probes again.
    """

    _guard: ClassVar[threading.Lock] = threading.Lock()
    _answers: ClassVar[dict[tuple[str, str], bool]] = {}
    _pending: ClassVar[dict[tuple[str, str], threading.Lock]] = {}

    @classmethod
    def answer(cls, store: str, bucket: str, probe: Callable[[], bool]) -> bool:
        pair = (store, bucket)
        with cls._guard:
            known = cls._answers.get(pair)
            if known is not None:
                return known
            lock = cls._pending.setdefault(pair, threading.Lock())
        with lock:
            with cls._guard:
                known = cls._answers.get(pair)
            if known is not None:
                return known
            result = probe()
            with cls._guard:
                cls._answers[pair] = result
                cls._pending.pop(pair, None)
            return result

    @classmethod
    def cached(cls, store: str, bucket: str) -> bool | None:
        """The answer if this process has one, without probing."""
        with cls._guard:
            return cls._answers.get((store, bucket))

    @classmethod
    def forget(cls, store: str | None = None) -> None:
        """Drop the answers (of one store, or all): the next conditional write probes again."""
        with cls._guard:
            for pair in [p for p in cls._answers if store is None or p[0] == store]:
                del cls._answers[pair]
