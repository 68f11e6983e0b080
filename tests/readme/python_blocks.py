"""Run README.md's Python blocks top to bottom in one namespace, as a reader would.

Run by `test_readme_blocks.py` in a child process (cwd a temp dir):
`python python_blocks.py README.md blocks.json results.json`. `blocks.json` is a list of
`{"line": N, "source": "..."}` (N = the README line of the block's first code line). Each block
is compiled as file "README.md", padded so that a traceback names the README's own line and
shows its text; a failing block is recorded and the next one still runs, so one broken example
does not hide the others (a later failure may follow from an earlier one: the test says so).
`results.json` gets one `{"line", "ok", "error", "output", "seconds"}` per block run.
"""

from __future__ import annotations

import contextlib
import io
import json
import linecache
import sys
import time
import traceback


def run(readme: str, blocks: list[dict], results_path: str) -> None:
    with open(readme, encoding="utf-8") as f:
        text = f.read()
    # Tracebacks show the README's source line through linecache.
    linecache.cache["README.md"] = (len(text), None, text.splitlines(True), "README.md")
    namespace: dict = {"__name__": "__main__"}
    results = []
    for block in blocks:
        line, source = block["line"], block["source"]
        out = io.StringIO()
        error = None
        start = time.monotonic()
        try:
            code = compile("\n" * (line - 1) + source, "README.md", "exec")
            with contextlib.redirect_stdout(out):
                exec(code, namespace)
        except BaseException:  # a SystemExit in an example is a failure too
            error = traceback.format_exc()
        results.append({"line": line, "ok": error is None, "error": error,
                        "output": out.getvalue(), "seconds": round(time.monotonic() - start, 2)})
        # Written after each block: if the process dies, the blocks that ran are still known.
        with open(results_path, "w", encoding="utf-8") as f:
            json.dump(results, f)


if __name__ == "__main__":
    readme_path, blocks_path, results_file = sys.argv[1:4]
    with open(blocks_path, encoding="utf-8") as f:
        run(readme_path, json.load(f), results_file)
