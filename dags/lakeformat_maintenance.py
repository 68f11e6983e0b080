"""Nightly maintenance of the tables matching a pattern — only the work that is due:

    due_actions (what each table's rules say is due, and why)
      -> maintain (mapped: one task per table with due work, its actions in order)

`due_actions` asks the library (`Table.maintenance_due()`) what each table needs, from the
table's own Paimon options: compaction (`num-sorted-run.compaction-trigger`,
`num-sorted-run.stop-trigger`, `compaction.min.file-num`, `full-compaction.delta-commits`,
deletion-vector ratios, postpone-bucket files waiting for their bucket), snapshot expiry
(`snapshot.num-retained.*`, `snapshot.time-retained`, `snapshot.expire.limit`; a decoupled
changelog expires by its `changelog.*` retention in the same action), manifest compaction
(`manifest.merge-min-count`, DELETE entries keeping old schemas), schema files
(`schema.num-retained.min`, `schema.time-retained`), partition expiry
(`partition.expiration-time`, by values or by update time), tag expiry (tags past their
`time_retained`, e.g. from `tag.default-time-retained`; not with
`tag.time-expire-enabled=false`) and orphan files (older than 1 day). Its log has every
table's health, what is due with the figures that made it due, and why the rest is not; a
table whose metadata cannot be read logs its error and the other tables go on. `maintain`
runs one task per table that has due work — a table with nothing due runs nothing — and each
action holds the table's maintenance lease, re-checks that it is still due, and reports the
table's health before and after (score, sorted runs, files, snapshots) in its XCom and log.

A table is never maintained twice at once: `max_active_runs=1` here, each action holds the
table's maintenance lease (a job of another DAG waits for it, then fails with a retryable
error naming the holder — or, for the hourly expiry, is skipped), and a table's actions run
in one task, one after another. At most two tables are maintained at once.

Params: `tables` (default `$LAKEFORMAT_MAINTAIN_TABLES` or `*.*`), `partition_idle_time`
(default "1 h": a partition still being written is not compacted), `engine` (default
`$LAKEFORMAT_ENGINE` or `auto`: compaction of 2 GiB or more on the `spark_default`
connection's Spark, smaller work in the task; `local` or `spark` force one), `thresholds`
(overrides of the rules' options by Paimon name, e.g. `{"num-sorted-run.compaction-trigger":
3}`), `max_actions` / `max_bytes` (a budget: the most valuable actions first), `orphans`
(look for orphan files: lists each table's directory; default on).
"""

from __future__ import annotations

import datetime as dt
import os

from airflow.sdk import DAG, Param

from lakeformat_airflow.operators import (
    LakeformatDueActionsOperator,
    LakeformatRunDueActionsOperator,
)

ENGINE = os.environ.get("LAKEFORMAT_ENGINE", "auto")

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
        "engine": Param(ENGINE, enum=["auto", "local", "spark"],
                        description="compaction engine (auto: Spark from 2 GiB of work)"),
        "thresholds": Param({}, type="object",
                            description="rule thresholds by Paimon option name, overriding "
                                        "the tables' options"),
        "max_actions": Param(None, type=["null", "integer"], minimum=1,
                             description="at most this many actions (most valuable first)"),
        "max_bytes": Param(None, type=["null", "string"],
                           description="at most this much work, e.g. '50 gb'"),
        "orphans": Param(True, type="boolean", description="look for orphan files"),
    },
    tags=["lakeformat"],
    doc_md=__doc__,
):
    due = LakeformatDueActionsOperator(
        task_id="due_actions", pattern="{{ params.tables }}",
        thresholds="{{ params.thresholds }}", max_actions="{{ params.max_actions }}",
        max_bytes="{{ params.max_bytes }}", orphans="{{ params.orphans }}")
    LakeformatRunDueActionsOperator.partial(
        task_id="maintain", engine="{{ params.engine }}",
        partition_idle_time="{{ params.partition_idle_time }}",
        thresholds="{{ params.thresholds }}", max_active_tis_per_dagrun=2,
        map_index_template="{{ task.table }}",
    ).expand_kwargs(due.output)
