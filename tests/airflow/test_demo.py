"""`make demo` runs `python -m lakeformat_airflow.demo`: the DAGs on the embedded S3 server,
through Spark local mode. It must succeed, show the table before and after maintenance and
where each data job ran, print none of the warnings a user cannot act on (asset events for
unregistered assets, secrets too short to mask, a dependency's deprecation, Spark's start-up
banner), and leave no process behind."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _session_members(sid: int) -> list[int]:
    """Processes still in session `sid` (the demo ran as that session's leader)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid:  # after "pid (comm)": state ppid pgrp session
            found.append(int(entry.name))
    return found


#: lines a user of the demo must not see: Airflow's warnings of events for assets no DAG
#: registered, of a connection value too short to mask, Starlette's httpx deprecation (from
#: Airflow's in-process execution API), and Spark's start-up banner and log lines
UNWANTED = ("AssetModel", "inactive", "cannot create asset event", "too short",
            "httpx", "DeprecationWarning", "log4j", "Setting default log level",
            "sc.setLogLevel", "Using incubator modules", "NativeCodeLoader", "WARN ",
            "Setting Spark log level", "[warning")


def test_demo_runs_the_platform_and_cleans_up(tmp_path):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AIRFLOW", "LAKEFORMAT_"))}
    proc = subprocess.Popen([sys.executable, "-m", "lakeformat_airflow.demo", "--home",
                             str(tmp_path / "airflow")], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=600)  # ~1-2 min alone; more on a loaded machine
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 9)
    assert proc.returncode == 0, out[-4000:]
    assert "engine spark" in out
    for day in ("2024-01-01", "2024-01-02", "2024-01-03"):
        assert f"lakeformat_dual_stream {day}: success" in out
    assert "lakeformat_maintenance 2024-01-04: success" in out
    assert "same rows after maintenance: True" in out
    after = out.split("after maintenance")[1]
    assert "COMPACT" in after and " 1 sorted runs" in after and " 2 sorted runs" not in after
    for line in out.splitlines():
        assert not any(word in line for word in UNWANTED), line
    # where the data jobs ran: every ingest and the due compaction on Spark
    ran = [line.split() for line in out.splitlines()
           if line.strip().startswith(("ingest_", "maintain["))]
    assert len(ran) == 7 and all(words[2:4] == ["on", "Spark"] for words in ran), ran
    # the retention comes with the table's definition: no schema change between the runs
    assert "with the demo's retention" in out and "schema 2" not in out
    # the commits' asset events reached the registered asset, and queued its DAG's run
    assert "orders_wide: 7 events (ingest_orders x3, ingest_payments x3, maintain x1)" in out
    assert "lakeformat_demo_orders_updated (scheduled on it): a run queued" in out
    # only the due work ran, each action with the rule that made it due
    assert "due: shop.orders_wide: full-compact" in out
    clean = [line for line in out.splitlines() if line.strip().startswith("clean-schemas")]
    assert clean and "0 snapshots" not in clean[0], clean
    assert "score" in out.split("lakeformat_maintenance")[-1]  # health before -> after
    # the maintenance DAG retires the schema the first days were written under: its manifest
    # compaction, then expiry, leave nothing that names schema 0
    assert "manifests compacted in snapshot" in out
    assert "schema files: [0, 1] before maintenance, [1] after; retired: [0]" in out
    deadline = time.monotonic() + 30
    while _session_members(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _session_members(proc.pid) == []
