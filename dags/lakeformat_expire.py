"""Hourly snapshot expiry over the tables the maintenance DAG maintains (`tables` param,
default `$LAKEFORMAT_MAINTAIN_TABLES` or `*.*`), each table's retention from its own options
(`snapshot.num-retained.min/max`, `snapshot.time-retained`, `snapshot.expire.limit`).

Expiry of a table waits while the nightly maintenance holds its lease and, if the lease is
still held after the wait (`lock-acquire-timeout`), the task is skipped: the next hour expires.
"""

from __future__ import annotations

import datetime as dt
import os

from airflow.sdk import DAG, Param

from lakeformat_airflow.operators import (
    LakeformatExpireSnapshotsOperator,
    LakeformatListTablesOperator,
)

with DAG(
    dag_id="lakeformat_expire",
    schedule="@hourly",
    start_date=dt.datetime(2024, 1, 1, tzinfo=dt.UTC),
    catchup=False,
    max_active_runs=1,
    default_args={"retries": 3, "retry_delay": dt.timedelta(minutes=2)},
    params={"tables": Param(os.environ.get("LAKEFORMAT_MAINTAIN_TABLES", "*.*"), type="string",
                            description="db.table patterns, comma-separated")},
    tags=["lakeformat"],
    doc_md=__doc__,
):
    tables = LakeformatListTablesOperator(task_id="list_tables", pattern="{{ params.tables }}")
    LakeformatExpireSnapshotsOperator.partial(
        task_id="expire_snapshots", skip_when_busy=True).expand(
        table=tables.output)
