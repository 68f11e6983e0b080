"""Catalog options of the table locks, by Paimon's names and with Paimon's defaults.

* `lock.enabled`: hold the commit lock around every publish (snapshot, schema, tag), as
  Paimon does with its catalog lock. Default as Paimon's `lockEnabled()`: on in a JDBC
  catalog over an object store (Java's writers there commit by exists-then-rename and rely on
  it), off otherwise;
* `lock.type`: `s3` (a lease object on the warehouse's own storage — S3 or local disk; no
  extra service) or `jdbc` (Paimon's `paimon_distributed_locks` table; needs `uri`). Default:
  `jdbc` in a JDBC catalog (`metastore=jdbc`, as Paimon's JdbcCatalog), else `s3`;
* `lock-acquire-timeout` (8 min): how long a job waits for a held lock;
* `lock-check-max-sleep` (8 s): the longest pause between two tries;
* `lock.lease-duration` (lakeformat's, 60 s): how long a lease lasts unless renewed; a holder
  that dies frees the lock after this long.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from lakeformat.errors import InvalidOptionError, UnsupportedError, shown_value
from lakeformat.options import parse_bool, parse_duration

__all__ = ["LockConfig", "LOCK_OPTIONS", "LOCK_TYPES"]

LOCK_TYPES = ("s3", "jdbc")
#: every lock option a catalog accepts
LOCK_OPTIONS = ("lock.enabled", "lock.type", "lock-acquire-timeout", "lock-check-max-sleep",
                "lock.lease-duration")

_DEFAULT_ACQUIRE_MS = 8 * 60 * 1000
_DEFAULT_MAX_SLEEP_MS = 8 * 1000
_DEFAULT_LEASE_MS = 60 * 1000


def _millis(options: Mapping[str, str], key: str, default: int) -> int:
    raw = options.get(key)
    if raw is None:
        return default
    ms = int(parse_duration(raw, key).total_seconds() * 1000)
    if ms <= 0:
        raise InvalidOptionError(f"option {key!r} must be a positive duration, "
                                 f"got {shown_value(key, raw)}")
    return ms


@dataclass(frozen=True)
class LockConfig:
    """The lock options of one catalog, checked."""

    enabled: bool = False
    type: str = "s3"
    acquire_timeout_ms: int = _DEFAULT_ACQUIRE_MS
    check_max_sleep_ms: int = _DEFAULT_MAX_SLEEP_MS
    lease_ms: int = _DEFAULT_LEASE_MS

    @staticmethod
    def from_options(options: Mapping[str, str], default_type: str = "s3",
                     default_enabled: bool = False) -> LockConfig:
        kind = str(options.get("lock.type", default_type)).strip().lower()
        if kind not in LOCK_TYPES:
            raise UnsupportedError(
                f"catalog option 'lock.type' = {options.get('lock.type')!r} is not supported: "
                f"lakeformat implements {', '.join(LOCK_TYPES)} (hive and zookeeper locks are "
                "not implemented; a lock that is not held would not protect anything)")
        lease = _millis(options, "lock.lease-duration", _DEFAULT_LEASE_MS)
        if lease < 1000:
            raise InvalidOptionError(f"option 'lock.lease-duration' must be at least 1 s, "
                                     f"got {options.get('lock.lease-duration')!r}")
        return LockConfig(
            enabled=parse_bool(options, "lock.enabled", default_enabled),
            type=kind,
            acquire_timeout_ms=_millis(options, "lock-acquire-timeout", _DEFAULT_ACQUIRE_MS),
            check_max_sleep_ms=_millis(options, "lock-check-max-sleep", _DEFAULT_MAX_SLEEP_MS),
            lease_ms=lease,
        )
