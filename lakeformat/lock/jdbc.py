"""`lock.type=jdbc`: Paimon's distributed lock, a row of `paimon_distributed_locks`.

This follows Paimon's `JdbcCatalogLock` and its dialects (`AbstractDistributedLockDialect`,
`SqlLiteDistributedLockDialect`, `PostgresqlDistributedLockDialect`,
`MysqlDistributedLockDialect`), so lakeformat and a Java Paimon job on the same JDBC catalog
exclude each other:

* the lock of a table is the row whose `lock_id` is `<catalog-key>.<database>.<table>`;
* acquire = delete the row if it has expired (its age by the database's clock is more than
  `expire_time_seconds`), then INSERT it; a primary-key clash means somebody holds it. We
  insert the way Java's owned leases do: `expire_time_seconds` = lease + 2 s and our owner id
  in `lock_owner`;
* renew (every third of the lease, by `LeaseKeeper`) = UPDATE `acquired_at` to now where the
  row is still ours and not expired; release = DELETE where the row is still ours, so a lock
  taken over meanwhile is left alone.

Java's plain commit lock writes no owner and `expire_time_seconds` = `lock-acquire-timeout`
(480 s by default); such a row blocks us until it is released or expires, as it blocks Java.

`lock_owner` is a VARCHAR(36): no room for who holds the lock. lakeformat keeps that in a
table of its own, `lakeformat_lock_holders(lock_id, lock_owner, holder)` (the holder as JSON),
written with the lock and read for the message of a `LockTimeoutError`. A lock row with no
matching holder row (a Java job) is described by what the row itself has.

Ages are measured by the database (`acquired_at` is its own timestamp), so the hosts' clocks
do not matter; in PostgreSQL the column is a TIMESTAMP without time zone, read in the
session's time zone: keep the catalog's clients on one zone (UTC), as for Java.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from lakeformat import clock
from lakeformat.errors import InvalidOptionError
from lakeformat.lock.base import (
    KeptLease,
    Lease,
    LeaseKeeper,
    LockHolder,
    TableLock,
    new_holder,
)
from lakeformat.lock.jdbc_client import JdbcClient
from lakeformat.lock.options import LockConfig

__all__ = ["JdbcLock", "JdbcLease", "LOCKS_TABLE", "HOLDERS_TABLE", "paimon_lock_id",
           "ensure_lock_tables"]

LOCKS_TABLE = "paimon_distributed_locks"
HOLDERS_TABLE = "lakeformat_lock_holders"

# Paimon's DDL (the same in its three dialects); {n} is `lock-key-max-length`
_LOCKS_DDL = ("CREATE TABLE " + LOCKS_TABLE + " ("
              "lock_id VARCHAR({n}) NOT NULL, "
              "acquired_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL, "
              "expire_time_seconds BIGINT DEFAULT 0 NOT NULL, "
              "lock_owner VARCHAR(36), "
              "PRIMARY KEY (lock_id))")
_HOLDERS_DDL = ("CREATE TABLE " + HOLDERS_TABLE + " ("
                "lock_id VARCHAR({n}) NOT NULL, "
                "lock_owner VARCHAR(36) NOT NULL, "
                "holder TEXT NOT NULL, "
                "PRIMARY KEY (lock_id))")


@dataclass(frozen=True)
class _Dialect:
    """The SQL fragments that differ between databases (as in Paimon's dialect classes)."""

    expired: str  # the row is past its expiry (the take-over check before an insert)
    owned_expired: str  # the same, by the clock of the moment (renewal of an owned lease)
    now: str  # what a renewal sets `acquired_at` to
    age: str  # seconds since `acquired_at`


_SQLITE_AGE = "(strftime('%s', 'now') - strftime('%s', acquired_at))"
_DIALECTS = {
    "sqlite": _Dialect(expired=f"{_SQLITE_AGE} > expire_time_seconds",
                       owned_expired=f"{_SQLITE_AGE} > expire_time_seconds",
                       now="CURRENT_TIMESTAMP", age=_SQLITE_AGE),
    # NOW() is fixed when the statement's transaction starts; a renewal that waited for a row
    # lock must judge by clock_timestamp() (as Paimon's PostgreSQL dialect does)
    "postgresql": _Dialect(
        expired="EXTRACT(EPOCH FROM AGE(NOW(), acquired_at)) > expire_time_seconds",
        owned_expired="EXTRACT(EPOCH FROM (clock_timestamp() - acquired_at)) "
                      "> expire_time_seconds",
        now="clock_timestamp()",
        age="EXTRACT(EPOCH FROM (clock_timestamp() - acquired_at))"),
    "mysql": _Dialect(
        expired="TIMESTAMPDIFF(SECOND, acquired_at, NOW()) > expire_time_seconds",
        owned_expired="TIMESTAMPDIFF(SECOND, acquired_at, SYSDATE()) > expire_time_seconds",
        now="SYSDATE()",
        age="TIMESTAMPDIFF(SECOND, acquired_at, SYSDATE())"),
}


def paimon_lock_id(catalog_key: str, database: str, table: str) -> str:
    """The `lock_id` Paimon's `JdbcCatalogLock.runWithLock` uses for a table."""
    return f"{catalog_key}.{database}.{table}"


def _add_owner_column(client: JdbcClient) -> None:
    """Catalogs made by Paimon before owned leases have no `lock_owner`: add it, as Java
    does (tolerating another process adding it at the same moment)."""
    def has_owner() -> bool:
        return any(c["name"].lower() == "lock_owner" for c in client.columns(LOCKS_TABLE))
    if has_owner():
        return
    try:
        client.execute(f"ALTER TABLE {LOCKS_TABLE} ADD COLUMN lock_owner VARCHAR(36)")
    except Exception:
        if not has_owner():
            raise


def ensure_lock_tables(client: JdbcClient) -> None:
    """Create `paimon_distributed_locks` (Paimon's DDL) and our holder table if missing."""
    n = client.lock_key_max_length
    client.ensure_table(LOCKS_TABLE, _LOCKS_DDL.format(n=n), lambda: _add_owner_column(client))
    client.ensure_table(HOLDERS_TABLE, _HOLDERS_DDL.format(n=n))


def _ttl_seconds(lease_ms: int) -> int:
    """`expire_time_seconds` of an owned lease: the timestamp column keeps whole seconds, so
    round the lease up and add a margin, as Java's `acquireOwned` does."""
    return max(1, lease_ms // 1000 + 2)


class JdbcLease(KeptLease):
    """Our row of `paimon_distributed_locks`: renewed in the background, checked before every
    publish, deleted on release only while it is still ours."""

    def __init__(self, lock: JdbcLock, holder: LockHolder, started: float):
        self.lock = lock
        self.holder = holder
        self._keeper = LeaseKeeper(lock.location, lock.config.lease_ms, self._renew, started)

    def _owned(self) -> dict[str, Any]:
        return {"id": self.lock.lock_id, "owner": self.holder.owner}

    def _renew(self) -> bool:
        d = self.lock.dialect
        renewed = self.lock.client.execute(
            f"UPDATE {LOCKS_TABLE} SET acquired_at = CASE WHEN acquired_at > {d.now} "
            f"THEN acquired_at ELSE {d.now} END "
            f"WHERE lock_id = :id AND lock_owner = :owner AND NOT ({d.owned_expired})",
            self._owned())
        if renewed:
            return True
        # a driver counting changed rows reports 0 when the second did not change: look again
        return bool(self.lock.client.query(
            f"SELECT 1 FROM {LOCKS_TABLE} "
            f"WHERE lock_id = :id AND lock_owner = :owner AND NOT ({d.owned_expired})",
            self._owned()))

    def _give_back(self) -> None:
        client = self.lock.client
        client.execute(f"DELETE FROM {LOCKS_TABLE} WHERE lock_id = :id AND lock_owner = :owner",
                       self._owned())
        client.execute(f"DELETE FROM {HOLDERS_TABLE} "
                       "WHERE lock_id = :id AND lock_owner = :owner", self._owned())


class JdbcLock(TableLock):
    """One row name of `paimon_distributed_locks` (Paimon's `JdbcCatalogLock`), with leases."""

    def __init__(self, client: JdbcClient, lock_id: str, what: str, config: LockConfig):
        if len(lock_id) > client.lock_key_max_length:
            raise InvalidOptionError(
                f"the JDBC lock id {lock_id!r} has {len(lock_id)} characters, more than "
                f"option 'lock-key-max-length' ({client.lock_key_max_length}) allows: raise "
                "it (the lock table of an existing catalog keeps the length it was made with)")
        self.client = client
        self.lock_id = lock_id
        self.what = what  # "commits of db.t", for messages
        self.config = config
        self.dialect = _DIALECTS[client.dialect]
        self.location = f"jdbc lock {lock_id!r} in {client.url}"
        ensure_lock_tables(client)

    def __repr__(self) -> str:
        return f"JdbcLock({self.lock_id!r}, {self.client.url!r})"

    def _try(self, purpose: str) -> Lease | LockHolder | None:
        """One attempt: a lease, or the holder that keeps us out (None: gone meanwhile)."""
        ids = {"id": self.lock_id}
        self.client.execute(f"DELETE FROM {LOCKS_TABLE} "
                            f"WHERE {self.dialect.expired} AND lock_id = :id", ids)
        started = time.monotonic()
        holder = new_holder(purpose, self.config.lease_ms)
        got = self.client.insert_new(
            f"INSERT INTO {LOCKS_TABLE} (lock_id, expire_time_seconds, lock_owner) "
            "VALUES (:id, :ttl, :owner)",
            {**ids, "ttl": _ttl_seconds(self.config.lease_ms), "owner": holder.owner})
        if not got:
            return self.holder()
        try:
            self.client.execute(f"DELETE FROM {HOLDERS_TABLE} WHERE lock_id = :id", ids)
            self.client.execute(
                f"INSERT INTO {HOLDERS_TABLE} (lock_id, lock_owner, holder) "
                "VALUES (:id, :owner, :holder)",
                {**ids, "owner": holder.owner, "holder": holder.to_json().decode()})
        except BaseException:
            try:  # give the lock back rather than leave it held by nobody we can name
                self.client.execute(f"DELETE FROM {LOCKS_TABLE} "
                                    "WHERE lock_id = :id AND lock_owner = :owner",
                                    {**ids, "owner": holder.owner})
            except Exception:
                pass  # it expires after one lease
            raise
        return JdbcLease(self, holder, started)

    def holder(self) -> LockHolder | None:
        """Who holds the lock now (None: nobody)."""
        rows = self.client.query(
            f"SELECT lock_owner, expire_time_seconds, {self.dialect.age}, acquired_at "
            f"FROM {LOCKS_TABLE} WHERE lock_id = :id", {"id": self.lock_id})
        if not rows:
            return None
        owner, ttl, age, acquired_at = rows[0]
        now = clock.now_millis()
        since = now - int(float(age or 0) * 1000)
        expires = since + int(ttl) * 1000
        body = None
        if owner:
            found = self.client.query(
                f"SELECT holder FROM {HOLDERS_TABLE} WHERE lock_id = :id AND lock_owner = :owner",
                {"id": self.lock_id, "owner": owner})
            body = found[0][0] if found else None
        if body is not None:
            try:
                seen = json.loads(body)
                return LockHolder(owner=str(seen["owner"]), purpose=str(seen["purpose"]),
                                  host=str(seen.get("host", "")), pid=int(seen.get("pid", 0)),
                                  since_ms=int(seen.get("since_ms") or since),
                                  expires_ms=expires)
            except (ValueError, KeyError, TypeError):
                pass  # not ours after all: describe the row itself
        return LockHolder(
            owner=str(owner or "none"),
            purpose=(f"not a lakeformat job (a Paimon lock row: acquired_at {acquired_at}, "
                     f"expire_time_seconds {ttl})"),
            since_ms=since, expires_ms=expires)
