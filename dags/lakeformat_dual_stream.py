"""Two streams widen one table, with no stream join: Paimon's partial-update merge engine.

An orders stream lands Parquet files and a payments stream lands newline-delimited JSON files,
one folder per day under `$LAKEFORMAT_LANDING` (default `s3://lakeformat/landing`):

    <landing>/orders/dt=2024-01-01/*.parquet  dt, order_id, customer, amount, status, order_ts
    <landing>/payments/dt=2024-01-01/*.json   dt, order_id, paid_amount, payment_method,
                                              payment_ts

Each stream is ingested into `shop.orders_wide`, keyed by (dt, order_id), each writing only its
own columns; the table's sequence groups (`order_ts` orders customer/amount/status,
`payment_ts` orders paid_amount/payment_method) make a late or replayed file of one stream unable
to overwrite the other's columns or a newer value of its own. Compaction merges the rows (the
maintenance DAG); readers see the merged row at once (merge-on-read).

Both ingests write with merge-schema: a column that appears in one stream's files (say
`coupon` in orders) is added to the table by that write. Each ingest is idempotent per
logical date — a retry or `airflow backfill create` of a date leaves the same table.
`$LAKEFORMAT_ENGINE=spark` runs the ingests on the `spark_default` connection's Spark.
Both settings are also the defaults of the DAG's params `landing` and `engine`.
"""

from __future__ import annotations

import datetime as dt
import os

from airflow.sdk import DAG, Param

from lakeformat_airflow.operators import LakeformatCreateTableOperator, LakeformatIngestOperator

LANDING = os.environ.get("LAKEFORMAT_LANDING", "s3://lakeformat/landing").rstrip("/")
ENGINE = os.environ.get("LAKEFORMAT_ENGINE", "local")
TABLE = "shop.orders_wide"
COLUMNS = ("dt STRING NOT NULL, order_id BIGINT NOT NULL, customer STRING, amount DOUBLE, "
           "status STRING, order_ts BIGINT, paid_amount DOUBLE, payment_method STRING, "
           "payment_ts BIGINT")
OPTIONS = {
    "bucket": "2",
    "merge-engine": "partial-update",
    "fields.order_ts.sequence-group": "customer,amount,status",
    "fields.payment_ts.sequence-group": "paid_amount,payment_method",
    "snapshot.num-retained.min": "3",
    "snapshot.num-retained.max": "20",
    "snapshot.time-retained": "1 h",
}

with DAG(
    dag_id="lakeformat_dual_stream",
    schedule="@daily",
    start_date=dt.datetime(2024, 1, 1, tzinfo=dt.UTC),
    catchup=False,
    max_active_runs=1,
    default_args={"retries": 2, "retry_delay": dt.timedelta(seconds=30)},
    params={"landing": Param(LANDING, type="string", description="landing root URI"),
            "engine": Param(ENGINE, enum=["local", "spark"])},
    tags=["lakeformat"],
    doc_md=__doc__,
):
    create = LakeformatCreateTableOperator(
        task_id="create_table", table=TABLE, columns=COLUMNS, primary_keys=["dt", "order_id"],
        partition_keys=["dt"], options=OPTIONS)
    orders = LakeformatIngestOperator(
        task_id="ingest_orders", table=TABLE,
        source="{{ params.landing }}/orders/dt={{ ds }}/*.parquet",
        format="parquet", merge_schema=True, engine="{{ params.engine }}")
    payments = LakeformatIngestOperator(
        task_id="ingest_payments", table=TABLE,
        source="{{ params.landing }}/payments/dt={{ ds }}/*.json",
        format="json", merge_schema=True, engine="{{ params.engine }}")
    create >> [orders, payments]
