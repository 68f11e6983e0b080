"""Test DAGs whose every operator argument is a template of a run_conf param: counts, flags,
durations, budgets, key lists, options, partitions, schema changes. Each DAG comes twice: with
Airflow's text rendering (a param renders as text: "2", "True", "None", "['dt', 'id']") and
with `render_template_as_native_obj=True` (it arrives as the int, bool, None or list itself).
Params are plain values (no `Param` type), so a test can pass a bad one."""

from __future__ import annotations

import datetime as dt

from airflow.sdk import DAG

from lakeformat_airflow.operators import (
    LakeformatAlterTableOperator,
    LakeformatCleanSchemasOperator,
    LakeformatCompactOperator,
    LakeformatCreateTableOperator,
    LakeformatCreateTagOperator,
    LakeformatExpirePartitionsOperator,
    LakeformatExpireSnapshotsOperator,
    LakeformatIngestOperator,
    LakeformatRemoveOrphanFilesOperator,
    LakeformatRollbackOperator,
)

START = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
#: retries the tests check are never used: a bad rendered argument fails the first try
RETRIES = {"retries": 2, "retry_delay": dt.timedelta(seconds=0)}
EXPIRE_PARAMS = {"table": "db.t", "n": None, "max": None, "older_than": None,
                 "max_deletes": None, "dry_run": False}
ALL_PARAMS = {"table": "db.t", "columns": "", "pk": [], "partition_keys": [], "options": {},
              "changes": [], "source": "", "format": None, "mode": "append", "merge": False,
              "engine": "local", "budget": None, "full": True, "partitions": None,
              "idle": None, "per_commit": 16, "tag_snapshot": None, "keep_tag": "30 d",
              "n": None, "max": None, "older_than": None, "max_deletes": None,
              "dry_run": False, "schemas_min": None, "compact_manifests": False,
              "orphans_older_than": "1 d", "orphans_dry_run": True, "enforce": True,
              "partition_age": None, "flag": True}


def expire_dag(dag_id: str, native: bool) -> None:
    with DAG(dag_id, schedule="@daily", start_date=START, catchup=False,
             params=EXPIRE_PARAMS, default_args=RETRIES,
             render_template_as_native_obj=native, tags=["lakeformat-test"]):
        LakeformatExpireSnapshotsOperator(
            task_id="expire_snapshots", table="{{ params.table }}",
            retain_min="{{ params.n }}", retain_max="{{ params.max }}",
            older_than="{{ params.older_than }}", max_deletes="{{ params.max_deletes }}",
            dry_run="{{ params.dry_run }}")


def every_operator_dag(dag_id: str, native: bool) -> None:
    table = "{{ params.table }}"
    with DAG(dag_id, schedule="@daily", start_date=START, catchup=False, params=ALL_PARAMS,
             default_args=RETRIES, render_template_as_native_obj=native,
             tags=["lakeformat-test"]):
        create = LakeformatCreateTableOperator(
            task_id="create_table", table=table, columns="{{ params.columns }}",
            primary_keys="{{ params.pk }}", partition_keys="{{ params.partition_keys }}",
            options="{{ params.options }}", if_not_exists="{{ params.flag }}")
        alter = LakeformatAlterTableOperator(task_id="alter_table", table=table,
                                             changes="{{ params.changes }}")
        ingest = LakeformatIngestOperator(
            task_id="ingest", table=table, source="{{ params.source }}",
            format="{{ params.format }}", mode="{{ params.mode }}",
            merge_schema="{{ params.merge }}", engine="{{ params.engine }}",
            memory_budget="{{ params.budget }}")
        compact = LakeformatCompactOperator(
            task_id="compact", table=table, full="{{ params.full }}",
            partitions="{{ params.partitions }}", partition_idle_time="{{ params.idle }}",
            memory_budget="{{ params.budget }}", partitions_per_commit="{{ params.per_commit }}",
            engine="{{ params.engine }}")
        tag = LakeformatCreateTagOperator(
            task_id="create_tag", table=table, tag="t-{{ ds }}",
            snapshot_id="{{ params.tag_snapshot }}", time_retained="{{ params.keep_tag }}",
            exist_ok="{{ params.flag }}")
        expire = LakeformatExpireSnapshotsOperator(
            task_id="expire_snapshots", table=table, retain_min="{{ params.n }}",
            retain_max="{{ params.max }}", older_than="{{ params.older_than }}",
            max_deletes="{{ params.max_deletes }}", dry_run="{{ params.dry_run }}")
        schemas = LakeformatCleanSchemasOperator(
            task_id="clean_schemas", table=table, retain_min="{{ params.schemas_min }}",
            older_than="{{ params.older_than }}", dry_run="{{ params.dry_run }}",
            compact_manifests="{{ params.compact_manifests }}")
        orphans = LakeformatRemoveOrphanFilesOperator(
            task_id="remove_orphan_files", table=table,
            older_than="{{ params.orphans_older_than }}", dry_run="{{ params.orphans_dry_run }}",
            enforce_retention_duration="{{ params.enforce }}")
        partitions = LakeformatExpirePartitionsOperator(
            task_id="expire_partitions", table=table,
            expiration_time="{{ params.partition_age }}", dry_run="{{ params.dry_run }}")
        rollback = LakeformatRollbackOperator(task_id="rollback", table=table, to="t-{{ ds }}",
                                              dry_run="{{ params.orphans_dry_run }}")
        (create >> alter >> ingest >> compact >> tag >> expire >> schemas >> orphans
         >> partitions >> rollback)


expire_dag("lf_test_templated_expire", native=False)
expire_dag("lf_test_templated_expire_native", native=True)
every_operator_dag("lf_test_templated_ops", native=False)
every_operator_dag("lf_test_templated_ops_native", native=True)
