"""The Lake view's health cache and connection list under concurrent requests, with stand-in
tables and connections (what is tested is who waits for whom and what a request sees, not the
store): a request keeps the one consistent state the cache gave it while other requests
recompute (and fail); a table's request waits for its own connection only, and a connection
being refreshed is served as it was meanwhile.

The same code against a real S3 warehouse is `test_lake_view_api.py`.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from lakeformat_airflow.lake_view import cache as cache_module
from lakeformat_airflow.lake_view import sources as sources_module
from lakeformat_airflow.lake_view.cache import COMPUTED, HIT, REVALIDATED, HealthCache
from lakeformat_airflow.lake_view.config import Settings
from lakeformat_airflow.lake_view.sources import Source, Sources, UnknownSource

WAIT = 10.0  # seconds a test waits for a thread that should not block at all


class Report:
    """A stand-in `DueReport`: the snapshot ids it was computed at."""

    def __init__(self, ids: tuple[int, int]) -> None:
        self.ids = ids
        self.health = object()


class Table:
    """A stand-in `lakeformat.Table` whose `maintenance_due()` fails while `fail` is set."""

    def __init__(self, pause: float = 0.0) -> None:
        self.latest, self.fail, self.pause = 1, False, pause

    @property
    def snapshot_manager(self) -> Table:
        return self

    def latest_snapshot_id(self) -> int:
        return self.latest

    def earliest_snapshot_id(self) -> int:
        return 1

    def maintenance_due(self) -> Report:
        ids = (self.latest, 1)
        time.sleep(self.pause)
        if self.fail:
            raise OSError("the store refused")
        return Report(ids)


def _source(table: Table, conn_id: str = "lakeformat_default") -> Source:
    class Catalog:
        def get_table(self, name: str) -> Table:
            return table

    return Source(conn_id, catalog=Catalog(), signature="sig")


def test_a_failed_recompute_leaves_the_answer_a_request_has():
    table = Table()
    source, cache = _source(table), HealthCache()
    good, outcome = cache.get(source, "db.t", ttl=0.0, max_age=300.0)
    assert outcome == COMPUTED and good.error is None and good.report.ids == good.ids == (1, 1)
    good.derived("timeline", lambda: "timeline at (1, 1)")

    # while the first request renders `good`, a second one recomputes and the store fails
    table.fail = True
    bad, outcome = cache.get(source, "db.t", ttl=0.0, max_age=0.0)
    assert outcome == COMPUTED and bad.report is None and bad.table is None
    assert bad.error == "OSError: the store refused"
    # the first request still has its whole answer: no error, its report, its table, its ids
    assert good.error is None and good.report.ids == good.ids == (1, 1)
    assert good.table is table
    assert good.derived("timeline", lambda: "made again") == "timeline at (1, 1)"
    assert cache.get(source, "db.t", ttl=60.0, max_age=0.0) == (bad, HIT)

    # a commit, then a good read again: a new state; values derived from the old one stay its
    table.fail, table.latest = False, 2
    fresh, outcome = cache.get(source, "db.t", ttl=0.0, max_age=300.0)
    assert outcome == COMPUTED and fresh.ids == fresh.report.ids == (2, 1)
    assert fresh.derived("timeline", lambda: "timeline at (2, 1)") == "timeline at (2, 1)"
    assert good.derived("timeline", lambda: "made again") == "timeline at (1, 1)"
    again, outcome = cache.get(source, "db.t", ttl=0.0, max_age=300.0)
    assert outcome == REVALIDATED and again.report is fresh.report
    assert again.derived("timeline", lambda: "made again") == "timeline at (2, 1)"


def test_readers_see_consistent_states_while_recomputes_fail_and_succeed():
    """Requests hammer one table (each recomputing: max_age 0) while its store alternates
    between failing and answering; each checks the state it got, taking its time as a page
    does, while the others publish new ones."""
    table = Table(pause=0.0005)
    source, cache = _source(table), HealthCache()
    stop = threading.Event()
    seen: dict[str, int] = {"good": 0, "error": 0}
    broken: list[str] = []

    def flip() -> None:
        for _ in range(400):
            table.fail = not table.fail
            time.sleep(0.001)
        stop.set()

    def read() -> None:
        while not stop.is_set():
            state, _ = cache.get(source, "db.t", ttl=0.0, max_age=0.0)
            if state.error is None:
                time.sleep(0.0003)  # rendering, while other requests recompute
                if state.report is None or state.table is not table \
                        or state.report.ids != state.ids:
                    broken.append(f"good state changed under a reader: {state!r}")
                seen["good"] += 1
            else:
                time.sleep(0.0003)
                if state.report is not None or state.table is not None or state.ids:
                    broken.append(f"error state with a report: {state!r}")
                seen["error"] += 1

    threads = [threading.Thread(target=flip)] + [threading.Thread(target=read)
                                                 for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not broken, broken[:3]
    assert seen["good"] and seen["error"], seen


class _Stores:
    """Stand-ins for `open_source` / `list_tables`: the connection "slow" lists its tables only
    once `release` is set; every open is counted."""

    def __init__(self) -> None:
        self.release, self.listing = threading.Event(), threading.Event()
        self.opened: list[str] = []

    def open_source(self, conn_id: str, previous: Source | None = None,
                    overlay: dict[str, str] | None = None) -> Source:
        self.opened.append(conn_id)
        return Source(conn_id, catalog=object(), signature=conn_id)

    def list_tables(self, source: Source, settings: Settings) -> None:
        if source.conn_id == "slow":
            self.listing.set()
            assert self.release.wait(WAIT)
        source.tables = ["db.t"]


@pytest.fixture()
def stores(monkeypatch) -> _Stores:
    fake = _Stores()
    monkeypatch.setattr(sources_module, "open_source", fake.open_source)
    monkeypatch.setattr(sources_module, "list_tables", fake.list_tables)
    return fake


def _settings(ttl: float) -> Settings:
    return Settings(connections=("fast", "slow"), patterns=((None, "*.*"),), ttl=ttl,
                    max_age=300.0, workers=2, catalog_options={})


def _in_thread(call: Any) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.append(call()), daemon=True)
    thread.start()
    return thread, out


def test_a_table_request_waits_for_its_own_connection_only(stores):
    sources, settings = Sources(), _settings(ttl=600.0)
    listing, listed = _in_thread(lambda: sources.get(settings))
    assert stores.listing.wait(WAIT)  # the list is loading "slow", which hangs
    try:
        asked, got = _in_thread(lambda: sources.source(settings, "fast"))
        asked.join(WAIT)
        assert not asked.is_alive(), "a request for 'fast' waited for 'slow'"
        assert got[0].conn_id == "fast" and got[0].tables == ["db.t"]
        assert stores.opened.count("slow") == 1  # the table's request opened no other
        with pytest.raises(UnknownSource):
            sources.source(settings, "other")
    finally:
        stores.release.set()
    listing.join(WAIT)
    assert [s.conn_id for s in listed[0]] == ["fast", "slow"]


def test_a_connection_being_refreshed_is_served_as_it_was(stores):
    sources, settings = Sources(), _settings(ttl=0.0)  # every request finds it stale
    stores.release.set()
    before = {s.conn_id: s for s in sources.get(settings)}
    stores.release.clear()
    stores.listing.clear()
    refreshing, refreshed = _in_thread(lambda: sources.source(settings, "slow"))
    assert stores.listing.wait(WAIT)
    try:
        # single flight: the others do not open it again, and get what it had meanwhile
        asked, got = _in_thread(lambda: sources.get(settings))
        asked.join(WAIT)
        assert not asked.is_alive(), "the list waited for a connection being refreshed"
        assert got[0][1] is before["slow"]
        assert stores.opened.count("slow") == 2
    finally:
        stores.release.set()
    refreshing.join(WAIT)
    assert refreshed[0] is not before["slow"] and refreshed[0].tables == ["db.t"]


def test_a_state_cannot_change():
    """What a request holds cannot change under it: states are frozen."""
    state = cache_module.State()
    with pytest.raises(AttributeError):
        state.report = object()  # type: ignore[misc]
