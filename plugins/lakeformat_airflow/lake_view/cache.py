"""Health per table, cached: the Lake view asks `Table.maintenance_due()` (whose report
carries the `TableHealth` of the same read) and keeps the answer.

A table's answer is a `State`, immutable: the report (or the error the table's read raised,
redacted), the table object it was read through, the table's (latest, earliest) snapshot ids
when it was computed, and two clocks:

* within `ttl` of the last check (`[lakeformat] lake_view_ttl`, 10 s) the state is served
  with no store read at all — the warm table list of 50 tables is 50 dict look-ups;
* after it, the state is *revalidated*: the two snapshot ids are read (the LATEST/EARLIEST
  hints and an existence check or two: a few small requests) and only when either changed —
  a commit, or expiry — is the report computed again; a table page always revalidates
  (`ttl=0`), so it shows a new snapshot at once;
* past `max_age` (`lake_view_max_age`, 300 s) it is computed again whatever the ids say:
  removing schema files or changing an option makes no snapshot.

Each check publishes a new `State` in one assignment, under the table's lock; nothing in a
published state changes. A request reads only the state `get` gave it, so it sees one
consistent (table, ids, report, error) whatever other requests do meanwhile: a recompute that
fails at the same time does not turn the answer it is rendering into an error.

Single flight: one lock per table, so concurrent requests for a table wait for one
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
from dataclasses import dataclass, field, replace
from typing import Any

from lakeformat_airflow.lake_view.sources import Source, error_text

HIT, REVALIDATED, COMPUTED = "hit", "revalidated", "computed"
#: the most values derived from one state (one per snapshot limit asked and the schemas)
MAX_DERIVED = 16
_NEVER = -1e18


@dataclass(frozen=True)
class State:
    """One table's health as one check of the store found it. Never changed once published:
    a newer check publishes a new state."""

    table: Any = None  # the lakeformat.Table it was read through (None: the read failed)
    signature: str = ""  # the connection settings the table was opened with
    ids: tuple[int | None, int | None] | None = None  # (latest, earliest) snapshot ids
    report: Any = None  # DueReport (None exactly when `error` is set, or before any check)
    error: str | None = None
    checked: float = _NEVER  # monotonic time of the last check against the store
    computed: float = _NEVER  # ... of the computation of `report` / `error`
    computations: int = 0
    #: values derived from `table` at `ids` (the timeline, the schema versions), made on
    #: demand; shared with the revalidated states of the same table and ids only
    memo: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)

    def derived(self, key: Any, make: Callable[[], Any]) -> Any:
        """A value derived from this state's table at its snapshot ids, made once."""
        try:
            return self.memo[key]
        except KeyError:
            pass
        value = make()
        if len(self.memo) >= MAX_DERIVED:
            self.memo.clear()
        self.memo[key] = value
        return value


def snapshot_ids(table: Any) -> tuple[int | None, int | None]:
    manager = table.snapshot_manager
    return manager.latest_snapshot_id(), manager.earliest_snapshot_id()


class _Slot:
    """A table's current state and the lock its checks take (single flight)."""

    __slots__ = ("lock", "state")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.state = State()


class HealthCache:
    def __init__(self) -> None:
        self._slots: dict[tuple[str, str], _Slot] = {}
        self._lock = threading.Lock()

    def _slot(self, conn_id: str, name: str) -> _Slot:
        key = (conn_id, name)
        with self._lock:
            found = self._slots.get(key)
            if found is None:
                found = self._slots[key] = _Slot()
            return found

    def get(self, source: Source, name: str, *, ttl: float, max_age: float
            ) -> tuple[State, str]:
        """(the state of table `name` of `source`, how it was had: "hit" (served within the
        TTL), "revalidated" (snapshot ids unchanged) or "computed"), as the module says."""
        slot = self._slot(source.conn_id, name)
        state = slot.state  # one read of the published state
        if state.signature == source.signature and time.monotonic() - state.checked < ttl:
            return state, HIT
        with slot.lock:  # single flight: a second caller finds the first one's answer
            state = slot.state
            now = time.monotonic()
            if state.signature != source.signature:  # the connection changed: open it again
                state = replace(state, table=None, checked=_NEVER, signature=source.signature)
            elif now - state.checked < ttl:
                return state, HIT
            slot.state, outcome = self._check(source, name, state, now, max_age)
            return slot.state, outcome

    @staticmethod
    def _check(source: Source, name: str, state: State, now: float, max_age: float
               ) -> tuple[State, str]:
        """The state after checking the store (a new object; `state` is left as it was)."""
        table = state.table
        try:
            if table is None:
                table = source.catalog.get_table(name)
            ids = snapshot_ids(table)
            if (state.report is not None and ids == state.ids
                    and now - state.computed < max_age):
                memo = state.memo if table is state.table else {}
                return replace(state, table=table, checked=time.monotonic(),
                               memo=memo), REVALIDATED
            report = table.maintenance_due()
            done = time.monotonic()
            return State(table=table, signature=state.signature, ids=ids, report=report,
                         checked=done, computed=done,
                         computations=state.computations + 1), COMPUTED
        except Exception as e:  # noqa: BLE001 - this table's row shows its error
            done = time.monotonic()
            return State(signature=state.signature, error=error_text(e, source.secrets),
                         checked=done, computed=done,
                         computations=state.computations + 1), COMPUTED

    def forget(self, keep: set[tuple[str, str]]) -> None:
        """Drop the states of tables no longer listed."""
        with self._lock:
            self._slots = {k: v for k, v in self._slots.items() if k in keep}

    def clear(self) -> None:
        with self._lock:
            self._slots = {}
