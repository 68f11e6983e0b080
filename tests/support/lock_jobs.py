"""Maintenance and write jobs run in child processes by the lock tests.

`python -m tests.support.lock_jobs JOB WAREHOUSE OPTIONS_JSON [ARG]` opens table `db.t` of the
catalog and runs JOB; it prints one JSON line per event on stdout:
`{"event": "acquired"|"releasing", "t": epoch s, "purpose": ...}` from the maintenance lock's
log, `{"event": "executed"}` when a compaction's files are written but not yet committed
(`compact-hang` then sleeps, for the test to kill or pause it), and last
`{"event": "done", "result": {...}}` or `{"event": "error", "type": ..., "message": ...}`.

Jobs of the fault tests: `agg-write` (ARG = "first,count": one commit adding 1 to key
`i % 10` per i, retried with the same commit identity until it lands), `compact-loop` and
`expire-loop` (ARG = the path of a stop file: the job runs again and again, failures counted,
until the test creates that file once its writers are done — and at least until one run
succeeded, so a loop whose writers finished first still ran beside them).

Jobs: `compact`, `compact-hang` (sleeps ARG seconds between writing its files and
committing), `expire`, `orphans`, `write` (ARG = "first,count": one commit per id, started by
a line on stdin once the job said `{"event": "ready"}`, so that writers start together), `hold`
(holds the maintenance lock ARG seconds), `hold-commit` (the commit lock).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa

import lakeformat as lf
from lakeformat.operation.runner import ThreadRunner


def emit(event: str, **fields: Any) -> None:
    print(json.dumps({"event": event, "t": time.time(), **fields}), flush=True)


class _LockEvents(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        msg = record.getMessage()
        kind = msg.split(" ", 1)[0]
        if kind in ("acquired", "releasing"):
            print(json.dumps({"event": kind, "t": record.created, "message": msg}), flush=True)


class HangingRunner(ThreadRunner):
    """Runs the units, says so, then sleeps before the job may commit."""

    def __init__(self, seconds: float):
        super().__init__(1)
        self.seconds = seconds

    def map(self, fn: Callable[[Any], Any], units: Sequence[Any]) -> list[Any]:
        out = super().map(fn, units)
        emit("executed", units=len(units))
        time.sleep(self.seconds)
        return out


def _retrying(fn: Callable[[], Any], counter: list[int], attempts: int = 30) -> Any:
    """What an Airflow task retry does: the same call again after any failure."""
    for attempt in range(attempts):
        try:
            return fn()
        except Exception:
            if attempt == attempts - 1:
                raise
            counter[0] += 1
            time.sleep(0.05 * min(2 ** attempt, 20))
    return None


def _s3_retries(table: lf.Table) -> int | None:
    from lakeformat.lock.guard import unguarded

    return getattr(unguarded(table.file_io), "retries", None)


#: a loop whose stop file never comes (its test died) ends after this long anyway
_LOOP_LIMIT_S = 600


def _loop(stop_file: str, call: Callable[[], Any]) -> dict[str, Any]:
    """`call` again and again until the stop file is there and one run succeeded; `racing`
    counts the runs that ended before the stop file appeared (while the writers still ran)."""
    deadline, runs, racing, failures = time.monotonic() + _LOOP_LIMIT_S, 0, 0, {}
    while time.monotonic() < deadline and not (runs and os.path.exists(stop_file)):
        try:
            call()
            runs += 1
            racing += not os.path.exists(stop_file)
        except Exception as e:  # a conflict, a lost lease, a fault past the retries: again
            failures[type(e).__name__] = failures.get(type(e).__name__, 0) + 1
        time.sleep(0.2)
    return {"runs": runs, "racing": racing, "failures": failures}


def run(job: str, table: lf.Table, arg: str) -> Any:
    if job == "compact":
        return table.compact(full=True).to_dict()
    if job == "compact-hang":
        return table.compact(full=True, runner=HangingRunner(float(arg))).to_dict()
    if job == "expire":
        return table.expire_snapshots(retain_min=1, older_than="0 s").to_dict()
    if job == "orphans":
        return table.remove_orphan_files(older_than="0 s", enforce_retention_duration=False
                                         ).to_dict()
    if job == "hold":
        with table.locks.maintaining(table.file_io, "hold"):
            emit("holding")
            time.sleep(float(arg))
        return {}
    if job == "hold-commit":
        with table.locks.commit.acquire("hold-commit"):
            emit("holding")
            time.sleep(float(arg))
        return {}
    if job == "write":  # says "ready", and starts when a line comes on stdin
        first, count = (int(x) for x in arg.split(","))
        emit("ready")
        sys.stdin.readline()
        ids = []
        for i in range(first, first + count):
            r = table.write(pa.table({"id": [i], "v": [i]}), commit_user="w",
                            commit_identifier=i)
            ids.append(r.snapshot_id)
        return {"snapshot_ids": ids}
    if job == "agg-write":  # one commit adding 1 to key i % 10, per i; retried until it lands
        first, count = (int(x) for x in arg.split(","))
        retries, already = [0], 0
        for i in range(first, first + count):
            r = _retrying(lambda i=i: table.write(pa.table({"id": [i % 10], "cnt": [1]}),
                                                  commit_user="agg", commit_identifier=i),
                          retries)
            already += bool(r.already_committed)
        return {"job_retries": retries[0], "already_committed": already,
                "s3_retries": _s3_retries(table)}
    if job == "compact-loop":
        out = _loop(arg, lambda: table.compact(full=True))
        return {**out, "s3_retries": _s3_retries(table)}
    if job == "expire-loop":
        out = _loop(arg, lambda: table.expire_snapshots(retain_min=3, older_than="0 s"))
        return {**out, "s3_retries": _s3_retries(table)}
    raise SystemExit(f"unknown job {job!r}")


def main(argv: list[str]) -> None:
    job, warehouse, options = argv[0], argv[1], json.loads(argv[2])
    arg = argv[3] if len(argv) > 3 else ""
    handler = _LockEvents()
    logger = logging.getLogger("lakeformat.lock")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        table = lf.Catalog(warehouse, options=options).get_table("db.t")
        emit("done", result=run(job, table, arg))
    except lf.LakeformatError as e:
        emit("error", type=type(e).__name__, message=str(e))


if __name__ == "__main__":
    main(sys.argv[1:])
