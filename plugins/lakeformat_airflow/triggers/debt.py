"""`LakeformatDebtTrigger`: an asset watcher's trigger that fires when maintenance becomes due
on a table — debt handled within minutes of the writes that made it, with no DAG run spent
polling.

    from airflow.sdk import Asset, AssetWatcher
    debt = Asset("lakeformat_debt", watchers=[AssetWatcher(
        name="lakeformat_debt", trigger=LakeformatDebtTrigger(pattern="shop.*"))])
    with DAG("on_debt", schedule=[debt]): ...

Every `poll_interval` seconds the triggerer's loop hands one poll to a worker thread (the
connection read and the store reads block): list the tables matching `pattern`, read each
one's latest snapshot id, and for a table whose id changed since its last check ask the
library what is due (`Table.maintenance_due(thresholds)`, metadata only). An event is
`{"table", "snapshot_id", "actions": [{"kind", "rule", "reason", "urgent"}, ...]}` (the due
actions of `kinds`, default: compaction).

**One event per table per debt episode.** A table's episode begins when actions of `kinds`
become due on it and ends when a check finds none due (its next debt is a new episode). Within
an episode the debt may grow — more buckets, more partitions, another kind — while the run the
first event started is queued or running; that run asks again what is due (the event is a
hint, the metadata the truth), so growth alone fires nothing. An episode fires again only
  * when its debt turns urgent (a bucket at `num-sorted-run.stop-trigger` - 1 sorted runs:
    writers are about to stall) and it was not urgent at its last event or at a check since;
  * or `refire_after` seconds after its last event (the run it started may have failed).
What was fired is kept in the watched asset's state store when the triggerer provides one, so
a restarted triggerer does not fire the same episode again before `refire_after`.

Bad configuration fails at construction, that is when the DAG file is parsed (its import
error names the value): `kinds` outside the due-action kinds, `thresholds` the library's
`check_thresholds` refuses.

A watcher's trigger must never finish: `run()` loops until the triggerer cancels it, and an
error of a poll or of one table is logged and the loop goes on.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from airflow.triggers.base import BaseEventTrigger, TriggerEvent

from lakeformat.errors import InvalidArgumentError
from lakeformat_airflow import DEFAULT_CONN_ID

__all__ = ["DEFAULT_KINDS", "LakeformatDebtTrigger"]

#: the due-action kinds that fire by default: compaction debt is what slows readers and
#: stalls writers within the day; the nightly maintenance DAG does the rest
DEFAULT_KINDS = ("compact", "full-compact")
#: the asset state-store key of the fired episodes: {table: DUE or URGENT}
STATE_KEY = "lakeformat_debt_fired"


#: the due-action kinds a trigger may watch: all but orphan removal, which is never due
#: without an orphan scan (a listing of the table's directory the trigger does not make)
_NEVER_DUE_HERE = ("remove-orphans",)
#: the level of a table's debt episode, as the state store keeps it
DUE, URGENT = "due", "urgent"
#: the clock of `refire_after` (a seam for tests)
_clock = time.monotonic


def watchable_kinds() -> tuple[str, ...]:
    """The due-action kinds `kinds` may name (`lakeformat.health.ACTION_KINDS` but orphan
    removal)."""
    from lakeformat.health import ACTION_KINDS  # light: the result classes' module only

    return tuple(k for k in ACTION_KINDS if k not in _NEVER_DUE_HERE)


def check_kinds(kinds: str | Sequence[str]) -> list[str]:
    """`kinds` as a sorted list without repeats; `InvalidArgumentError` naming any unknown."""
    known = watchable_kinds()
    try:
        listed = [kinds] if isinstance(kinds, str) else list(kinds)
    except TypeError:
        raise InvalidArgumentError(f"kinds must name due-action kinds, got {kinds!r}; known: "
                                   f"{', '.join(known)}") from None
    if not listed:
        raise InvalidArgumentError(f"kinds must name due-action kinds, got none; known: "
                                   f"{', '.join(known)}")
    bad = [k for k in listed if k not in known]
    if bad:
        raise InvalidArgumentError(
            f"kinds: {', '.join(map(repr, bad))} "
            f"{'is not a due-action kind' if len(bad) == 1 else 'are not due-action kinds'} "
            f"this trigger can watch; known: {', '.join(known)}")
    return sorted(set(listed))


class LakeformatDebtTrigger(BaseEventTrigger):
    """Fires when maintenance of `kinds` becomes due on a table matching `pattern`, once per
    debt episode (see the module docstring). `thresholds` override the tables' options by
    Paimon name, as for `LakeformatDueActionsOperator` (e.g. fire early with
    `{"num-sorted-run.compaction-trigger": 3}`); `kinds` is any of the due-action kinds
    (`compact`, `full-compact`, `expire-tags`, `expire-partitions`, `compact-manifests`,
    `expire-snapshots`, `clean-schemas`). Both are checked here: a bad one raises
    `InvalidArgumentError` naming it, so a DAG built with it fails to import instead of
    watching for nothing."""

    def __init__(self, *, pattern: str = "*.*", lakeformat_conn_id: str = DEFAULT_CONN_ID,
                 poll_interval: float = 60.0, thresholds: Mapping[str, Any] | None = None,
                 kinds: Sequence[str] = DEFAULT_KINDS, refire_after: float = 3600.0,
                 **kwargs: Any):
        super().__init__(**kwargs)
        if not isinstance(pattern, str) or not pattern.strip():
            raise InvalidArgumentError(f"pattern must be text such as 'db.*', got {pattern!r}")
        try:
            interval, refire = float(poll_interval), float(refire_after)
        except (TypeError, ValueError):
            interval = refire = float("nan")
        if not (interval > 0 and refire >= 0):  # NaN fails both
            raise InvalidArgumentError(f"poll_interval must be > 0 and refire_after >= 0 "
                                       f"seconds, got {poll_interval!r} and {refire_after!r}")
        self.pattern = pattern
        self.lakeformat_conn_id = lakeformat_conn_id
        self.poll_interval = interval
        self.kinds = check_kinds(kinds)
        # the option text the rules read; a name or value they refuse fails here, named (none
        # given: nothing to check, and nothing imported)
        none = thresholds is None or (isinstance(thresholds, Mapping) and not thresholds)
        if not none:
            from lakeformat.health import check_thresholds  # light: no rule, no numpy

            thresholds = dict(sorted(check_thresholds(thresholds).items()))
        self.thresholds = {} if none else thresholds
        self.refire_after = refire
        # in-memory state of one run(): never part of serialize()
        self._catalog: Any = None
        self._tables: dict[str, Any] = {}  # table -> its lakeformat.Table (verbs re-read it)
        self._seen: dict[str, Any] = {}  # table -> latest snapshot id last examined
        # table -> (level of its episode: DUE or URGENT, when it last fired)
        self._fired: dict[str, tuple[str, float]] = {}

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (f"{type(self).__module__}.{type(self).__qualname__}", {
            "pattern": self.pattern, "lakeformat_conn_id": self.lakeformat_conn_id,
            "poll_interval": self.poll_interval, "thresholds": dict(self.thresholds),
            "kinds": list(self.kinds), "refire_after": self.refire_after})

    async def run(self) -> AsyncIterator[TriggerEvent]:
        self.log.info("watching %s of %s for due %s every %ss", self.pattern,
                      self.lakeformat_conn_id, ", ".join(self.kinds), self.poll_interval)
        await self._load_state()
        while True:
            fired_before = {t: f for t, (f, _) in self._fired.items()}
            try:
                events = await asyncio.to_thread(self.poll)
            except Exception as e:  # noqa: BLE001 - a watcher logs and keeps polling
                self.log.warning("polling %s failed, retrying in %ss: %s: %s", self.pattern,
                                 self.poll_interval, type(e).__name__, e)
                self._catalog = None  # rebuilt from the connection on the next poll
                self._tables = {}
                events = []
            if events or fired_before != {t: f for t, (f, _) in self._fired.items()}:
                await self._save_state()  # before the events: a restart after them is quiet
            for event in events:
                self.log.info("%s: due: %s", event["table"], "; ".join(
                    f"{a['kind']}{' (urgent)' if a['urgent'] else ''}: {a['reason']}"
                    for a in event["actions"]))
                yield TriggerEvent(event)
            await asyncio.sleep(self.poll_interval)

    # -- one poll, in a worker thread ---------------------------------------------------------
    def poll(self) -> list[dict[str, Any]]:
        """The events of one poll (blocking: run it in a worker thread)."""
        from lakeformat_airflow.operators.catalog import matching_tables

        if self._catalog is None:
            from lakeformat_airflow.hooks.lakeformat import LakeformatHook

            self._catalog = LakeformatHook(self.lakeformat_conn_id).get_catalog()
        names = matching_tables(self._catalog, self.pattern)
        for gone in (set(self._seen) | set(self._tables)) - set(names):
            self._seen.pop(gone, None)
            self._fired.pop(gone, None)
            self._tables.pop(gone, None)
        events = []
        for name in names:
            try:
                event = self._check(name)
            except Exception as e:  # noqa: BLE001 - one table's error; the others go on
                self.log.warning("%s: cannot tell what is due: %s: %s", name,
                                 type(e).__name__, e)
                self._seen.pop(name, None)  # opened and examined again on the next poll
                self._tables.pop(name, None)
                continue
            if event is not None:
                events.append(event)
        return events

    def _check(self, name: str) -> dict[str, Any] | None:
        table = self._tables.get(name)
        if table is None:
            table = self._tables[name] = self._catalog.get_table(name)
        latest = table.latest_snapshot()
        snapshot_id = None if latest is None else latest.id
        fired = self._fired.get(name)
        refire = fired is not None and _clock() - fired[1] >= self.refire_after
        if name in self._seen and self._seen[name] == snapshot_id and not refire:
            return None  # nothing committed since the last check: nothing new can be due
        report = table.maintenance_due(self.thresholds or None)
        self._seen[name] = report.snapshot_id if report.snapshot_id is not None else snapshot_id
        actions = [{"kind": a.kind, "rule": a.rule, "reason": a.reason,
                    "urgent": bool(a.urgent)} for a in report.actions if a.kind in self.kinds]
        if not actions:
            self._fired.pop(name, None)  # the episode is over: the next debt fires
            return None
        level = URGENT if any(a["urgent"] for a in actions) else DUE
        if fired is not None and not refire and not (level == URGENT and fired[0] == DUE):
            # the same episode, grown or not: the run its event started asks again what is
            # due; a debt no longer urgent is noted, so turning urgent again fires
            if level != fired[0]:
                self._fired[name] = (level, fired[1])
            return None
        self._fired[name] = (level, _clock())
        return {"table": name, "snapshot_id": self._seen[name], "actions": actions}

    # -- state across triggerer restarts ------------------------------------------------------
    async def _load_state(self) -> None:
        store = getattr(self, "asset_state_store", None)
        if store is None:
            return
        try:
            saved = await store.aget(STATE_KEY, None)
        except Exception as e:  # noqa: BLE001 - without it, a debt may fire once more
            self.log.warning("cannot read the asset state store: %s", e)
            return
        if isinstance(saved, dict):
            # fired before the restart: due again only after refire_after from now (a value
            # of an older version, a fingerprint, is an episode that was not urgent)
            now = _clock()
            self._fired = {str(t): (URGENT if f == URGENT else DUE, now)
                           for t, f in saved.items()}

    async def _save_state(self) -> None:
        store = getattr(self, "asset_state_store", None)
        if store is None:
            return
        try:
            await store.aset(STATE_KEY, {t: f for t, (f, _) in sorted(self._fired.items())})
        except Exception as e:  # noqa: BLE001 - in-memory state still holds it
            self.log.warning("cannot write the asset state store: %s", e)
