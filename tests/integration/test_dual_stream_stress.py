"""The scenario lakeformat exists for, under load, on the moto S3 server over HTTP.

N writer processes each own one column of a partial-update table and commit M times (commit j
writes the value j into its column for a random subset of the keys), while a compaction loop,
an expiry loop and a reader run at once. No update may be lost: the reader never sees a cell go
backwards, and at the end every cell holds the last value its writer wrote to it — also after a
final full compaction. Bounded: fixed counts of commits, a deadline on every wait; each run
prints commits, compactions, renumbered writes and expired snapshots.
"""

from __future__ import annotations

import multiprocessing as mp
import time
import traceback
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import lakeformat as lf
from tests.support.depth import examples, stress_runs

WRITERS = 4
# commits per writer: STRESS_COMMITS, 10 in make test-deep (tests/support/depth.py). Six each
# (24 racing commits) already renumber writes many times over, lose commits to the compaction
# loop and outlive the expiry loop's 2 s age, the interleavings the test is there for.
COMMITS = examples(6, 10, "STRESS_COMMITS")
KEYS = 200
RUNS = stress_runs(1)  # seeded runs: STRESS_RUNS, 5 in make test-deep (tests/support/depth.py)
DEADLINE_S = 480  # a bound on hangs only: a loaded 2-core machine took 250 s for 40 commits


def table_schema() -> pa.Schema:
    return pa.schema([pa.field("id", pa.int64(), nullable=False)]
                     + [pa.field(f"c{i}", pa.int64()) for i in range(WRITERS)])


def open_table(uri: str, options: dict[str, str]) -> lf.Table:
    return lf.Catalog(uri, options=options).get_table("db.t")


def writer(uri: str, options: dict[str, str], i: int, seed: int, start: Any, out: Any) -> None:
    """Commit j writes j into column c<i> for a random subset of the keys: the stream writes
    only (id, c<i>), and its commits touch some buckets and not others. Reports the last value
    it wrote per key."""
    try:
        t = open_table(uri, options)
        rng = np.random.default_rng(seed * 100 + i)
        last = [0] * KEYS
        start.wait(60)
        rewrites = worst = gave_up = 0
        for j in range(1, COMMITS + 1):
            ids = np.flatnonzero(rng.random(KEYS) < rng.choice([0.01, 0.05, 0.4]))
            if j == 1 or not len(ids):
                ids = np.arange(KEYS)  # the first commit gives every key a row
            data = pa.table({"id": pa.array(ids, pa.int64()),
                             f"c{i}": pa.array([j] * len(ids), pa.int64())})
            for _ in range(3):  # a write that gave up left nothing: run it again, as a job would
                try:
                    res = t.write(data)
                    break
                except lf.CommitFailedError:
                    gave_up += 1
            else:
                raise AssertionError(f"writer {i}: commit {j} gave up 3 times")
            assert res.snapshot_id is not None
            rewrites += res.rewrites
            worst = max(worst, res.rewrites)
            for k in ids:
                last[int(k)] = j
        out.put(("writer", i, rewrites, last, worst, gave_up))
    except BaseException:
        out.put(("error", f"writer {i}", traceback.format_exc()))


def compactor(uri: str, options: dict[str, str], stop: Any, out: Any) -> None:
    try:
        t = open_table(uri, options)
        done = failed = 0
        n = 0
        reasons: set[str] = set()
        while not stop.is_set():
            r = t.compact(full=n % 3 != 2)  # mostly full, sometimes minor
            done += len(r.snapshot_ids)
            failed += len(r.failed)
            reasons |= {why.split(":")[-1].strip()[:100] for why in r.failed.values()}
            n += 1
            time.sleep(0.3)
        out.put(("compactor", done, failed, sorted(reasons)))
    except BaseException:
        out.put(("error", "compactor", traceback.format_exc()))


def expirer(uri: str, options: dict[str, str], stop: Any, out: Any) -> None:
    try:
        t = open_table(uri, options)
        expired = 0
        while not stop.is_set():
            expired += len(t.expire_snapshots(retain_min=3, older_than="2 s").snapshots_deleted)
            time.sleep(0.2)
        out.put(("expirer", expired))
    except BaseException:
        out.put(("error", "expirer", traceback.format_exc()))


def reader(uri: str, options: dict[str, str], stop: Any, out: Any) -> None:
    """Every read must be complete (KEYS rows) and no cell may ever decrease or exceed
    COMMITS. A read whose files an expiry removed meanwhile is retried (Paimon's readers need
    `snapshot.time-retained` for the same reason) and counted."""
    try:
        t = open_table(uri, options)
        last = {(k, c): 0 for k in range(KEYS) for c in range(WRITERS)}
        reads = retried = 0
        while not stop.is_set():
            try:
                rows = t.read().to_pylist()
            except (FileNotFoundError, lf.LakeformatError) as e:
                gone = isinstance(e, FileNotFoundError) or any(
                    s in str(e) for s in ("FileNotFoundError", "not found", "does not exist"))
                if not gone:  # only a file an expiry removed mid-read is retried
                    raise
                retried += 1
                continue
            reads += 1
            # before the first commit the table is empty; afterwards every key is there
            assert len(rows) == (KEYS if reads > 1 or rows else 0), f"read {len(rows)} rows"
            if not rows:
                reads = 0
                continue
            for r in rows:
                for c in range(WRITERS):
                    v = r[f"c{c}"] or 0
                    assert last[(r["id"], c)] <= v <= COMMITS, (
                        f"key {r['id']} column c{c} went from {last[(r['id'], c)]} to {v}")
                    last[(r["id"], c)] = v
        out.put(("reader", reads, retried))
    except BaseException:
        out.put(("error", "reader", traceback.format_exc()))


@pytest.mark.parametrize("run", range(RUNS))
def test_column_owning_writers_with_compaction_and_expiry_lose_nothing(s3_warehouse, run):
    uri, options = s3_warehouse
    catalog = lf.Catalog(uri, options=options)
    catalog.create_database("db")
    t = catalog.create_table("db.t", table_schema(), primary_keys=["id"],
                             options={"bucket": "4", "merge-engine": "partial-update",
                                      "snapshot.num-retained.min": "3"})
    ctx = mp.get_context("spawn")
    start, stop, out = ctx.Barrier(WRITERS), ctx.Event(), ctx.Queue()
    writers = [ctx.Process(target=writer, args=(uri, options, i, run, start, out))
               for i in range(WRITERS)]
    loops = [ctx.Process(target=f, args=(uri, options, stop, out))
             for f in (compactor, expirer, reader)]
    for p in loops + writers:
        p.start()
    results: list[tuple] = []
    deadline = time.monotonic() + DEADLINE_S
    try:
        while sum(1 for r in results if r[0] in ("writer", "error")) < WRITERS:
            results.append(out.get(timeout=max(1.0, deadline - time.monotonic())))
        stop.set()
        while len(results) < WRITERS + len(loops):
            results.append(out.get(timeout=max(1.0, deadline - time.monotonic())))
    finally:
        stop.set()
        for p in writers + loops:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
    errors = [r for r in results if r[0] == "error"]
    assert not errors, "\n".join(f"{who}: {tb}" for _, who, tb in errors)
    by = {r[0]: r for r in results}
    rewrites = sum(r[2] for r in results if r[0] == "writer")
    worst = max(r[4] for r in results if r[0] == "writer")
    gave_up = sum(r[5] for r in results if r[0] == "writer")
    last = {r[1]: r[3] for r in results if r[0] == "writer"}  # writer -> last value per key
    wrong = 0
    for when in ("end", "after final compaction"):
        rows = t.read().to_pylist()
        assert len(rows) == KEYS
        wrong = sum(1 for r in rows for c in range(WRITERS) if r[f"c{c}"] != last[c][r["id"]])
        assert wrong == 0, f"{wrong} wrong cells at the {when}"
        if when == "end":
            assert not t.compact().failed
    appends = sum(1 for s in t.snapshots() if s.commit_kind == "APPEND")
    print(f"\nrun {run}: {WRITERS * COMMITS} commits ({appends} APPEND snapshots retained), "
          f"{by['compactor'][1]} compaction snapshots ({by['compactor'][2]} partitions "
          f"left for the next run: {by['compactor'][3]}), {rewrites} renumberings "
          f"(at most {worst} for one write; {gave_up} writes gave up and were rerun), "
          f"{by['expirer'][1]} snapshots expired, {by['reader'][1]} reads checked "
          f"({by['reader'][2]} retried), "
          f"wrong cells: {wrong}")
