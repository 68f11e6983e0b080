"""Nightly maintenance of every table matching a pattern, one mapped task group per table:

    compact (full, partitions idle for `partition_idle_time`)
      -> manifest compaction -> expire snapshots -> clean schema files -> remove orphan files

Policies come from each table's options, as Paimon reads them: `snapshot.num-retained.min`,
`snapshot.num-retained.max`, `snapshot.time-retained`, `snapshot.expire.limit` for expiry;
`schema.num-retained.min`, `schema.time-retained` for schema files; orphan files older than
1 day are removed.

The order is what lets old schema files go. A full compaction rewrites the files of an old
schema, but its snapshot's manifests still name them (DELETE entries), and so does every
snapshot before it. The `manifest_compaction` task (`LakeformatCleanSchemasOperator(
compact_manifests=True)`) commits Paimon's manifest compaction — a COMPACT snapshot of the
same data whose manifests name only live files — and deletes the schema files already free;
expiry then retires the snapshots before it as the table's snapshot options allow, and
`clean_schemas` deletes the schemas only those named (as the schema options allow): in the
same run when every snapshot before the manifest compaction may expire, else on a later run.

At most two compactions run at once (each bounded by its table's `write-buffer-size`, or on
Spark). A table is never maintained twice at once: `max_active_runs=1` here, and every
maintenance job holds the table's maintenance lease, so a job of another DAG (the hourly
expiry) waits for it, then fails with a retryable error naming the holder (or, for the hourly
expiry, is skipped).

Params: `tables` (default `$LAKEFORMAT_MAINTAIN_TABLES` or `*.*`), `partition_idle_time`
(default "1 h": a partition still being written is not compacted), `engine` (default
`$LAKEFORMAT_ENGINE` or `local`; `spark` compacts on the `spark_default` connection's Spark).
"""

from __future__ import annotations

import datetime as dt
import os

from airflow.sdk import DAG, Param, task_group

from lakeformat_airflow.operators import (
    LakeformatCleanSchemasOperator,
    LakeformatCompactOperator,
    LakeformatExpireSnapshotsOperator,
    LakeformatListTablesOperator,
    LakeformatRemoveOrphanFilesOperator,
)

ENGINE = os.environ.get("LAKEFORMAT_ENGINE", "local")

with DAG(
    dag_id="lakeformat_maintenance",
    schedule="@daily",
    start_date=dt.datetime(2024, 1, 1, tzinfo=dt.UTC),
    catchup=False,
    max_active_runs=1,
    default_args={"retries": 2, "retry_delay": dt.timedelta(minutes=1)},
    params={
        "tables": Param(os.environ.get("LAKEFORMAT_MAINTAIN_TABLES", "*.*"), type="string",
                        description="db.table patterns, comma-separated"),
        "partition_idle_time": Param("1 h", type="string",
                                     description="compact partitions not written for this long"),
        "engine": Param(ENGINE, enum=["local", "spark"], description="compaction engine"),
    },
    tags=["lakeformat"],
    doc_md=__doc__,
):
    tables = LakeformatListTablesOperator(task_id="list_tables", pattern="{{ params.tables }}")

    @task_group(group_id="maintain")
    def maintain(table: str) -> None:
        compact = LakeformatCompactOperator(
            task_id="compact", table=table, full=True,
            partition_idle_time="{{ params.partition_idle_time }}",
            engine="{{ params.engine }}", max_active_tis_per_dagrun=2)
        manifests = LakeformatCleanSchemasOperator(task_id="manifest_compaction", table=table,
                                                   compact_manifests=True)
        expire = LakeformatExpireSnapshotsOperator(task_id="expire_snapshots", table=table)
        schemas = LakeformatCleanSchemasOperator(task_id="clean_schemas", table=table)
        orphans = LakeformatRemoveOrphanFilesOperator(task_id="remove_orphan_files", table=table)
        compact >> manifests >> expire >> schemas >> orphans

    maintain.expand(table=tables.output)
