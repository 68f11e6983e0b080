"""On-call backfill: ingest a range of days into a table from a form, in date order.

Trigger it from the UI ("Trigger DAG w/ config") with:

* `table` — `db.table`;
* `source` — a path or glob with `{date}` for the day (`YYYY-MM-DD`); default
  `$LAKEFORMAT_LANDING/orders/dt={date}/*.parquet` (`$LAKEFORMAT_LANDING` defaults to
  `s3://lakeformat/landing`);
* `start` / `end` — the first and last day (inclusive; empty start: the day the run was
  triggered, UTC; empty end: the first day);
* `mode` — `append` (default: rows upsert by primary key, as the daily ingest wrote them) or
  `overwrite` (each day's partitions are replaced by that day's files: for a partitioned table
  whose partitions one source fills; refused for unpartitioned tables, where it would keep only
  the last day, and for partial-update tables, where one stream's files would wipe the other
  streams' columns);
* `format` — parquet, csv, json (empty: from the file extension); `merge_schema`;
* `reingest` — ingest days that already landed again (the source was corrected).

**Order.** One task ingests the days one after another in date order, one commit per day, so
a later day's row wins a key as in the daily DAG. The first day that fails stops the task: the
days after it are not run. Fix that day's source and retry or clear the task: it skips the
days that landed and resumes at the failed day. The task's return value lists every day with
its status (`landed`, `skipped`) and snapshot.

**Idempotent per (table, source, day).** The landed record is the table's snapshots: each
day commits as user `airflow:lakeformat_backfill:<source>` (the source with its `{date}`) with
the day's UTC midnight (epoch ms) as identifier, so a new run of the same range skips the days
any earlier backfill run of that source landed and reports them as skipped — and a table
widened by two streams is backfilled once per stream, one stream's days telling nothing of the
other's. With `reingest` the run commits as `<that user>:reingest:<run_id>`: every day of the
range lands again, and a retry of that same run still lands each day once.
On an append table (or an aggregating one) a re-ingest adds the day's rows a second time:
there, correct a day with `mode` overwrite of its partitions.

**Refused before anything is written:**

* ingesting a day when a later day of the same source already landed, on a primary-key table
  without `sequence.field` (its merge order is commit order: the earlier day would win every
  key). Ways out: re-run the range from that day with `reingest` (the later days land again
  after it), or set the table's `sequence.field`. Days the same run (re)ingests after it do
  not count. Append tables have no merge order: no refusal.
* a day missing from the retained snapshots when snapshots were expired, on an append or
  aggregating table: whether it landed in an expired snapshot cannot be told, and ingesting it
  again could double its rows. The message lists the days the retained snapshots show landed;
  check the table, then re-run with `reingest` over only the days to ingest. On other primary-key
  tables such a day is ingested (the same rows upsert the same values), and a later day whose
  snapshot was expired cannot be seen by the order check.

To re-run the daily ingest DAG itself for a range, `airflow backfill create --dag-id
lakeformat_dual_stream --from-date ... --to-date ...` gives the same table (those commits are
idempotent per logical date).
"""

from __future__ import annotations

import datetime as dt
import os

from airflow.sdk import DAG, Param

from lakeformat_airflow.operators.backfill import MAX_DAYS, LakeformatBackfillOperator

LANDING = os.environ.get("LAKEFORMAT_LANDING", "s3://lakeformat/landing").rstrip("/")

with DAG(
    dag_id="lakeformat_backfill",
    schedule=None,
    start_date=dt.datetime(2024, 1, 1, tzinfo=dt.UTC),
    catchup=False,
    max_active_runs=1,
    default_args={"retries": 2, "retry_delay": dt.timedelta(seconds=30)},
    params={
        "table": Param("shop.orders_wide", type="string", title="Table (db.table)"),
        "source": Param(f"{LANDING}/orders/dt={{date}}/*.parquet", type="string",
                        title="Source", description="path or glob; {date} is the day"),
        "start": Param(None, type=["null", "string"], format="date",
                       title="First day", description="YYYY-MM-DD; empty: today (UTC)"),
        "end": Param(None, type=["null", "string"], format="date",
                     title="Last day", description=f"YYYY-MM-DD; empty: the first day; at "
                                                   f"most {MAX_DAYS} days"),
        "mode": Param("append", enum=["append", "overwrite"], title="Mode"),
        "format": Param("", enum=["", "parquet", "csv", "json"], title="Format"),
        "merge_schema": Param(False, type="boolean", title="Merge schema"),
        "reingest": Param(False, type="boolean", title="Re-ingest landed days",
                          description="ingest days that already landed again (the source "
                                      "was corrected)"),
    },
    tags=["lakeformat", "on-call"],
    doc_md=__doc__,
):
    LakeformatBackfillOperator(
        task_id="ingest", table="{{ params.table }}", source="{{ params.source }}",
        start="{{ params.start or '' }}", end="{{ params.end or '' }}",
        mode="{{ params.mode }}", format="{{ params.format }}",
        merge_schema="{{ params.merge_schema }}", reingest="{{ params.reingest }}",
    )
