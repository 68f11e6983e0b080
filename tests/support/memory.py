"""Peak memory of work run in a fresh Python process, for the bounded-memory tests.

`run_child(code, *args)` runs `code` in a new interpreter that can import lakeformat and this
package, and returns the JSON object the code prints last. The code calls `high_water()` (the
process's VmHWM: it starts afresh at exec, whereas ru_maxrss would carry over the parent's,
pytest's, peak) before and after the work it measures.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def high_water() -> int:
    """Peak resident bytes of this process so far."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def run_child(code: str, *args: str) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    # pyarrow imports pandas on its first `pa.array` when pandas is installed (the spark
    # extra brings it): load it before the child takes any baseline, so a figure is the
    # measured job's own memory, not ~40 MiB of pandas
    code = "import pyarrow as _pa\n_pa.array([0])\n" + code
    out = subprocess.run([sys.executable, "-c", code, *args], check=True, capture_output=True,
                         text=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])
