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

    trigger = LakeformatDebtTrigger(
        pattern="db.*", thresholds={"snapshot.num-retained.min": 2,
                                    "num-sorted-run.compaction-trigger": "1"},
        kinds=["full-compact", "compact"], poll_interval=5)
    classpath, kwargs = trigger.serialize()
    assert json.loads(json.dumps(kwargs)) == kwargs  # plain values only
    assert kwargs["thresholds"] == {"num-sorted-run.compaction-trigger": "1",
                                    "snapshot.num-retained.min": "2"}
    assert list(kwargs["thresholds"]) == sorted(kwargs["thresholds"])
    assert kwargs["kinds"] == ["compact", "full-compact"]
    rebuilt = import_string(classpath)(**kwargs)
    assert type(rebuilt) is LakeformatDebtTrigger
    assert rebuilt.serialize() == trigger.serialize()  # deterministic: the watcher's identity
    assert LakeformatDebtTrigger(
        pattern="db.*", thresholds={"num-sorted-run.compaction-trigger": 1,
                                    "snapshot.num-retained.min": "2"},
        kinds=["compact", "full-compact", "compact"],
        poll_interval=5.0).serialize() == trigger.serialize()
    with pytest.raises(lf.errors.InvalidArgumentError, match="pattern"):
        LakeformatDebtTrigger(pattern=" ")
    with pytest.raises(lf.errors.InvalidArgumentError, match="poll_interval"):
        LakeformatDebtTrigger(poll_interval=0)
    with pytest.raises(lf.errors.InvalidArgumentError, match="poll_interval.*'soon'"):
        LakeformatDebtTrigger(poll_interval="soon")


@pytest.mark.parametrize("kinds, bad", [
    (["compaction"], "'compaction'"),  # not a kind: it would never fire
    (["compact", "vacuum", "expire"], "'vacuum', 'expire'"),
    ("remove-orphans", "'remove-orphans'"),  # a kind, but never due without an orphan scan
    ([None], "None"),
    ([], "got none"),
    (5, "got 5"),
])
def test_unknown_kinds_are_refused_at_construction(kinds, bad):
    from lakeformat.health import ACTION_KINDS
    from lakeformat_airflow.triggers import LakeformatDebtTrigger

    with pytest.raises(lf.errors.InvalidArgumentError, match="kinds") as e:
        LakeformatDebtTrigger(kinds=kinds)
    assert bad in str(e.value) and "known: full-compact, compact" in str(e.value)
    watchable = [k for k in ACTION_KINDS if k != "remove-orphans"]
    assert LakeformatDebtTrigger(kinds=watchable).kinds == sorted(watchable)
    assert LakeformatDebtTrigger(kinds="expire-snapshots").kinds == ["expire-snapshots"]


@pytest.mark.parametrize("thresholds, named", [
    ({"num-sorted-run.compaction-triger": 3}, "'num-sorted-run.compaction-triger' (did you "
                                              "mean 'num-sorted-run.compaction-trigger'?)"),
    ({"num-sorted-run.compaction-trigger": "many"}, "'num-sorted-run.compaction-trigger': "
                                                    "bad value 'many'"),
    ({"snapshot.num-retained.min": 0}, "'snapshot.num-retained.min': bad value 0"),
    (["num-sorted-run.compaction-trigger"], "must be a mapping"),
])
def test_bad_thresholds_are_refused_at_construction(thresholds, named):
    """Checked by the library's `check_thresholds` when the trigger is built (when the DAG
    file is parsed), not at each poll of a watcher that would never fire."""
    from lakeformat_airflow.triggers import LakeformatDebtTrigger

    with pytest.raises(lf.errors.InvalidArgumentError) as e:
        LakeformatDebtTrigger(thresholds=thresholds)
    assert named in str(e.value)
    # the values are the option text the rules read (a bool as Paimon writes it)
    assert LakeformatDebtTrigger(thresholds={"num-sorted-run.compaction-trigger": 4}).thresholds \
        == {"num-sorted-run.compaction-trigger": "4"}


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


def _clock(monkeypatch) -> list[float]:
    """The trigger's `refire_after` clock, moved by the test."""
    from lakeformat_airflow.triggers import debt

    now = [1000.0]
    monkeypatch.setattr(debt, "_clock", lambda: now[0])
    return now


def _write_to(table: lf.Table, dt: str, i: int) -> None:
    table.write(pa.table({"dt": [dt], "id": [i], "v": [i]}, schema=SCHEMA))


def test_growing_debt_fires_once_until_refire_after(hot, monkeypatch):
    """Debt that grows bucket by bucket (a partition after another reaching the trigger) while
    the first event's run is pending is one episode: one event, and another only once
    `refire_after` has passed since it (the run may have failed). Paid off, the episode ends
    and the next debt fires at once."""
    from lakeformat_airflow.triggers import LakeformatDebtTrigger

    now = _clock(monkeypatch)
    trigger = LakeformatDebtTrigger(pattern="db.*", thresholds=THRESHOLDS, refire_after=600)
    for i in range(3):
        _write_to(hot, "2024-01-01", i)
    [event] = trigger.poll()
    assert [a["kind"] for a in event["actions"]] == ["compact"], event
    assert not event["actions"][0]["urgent"]
    for day in ("2024-01-02", "2024-01-03"):  # one more bucket due at a time
        for i in range(3):
            _write_to(hot, day, i)
            now[0] += 60
            assert trigger.poll() == [], f"fired again for {day}, write {i}"
    report = hot.maintenance_due(THRESHOLDS)
    due = {json.dumps(p, sort_keys=True) for a in report.actions if a.kind == "compact"
           for p in a.partitions}
    assert len(due) == 3, report  # the debt did grow: three partitions' buckets
    now[0] = 1000.0 + 599
    assert trigger.poll() == []
    now[0] = 1000.0 + 600  # refire_after since the event: the same episode fires again
    [again] = trigger.poll()
    assert again["table"] == "db.hot" and again["snapshot_id"] == event["snapshot_id"] + 6
    now[0] += 60
    assert trigger.poll() == []
    hot.compact(full=True)
    assert trigger.poll() == [] and _due(hot) == []  # paid off: the episode is over
    for i in range(3):
        _write_to(hot, "2024-01-04", i)
    assert [e["table"] for e in trigger.poll()] == ["db.hot"]  # a new episode, at once


def test_debt_turning_urgent_fires_again(hot, monkeypatch):
    """Within an episode, the one event before `refire_after` is the debt turning urgent (a
    bucket at num-sorted-run.stop-trigger - 1 sorted runs: writers are about to stall) — once."""
    from lakeformat_airflow.triggers import LakeformatDebtTrigger

    _clock(monkeypatch)
    thresholds = {**THRESHOLDS, "num-sorted-run.stop-trigger": "5"}  # urgent at 4 runs
    trigger = LakeformatDebtTrigger(pattern="db.*", thresholds=thresholds)
    for i in range(3):
        _write(hot, i)
    [event] = trigger.poll()
    assert [a["urgent"] for a in event["actions"]] == [False]
    _write(hot, 3)
    [urgent] = trigger.poll()
    assert [a["urgent"] for a in urgent["actions"]] == [True], urgent
    assert "num-sorted-run.stop-trigger" in urgent["actions"][0]["reason"], urgent
    _write(hot, 4)
    assert trigger.poll() == []  # still urgent: the same episode, already told
