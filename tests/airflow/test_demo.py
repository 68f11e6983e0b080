"""`make demo` runs `python -m lakeformat_airflow.demo`: the DAGs on the embedded S3 server,
through Spark local mode. It must succeed, show the table before and after maintenance, and
leave no process behind."""

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
    deadline = time.monotonic() + 30
    while _session_members(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _session_members(proc.pid) == []
