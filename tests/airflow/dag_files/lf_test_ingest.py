"""Test DAGs of the ingest and compaction operators: table and source come from run_conf."""

from __future__ import annotations

import datetime as dt

from airflow.sdk import DAG, Param

from lakeformat_airflow.operators import (
    LakeformatCompactOperator,
    LakeformatIngestOperator,
)

START = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
PARAMS = {"table": Param("db.t", type="string"), "source": Param("", type="string"),
          "mode": Param("append", type="string"), "engine": Param("local", type="string"),
          "a": Param("", type="string"), "b": Param("", type="string")}

with DAG("lf_test_ingest", schedule="@daily", start_date=START, catchup=False,
         params=PARAMS, tags=["lakeformat-test"]):
    LakeformatIngestOperator(task_id="ingest", table="{{ params.table }}",
                             source="{{ params.source }}", mode="{{ params.mode }}",
                             engine="{{ params.engine }}")

with DAG("lf_test_ingest_mapped", schedule="@daily", start_date=START, catchup=False,
         params=PARAMS, tags=["lakeformat-test"]):
    LakeformatIngestOperator.partial(task_id="ingest", table="{{ params.table }}").expand(
        source=["{{ params.a }}", "{{ params.b }}"])

with DAG("lf_test_ingest_merge", schedule="@daily", start_date=START, catchup=False,
         params=PARAMS, tags=["lakeformat-test"]):
    LakeformatIngestOperator(task_id="ingest", table="{{ params.table }}",
                             source="{{ params.source }}", merge_schema=True)

with DAG("lf_test_ingest_compact", schedule="@daily", start_date=START, catchup=False,
         params=PARAMS, tags=["lakeformat-test"]):
    (LakeformatIngestOperator(task_id="ingest", table="{{ params.table }}",
                              source="{{ params.source }}")
     >> LakeformatCompactOperator(task_id="compact", table="{{ params.table }}"))
