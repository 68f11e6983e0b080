"""`make demo`: the platform on an embedded default — Airflow runs the project's DAGs against an
S3 server on 127.0.0.1.

1. a moto S3 server on 127.0.0.1 (bucket `lakeformat-demo`), an SQLite Airflow home in the
   project's ignored `build/` folder, the `lakeformat_default` and `spark_default` connections
   from the environment, Spark in local mode when Java and pyspark are there (its own log, JVM
   start-up lines included, goes to `spark.log` in the Airflow home);
2. the table `shop.orders_wide` as the `lakeformat_dual_stream` DAG's `create_table` task
   defines it, with the demo's retention policy among its options (short, so that one
   maintenance run has snapshots and schema files to retire), and a DAG scheduled on the
   table's Asset, so the commits' asset events reach a registered asset;
3. three days of an orders stream (Parquet) and a payments stream (JSON) land; the
   `lakeformat_dual_stream` DAG ingests each day (a `coupon` column appears in the orders of
   day 3 and goes in by merge-schema write);
4. the table before maintenance: snapshots, files and sorted runs per bucket, schema files;
5. `lakeformat_maintenance`: what is due on the table and why, and only that — with the
   demo's thresholds a full compaction is due after any commit, and then expiry, manifest
   compaction and schema-file cleanup by the table's own retention — what each action did,
   where (Spark or in the task's process) and the table's health before and after, and the
   table after: the same rows, one run per bucket, and the schema files it retired.

Everything runs in this process (`dag.test()`), stops at the end and leaves no process behind.
`python -m lakeformat_airflow.demo [--engine local|spark] [--home DIR]`. It ends by saying where
the Lake page shows the table: `make airflow` (`--serve [--port N]`) runs the demo and then
keeps a real Airflow running over its warehouse until Ctrl-C (`lakeformat_airflow.local_airflow`).
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import json
import os
import shutil
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lakeformat import Table

ROOT = Path(__file__).resolve().parents[2]
TABLE = "shop.orders_wide"
DAYS = [dt.datetime(2024, 1, d, tzinfo=dt.UTC) for d in (1, 2, 3)]
#: a DAG scheduled on the table's Asset: its serialization registers the asset in Airflow
DOWNSTREAM = "lakeformat_demo_orders_updated"
#: the demo's retention policy, set on the table when it is created: keep only the newest
#: snapshot whatever its age, and let a schema file go as soon as nothing retained needs it —
#: so one maintenance run retires the snapshots before its compactions and, with them, the
#: schema the day-1 and day-2 files were written under
RETENTION = {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1",
             "schema.num-retained.min": "1", "schema.time-retained": "1 ms"}
#: keys of the embedded S3 server (moto accepts any): long enough for Airflow to mask them in
#: task logs (it skips secrets under 5 characters, with a warning)
ACCESS_KEY, SECRET_KEY = "lakeformat-demo", "lakeformat-demo-secret"
#: the maintenance run's threshold overrides: three days of two streams leave at most three
#: sorted runs in a bucket, below Paimon's compaction trigger (5) — a full compaction after
#: any commit shows the whole cycle in one run
MAINTENANCE_THRESHOLDS = {"full-compaction.delta-commits": "1"}
#: Spark settings of the demo's `spark_default` connection (`-D...` set where the driver's JVM
#: starts: Spark's log level before its first line; the file is written by `_configure`)
LOG4J = "log4j2-spark.properties"


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
            "conn_type": "spark", "host": "local[2]", "extra": {"conf": _spark_conf(home)}}),
        "SPARK_LOCAL_IP": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1"),
    })
    (home / LOG4J).write_text(
        "# Spark's log in the demo: warnings and errors, into spark.log beside this file\n"
        "rootLogger.level = warn\n"
        "rootLogger.appenderRef.err.ref = err\n"
        "appender.err.type = Console\n"
        "appender.err.name = err\n"
        "appender.err.target = SYSTEM_ERR\n"
        "appender.err.layout.type = PatternLayout\n"
        "appender.err.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n%ex\n")
    # dag.test() runs tasks through Airflow's in-process execution API (Starlette's test
    # client), which imports httpx in a way Starlette has deprecated: nothing a user can act on
    warnings.filterwarnings("ignore", message=r"Using `httpx` with `starlette\.testclient`")


def _spark_conf(home: Path) -> dict[str, str]:
    """The Spark settings of the demo's `spark_default` connection."""
    return {"spark.log.level": "ERROR", "spark.ui.showConsoleProgress": "false",
            "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{home / LOG4J}"}


@contextmanager
def _output_to(path: Path) -> Iterator[None]:
    """This process's stdout and stderr file descriptors point at `path` inside the block:
    a child started then (Spark's JVM) keeps writing there, this process goes back to the
    terminal. The JVM prints a few lines before any log setting applies (the incubator-module
    notice, Hadoop's native-library notice)."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for f in (fd, *saved):
            os.close(f)


def _start_spark(home: Path) -> None:
    """Spark local mode, started here with the `spark_default` connection's settings so its
    output goes to `spark.log` (the operators' tasks reuse this process's session)."""
    from lakeformat.spark.session import local_session

    with _output_to(home / "spark.log"):
        local_session("local[2]", app_name="lakeformat-demo", conf=_spark_conf(home))


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


def describe(table: Table, title: str) -> None:
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
    """What each task of a finished run did: its result (XCom) in a line, and where a data
    job ran (its rendered `engine`: on Spark, or in the task's process)."""
    from airflow.models.renderedtifields import RenderedTaskInstanceFields
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
            rendered = RenderedTaskInstanceFields.get_templated_fields(ti, session=session) or {}
            engine = rendered.get("engine")
            if isinstance(value, dict) and "health_after" in value:  # due actions: per action
                engines = {a["engine"] for a in value["actions"]
                           if a["action"]["kind"] in ("compact", "full-compact")}
                engine = "spark" if "spark" in engines else "local" if engines else None
            where = {"spark": "on Spark", "local": "in-process"}.get(engine, "")
            print(f"    {name:<34} {ti.state!s:<8} {where:<10} {_summary(value)}")
            if isinstance(value, dict) and "health_after" in value:
                for done in value["actions"]:
                    action = done["action"]
                    print(f"      {action['kind']:<17} {_summary(done['result'])}")
                    print(f"      {'':<17} due: {action['reason'][:90]}")
                for skipped in value["skipped"]:
                    print(f"      {skipped['kind']:<17} no longer due")


def _summary(value: Any) -> str:
    """A task's result in a line, in the library's own words where it has them."""
    from lakeformat.results import MaintenanceResult
    from lakeformat_airflow.operators.due import health_change

    if isinstance(value, list) and all(isinstance(w, dict) and "actions" in w for w in value):
        return "due: " + ("; ".join(f"{w['table']}: {', '.join(a['kind'] for a in w['actions'])}"
                                    for w in value) or "nothing")
    if isinstance(value, dict) and "health_after" in value:  # a table's due actions, done
        return f"{value['table']}: {health_change(value['health_before'], value['health_after'])}"
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
    if "operation" in value:  # MaintenanceResult.to_dict(): its own summary line
        line = str(MaintenanceResult(**value)).splitlines()[0]
        if value.get("manifest_compaction_snapshot") is not None:
            line += f"; manifests compacted in snapshot {value['manifest_compaction_snapshot']}"
        return line.removeprefix(f"{value['table']}: ")
    if "created" in value:
        return "created" if value["created"] else "exists"
    return json.dumps(value)[:90]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="lakeformat_airflow.demo", description=__doc__.split(
        "\n")[0])
    p.add_argument("--engine", choices=["local", "spark"],
                   help="where compaction runs (default: spark when Java and pyspark are "
                        "there; local with --serve, where each task would start a JVM)")
    p.add_argument("--home", default=None,
                   help="Airflow home (recreated; default build/demo-airflow, "
                        "build/airflow-local with --serve)")
    p.add_argument("--serve", action="store_true",
                   help="then keep a real Airflow (API server, scheduler, triggerer, DAG "
                        "processor) running over the demo's warehouse until Ctrl-C")
    p.add_argument("--port", type=int, default=int(os.environ.get("AIRFLOW_PORT") or 8080),
                   help="the API server's port on 127.0.0.1 with --serve (default 8080)")
    args = p.parse_args(argv)
    if args.engine is None:
        args.engine = "spark" if _spark_available() and not args.serve else "local"
    home = Path(args.home or ROOT / "build" / ("airflow-local" if args.serve else "demo-airflow"))
    password = ""
    if args.serve:
        from lakeformat_airflow import local_airflow

        if not local_airflow.port_free(args.port):
            raise SystemExit(f"port {args.port} of 127.0.0.1 is taken: give another "
                             "(`make airflow AIRFLOW_PORT=8090`)")
    _configure(home, args.engine)
    if args.serve:
        env, password = local_airflow.settings(home, args.port)
        os.environ.update(env)

    import boto3

    from lakeformat.demo import embedded_s3

    with embedded_s3() as (warehouse, options):
        options = {**options, "s3.access-key": ACCESS_KEY, "s3.secret-key": SECRET_KEY}
        # the connection's extra: the endpoint and region (path-style access is lakeformat's
        # default with an endpoint; Airflow warns of every extra value under 5 characters,
        # such as "true", as a secret too short to mask)
        extra = {k: options[k] for k in ("s3.endpoint", "s3.region")}
        os.environ["AIRFLOW_CONN_LAKEFORMAT_DEFAULT"] = json.dumps({
            "conn_type": "lakeformat", "host": warehouse, "login": ACCESS_KEY,
            "password": SECRET_KEY, "extra": extra})
        bucket = warehouse.split("/")[2]
        os.environ["LAKEFORMAT_LANDING"] = f"s3://{bucket}/landing"
        print(f"S3 server {options['s3.endpoint']}, warehouse {warehouse}, "
              f"Airflow home {home}, engine {args.engine}")
        try:
            if args.engine == "spark":
                _start_spark(home)
                print(f"Spark local[2] started (its log: {home / 'spark.log'})")
            status = _run(warehouse, options, bucket, boto3.client(
                "s3", endpoint_url=options["s3.endpoint"], region_name=options["s3.region"],
                aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY))
        finally:
            _stop_spark()
        if status != 0:
            return status
        if not args.serve:
            _where_to_look(warehouse, options)
            return 0
        tables = [TABLE, local_airflow.write_debt_table(warehouse, options)]
        return local_airflow.serve(home, args.port, password, warehouse, tables)


def _where_to_look(warehouse: str, options: dict[str, str]) -> None:
    """The table as the Lake page lists it, and how to open the page (this demo's Airflow and
    S3 server stop with it: `make airflow` keeps them running)."""
    import lakeformat as lf
    from lakeformat_airflow.local_airflow import USER

    try:
        h = lf.Catalog(warehouse, options=options).get_table(TABLE).health()
        print(f"\n-- the Lake page lists {TABLE}: score {h.score}, sorted runs (worst bucket) "
              f"{h.max_sorted_runs}, small files {h.totals.get('small_files', 0)}, snapshots "
              f"{h.snapshots.get('count', 0)}, schema files {h.schemas.get('files', 0)}")
    except Exception as e:  # noqa: BLE001 - the pointer below is still worth printing
        print(f"\n-- {TABLE}: health not readable ({type(e).__name__})")
    print("   To open the page: `make airflow` runs this demo again and keeps Airflow and the "
          "S3 server running;\n   then open http://127.0.0.1:8080/plugin/lake (the Lake page "
          "in Airflow's UI; the page alone at /lakeformat/),\n"
          f"   logged in as {USER} with the password it prints. Ctrl-C stops it.")


def _create_table(catalog: Any, dag: Any) -> Any:
    """The table as the DAG's `create_table` task defines it, plus the demo's retention."""
    from lakeformat.cli import parse_columns

    task = dag.get_task("create_table")
    options = {**task.options, **RETENTION}
    catalog.create_database(task.table.split(".")[0], exist_ok=True)
    table = catalog.create_table(task.table, parse_columns(task.columns),
                                 primary_keys=list(task.primary_keys),
                                 partition_keys=list(task.partition_keys), options=options)
    print(f"\n-- {table.name}: created as lakeformat_dual_stream's create_table task defines it, "
          "with the demo's retention:")
    print("   " + ", ".join(f"{k}={v}" for k, v in RETENTION.items()))
    return table


def _register_downstream(warehouse: str) -> str:
    """A DAG scheduled on the table's Asset, written to Airflow's database as the DAG processor
    writes parsed DAGs: that registers (and activates) the asset the operators' events are
    for — without a DAG naming it, Airflow creates an alias's asset on the first event and
    keeps it inactive until its scheduler's next pass. Unpaused, so the events queue a run."""
    from airflow.dag_processing.bundles.manager import DagBundlesManager
    from airflow.dag_processing.dagbag import DagBag, sync_bag_to_db
    from airflow.providers.standard.operators.empty import EmptyOperator
    from airflow.sdk import DAG

    from lakeformat_airflow.assets import table_asset

    asset = table_asset(warehouse, TABLE)
    with DAG(DOWNSTREAM, schedule=[asset], start_date=DAYS[0], catchup=False,
             is_paused_upon_creation=False, tags=["lakeformat", "demo"],
             doc_md="Runs after each commit to shop.orders_wide (the demo's example).") as dag:
        EmptyOperator(task_id="orders_updated")
    DagBundlesManager().sync_bundles_to_db()
    bag = DagBag(dag_folder=ROOT / "dags", collect_dags=False)
    bag.bag_dag(dag)
    sync_bag_to_db(bag, "dags-folder", None)
    return asset.uri


def _asset_report(uri: str) -> None:
    """The asset events the commits recorded, and the downstream DAG's queued run."""
    from airflow.models.asset import AssetDagRunQueue, AssetEvent, AssetModel
    from airflow.utils.session import create_session

    with create_session() as session:
        events = (session.query(AssetEvent.source_task_id).join(
            AssetModel, AssetModel.id == AssetEvent.asset_id).filter(AssetModel.uri == uri).all())
        queued = session.query(AssetDagRunQueue).filter_by(target_dag_id=DOWNSTREAM).count()
    by_task: dict[str, int] = {}
    for (task_id,) in events:
        by_task[task_id] = by_task.get(task_id, 0) + 1
    print(f"\n  asset {uri}: {len(events)} events ("
          + ", ".join(f"{t} x{n}" for t, n in sorted(by_task.items())) + ")")
    print(f"  {DOWNSTREAM} (scheduled on it): "
          + ("a run queued for the scheduler" if queued else "no run queued"))


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
    uri = _register_downstream(warehouse)
    print(f"{DOWNSTREAM}: scheduled on the table's asset {uri}")
    catalog = lf.Catalog(warehouse, options=options)
    table = _create_table(catalog, bag.dags["lakeformat_dual_stream"])

    print("\n-- lakeformat_dual_stream: three days of orders (Parquet) and payments (JSON)")
    for day in DAYS:
        _land(s3, bucket, day, n=6)
        run = bag.dags["lakeformat_dual_stream"].test(logical_date=day)
        _report(run)
        if run.state != "success":
            return 1
    rows = table.read().sort_by([("dt", "ascending"), ("order_id", "ascending")])
    describe(table, "after ingest (merge-on-read serves the merged rows)")
    schemas_before = [s.id for s in table.schemas()]
    print("\n  rows:")
    for r in rows.to_pylist()[:8]:
        print("   ", {k: v for k, v in r.items() if v is not None})
    print(f"    ... {rows.num_rows} rows")

    print("\n-- lakeformat_maintenance: what is due on each table (and why), then only that; "
          "thresholds: " + ", ".join(f"{k}={v}" for k, v in MAINTENANCE_THRESHOLDS.items()))
    run = bag.dags["lakeformat_maintenance"].test(
        logical_date=DAYS[-1] + dt.timedelta(days=1),
        run_conf={"tables": "shop.*", "partition_idle_time": "0 s",
                  "engine": os.environ["LAKEFORMAT_ENGINE"],
                  "thresholds": MAINTENANCE_THRESHOLDS})
    _report(run)
    describe(table, "after maintenance")
    schemas_after = [s.id for s in table.refresh().schemas()]
    retired = [i for i in schemas_before if i not in schemas_after]
    print(f"\n  schema files: {schemas_before} before maintenance, {schemas_after} after; "
          f"retired: {retired or 'none'}")
    same = table.refresh().read().sort_by([("dt", "ascending"), ("order_id", "ascending")])
    print(f"  same rows after maintenance: {same.equals(rows)}")
    _asset_report(uri)
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
