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
library what is due (`Table.maintenance_due(thresholds)`, metadata only). A table whose due
actions of `kinds` (default: compaction) differ from what was last fired for it fires an event
`{"table", "snapshot_id", "actions": [{"kind", "rule", "reason"}, ...]}`; the same debt fires
again only after `refire_after` seconds (the run it started may have failed). A table whose
debt is gone is forgotten, so its next debt fires. What was fired is kept in the watched
asset's state store when the triggerer provides one, so a restarted triggerer does not fire
the same debt twice.

A watcher's trigger must never finish: `run()` loops until the triggerer cancels it, and an
error of a poll or of one table is logged and the loop goes on.
"""

from __future__ import annotations

import asyncio
import json
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
#: the asset state-store key of the fired fingerprints
STATE_KEY = "lakeformat_debt_fired"


def _fingerprint(actions: Sequence[Mapping[str, Any]]) -> str:
    """What identifies a debt: the kinds, rules and buckets (not the figures, which grow
    with every write while the debt is the same)."""
    keys = sorted(json.dumps([a["kind"], a.get("rule"), a.get("buckets") or a.get("partitions")],
                             sort_keys=True, default=str) for a in actions)
    return "|".join(keys)


class LakeformatDebtTrigger(BaseEventTrigger):
    """Fires when maintenance of `kinds` becomes due on a table matching `pattern` (see the
    module docstring). `thresholds` override the tables' options by Paimon name, as for
    `LakeformatDueActionsOperator` (e.g. fire early with
    `{"num-sorted-run.compaction-trigger": 3}`); `kinds` is any of the due-action kinds
    (`compact`, `full-compact`, `expire-snapshots`, `compact-manifests`, `clean-schemas`,
    `expire-partitions`)."""

    def __init__(self, *, pattern: str = "*.*", lakeformat_conn_id: str = DEFAULT_CONN_ID,
                 poll_interval: float = 60.0, thresholds: Mapping[str, Any] | None = None,
                 kinds: Sequence[str] = DEFAULT_KINDS, refire_after: float = 3600.0,
                 **kwargs: Any):
        super().__init__(**kwargs)
        if not isinstance(pattern, str) or not pattern.strip():
            raise InvalidArgumentError(f"pattern must be text such as 'db.*', got {pattern!r}")
        kinds = [kinds] if isinstance(kinds, str) else list(kinds)
        if not kinds or not all(isinstance(k, str) and k for k in kinds):
            raise InvalidArgumentError(f"kinds must name due-action kinds, got {kinds!r}")
        if float(poll_interval) <= 0 or float(refire_after) < 0:
            raise InvalidArgumentError(f"poll_interval must be > 0 and refire_after >= 0, got "
                                       f"{poll_interval!r} and {refire_after!r}")
        self.pattern = pattern
        self.lakeformat_conn_id = lakeformat_conn_id
        self.poll_interval = float(poll_interval)
        self.thresholds = {str(k): str(v) for k, v in sorted((thresholds or {}).items())}
        self.kinds = sorted(set(kinds))
        self.refire_after = float(refire_after)
        # in-memory state of one run(): never part of serialize()
        self._catalog: Any = None
        self._tables: dict[str, Any] = {}  # table -> its lakeformat.Table (verbs re-read it)
        self._seen: dict[str, Any] = {}  # table -> latest snapshot id last examined
        self._fired: dict[str, tuple[str, float]] = {}  # table -> (fingerprint, when fired)

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
                self.log.info("%s: due: %s", event["table"],
                              "; ".join(f"{a['kind']}: {a['reason']}" for a in event["actions"]))
                yield TriggerEvent(event)
            await asyncio.sleep(self.poll_interval)

    # -- one poll, in a worker thread ---------------------------------------------------------
    def poll(self) -> list[dict[str, Any]]:
        """The events of one poll (blocking: run it in a worker thread)."""
        from lakeformat.health import check_thresholds
        from lakeformat_airflow.operators.catalog import matching_tables

        check_thresholds(self.thresholds)  # a bad name: this poll's error, named
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
        refire = fired is not None and time.monotonic() - fired[1] >= self.refire_after
        if name in self._seen and self._seen[name] == snapshot_id and not refire:
            return None  # nothing committed since the last check: nothing new can be due
        report = table.maintenance_due(self.thresholds or None)
        self._seen[name] = report.snapshot_id if report.snapshot_id is not None else snapshot_id
        actions = [{"kind": a.kind, "rule": a.rule, "reason": a.reason,
                    "buckets": list(a.buckets), "partitions": list(a.partitions)}
                   for a in report.actions if a.kind in self.kinds]
        if not actions:
            self._fired.pop(name, None)  # the debt is gone: the next one fires
            return None
        fingerprint = _fingerprint(actions)
        if fired is not None and fired[0] == fingerprint and not refire:
            return None
        self._fired[name] = (fingerprint, time.monotonic())
        return {"table": name, "snapshot_id": self._seen[name],
                "actions": [{k: a[k] for k in ("kind", "rule", "reason")} for a in actions]}

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
            # fired before the restart: due again only after refire_after from now
            now = time.monotonic()
            self._fired = {str(t): (str(f), now) for t, f in saved.items()}

    async def _save_state(self) -> None:
        store = getattr(self, "asset_state_store", None)
        if store is None:
            return
        try:
            await store.aset(STATE_KEY, {t: f for t, (f, _) in sorted(self._fired.items())})
        except Exception as e:  # noqa: BLE001 - in-memory state still holds it
            self.log.warning("cannot write the asset state store: %s", e)
