"""Read a table with pypaimon 2.1.0 in the interop venv, from a suite that cannot import it.

pypaimon cannot share a venv with Airflow or with the Spark suite's pins, so the Spark suite
runs this module in `.venv-interop` as a child process:

    rows = pypaimon_rows(warehouse, "db.t")     # list of row dicts, sorted by the first column
    rows = pypaimon_rows(warehouse, "db.t", snapshot_id=3)    # time travel (scan.snapshot-id)
    many = pypaimon_rows_many(warehouse, [("db.t", 3), ("db.u", None)])  # one process

It prints one JSON document: {"rows": [...]} or {"error": "<ExceptionType>: <message>"}
(`--many`: reads (identifier, snapshot id) pairs as JSON from stdin, prints a list of those).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
INTEROP_PYTHON = REPO / ".venv-interop" / "bin" / "python"


def pypaimon_rows(warehouse: str, identifier: str, snapshot_id: int | None = None
                  ) -> dict[str, Any]:
    """{"rows": [...]} as pypaimon reads `identifier` (at `snapshot_id` when given), or
    {"error": "..."} when it refuses."""
    args = [warehouse, identifier, *([str(snapshot_id)] if snapshot_id else [])]
    return json.loads(_run(args))


def pypaimon_rows_many(warehouse: str, reads: Sequence[tuple[str, int | None]]
                       ) -> list[dict[str, Any]]:
    """`pypaimon_rows` of each (identifier, snapshot_id) pair, in order, from one child process
    (pypaimon's import costs more than reading a small table)."""
    return json.loads(_run(["--many", warehouse], json.dumps([list(r) for r in reads])))


def _run(args: list[str], stdin: str | None = None) -> str:
    if not INTEROP_PYTHON.exists():
        raise RuntimeError("the interop venv is missing: run `make .venv-interop/.installed`")
    out = subprocess.run([str(INTEROP_PYTHON), "-m", "tests.support.pypaimon_reader", *args],
                         cwd=REPO, input=stdin, capture_output=True, text=True, timeout=300,
                         check=False)
    if out.returncode != 0:
        raise RuntimeError(f"pypaimon reader failed: {out.stderr[-2000:]}")
    return out.stdout


def _read(catalog: Any, identifier: str, snapshot_id: Any = None) -> dict[str, Any]:
    table = catalog.get_table(identifier)
    if snapshot_id is not None:
        table = table.copy({"scan.snapshot-id": str(snapshot_id)})
    try:
        builder = table.new_read_builder()
        rows = builder.new_read().to_arrow(builder.new_scan().plan().splits()).to_pylist()
    except Exception as e:  # noqa: BLE001 - reported to the parent as text
        return {"error": f"{type(e).__name__}: {e}"}
    first = next(iter(rows[0])) if rows else None
    rows.sort(key=lambda r: r[first])
    return {"rows": rows}


def _main(*args: str) -> None:
    from pypaimon import CatalogFactory

    if args[0] == "--many":
        catalog = CatalogFactory.create({"warehouse": args[1]})
        out: Any = [_read(catalog, name, snap) for name, snap in json.load(sys.stdin)]
    else:
        warehouse, identifier, *snapshot_id = args
        out = _read(CatalogFactory.create({"warehouse": warehouse}), identifier, *snapshot_id)
    print(json.dumps(out, default=str))


if __name__ == "__main__":
    _main(*sys.argv[1:4])
