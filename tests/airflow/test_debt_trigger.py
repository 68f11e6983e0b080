"""`LakeformatDebtTrigger`, the asset watcher's trigger, driven as the triggerer drives it: its
`run()` async generator against a real table on the moto S3 server (the writes happen while
it polls, from the event loop's worker threads). It fires when the writes make compaction due
and not before, once per debt; a poll that fails is logged and polling goes on; a table
whose latest snapshot did not change is not examined again."""

from __future__ import annotations

import asyncio
import contextlib
import json

import pyarrow as pa
import pytest

import lakeformat as lf

SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False),
                    pa.field("id", pa.int64(), nullable=False), ("v", pa.int64())])
#: compaction due at 3 sorted runs in a bucket: fewer writes for the test
THRESHOLDS = {"num-sorted-run.compaction-trigger": "3"}
#: how long the trigger gets to show it does not fire (many polls at 0.05 s)
QUIET = 1.0


@pytest.fixture()
def hot(s3_conn) -> lf.Table:
    uri, options = s3_conn
    catalog = lf.Catalog(uri, options=options)
    catalog.create_database("db")
    return catalog.create_table("db.hot", SCHEMA, primary_keys=["dt", "id"],
                                partition_keys=["dt"], options={"bucket": "1"})


async def _stop(agen, pending: asyncio.Future) -> None:
    """Cancel the pending `anext()` (the generator then ends at its await) and close it."""
    pending.cancel()
    with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
        await pending
    await agen.aclose()


def _write(table: lf.Table, i: int) -> None:
    table.write(pa.table({"dt": ["2024-01-01"], "id": [i], "v": [i]}, schema=SCHEMA))


def _due(table: lf.Table) -> list[str]:
    return [a.kind for a in table.maintenance_due(THRESHOLDS).actions]


def test_serialize_round_trip():
    from airflow.sdk._shared.module_loading import import_string

    from lakeformat_airflow.triggers import LakeformatDebtTrigger

    trigger = LakeformatDebtTrigger(pattern="db.*", thresholds={"b": 2, "a": "1"},
                                    kinds=["full-compact", "compact"], poll_interval=5)
    classpath, kwargs = trigger.serialize()
    assert json.loads(json.dumps(kwargs)) == kwargs  # plain values only
    assert list(kwargs["thresholds"]) == ["a", "b"] and kwargs["kinds"] == ["compact",
                                                                            "full-compact"]
    rebuilt = import_string(classpath)(**kwargs)
    assert type(rebuilt) is LakeformatDebtTrigger
    assert rebuilt.serialize() == trigger.serialize()  # deterministic: the watcher's identity
    assert LakeformatDebtTrigger(pattern="db.*", thresholds={"a": "1", "b": 2},
                                 kinds=["compact", "full-compact"],
                                 poll_interval=5.0).serialize() == trigger.serialize()
    with pytest.raises(lf.errors.InvalidArgumentError, match="pattern"):
        LakeformatDebtTrigger(pattern=" ")
    with pytest.raises(lf.errors.InvalidArgumentError, match="poll_interval"):
        LakeformatDebtTrigger(poll_interval=0)


def test_fires_when_writes_create_debt_and_not_before(hot):
    from lakeformat_airflow.triggers import LakeformatDebtTrigger

    trigger = LakeformatDebtTrigger(pattern="db.*", thresholds=THRESHOLDS, poll_interval=0.05)

    async def scenario() -> tuple[list[int], object, bool]:
        agen = trigger.run()
        pending = asyncio.ensure_future(anext(agen))
        quiet_writes = []
        try:
            for i in range(10):
                await asyncio.to_thread(_write, hot, i)
                if await asyncio.to_thread(_due, hot):
                    break
                quiet_writes.append(i)
                done, _ = await asyncio.wait({pending}, timeout=QUIET)
                assert not done, f"fired after write {i}, with nothing due: {pending.result()}"
            event = await asyncio.wait_for(pending, timeout=60)
            # the same debt, one write deeper: no second event
            await asyncio.to_thread(_write, hot, 99)
            pending = asyncio.ensure_future(anext(agen))
            done, _ = await asyncio.wait({pending}, timeout=QUIET)
            return quiet_writes, event, bool(done)
        finally:
            await _stop(agen, pending)

    quiet_writes, event, fired_again = asyncio.run(scenario())
    assert len(quiet_writes) == 2  # 1 and 2 sorted runs: below the trigger of 3
    payload = event.payload
    assert payload["table"] == "db.hot" and payload["snapshot_id"] == 3
    assert [a["kind"] for a in payload["actions"]] == ["compact"], payload
    assert "num-sorted-run.compaction-trigger" in payload["actions"][0]["reason"], payload
    assert not fired_again


def test_a_failing_poll_is_logged_and_polling_goes_on(hot, s3_conn, monkeypatch, dags):
    """The watcher's connection is missing at first: polls fail, and once it exists the
    debt fires (a watcher that returned would be dropped by the triggerer)."""
    from lakeformat_airflow.triggers import LakeformatDebtTrigger

    for i in range(3):
        _write(hot, i)
    uri, options = s3_conn
    trigger = LakeformatDebtTrigger(pattern="db.*", lakeformat_conn_id="lake_later",
                                    thresholds=THRESHOLDS, poll_interval=0.05)
    extra = {k: v for k, v in options.items() if k not in ("s3.access-key", "s3.secret-key")}

    async def scenario() -> object:
        agen = trigger.run()
        pending = asyncio.ensure_future(anext(agen))
        try:
            done, _ = await asyncio.wait({pending}, timeout=QUIET)
            assert not done
            monkeypatch.setenv("AIRFLOW_CONN_LAKE_LATER", dags.conn_json(
                "lakeformat", uri, options["s3.access-key"], options["s3.secret-key"], extra))
            return await asyncio.wait_for(pending, timeout=60)
        finally:
            await _stop(agen, pending)

    event = asyncio.run(scenario())
    assert event.payload["table"] == "db.hot"


def test_an_unchanged_table_is_not_examined_again(hot, monkeypatch):
    from lakeformat_airflow.triggers import LakeformatDebtTrigger

    for i in range(3):
        _write(hot, i)
    trigger = LakeformatDebtTrigger(pattern="db.*", thresholds=THRESHOLDS)
    examined = []
    due = lf.Table.maintenance_due

    def counting(self, *args, **kwargs):
        examined.append(self.name)
        return due(self, *args, **kwargs)

    monkeypatch.setattr(lf.Table, "maintenance_due", counting)
    assert [e["table"] for e in trigger.poll()] == ["db.hot"]
    assert trigger.poll() == [] and examined == ["db.hot"]  # the same snapshot: not read
    _write(hot, 10)
    assert trigger.poll() == [] and examined == ["db.hot"] * 2  # the same debt: no event
    hot.compact(full=True)
    assert trigger.poll() == [] and _due(hot) == []  # paid off: forgotten
    for i in range(3):
        _write(hot, 20 + i)
    assert [e["table"] for e in trigger.poll()] == ["db.hot"]  # a new debt fires again


class _StateStore:
    """The asset state store the triggerer gives a watcher's trigger (`aget`/`aset`)."""

    def __init__(self) -> None:
        self.values: dict[str, object] = {}

    async def aget(self, key: str, default: object = None) -> object:
        return self.values.get(key, default)

    async def aset(self, key: str, value: object) -> None:
        self.values[key] = json.loads(json.dumps(value))  # JSON, as the store keeps it


def test_a_restarted_trigger_does_not_fire_the_same_debt_again(hot):
    """What fired is kept in the asset's state store: the trigger the triggerer starts again
    (from `serialize()`, with no memory) stays quiet about the debt it already reported."""
    from lakeformat_airflow.triggers import LakeformatDebtTrigger

    for i in range(3):
        _write(hot, i)
    store = _StateStore()

    async def first_event(trigger: LakeformatDebtTrigger) -> object:
        trigger.asset_state_store = store
        agen = trigger.run()
        pending = asyncio.ensure_future(anext(agen))
        try:
            done, _ = await asyncio.wait({pending}, timeout=QUIET if store.values else 60)
            return pending.result() if done else None
        finally:
            await _stop(agen, pending)

    trigger = LakeformatDebtTrigger(pattern="db.*", thresholds=THRESHOLDS, poll_interval=0.05)
    assert asyncio.run(first_event(trigger)).payload["table"] == "db.hot"
    assert list(store.values["lakeformat_debt_fired"]) == ["db.hot"]
    classpath, kwargs = trigger.serialize()
    assert asyncio.run(first_event(LakeformatDebtTrigger(**kwargs))) is None
    # unless refire_after has passed (the run it started may have failed)
    again = LakeformatDebtTrigger(**{**kwargs, "refire_after": 0})
    assert asyncio.run(first_event(again)).payload["table"] == "db.hot"
