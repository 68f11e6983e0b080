"""pypaimon side of `bench/write_read.py`, run inside a venv that holds pypaimon 2.1.0.

Not meant to be run by hand. It reads the commit batches from `--inputs` (one Parquet file
per commit, `commit-<i>.parquet`) before any timing, then in one process and with the same
table layout as lakeformat's run (primary key `id`, `bucket` buckets):

* creates the table through pypaimon's filesystem catalog,
* times one batch commit per input file (write builder -> write_arrow -> prepare_commit ->
  commit),
* times one full read (read builder -> scan -> plan -> to_arrow),

`--repeat` times over, each time in a fresh warehouse, keeps the best write and read, writes
the rows the first run read to `--result` (untimed, for the caller's correctness check) and
prints one JSON line with the timings. `--mode rust` turns on pypaimon's optional Rust
backend (`pypaimon-rust`) through the table options `write.native.enabled`,
`commit.native.enabled` and `read.native.enabled`, and reports which of the three paths
really ran natively (pypaimon falls back to Python silently when a route is unsupported).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import sys
import time
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

NATIVE_OPTIONS = {
    "write.native.enabled": "true",
    "commit.native.enabled": "true",
    "read.native.enabled": "true",
}


def _version(dist: str) -> str | None:
    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def _fail(message: str) -> None:
    """Report a reason the caller prints instead of figures, and stop."""
    print(json.dumps({"error": message}))
    sys.exit(0)


def _watch_native_read() -> dict[str, int]:
    """Count native and fallback reads by wrapping pypaimon's native-read hook."""
    from pypaimon.read.table_read import TableRead

    seen = {"native": 0, "fallback": 0}
    original = TableRead._try_native_batches

    def wrapped(self: Any, *args: Any, **kwargs: Any) -> Any:
        out = original(self, *args, **kwargs)
        seen["fallback" if out is None else "native"] += 1
        return out

    TableRead._try_native_batches = wrapped
    return seen


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Create, write and read the table; return timings and path information."""
    if args.mode == "rust":
        if _version("pypaimon-rust") is None:
            _fail(f"pypaimon-rust is not installed in {sys.executable} "
                  "(pip install pypaimon-rust==0.4.0 next to pypaimon 2.1.0)")
        try:
            import pypaimon_rust.datafusion  # noqa: F401
        except Exception as e:  # pragma: no cover - depends on the wheel
            _fail(f"pypaimon_rust does not import: {type(e).__name__}: {e}")

    files = sorted(glob.glob(os.path.join(args.inputs, "commit-*.parquet")),
                   key=lambda p: int(p.rsplit("-", 1)[1].split(".")[0]))
    if not files:
        _fail(f"no commit-*.parquet files in {args.inputs}")
    batches = [pq.read_table(f) for f in files]
    seen_read = _watch_native_read()
    runs: list[dict[str, Any]] = []
    for i in range(args.repeat):
        runs.append(_one_run(args, os.path.join(args.warehouse, f"run-{i}"), batches,
                             write_result=i == 0))
    best_write = min(runs, key=lambda r: r["write_s"])
    return {
        "pypaimon": _version("pypaimon"),
        "pypaimon_rust": _version("pypaimon-rust"),
        "pyarrow": pa.__version__,
        "python": sys.version.split()[0],
        "rows_written": sum(b.num_rows for b in batches),
        "runs": [{"commit_s": r["commit_s"], "read_s": r["read_s"]} for r in runs],
        "commit_s": best_write["commit_s"],
        "write_s": best_write["write_s"],
        "read_s": min(r["read_s"] for r in runs),
        "rows_read": runs[0]["rows_read"],
        "splits": runs[0]["splits"],
        "writer": sorted(set().union(*(r["writers"] for r in runs))),
        "native_commits": sum(r["native_commits"] for r in runs),
        "commits": len(batches) * len(runs),
        "native_reads": seen_read["native"],
        "fallback_reads": seen_read["fallback"],
    }


def _one_run(args: argparse.Namespace, warehouse: str, batches: list[pa.Table],
             write_result: bool) -> dict[str, Any]:
    """One timed create + commits + read in a fresh warehouse."""
    from pypaimon import CatalogFactory, Schema
    from pypaimon.schema.data_types import PyarrowFieldParser

    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.create_database("bench", True)
    options = {"bucket": str(args.bucket)}
    if args.merge_engine:
        options["merge-engine"] = args.merge_engine
    if args.mode == "rust":
        options.update(NATIVE_OPTIONS)
    catalog.create_table(
        "bench.t",
        Schema.from_pyarrow_schema(batches[0].schema, primary_keys=["id"], options=options),
        False)
    table = catalog.get_table("bench.t")
    paimon_schema = PyarrowFieldParser.from_paimon_schema(table.table_schema.fields)
    batches = [b.cast(paimon_schema) for b in batches]  # untimed: types already match

    commit_s: list[float] = []
    writers: set[str] = set()
    native_commits = 0
    for batch in batches:
        start = time.perf_counter()
        builder = table.new_batch_write_builder()
        write = builder.new_write()
        commit = builder.new_commit()
        try:
            write.write_arrow(batch)
            commit.commit(write.prepare_commit())
        finally:
            write.close()
            commit.close()
        commit_s.append(time.perf_counter() - start)
        python_writer = getattr(write, "_python_writer", None)
        writers.add(type(write).__name__ + ("(python fallback)" if python_writer else ""))
        native_commits += getattr(commit, "_native_commit", None) is not None

    start = time.perf_counter()
    read_builder = table.new_read_builder()
    splits = read_builder.new_scan().plan().splits()
    result = read_builder.new_read().to_arrow(splits)
    read_s = time.perf_counter() - start

    if write_result:
        pq.write_table(result, args.result, compression="none")
    shutil.rmtree(warehouse, ignore_errors=True)
    return {"commit_s": commit_s, "write_s": sum(commit_s), "read_s": read_s,
            "rows_read": result.num_rows, "splits": len(splits), "writers": writers,
            "native_commits": native_commits}
def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--inputs", required=True, help="directory of commit-<i>.parquet files")
    p.add_argument("--warehouse", required=True, help="empty directory for the warehouse")
    p.add_argument("--result", required=True, help="Parquet file for the rows read back")
    p.add_argument("--bucket", type=int, default=4)
    p.add_argument("--mode", choices=["python", "rust"], default="python")
    p.add_argument("--merge-engine", default=None, help="table option merge-engine")
    p.add_argument("--repeat", type=int, default=1,
                   help="fresh runs in this process; the best write and read are reported")
    print(json.dumps(run(p.parse_args())))


if __name__ == "__main__":
    main()
