"""Which tables the Lake view shows, and how it opens them.

A *source* is one `lakeformat` connection: its catalog, built by the provider's
`LakeformatHook` (the same options the operators use) with the connection looked up the
server's way (Airflow's secrets backends, environment variables and metadata DB — the Task
SDK's lookup only works inside a task). Which connections: `[lakeformat]
lake_view_connections`, else `lakeformat_default` and every connection of type `lakeformat`.
A source and its table names are kept for the cache's TTL, per connection (`Sources`); a
connection whose settings did not change keeps its catalog (and the cache its tables).

Nothing secret leaves here: `redact` takes every secret value of the connection (the
password, and each option the library counts as secret) out of an error's text, and any
`user:password@` of a URL; the page shows the warehouse URI (redacted the same way), never
options.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from lakeformat_airflow import CONN_TYPE, DEFAULT_CONN_ID
from lakeformat_airflow.lake_view.config import Settings

#: a secret shorter than this is not searched for in error texts (it would blank words)
MIN_SECRET = 4
_USERINFO = re.compile(r"(?<=://)[^/@\s]+@")


class UnknownSource(LookupError):
    """A connection id the view does not list (not configured, or not of type lakeformat)."""


class BadName(ValueError):
    """A database or table name from a URL that lakeformat's identifier checks refuse."""


def check_table(db: str, table: str) -> str:
    """"db.table" when both names pass lakeformat's checks (as every catalog call does);
    else `BadName` with the check's message (`..`, `/`, control characters, `$`, ...)."""
    from lakeformat.errors import InvalidIdentifierError
    from lakeformat.identifier import check_name

    try:
        return f"{check_name('database', db)}.{check_name('table', table)}"
    except InvalidIdentifierError as e:
        raise BadName(str(e)) from None


def redact(text: str, secrets: tuple[str, ...] = ()) -> str:
    """`text` without the secrets and URL credentials in it."""
    for secret in sorted(secrets, key=len, reverse=True):
        if len(secret) >= MIN_SECRET:
            text = text.replace(secret, "***")
    return _USERINFO.sub("***@", text)


def error_text(exc: BaseException, secrets: tuple[str, ...] = ()) -> str:
    return redact(f"{type(exc).__name__}: {exc}", secrets)


def _server_connection(conn_id: str) -> Any:
    from airflow.models.connection import Connection

    return Connection.get_connection_from_secrets(conn_id)


@dataclass
class Source:
    """One connection: its catalog (None when it could not be opened: `error` says why)."""

    conn_id: str
    warehouse: str = ""
    catalog: Any = None
    secrets: tuple[str, ...] = ()
    signature: str = ""
    error: str | None = None
    tables: list[str] = field(default_factory=list)
    opened: float = 0.0

    def redact(self, text: str) -> str:
        return redact(text, self.secrets)


def open_source(conn_id: str, previous: Source | None = None,
                overlay: dict[str, str] | None = None) -> Source:
    """The connection's catalog (the previous one when its settings are unchanged);
    `overlay` options are laid over an S3 warehouse's (`lake_view_catalog_options`)."""
    from lakeformat.errors import hides_value
    from lakeformat_airflow.hooks.lakeformat import LakeformatHook

    source = Source(conn_id, opened=time.monotonic())
    secrets: list[str] = []
    try:
        hook = LakeformatHook(conn_id)
        hook.get_connection = _server_connection  # type: ignore[method-assign]
        conn = _server_connection(conn_id)
        if conn.password:
            secrets.append(str(conn.password))
        warehouse, options = hook.catalog_config()
        if warehouse.startswith(("s3://", "s3a://", "s3n://")) and overlay:
            options = {**options, **overlay}
        secrets += [str(v) for k, v in options.items() if hides_value(k) and v]
        source.secrets = tuple(dict.fromkeys(secrets))
        source.warehouse = source.redact(warehouse)
        source.signature = json.dumps([warehouse, sorted(options.items())])
        if previous is not None and previous.catalog is not None \
                and previous.signature == source.signature:
            source.catalog = previous.catalog
        else:
            import lakeformat as lf

            source.catalog = lf.Catalog(warehouse, options=options)
    except Exception as e:  # noqa: BLE001 - the connection's row shows why
        source.secrets = tuple(dict.fromkeys(secrets))
        source.error = error_text(e, source.secrets)
    return source


def list_tables(source: Source, settings: Settings) -> None:
    """Fill `source.tables` with its "db.t" names the patterns select (sorted)."""
    if source.catalog is None:
        return
    try:
        cat = source.catalog
        names = [f"{db}.{t}" for db in cat.list_databases() for t in cat.list_tables(db)]
        source.tables = sorted(n for n in names if settings.wants(source.conn_id, n))
    except Exception as e:  # noqa: BLE001 - the connection's row shows why
        source.error = error_text(e, source.secrets)


def _env_conn_type(value: str) -> str:
    value = value.strip()
    if value.startswith("{"):
        try:
            return str(json.loads(value).get("conn_type") or "")
        except (ValueError, AttributeError):
            return ""
    return value.split(":", 1)[0].replace("-", "_")


def discover() -> list[str]:
    """`lakeformat_default` and every connection of type `lakeformat` (metadata DB and
    `AIRFLOW_CONN_*` variables), sorted with the default first."""
    found = {DEFAULT_CONN_ID}
    for key, value in os.environ.items():
        if key.startswith("AIRFLOW_CONN_") and _env_conn_type(value) == CONN_TYPE:
            found.add(key[len("AIRFLOW_CONN_"):].lower())
    try:
        from airflow.models.connection import Connection
        from airflow.utils.session import create_session

        with create_session() as session:
            rows = session.query(Connection.conn_id).filter(
                Connection.conn_type == CONN_TYPE).all()
        found.update(r[0] for r in rows)
    except Exception:  # noqa: BLE001 - no metadata DB: the configured ones still list
        pass
    return sorted(found, key=lambda c: (c != DEFAULT_CONN_ID, c))


@dataclass(frozen=True)
class _Loaded:
    """A connection's source as one refresh published it (never changed afterwards)."""

    source: Source | None = None
    key: Any = None  # the settings it was listed under
    at: float = -1e18  # monotonic time of the refresh


class _Slot:
    """One connection's loaded source and the lock its refresh takes (single flight)."""

    __slots__ = ("loaded", "lock")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.loaded = _Loaded()


class Sources:
    """The connections and their table names, each connection refreshed at most once per
    TTL on its own: a request waits for no connection but the ones it reads.

    Per connection, single flight: one request refreshes a stale connection (opens it again
    and lists its tables) while the others go on with what it had before — stale by at most
    the time the refresh takes. A request waits only for a connection that has never been
    loaded, or whose settings (`lake_view_tables`, `lake_view_catalog_options`) changed. A
    table's page or answer asks for its own connection only (`source`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # guards the dicts below, never held over I/O
        self._slots: dict[str, _Slot] = {}
        self._ids: tuple[Any, float, list[str]] = (None, -1e18, [])
        self._ids_lock = threading.Lock()  # single flight of the connections' discovery

    def ids(self, settings: Settings) -> list[str]:
        """The ids of the listed connections (`lake_view_connections`, else discovered once
        per TTL)."""
        if settings.connections:
            return list(settings.connections)
        key, at, found = self._ids
        if key == settings.connections and time.monotonic() - at < settings.ttl:
            return found
        with self._ids_lock:
            key, at, found = self._ids
            if key != settings.connections or time.monotonic() - at >= settings.ttl:
                found = discover()
                self._ids = (settings.connections, time.monotonic(), found)
            return found

    def _slot(self, conn_id: str) -> _Slot:
        with self._lock:
            slot = self._slots.get(conn_id)
            if slot is None:
                slot = self._slots[conn_id] = _Slot()
            return slot

    def _one(self, conn_id: str, settings: Settings, key: Any) -> Source:
        slot = self._slot(conn_id)
        loaded = slot.loaded
        if loaded.key == key and loaded.source is not None:
            if time.monotonic() - loaded.at < settings.ttl:
                return loaded.source
            if not slot.lock.acquire(blocking=False):  # another request refreshes it
                return loaded.source
        else:
            slot.lock.acquire()
        try:
            loaded = slot.loaded
            if loaded.key == key and loaded.source is not None \
                    and time.monotonic() - loaded.at < settings.ttl:
                return loaded.source
            source = open_source(conn_id, loaded.source, settings.catalog_options)
            list_tables(source, settings)
            slot.loaded = _Loaded(source, key, time.monotonic())
            return source
        finally:
            slot.lock.release()

    @staticmethod
    def _key(settings: Settings) -> Any:
        return (settings.patterns, json.dumps(settings.catalog_options, sort_keys=True))

    def get(self, settings: Settings) -> list[Source]:
        """Every listed connection's source, in the order of `ids`; the stale ones are
        refreshed in parallel (a slow store delays the list by its own time only)."""
        ids, key = self.ids(settings), self._key(settings)
        with self._lock:  # connections no longer listed are forgotten
            self._slots = {c: s for c, s in self._slots.items() if c in ids}
        if len(ids) > 1:
            with ThreadPoolExecutor(max_workers=min(8, len(ids))) as pool:
                return list(pool.map(lambda c: self._one(c, settings, key), ids))
        return [self._one(c, settings, key) for c in ids]

    def source(self, settings: Settings, conn_id: str) -> Source:
        """The source of a listed connection (refreshing that one only when stale);
        `UnknownSource` for any other id."""
        if conn_id not in self.ids(settings):
            raise UnknownSource(f"connection {conn_id!r} is not one of the Lake view's")
        return self._one(conn_id, settings, self._key(settings))

    def clear(self) -> None:
        with self._lock:
            self._slots = {}
        with self._ids_lock:
            self._ids = (None, -1e18, [])
