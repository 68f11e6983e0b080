"""What the pages and the JSON API ask: the rows of the table list and one table's state,
through the process-wide sources and health cache (`SOURCES`, `CACHE`). Each row and each
table's answer holds the one `State` the cache gave it: a request reads nothing else."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from lakeformat_airflow.lake_view.cache import HealthCache, State
from lakeformat_airflow.lake_view.config import Settings, SettingsError, settings
from lakeformat_airflow.lake_view.sources import (
    BadName,
    Source,
    Sources,
    UnknownSource,
    check_table,
)

SOURCES = Sources()
CACHE = HealthCache()
_POOL: dict[int, ThreadPoolExecutor] = {}
_POOL_LOCK = threading.Lock()

__all__ = ["BadName", "CACHE", "NotListed", "Row", "SOURCES", "SettingsError", "UnknownSource",
           "clear", "list_rows", "settings", "table_state"]


class NotListed(LookupError):
    """A table the view's patterns do not select."""


@dataclass
class Row:
    """One row of the table list: a table's state, or a connection that could not be read."""

    connection: str
    table: str | None
    state: State | None
    connection_error: str | None
    cache: str = ""  # what the cache did: hit, revalidated, computed

    @property
    def report(self) -> Any:
        return None if self.state is None else self.state.report

    @property
    def error(self) -> str | None:
        """The table's error, or the connection's for a connection's row."""
        return self.connection_error if self.state is None else self.state.error

    def to_dict(self) -> dict[str, Any]:
        report = self.report
        return {"connection": self.connection, "table": self.table,
                "report": None if report is None else report.to_dict(), "error": self.error}


def _pool(workers: int) -> ThreadPoolExecutor:
    with _POOL_LOCK:
        pool = _POOL.get(workers)
        if pool is None:
            pool = _POOL[workers] = ThreadPoolExecutor(max_workers=workers,
                                                       thread_name_prefix="lake-view")
        return pool


def list_rows(config: Settings | None = None) -> list[Row]:
    """Every listed table's row (its health from the cache, revalidated in parallel when
    past the TTL), then a row per connection that could not be read."""
    config = config or settings()
    sources = SOURCES.get(config)
    jobs: list[tuple[Source, str]] = [(s, t) for s in sources for t in s.tables]
    CACHE.forget({(s.conn_id, t) for s, t in jobs})

    def one(job: tuple[Source, str]) -> Row:
        source, name = job
        state, outcome = CACHE.get(source, name, ttl=config.ttl, max_age=config.max_age)
        return Row(source.conn_id, name, state, None, outcome)

    rows = list(_pool(config.workers).map(one, jobs)) if len(jobs) > 1 else [one(j)
                                                                              for j in jobs]
    rows += [Row(s.conn_id, None, None, s.error) for s in sources if s.error is not None]
    return rows


def table_state(conn_id: str, db: str, table: str, config: Settings | None = None,
                *, revalidate: bool = True) -> tuple[Source, str, State, str]:
    """(source, "db.t", state, what the cache did) of one table; `BadName`, `UnknownSource`
    or `NotListed` when the URL names no table of the view. Only that table's connection is
    looked at. `revalidate` checks the snapshot ids now (TTL 0)."""
    name = check_table(db, table)
    config = config or settings()
    source = SOURCES.source(config, conn_id)
    if not config.wants(conn_id, name):
        raise NotListed(f"table {name} of connection {conn_id!r} is not one of the Lake view's")
    if source.catalog is None:
        raise UnknownSource(f"connection {conn_id!r} cannot be read: {source.error}")
    state, outcome = CACHE.get(source, name, ttl=0.0 if revalidate else config.ttl,
                               max_age=config.max_age)
    return source, name, state, outcome


def cache_header(rows: list[Row]) -> str:
    """The list's `X-Lake-Cache` header: how many entries were hit, revalidated, computed."""
    counts = {k: sum(1 for r in rows if r.cache == k) for k in ("hit", "revalidated",
                                                                 "computed")}
    return " ".join(f"{k}={v}" for k, v in counts.items())


def clear() -> None:
    """Forget every connection and cached health (tests, or after changing connections)."""
    SOURCES.clear()
    CACHE.clear()
