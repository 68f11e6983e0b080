"""`make demo`: a Paimon table on an embedded S3 server — create, write, update, delete,
merge-schema write, read, full compaction, snapshot expiry.

Runs against a moto S3 server bound to 127.0.0.1 (the `demo` extra), so it needs no cloud and
no Docker. Set LAKEFORMAT_DEMO_WAREHOUSE to a path or s3:// URI to run it against real storage.
"""

from __future__ import annotations

import contextlib
import datetime
import logging
import os
import sys
from collections.abc import Iterator

import pyarrow as pa

import lakeformat as lf


@contextlib.contextmanager
def embedded_s3() -> Iterator[tuple[str, dict[str, str]]]:
    """A moto S3 server on 127.0.0.1 with one bucket; stops when the block ends."""
    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one log line per request
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        options = {"s3.endpoint": endpoint, "s3.access-key": "demo", "s3.secret-key": "demo",
                   "s3.region": "us-east-1", "s3.path-style-access": "true"}
        boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="demo",
                     aws_secret_access_key="demo", region_name="us-east-1"
                     ).create_bucket(Bucket="lakeformat-demo")
        yield "s3://lakeformat-demo/warehouse", options
    finally:
        server.stop()


def run(warehouse: str, options: dict[str, str]) -> None:
    catalog = lf.Catalog(warehouse, options=options)
    catalog.create_database("demo", exist_ok=True)
    catalog.drop_table("demo.orders", ignore_missing=True)
    schema = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("customer", pa.string()),
                        ("amount", pa.float64()), ("status", pa.string())])
    t = catalog.create_table("demo.orders", schema, primary_keys=["dt", "id"],
                             partition_keys=["dt"], options={"bucket": "2"})
    print(f"created {t.name} at {t.path}")

    print(t.write(pa.table({
        "dt": ["2024-01-01"] * 3 + ["2024-01-02"] * 2, "id": [1, 2, 3, 1, 2],
        "customer": ["ann", "bob", "cid", "dee", "eve"],
        "amount": [10.0, 20.0, 30.0, 40.0, 50.0], "status": ["new"] * 5}, schema=schema)))
    print(t.write(pa.table({  # update two orders: same keys, newer values win
        "dt": ["2024-01-01", "2024-01-02"], "id": [2, 1], "customer": ["bob", "dee"],
        "amount": [25.0, 45.0], "status": ["paid", "paid"]}, schema=schema)))
    print(t.delete(pa.table({"dt": ["2024-01-01"], "id": [3]})))
    print(t.write(pa.table({  # a column the table lacks: merge-schema adds it (schema 1)
        "dt": ["2024-01-02"], "id": [2], "customer": ["eve"], "amount": [50.0],
        "status": ["shipped"], "carrier": ["ups"]}), merge_schema=True))

    rows = t.read().sort_by([("dt", "ascending"), ("id", "ascending")])
    print("\nrows (merge-on-read of 4 snapshots; older rows read null for the new column):")
    for r in rows.to_pylist():
        print("  ", r)
    print("\nonly dt=2024-01-02 (partition pruning):",
          t.read(filter=[("dt", "=", "2024-01-02")]).num_rows, "rows")
    print("\nsnapshots:")
    for s in t.snapshots():
        print(f"   {s.id}  {s.commit_kind:<9} schema {s.schema_id}  "
              f"total {s.total_record_count} records, delta {s.delta_record_count}")
    print("\nlive data files:")
    print_files(t)

    print("\nfull compaction, then expiry of every snapshot but the latest:")
    print("  ", t.compact())
    print("  ", t.expire_snapshots(retain_min=1, older_than=datetime.timedelta(0)))
    print("\nlive data files after compaction (one sorted run per bucket, top level):")
    print_files(t)
    assert t.read().sort_by([("dt", "ascending"), ("id", "ascending")]).equals(rows)


def print_files(t: lf.Table) -> None:
    for f in t.files():
        print(f"   {f['partition']} bucket-{f['bucket']} level {f['level']} "
              f"{f['row_count']} rows {f['file_size']} B  {f['file_name']}")


def main() -> int:
    target = os.environ.get("LAKEFORMAT_DEMO_WAREHOUSE")
    if target:
        run(target, {})
        return 0
    with embedded_s3() as (warehouse, options):
        print(f"embedded S3 server at {options['s3.endpoint']}, warehouse {warehouse}")
        run(warehouse, options)
    return 0


if __name__ == "__main__":
    sys.exit(main())
