"""`make demo`: the platform on an embedded default — Airflow runs the project's DAGs against an
S3 server on 127.0.0.1.

1. a moto S3 server on 127.0.0.1 (bucket `lakeformat-demo`), an SQLite Airflow home in the
   project's ignored `build/` folder, the `lakeformat_default` and `spark_default` connections
   from the environment, Spark in local mode when Java and pyspark are there;
2. three days of an orders stream (Parquet) and a payments stream (JSON) land; the
   `lakeformat_dual_stream` DAG ingests each day (a `coupon` column appears in the orders of
   day 3 and goes in by merge-schema write);
3. the table before maintenance: snapshots, files and sorted runs per bucket, schema files;
4. `lakeformat_maintenance` (full compaction, snapshot expiry, schema-file retention, orphan
   files), what each task did, and the table after — the same rows, one run per bucket.

Everything runs in this process (`dag.test()`), stops at the end and leaves no process behind.
`python -m lakeformat_airflow.demo [--engine local|spark] [--home DIR]`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
TABLE = "shop.orders_wide"
DAYS = [dt.datetime(2024, 1, d, tzinfo=dt.UTC) for d in (1, 2, 3)]


def _spark_available() -> bool:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return False
    return bool(shutil.which("java") or os.environ.get("JAVA_HOME"))


MARKER = ".lakeformat-demo-home"


def _configure(home: Path, engine: str) -> None:
    """Airflow's configuration: set before anything imports airflow. The home is recreated
    only when this demo made it (its marker file is there) or it is absent or empty."""
    if not (ROOT / "dags").is_dir():
        raise SystemExit(f"the demo runs the project's DAGs: run it from a checkout "
                         f"(`make demo`); no dags/ beside {Path(__file__).parent}")
    if home.exists() and any(home.iterdir()):
        if not (home / MARKER).exists():
            raise SystemExit(f"{home} exists and is not a demo home: give another --home")
        shutil.rmtree(home)
    home.mkdir(parents=True, exist_ok=True)
    (home / MARKER).write_text("made by lakeformat_airflow.demo; deleted by its next run\n")
    os.environ.update({
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "dags"),
        "AIRFLOW__LOGGING__LOGGING_LEVEL": "WARNING",
        "AIRFLOW__CORE__DAGBAG_IMPORT_TIMEOUT": "120",
        "LAKEFORMAT_ENGINE": engine,
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({
            "conn_type": "spark", "host": "local[2]",
            "extra": {"conf": {"spark.log.level": "ERROR"}}}),
        "SPARK_LOCAL_IP": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1"),
    })


def _land(s3: Any, bucket: str, day: dt.datetime, n: int) -> None:
    """One day of both streams: orders of the day, payments of some of them (and a late
    payment of the day before)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    ds = day.date().isoformat()
    base = day.day * 100
    orders = {"dt": [ds] * n, "order_id": list(range(base, base + n)),
              "customer": [f"c{i % 7}" for i in range(n)],
              "amount": [float(10 + i) for i in range(n)], "status": ["new"] * n,
              "order_ts": [int(day.timestamp())] * n}
    if day.day == 3:  # a new column in the orders stream: merge-schema adds it
        orders["coupon"] = ["SPRING" if i % 3 == 0 else None for i in range(n)]
    buf = io.BytesIO()
    pq.write_table(pa.table(orders), buf)
    s3.put_object(Bucket=bucket, Key=f"landing/orders/dt={ds}/part-0.parquet",
                  Body=buf.getvalue())
    payments = [{"dt": ds, "order_id": base + i, "paid_amount": float(10 + i),
                 "payment_method": "card" if i % 2 else "cash",
                 "payment_ts": int(day.timestamp()) + 60} for i in range(0, n, 2)]
    if day.day > 1:
        prev = (day - dt.timedelta(days=1)).date().isoformat()
        payments.append({"dt": prev, "order_id": (day.day - 1) * 100 + 1, "paid_amount": 11.0,
                         "payment_method": "card", "payment_ts": int(day.timestamp())})
    s3.put_object(Bucket=bucket, Key=f"landing/payments/dt={ds}/part-0.json",
                  Body="\n".join(json.dumps(p) for p in payments).encode())


def describe(table: Any, title: str) -> None:
    """Snapshots, files and sorted runs per bucket, schema files."""
    table = table.refresh()
    print(f"\n== {table.name}: {title}")
    print("  snapshots:")
    for s in table.snapshots():
        when = dt.datetime.fromtimestamp(s.time_millis / 1000, dt.UTC)
        print(f"    {s.id:>3}  {s.commit_kind:<9} schema {s.schema_id}  "
              f"{s.total_record_count:>4} records  {when:%H:%M:%S}  {s.commit_user}")
    buckets: dict[tuple[str, int], list[dict]] = {}
    for f in table.files():
        part = ",".join(f"{k}={v}" for k, v in f["partition"].items())
        buckets.setdefault((part, f["bucket"]), []).append(f)
    print("  files per bucket (level-0 files are one sorted run each):")
    for (part, bucket), files in sorted(buckets.items()):
        levels = [f["level"] for f in files]
        runs = levels.count(0) + len({lv for lv in levels if lv > 0})
        print(f"    {part:<14} bucket-{bucket}  {len(files)} files  {runs} sorted runs  "
              f"levels {sorted(levels)}  {sum(f['row_count'] for f in files)} rows")
    print(f"  schema files: {[s.id for s in table.schemas()]}")


def _report(run: Any) -> None:
    """What each task of a finished run did: its result (XCom) in a line."""
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        tis = sorted(run.get_task_instances(session=session),
                     key=lambda t: (t.start_date or dt.datetime.max.replace(tzinfo=dt.UTC),
                                    t.map_index))
        rows = {(x.task_id, x.map_index): x.value for x in session.query(XComModel).filter_by(
            dag_id=run.dag_id, run_id=run.run_id, key="return_value")}
        print(f"  {run.dag_id} {run.logical_date:%Y-%m-%d}: {run.state}")
        for ti in tis:
            name = ti.task_id + (f"[{ti.map_index}]" if ti.map_index >= 0 else "")
            value = rows.get((ti.task_id, ti.map_index))
            value = json.loads(value) if isinstance(value, (str, bytes)) else value
            print(f"    {name:<34} {ti.state!s:<8} {_summary(value)}")


def _summary(value: Any) -> str:
    if not isinstance(value, dict):
        return "" if value is None else str(value)[:90]
    if "rows_written" in value:
        done = "already committed" if value["already_committed"] else \
            f"{value['rows_written']} rows"
        return f"snapshot {value['snapshot_id']} {value['commit_kind']}, {done}"
    if "total" in value:
        t = value["total"]
        return (f"snapshots {value['snapshot_ids']}: {t['buckets_compacted']} buckets, files "
                f"{t['files_in']} -> {t['files_out']}, runs {t['sorted_runs_before']} -> "
                f"{t['sorted_runs_after']}")
    if "operation" in value:
        return (f"{value['operation']}: {len(value['snapshots_deleted'])} snapshots, "
                f"{len(value['deleted'])} files deleted"
                + (f" ({value['schema_files_deleted']} schema files)"
                   if value.get("schema_files_deleted") else ""))
    if "created" in value:
        return "created" if value["created"] else "exists"
    return json.dumps(value)[:90]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="lakeformat_airflow.demo", description=__doc__.split(
        "\n")[0])
    p.add_argument("--engine", choices=["local", "spark"],
                   default="spark" if _spark_available() else "local")
    p.add_argument("--home", default=str(ROOT / "build" / "demo-airflow"),
                   help="Airflow home (recreated; default build/demo-airflow)")
    args = p.parse_args(argv)
    _configure(Path(args.home), args.engine)

    import boto3

    from lakeformat.demo import embedded_s3

    with embedded_s3() as (warehouse, options):
        secret = {k: options[k] for k in ("s3.access-key", "s3.secret-key")}
        extra = {k: v for k, v in options.items() if k not in secret}
        os.environ["AIRFLOW_CONN_LAKEFORMAT_DEFAULT"] = json.dumps({
            "conn_type": "lakeformat", "host": warehouse, "login": secret["s3.access-key"],
            "password": secret["s3.secret-key"], "extra": extra})
        bucket = warehouse.split("/")[2]
        os.environ["LAKEFORMAT_LANDING"] = f"s3://{bucket}/landing"
        print(f"S3 server {options['s3.endpoint']}, warehouse {warehouse}, "
              f"Airflow home {args.home}, engine {args.engine}")
        try:
            return _run(warehouse, options, bucket, boto3.client(
                "s3", endpoint_url=options["s3.endpoint"], region_name=options["s3.region"],
                aws_access_key_id=secret["s3.access-key"],
                aws_secret_access_key=secret["s3.secret-key"]))
        finally:
            _stop_spark()


def _run(warehouse: str, options: dict[str, str], bucket: str, s3: Any) -> int:
    from airflow.dag_processing.dagbag import DagBag
    from airflow.utils.db import initdb

    import lakeformat as lf

    initdb()
    bag = DagBag(dag_folder=ROOT / "dags", safe_mode=False)
    if bag.import_errors:
        print(f"DAG import errors: {bag.import_errors}", file=sys.stderr)
        return 1
    print(f"DAGs: {', '.join(sorted(bag.dags))}")

    print("\n-- lakeformat_dual_stream: three days of orders (Parquet) and payments (JSON)")
    for day in DAYS:
        _land(s3, bucket, day, n=6)
        run = bag.dags["lakeformat_dual_stream"].test(logical_date=day)
        _report(run)
        if run.state != "success":
            return 1
    catalog = lf.Catalog(warehouse, options=options)
    table = catalog.get_table(TABLE)
    rows = table.read().sort_by([("dt", "ascending"), ("order_id", "ascending")])
    # the demo's retention policy, as a team would set it on the table: keep 2 snapshots,
    # schema files may go as soon as nothing needs them
    table.alter([lf.SchemaChange.set_option("snapshot.num-retained.min", "1"),
                 lf.SchemaChange.set_option("snapshot.num-retained.max", "2"),
                 lf.SchemaChange.set_option("schema.time-retained", "1 ms"),
                 lf.SchemaChange.set_option("schema.num-retained.min", "1")])
    describe(table, "after ingest (merge-on-read serves the merged rows)")
    print("\n  rows:")
    for r in rows.to_pylist()[:8]:
        print("   ", {k: v for k, v in r.items() if v is not None})
    print(f"    ... {rows.num_rows} rows")

    print("\n-- lakeformat_maintenance: compact -> expire snapshots -> clean schema files -> "
          "remove orphan files")
    run = bag.dags["lakeformat_maintenance"].test(
        logical_date=DAYS[-1] + dt.timedelta(days=1),
        run_conf={"tables": "shop.*", "partition_idle_time": "0 s",
                  "engine": os.environ["LAKEFORMAT_ENGINE"]})
    _report(run)
    describe(table, "after maintenance")
    same = table.refresh().read().sort_by([("dt", "ascending"), ("order_id", "ascending")])
    print(f"\n  same rows after maintenance: {same.equals(rows)}")
    return 0 if run.state == "success" and same.equals(rows) else 1


def _stop_spark() -> None:
    if "pyspark" not in sys.modules:
        return
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()


if __name__ == "__main__":
    sys.exit(main())
