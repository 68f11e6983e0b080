"""Test DAGs exercising every operator of the provider; table, sources and the odd argument
come from run_conf params, so the tests can point them at fresh warehouses."""

from __future__ import annotations

import datetime as dt

from airflow.sdk import DAG, Param

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
TABLE = "{{ params.table }}"

with DAG("lf_test_ops", schedule="@daily", start_date=START, catchup=False,
         params={"table": Param("db.t", type="string"), "source": Param("", type="string"),
                 "keep": Param("3650 d", type="string")},
         default_args={"retries": 0}, tags=["lakeformat-test"]):
    create = LakeformatCreateTableOperator(
        task_id="create_table", table=TABLE,
        columns="dt STRING NOT NULL, id BIGINT NOT NULL, v BIGINT",
        primary_keys=["dt", "id"], partition_keys=["dt"],
        options={"bucket": 2, "partition.timestamp-formatter": "yyyy-MM-dd",
                 "snapshot.num-retained.min": 1, "snapshot.time-retained": "1 ms",
                 "schema.num-retained.min": 1, "schema.time-retained": "1 ms"})
    alter = LakeformatAlterTableOperator(
        task_id="alter_table", table=TABLE,
        changes=[{"action": "add_column", "field_name": "note", "data_type": "STRING"},
                 {"action": "set_option", "key": "snapshot.num-retained.max", "value": "2"}])
    ingest = LakeformatIngestOperator(task_id="ingest", table=TABLE, source="{{ params.source }}")
    compact = LakeformatCompactOperator(task_id="compact", table=TABLE, full=True)
    tag = LakeformatCreateTagOperator(task_id="create_tag", table=TABLE, tag="daily-{{ ds }}")
    expire = LakeformatExpireSnapshotsOperator(task_id="expire_snapshots", table=TABLE)
    schemas = LakeformatCleanSchemasOperator(task_id="clean_schemas", table=TABLE)
    orphans = LakeformatRemoveOrphanFilesOperator(task_id="remove_orphan_files", table=TABLE,
                                                  older_than="0 s", dry_run=True,
                                                  enforce_retention_duration=False)
    partitions = LakeformatExpirePartitionsOperator(task_id="expire_partitions", table=TABLE,
                                                    expiration_time="{{ params.keep }}")
    rollback = LakeformatRollbackOperator(task_id="rollback", table=TABLE, to="daily-{{ ds }}",
                                          dry_run=True)
    (create >> alter >> ingest >> compact >> tag >> expire >> schemas >> orphans
     >> partitions >> rollback)

with DAG("lf_test_expire", schedule="@daily", start_date=START, catchup=False,
         params={"table": Param("db.t", type="string"),
                 "older_than": Param("1 ms", type="string")},
         default_args={"retries": 1, "retry_delay": dt.timedelta(seconds=0)},
         tags=["lakeformat-test"]):
    LakeformatExpireSnapshotsOperator(task_id="expire_snapshots", table=TABLE,
                                      retain_min=1, older_than="{{ params.older_than }}")
