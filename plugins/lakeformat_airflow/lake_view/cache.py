"""Health per table, cached: the Lake view asks `Table.maintenance_due()` (whose report
carries the `TableHealth` of the same read) and keeps the answer.

An entry per (connection, "db.t") holds the report (or the error the table's read raised,
redacted), the table's (latest, earliest) snapshot ids when it was computed, and two clocks:

* within `ttl` of the last check (`[lakeformat] lake_view_ttl`, 10 s) the entry is served
  with no store read at all — the warm table list of 50 tables is 50 dict look-ups;
* after it, the entry is *revalidated*: the two snapshot ids are read (the LATEST/EARLIEST
  hints and an existence check or two: a few small requests) and only when either changed —
  a commit, or expiry — is the report computed again; a table page always revalidates
  (`max_ttl=0`), so it shows a new snapshot at once;
* past `max_age` (`lake_view_max_age`, 300 s) it is computed again whatever the ids say:
  removing schema files or changing an option makes no snapshot.

Single flight: one lock per entry, so concurrent requests for a table wait for one
computation instead of each doing it. An error is cached like a report (a broken table is
not read on every request) and reopened from the catalog on the next computation. The cache
lives in the API server process (one per worker); `clear()` empties it. The JSON API says
what the cache did in a header, `X-Lake-Cache` (`hit`, `revalidated` or `computed` for a
table; the count of each for the list).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lakeformat_airflow.lake_view.sources import Source, error_text

HIT, REVALIDATED, COMPUTED = "hit", "revalidated", "computed"


@dataclass
class Entry:
    """One table's cached health (fields read under `lock` or as a whole by readers)."""

    table: Any = None  # the lakeformat.Table, kept to revalidate cheaply
    signature: str = ""  # the connection settings the table was opened with
    ids: tuple[int | None, int | None] | None = None
    report: Any = None  # DueReport
    error: str | None = None
    checked: float = -1e18  # monotonic time of the last check against the store
    computed: float = -1e18  # ... of the last computation
    computations: int = 0
    memo: dict[Any, Any] = field(default_factory=dict)  # per-ids derived values (timeline)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def derived(self, key: Any, make: Callable[[], Any]) -> Any:
        """A value derived from the table at the entry's snapshot ids, made once per ids."""
        full = (self.ids, key)
        if full not in self.memo:
            value = make()
            self.memo = {k: v for k, v in self.memo.items() if k[0] == self.ids}
            self.memo[full] = value
        return self.memo[full]


def snapshot_ids(table: Any) -> tuple[int | None, int | None]:
    manager = table.snapshot_manager
    return manager.latest_snapshot_id(), manager.earliest_snapshot_id()


class HealthCache:
    def __init__(self) -> None:
        self._entries: dict[tuple[str, str], Entry] = {}
        self._lock = threading.Lock()

    def entry(self, conn_id: str, name: str) -> Entry:
        key = (conn_id, name)
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                found = self._entries[key] = Entry()
            return found

    def get(self, source: Source, name: str, *, ttl: float, max_age: float
            ) -> tuple[Entry, str]:
        """(the entry of table `name` of `source`, how it was had: "hit" (served within the
        TTL), "revalidated" (snapshot ids unchanged) or "computed"), as the module says."""
        entry = self.entry(source.conn_id, name)
        if entry.signature != source.signature:  # the connection changed: open it again
            with entry.lock:
                entry.table, entry.checked, entry.signature = None, -1e18, source.signature
        if time.monotonic() - entry.checked < ttl:
            return entry, HIT
        with entry.lock:  # single flight: a second caller finds the first one's answer
            now = time.monotonic()
            if now - entry.checked < ttl:
                return entry, HIT
            try:
                if entry.table is None:
                    entry.table = source.catalog.get_table(name)
                ids = snapshot_ids(entry.table)
                if (entry.report is not None and ids == entry.ids
                        and now - entry.computed < max_age):
                    entry.checked = time.monotonic()
                    return entry, REVALIDATED
                report = entry.table.maintenance_due()
                entry.ids, entry.report, entry.error = ids, report, None
            except Exception as e:  # noqa: BLE001 - this table's row shows its error
                entry.table, entry.ids, entry.report = None, None, None
                entry.error = error_text(e, source.secrets)
            entry.memo = {}
            entry.computations += 1
            entry.computed = entry.checked = time.monotonic()
            return entry, COMPUTED

    def forget(self, keep: set[tuple[str, str]]) -> None:
        """Drop the entries of tables no longer listed."""
        with self._lock:
            self._entries = {k: v for k, v in self._entries.items() if k in keep}

    def clear(self) -> None:
        with self._lock:
            self._entries = {}
