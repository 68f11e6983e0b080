"""Two processes creating the same table at the same moment with `exist_ok=True` (two DAG runs
on a scheduler's first start): both end holding the table when they ask for the same schema;
with different schemas the loser gets a `TableAlreadyExistsError` naming the table and what
differs. On local disk, on the moto S3 server and in a JDBC catalog, over many rounds.

Free rounds race as they come; in a held round the test holds the table's commit lock
(`lock.enabled=true`) while both creators start, and releases it once both have found it taken
(each creator reports its first refused lock attempt of a round), so both have seen no table
and wait to write its first schema file: the race is certain, not left to timing.
Rounds: `CREATE_RACE_ROUNDS`, 6 under make test (rounds 0 and 5 held, four free), 12 under
make test-deep (0, 5 and 10 held), see tests/support/depth.py.
"""

from __future__ import annotations

import multiprocessing as mp
import os
from typing import Any

import pyarrow as pa
import pytest

import lakeformat as lf
from tests.support.depth import examples

ROUNDS = examples(6, 12, "CREATE_RACE_ROUNDS")
#: the rounds in which the test holds the commit lock while both creators start
HELD = tuple(range(0, ROUNDS, 5))
#: catalog options of the held rounds: the commit lock on, polled often
LOCKED = {"lock.enabled": "true", "lock-check-max-sleep": "100 ms"}


def schema(extra: bool) -> pa.Schema:
    fields = [pa.field("id", pa.int64(), False), ("v", pa.string())]
    return pa.schema(fields + ([("w", pa.float64())] if extra else []))


def report_lock_waits(waiting: Any, round_of: list[int]) -> None:
    """In a creator process: put (round, pid) on `waiting` when a lock acquisition's first
    attempt finds the lock taken, so the test knows this creator waits for its held lock."""
    import lakeformat.lock.base as lock_base

    real = lock_base.acquire_with_retry

    def acquire_with_retry(try_once: Any, **kwargs: Any) -> Any:
        first = [True]

        def attempt() -> Any:
            got = try_once()
            if first[0] and not isinstance(got, lock_base.Lease):
                waiting.put((round_of[0], os.getpid()))
            first[0] = False
            return got

        return real(attempt, **kwargs)

    lock_base.acquire_with_retry = acquire_with_retry  # what TableLock.acquire calls


def creator(warehouse: str, options: dict[str, str], rounds: int, extra: bool,
            bucket: str, barrier: Any, results: Any, waiting: Any) -> None:
    """One racer: each round waits for the other at the barrier, then creates `db.t<round>`."""
    round_of = [0]
    report_lock_waits(waiting, round_of)
    catalog = lf.Catalog(warehouse, options=options)
    try:
        for r in range(rounds):
            round_of[0] = r
            barrier.wait(timeout=120)
            try:
                t = catalog.create_table(f"db.t{r}", schema(extra), primary_keys=["id"],
                                         options={"bucket": bucket}, exist_ok=True)
                t.write(pa.table({"id": [r], "v": ["x"]}))  # holding a usable table
                results.put((r, "ok", t.name))
            except Exception as e:  # noqa: BLE001 - reported to the test
                results.put((r, type(e).__name__, str(e)))
    finally:
        catalog.close()


def race(warehouse: str, options: dict[str, str], *, extra: tuple[bool, bool] = (False, False),
         buckets: tuple[str, str] = ("2", "2"), rounds: int = ROUNDS,
         held: tuple[int, ...] = ()) -> dict[int, list[tuple[str, str]]]:
    """Two creator processes (spawned: nothing inherited), their outcomes per round; in the
    `held` rounds this process holds the table's commit lock until both creators wait for it."""
    ctx = mp.get_context("spawn")
    barrier, results, waiting = ctx.Barrier(3), ctx.Queue(), ctx.Queue()
    procs = [ctx.Process(target=creator, args=(warehouse, options, rounds, extra[i],
                                               buckets[i], barrier, results, waiting))
             for i in range(2)]
    for p in procs:
        p.start()
    with lf.Catalog(warehouse, options=options) as catalog:
        for r in range(rounds):
            lock = catalog.table_locks(f"db.t{r}").commit
            if r in held:
                assert lock is not None, "held rounds need lock.enabled=true"
                with lock.acquire("test holds the commit lock"):
                    barrier.wait(timeout=120)
                    waiters: set[int] = set()
                    while len(waiters) < 2:  # both found no table and wait for the lock
                        at, pid = waiting.get(timeout=120)
                        if at == r:
                            waiters.add(pid)
            else:
                barrier.wait(timeout=120)
    out: dict[int, list[tuple[str, str]]] = {}
    for _ in range(2 * rounds):
        r, kind, text = results.get(timeout=300)
        out.setdefault(r, []).append((kind, text))
    while not waiting.empty():  # lets the creators exit (a queue is flushed at exit)
        waiting.get(timeout=10)
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    return out


@pytest.fixture(params=["local", "s3", "jdbc"])
def where(request, tmp_path) -> tuple[str, dict[str, str]]:
    if request.param == "local":
        warehouse, options = str(tmp_path / "wh"), {}
    elif request.param == "s3":
        warehouse, options = request.getfixturevalue("s3_warehouse")
    else:
        warehouse = str(tmp_path / "wh")
        options = {"metastore": "jdbc", "uri": f"jdbc:sqlite:{tmp_path / 'catalog.db'}"}
    with lf.Catalog(warehouse, options=options) as catalog:
        catalog.create_database("db")
    return warehouse, options


def test_racing_creators_of_the_same_table_both_hold_it(where):
    warehouse, options = where
    options = {**options, **LOCKED}
    outcomes = race(warehouse, options, held=HELD)
    for r, pair in sorted(outcomes.items()):
        assert pair == [("ok", f"db.t{r}")] * 2, (r, pair)
    with lf.Catalog(warehouse, options=options) as catalog:
        for r in range(ROUNDS):
            t = catalog.get_table(f"db.t{r}")
            assert [s.id for s in t.schemas()] == [0]
            assert t.read().column("id").to_pylist() == [r]  # both wrote the same key


def test_racing_creators_with_different_schemas_get_a_named_error(where):
    warehouse, options = where
    options = {**options, **LOCKED}
    outcomes = race(warehouse, options, extra=(False, True), buckets=("2", "4"), rounds=2,
                    held=(0, 1))
    for r, pair in sorted(outcomes.items()):
        kinds = sorted(kind for kind, _ in pair)
        assert kinds == ["TableAlreadyExistsError", "ok"], (r, pair)
        message = next(text for kind, text in pair if kind != "ok")
        assert f"db.t{r}" in message and "different schema" in message, message
        assert "'bucket' '2' vs '4'" in message or "'bucket' '4' vs '2'" in message, message
        assert "columns id BIGINT NOT NULL, v STRING" in message, message
