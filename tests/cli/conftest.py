"""The `lakeformat` CLI two ways, and helpers to compare its output (times, ids normalized;
columns aligned).

`lakeformat(...)` / `run_all(...)` run the installed entry point in a subprocess with this
checkout first on PYTHONPATH: for what only a process shows (the script itself, exit statuses
and one-line errors on stderr, the environment, warnings, credentials). `lakeformat_main(...)`
/ `run_main(...)` call `lakeformat.cli.main` — the function the script runs, as
`sys.exit(main())` — in this process with its own stdout and stderr: the same parsing,
commands and rendering without an interpreter's start-up (~0.5 s and most of a command's
CPU), for the many variations of a command's flags and output.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lakeformat as lf
from tests.support.catalogs import s3_bucket, s3_server, s3_warehouse  # noqa: F401 - fixtures

REPO = Path(__file__).resolve().parents[2]


def script() -> str:
    """The console script beside this interpreter (the venv's), else the one on PATH."""
    here = Path(sys.executable).with_name("lakeformat")
    if here.exists():
        return str(here)
    found = shutil.which("lakeformat")
    if not found:
        pytest.fail("the `lakeformat` entry point is not installed (pip install -e .)")
    return found


def cli_env(extra: dict[str, str] | None = None, drop: Sequence[str] = ()) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("LAKEFORMAT_DEBUG", "LAKEFORMAT_WAREHOUSE") and k not in drop}
    paths = [str(REPO), str(REPO / "plugins"), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    env.update(extra or {})
    return env


@dataclass
class Run:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        """The `result` of the JSON envelope (checked to be the envelope)."""
        doc = json.loads(self.out)
        assert set(doc) == {"lakeformat_version", "command", "result"}, doc
        assert doc["lakeformat_version"] == lf.__version__
        return doc["result"]

    def lines(self) -> list[dict]:
        """JSON Lines rows (`read --json`)."""
        return [json.loads(line) for line in self.out.splitlines()]

    def ok(self) -> Run:
        assert self.code == 0, self.err
        return self


def lakeformat(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> Run:
    p = subprocess.run([script(), *args], capture_output=True, text=True,
                       env=env or cli_env(), timeout=timeout)
    return Run(p.returncode, p.stdout, p.stderr)


def run_all(*calls: Sequence[str]) -> list[Run]:
    """Independent commands at once (each a process: start-up dominates)."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(lambda c: lakeformat(*c), calls))


_IN_PROCESS = threading.Lock()  # sys.stdout and sys.stderr are the process's: one at a time


def lakeformat_main(*args: str) -> Run:
    """`lakeformat.cli.main(args)` in this process, as the installed script runs it (without
    LAKEFORMAT_WAREHOUSE and LAKEFORMAT_DEBUG, as `cli_env` drops them): its exit status and
    what it wrote to stdout (text or bytes, e.g. `read --csv`) and stderr."""
    from lakeformat.cli import main

    out, err = io.BytesIO(), io.BytesIO()
    stdout = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
    stderr = io.TextIOWrapper(err, encoding="utf-8", write_through=True)
    with _IN_PROCESS:
        saved = sys.stdout, sys.stderr, warnings.showwarning
        hidden = {k: os.environ.pop(k) for k in ("LAKEFORMAT_WAREHOUSE", "LAKEFORMAT_DEBUG")
                  if k in os.environ}
        sys.stdout, sys.stderr = stdout, stderr
        try:
            code = main(list(args))
        finally:
            stdout.flush()
            stderr.flush()
            sys.stdout, sys.stderr, warnings.showwarning = saved  # main() sets showwarning
            os.environ.update(hidden)
    return Run(code, out.getvalue().decode("utf-8"), err.getvalue().decode("utf-8"))


def run_main(*calls: Sequence[str]) -> list[Run]:
    """`lakeformat_main` for each call, in turn."""
    return [lakeformat_main(*c) for c in calls]


_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def normalize(text: str, **paths: str) -> str:
    """Times and uuids replaced by same-width stand-ins (alignment survives); paths named."""
    text = _TIME.sub("2000-01-01T00:00:00.000Z", text)
    text = _UUID.sub("xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", text)
    for name, path in paths.items():
        text = text.replace(path, f"<{name}>")
    return text


def columns(line: str) -> list[tuple[int, int]]:
    """(start, end) of each cell of a table line (cells are split by two or more spaces)."""
    return [m.span() for m in re.finditer(r"\S+(?: \S+)*", line)]


def assert_table(text: str, headers: Sequence[str]) -> list[list[str]]:
    """`text` is a header row of `headers` and aligned rows: every column's cells start (text)
    or end (numbers) at one offset. Returns the cells of the rows."""
    lines = text.rstrip("\n").split("\n")
    head = columns(lines[0])
    assert [lines[0][a:b] for a, b in head] == list(headers), lines[0]
    rows = []
    for line in lines[1:]:
        cells = columns(line)
        assert len(cells) <= len(head), (line, lines[0])
        rows.append([line[a:b] for a, b in cells])
        for (a, b), (ha, hb) in zip(cells, head):
            assert a == ha or b == hb, f"cell {line[a:b]!r} not under {lines[0][ha:hb]!r}"
    return rows


def assert_one_line_error(run: Run, status: int, *words: str) -> None:
    assert run.code == status, (run.code, run.err)
    assert "Traceback" not in run.err, run.err
    lines = run.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("lakeformat: error: "), run.err
    for w in words:
        assert w in run.err, (w, run.err)


def orders(n: int, dt: str = "2024-01-01", start: int = 0) -> pa.Table:
    return pa.table({"dt": [dt] * n, "id": pa.array(range(start, start + n), pa.int64()),
                     "name": [f"n{i}" if i % 7 else None for i in range(start, start + n)],
                     "price": pa.array([i * 0.5 for i in range(start, start + n)], pa.float64())})


def make_orders(warehouse: str, name: str = "db.t", **options: str) -> lf.Table:
    """db.t: dt STRING, id BIGINT, name STRING, price DOUBLE; partitioned by dt, 2 buckets
    unless `bucket` is given."""
    cat = lf.Catalog(warehouse)
    cat.create_database(name.split(".")[0], exist_ok=True)
    schema = pa.schema([pa.field("dt", pa.string(), False), pa.field("id", pa.int64(), False),
                        ("name", pa.string()), ("price", pa.float64())])
    return cat.create_table(name, schema, primary_keys=["dt", "id"], partition_keys=["dt"],
                            options={"bucket": "2", **options})
