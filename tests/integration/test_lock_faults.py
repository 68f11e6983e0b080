"""Locked commits and maintenance on a misbehaving S3 store, with real processes.

The store is the moto server behind the tests' fault proxy (`tests/support/fault_proxy.py`):
503 SlowDown, 500/502, connection resets (some after the request was carried out: the
ambiguous case) and latency on a share of all requests. Writers commit to an aggregation
table (`cnt` summed per key), one commit adding 1, so a lost commit shows as a sum too small
and a commit published twice as a sum too large.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lakeformat as lf
from tests.support.depth import examples
from tests.support.fault_proxy import FaultProxy

ROOT = Path(__file__).resolve().parents[2]
WRITERS = 4
#: commits per writer: STRESS_COMMITS, 12 in make test-deep (tests/support/depth.py). Three
#: each already has four writers queue for the commit lock while compaction and expiry loops run
#: beside them (the loops stop when the writers are done), through a few hundred faults.
COMMITS = examples(3, 12, "STRESS_COMMITS")
LOCKED = {"lock.enabled": "true", "lock.lease-duration": "5 s", "lock-check-max-sleep": "200 ms"}


def spawn(job: str, wh: str, options: dict[str, str], arg: str) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen(
        [sys.executable, "-m", "tests.support.lock_jobs", job, wh, json.dumps(options), arg],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)


def result(proc: subprocess.Popen[str], timeout: float = 600) -> dict[str, Any]:
    out, err = proc.communicate(timeout=timeout)
    lines = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert lines and lines[-1]["event"] == "done", f"{lines[-1:]} {err[-3000:]}"
    return lines[-1]["result"]


def make_agg_table(wh: str, options: dict[str, str]) -> lf.Table:
    cat = lf.Catalog(wh, options=options)
    cat.create_database("db")
    return cat.create_table(
        "db.t", pa.schema([("id", pa.int64()), ("cnt", pa.int64())]), primary_keys=["id"],
        options={"bucket": "2", "merge-engine": "aggregation",
                 "fields.cnt.aggregate-function": "sum"})


def expected_counts(total: int) -> dict[int, int]:
    out: dict[int, int] = {}
    for i in range(total):
        out[i % 10] = out.get(i % 10, 0) + 1
    return out


def check_table(t: lf.Table, total: int) -> list[int]:
    t.refresh()
    got = {r["id"]: r["cnt"] for r in t.read().to_pylist()}
    assert sum(got.values()) == total, f"lost or doubled commits: {got}"
    assert got == expected_counts(total)
    ids = [s.id for s in t.snapshots()]
    assert ids == list(range(ids[0], ids[-1] + 1)), f"snapshot ids not contiguous: {ids}"
    for sid in ids:  # every retained snapshot is readable
        t.read(snapshot_id=sid)
    return ids


@pytest.mark.parametrize("rate", [0.15])
def test_writers_compaction_and_expiry_under_faults_lose_nothing(s3_server, s3_warehouse, rate,
                                                                 tmp_path, capsys):
    uri, clean = s3_warehouse
    t = make_agg_table(uri, {**clean, **LOCKED})
    stop = tmp_path / "writers-done"  # the loops run until the writers are done
    with FaultProxy(s3_server, rate=rate, seed=12) as proxy:
        faulty = {**clean, **LOCKED, "s3.endpoint": proxy.endpoint}
        writers = [spawn("agg-write", uri, faulty, f"{w * COMMITS},{COMMITS}")
                   for w in range(WRITERS)]
        loops = [spawn("compact-loop", uri, faulty, str(stop)),
                 spawn("expire-loop", uri, faulty, str(stop))]
        outcomes = [result(p) for p in writers]
        stop.touch()
        outcomes += [result(p) for p in loops]
        faults, requests = proxy.faults, proxy.requests
    ids = check_table(t, WRITERS * COMMITS)
    s3_retries = sum(o.get("s3_retries") or 0 for o in outcomes)
    job_retries = sum(o.get("job_retries", 0) for o in outcomes[:WRITERS])
    with capsys.disabled():
        print(f"\n{requests} requests through the proxy, faults injected {sum(faults.values())}: "
              f"{dict(faults)}; S3 request retries {s3_retries}, writes retried whole "
              f"{job_retries}, of which already landed "
              f"{sum(o['already_committed'] for o in outcomes[:WRITERS])}; compactions "
              f"{outcomes[WRITERS]}, expiries {outcomes[WRITERS + 1]}; "
              f"snapshots {ids[0]}..{ids[-1]}")
    assert sum(faults.values()) > 0.05 * requests
    assert outcomes[WRITERS]["runs"] > 0 and outcomes[WRITERS + 1]["runs"] > 0
    # and maintenance raced the writers: a compaction or an expiry landed while they committed
    assert outcomes[WRITERS]["racing"] + outcomes[WRITERS + 1]["racing"] > 0


def test_store_ignoring_conditional_writes_is_refused_and_the_jdbc_lock_makes_it_safe(
        s3_server, s3_warehouse, tmp_path, capsys):
    uri, clean = s3_warehouse
    t = make_agg_table(uri, clean)
    t.write(pa.table({"id": [0], "cnt": [1]}), commit_user="agg", commit_identifier=10_000)
    with FaultProxy(s3_server, strip_conditional=True) as proxy:
        ignoring = {**clean, "s3.endpoint": proxy.endpoint}
        unlocked = lf.Catalog(uri, options=ignoring).get_table("db.t")
        with pytest.raises(lf.UnsupportedError, match="lock.type=jdbc") as err:
            unlocked.write(pa.table({"id": [1], "cnt": [1]}))
        assert "conditional" in str(err.value)
        assert [s.id for s in t.snapshots()] == [1]  # nothing committed
        jdbc = {**ignoring, "lock.enabled": "true", "lock.type": "jdbc",
                "uri": f"jdbc:sqlite:{tmp_path}/lock.db", "lock-check-max-sleep": "200 ms"}
        writers = [spawn("agg-write", uri, jdbc, f"{w * COMMITS},{COMMITS}")
                   for w in range(WRITERS)]
        outcomes = [result(p) for p in writers]
        stripped = proxy.stripped
    ids = check_table_plus(t, WRITERS * COMMITS)
    with capsys.disabled():
        print(f"\nheaders stripped from {stripped} requests; {WRITERS} writers under the JDBC "
              f"lock: snapshots {ids[0]}..{ids[-1]}, writes retried whole "
              f"{sum(o['job_retries'] for o in outcomes)}")
    assert stripped > 0


def check_table_plus(t: lf.Table, total: int) -> list[int]:
    """`check_table` for a table that got one extra commit adding 1 to key 0 first."""
    t.refresh()
    got = {r["id"]: r["cnt"] for r in t.read().to_pylist()}
    want = expected_counts(total)
    want[0] += 1
    assert got == want, f"lost or doubled commits: {got} != {want}"
    ids = [s.id for s in t.snapshots()]
    assert ids == list(range(1, total + 2))
    for sid in ids:
        t.read(snapshot_id=sid)
    return ids
