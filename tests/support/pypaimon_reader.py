"""Read a table with pypaimon 2.1.0 in the interop venv, from a suite that cannot import it.

pypaimon cannot share a venv with Airflow or with the Spark suite's pins, so the Spark suite
runs this module in `.venv-interop` as a child process:

    rows = pypaimon_rows(warehouse, "db.t")     # list of row dicts, sorted by the first column
    rows = pypaimon_rows(warehouse, "db.t", snapshot_id=3)    # time travel (scan.snapshot-id)

It prints one JSON document: {"rows": [...]} or {"error": "<ExceptionType>: <message>"}.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
INTEROP_PYTHON = REPO / ".venv-interop" / "bin" / "python"


def pypaimon_rows(warehouse: str, identifier: str, snapshot_id: int | None = None
                  ) -> dict[str, Any]:
    """{"rows": [...]} as pypaimon reads `identifier` (at `snapshot_id` when given), or
    {"error": "..."} when it refuses."""
    if not INTEROP_PYTHON.exists():
        raise RuntimeError("the interop venv is missing: run `make .venv-interop/.installed`")
    args = [warehouse, identifier, *([str(snapshot_id)] if snapshot_id else [])]
    out = subprocess.run([str(INTEROP_PYTHON), "-m", "tests.support.pypaimon_reader", *args],
                         cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"pypaimon reader failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout)


def _main(warehouse: str, identifier: str, snapshot_id: str | None = None) -> None:
    from pypaimon import CatalogFactory

    table = CatalogFactory.create({"warehouse": warehouse}).get_table(identifier)
    if snapshot_id is not None:
        table = table.copy({"scan.snapshot-id": snapshot_id})
    try:
        builder = table.new_read_builder()
        rows = builder.new_read().to_arrow(builder.new_scan().plan().splits()).to_pylist()
    except Exception as e:  # noqa: BLE001 - reported to the parent as text
        print(json.dumps({"error": f"{type(e).__name__}: {e}"}))
        return
    first = next(iter(rows[0])) if rows else None
    rows.sort(key=lambda r: r[first])
    print(json.dumps({"rows": rows}, default=str))


if __name__ == "__main__":
    _main(*sys.argv[1:4])
