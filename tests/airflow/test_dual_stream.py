"""The seeds' scenario through Airflow: `lakeformat_dual_stream` ingests an orders stream
(Parquet) and a payments stream (JSON) into one partial-update table on the moto S3 server;
a new column arrives in one stream; re-running a date leaves the same table."""

from __future__ import annotations

import datetime as dt
import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lakeformat as lf
from tests.support.s3server import boto3_client

TABLE = "shop.orders_wide"
DAY1 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
DAY2 = dt.datetime(2024, 1, 2, tzinfo=dt.UTC)


def _put_parquet(s3, bucket: str, key: str, table: pa.Table) -> None:
    buf = io.BytesIO()
    pq.write_table(table, buf)
    s3.put_object(Bucket=bucket, Key=key, Body=buf.getvalue())


def _put_json(s3, bucket: str, key: str, rows: list[dict]) -> None:
    s3.put_object(Bucket=bucket, Key=key, Body="\n".join(json.dumps(r) for r in rows).encode())


def _rows(catalog: lf.Catalog) -> list[dict]:
    return sorted(catalog.get_table(TABLE).read().to_pylist(),
                  key=lambda r: (r["dt"], r["order_id"]))


@pytest.mark.parametrize("engine", ["local", "spark"])
def test_two_streams_widen_one_table(engine, s3_conn, dags, monkeypatch):
    """The same rows whichever engine ingests (Spark: local[2] from `spark_default`)."""
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps({
        "conn_type": "spark", "host": "local[2]", "extra": {"conf": {
            "spark.log.level": "ERROR", "spark.sql.shuffle.partitions": "2",
            "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"}}}))
    uri, options = s3_conn
    bucket = uri.split("/")[2]
    s3 = boto3_client(options["s3.endpoint"])
    landing = f"s3://{bucket}/landing"
    catalog = lf.Catalog(uri, options=options)
    dag = dags.load("lakeformat_dual_stream.py", "lakeformat_dual_stream")

    _put_parquet(s3, bucket, "landing/orders/dt=2024-01-01/part-0.parquet", pa.table({
        "dt": ["2024-01-01"] * 3, "order_id": [1, 2, 3], "customer": ["ann", "bob", "cid"],
        "amount": [10.0, 20.0, 30.0], "status": ["new"] * 3, "order_ts": [100, 100, 100]}))
    _put_json(s3, bucket, "landing/payments/dt=2024-01-01/part-0.json", [
        {"dt": "2024-01-01", "order_id": 1, "paid_amount": 10.0, "payment_method": "card",
         "payment_ts": 200},
        {"dt": "2024-01-01", "order_id": 2, "paid_amount": 20.0, "payment_method": "cash",
         "payment_ts": 200}])
    run = dag.test(logical_date=DAY1, run_conf={"landing": landing, "engine": engine})
    assert run.state == "success", dags.states(run)
    first = _rows(catalog)
    assert [(r["order_id"], r["customer"], r["status"], r["paid_amount"],
             r["payment_method"]) for r in first] == [
        (1, "ann", "new", 10.0, "card"), (2, "bob", "new", 20.0, "cash"),
        (3, "cid", "new", None, None)]
    result = dags.xcom(run, "ingest_orders")
    assert result["rows_written"] == 3 and result["table"] == TABLE
    assert "secret" not in json.dumps(result).lower()

    # day 2: orders brings a new column and moves order 1 on; payments pays order 3 and
    # replays an older payment of order 1, which its sequence group must not let through
    _put_parquet(s3, bucket, "landing/orders/dt=2024-01-02/part-0.parquet", pa.table({
        "dt": ["2024-01-01", "2024-01-02"], "order_id": [1, 7], "customer": ["ann", "eve"],
        "amount": [12.0, 70.0], "status": ["shipped", "new"], "order_ts": [300, 300],
        "coupon": ["SPRING", None]}))
    _put_json(s3, bucket, "landing/payments/dt=2024-01-02/part-0.json", [
        {"dt": "2024-01-01", "order_id": 3, "paid_amount": 30.0, "payment_method": "card",
         "payment_ts": 400},
        {"dt": "2024-01-01", "order_id": 1, "paid_amount": 1.0, "payment_method": "stale",
         "payment_ts": 50}])
    run = dag.test(logical_date=DAY2, run_conf={"landing": landing, "engine": engine})
    assert run.state == "success", dags.states(run)
    table = catalog.get_table(TABLE)
    assert "coupon" in table.schema.names
    rows = {(r["dt"], r["order_id"]): r for r in _rows(catalog)}
    assert rows[("2024-01-01", 1)] | {} == {
        "dt": "2024-01-01", "order_id": 1, "customer": "ann", "amount": 12.0,
        "status": "shipped", "order_ts": 300, "paid_amount": 10.0, "payment_method": "card",
        "payment_ts": 200, "coupon": "SPRING"}
    assert (rows[("2024-01-01", 3)]["paid_amount"], rows[("2024-01-01", 3)]["status"]) == \
        (30.0, "new")
    assert rows[("2024-01-02", 7)]["customer"] == "eve"
    assert len(rows) == 4
    before = _rows(catalog)
    snapshots = [s.id for s in table.snapshots()]

    # re-running a date (a retry or a backfill) finds its commits and writes nothing
    run = dag.test(logical_date=DAY1, run_conf={"landing": landing, "engine": engine})
    assert run.state == "success", dags.states(run)
    assert dags.xcom(run, "ingest_orders")["already_committed"] is True
    assert dags.xcom(run, "ingest_payments")["already_committed"] is True
    assert _rows(catalog) == before
    assert [s.id for s in catalog.get_table(TABLE).snapshots()] == snapshots
