"""pypaimon side of `bench/object_store.py`, run inside a venv that holds pypaimon 2.1.0.

Not meant to be run by hand. It creates a primary-key table (`id`, 1 bucket) in the S3
warehouse `--warehouse` through pypaimon's filesystem catalog, with the S3 options passed as a
JSON object in `--options` (the caller's fault proxy as endpoint), makes `--warm` commits of
one row, prints `{"ready": ...}` and then answers the caller line by line on stdin: `commit`
makes one more 1-row commit on the same table object (write builder -> write_arrow ->
prepare_commit -> commit) and prints `{"s": seconds}`; `quit` (or end of input) ends it. The
caller counts the requests at its proxy between the lines, so nothing here counts them.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from importlib.metadata import version
from typing import Any

import pyarrow as pa


def commit_one(table: Any, schema: pa.Schema, i: int) -> float:
    batch = pa.table({"id": pa.array([i % 1000], pa.int64()), "v": pa.array([i], pa.int64())},
                     schema=schema)
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
    return time.perf_counter() - start


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--warehouse", required=True, help="s3://bucket/prefix")
    p.add_argument("--options", required=True, help="catalog options as a JSON object")
    p.add_argument("--warm", type=int, default=3, help="commits before `ready`")
    args = p.parse_args()
    from pypaimon import CatalogFactory, Schema
    from pypaimon.schema.data_types import PyarrowFieldParser

    try:
        catalog = CatalogFactory.create({"warehouse": args.warehouse,
                                         **json.loads(args.options)})
        catalog.create_database("bench", True)
        schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int64())])
        catalog.create_table("bench.small", Schema.from_pyarrow_schema(
            schema, primary_keys=["id"], options={"bucket": "1"}), False)
        table = catalog.get_table("bench.small")
        schema = PyarrowFieldParser.from_paimon_schema(table.table_schema.fields)
        for i in range(args.warm):
            commit_one(table, schema, i)
    except Exception as e:  # noqa: BLE001 - reported to the caller, which prints it
        print(json.dumps({"error": f"{type(e).__name__}: {e}"}), flush=True)
        return
    print(json.dumps({"ready": True, "pypaimon": version("pypaimon"),
                      "pyarrow": pa.__version__}), flush=True)
    n = args.warm
    for line in sys.stdin:
        if line.strip() != "commit":
            break
        print(json.dumps({"s": commit_one(table, schema, n)}), flush=True)
        n += 1


if __name__ == "__main__":
    main()
