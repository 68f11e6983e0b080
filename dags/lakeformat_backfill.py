"""On-call backfill: re-ingest a range of days into a table from a form.

Trigger it from the UI ("Trigger DAG w/ config") with:

* `table` — `db.table`;
* `source` — a path or glob with `{date}` for the day (`YYYY-MM-DD`), e.g.
  `s3://lakeformat/landing/orders/dt={date}/*.parquet`;
* `start` / `end` — the first and last day (inclusive);
* `mode` — `append` (default: rows upsert by primary key, as the daily ingest wrote them) or
  `overwrite` (each day's partitions are replaced by that day's files: for a partitioned table
  whose partitions one source fills; refused for unpartitioned tables, where it would keep only
  the last day, and for partial-update tables, where one stream's files would wipe the other
  streams' columns);
* `format` — parquet, csv, json (empty: from the file extension); `merge_schema`.

One mapped task per day, one day at a time in date order (a later day's row wins a key, as
in the daily DAG). Each day commits once per backfill run: a retry of a day finds its commit
and writes nothing; a new backfill run re-ingests. To re-run the daily ingest DAG itself for a
range, `airflow backfill create --dag-id lakeformat_dual_stream --from-date ... --to-date ...`
gives the same table (those commits are idempotent per logical date).
"""

from __future__ import annotations

import datetime as dt

from airflow.sdk import DAG, Param, task

from lakeformat_airflow.operators import LakeformatIngestOperator

MAX_DAYS = 366


def _check_overwrite(name: str) -> None:
    """Overwrite replaces whole partitions: refuse it where that loses rows (see above)."""
    from airflow.sdk.exceptions import AirflowFailException

    from lakeformat_airflow.hooks import LakeformatHook

    table = LakeformatHook().get_table(name)
    if not table.partition_keys:
        raise AirflowFailException(f"{name} is not partitioned: an overwrite per day would keep "
                                   "only the last day; use mode append")
    if table.options.get("merge-engine") == "partial-update":
        raise AirflowFailException(f"{name} is a partial-update table: overwriting a day with "
                                   "one source's files would wipe the columns other sources "
                                   "wrote; use mode append (re-ingesting merges)")

with DAG(
    dag_id="lakeformat_backfill",
    schedule=None,
    start_date=dt.datetime(2024, 1, 1, tzinfo=dt.UTC),
    catchup=False,
    max_active_runs=1,
    default_args={"retries": 2, "retry_delay": dt.timedelta(seconds=30)},
    params={
        "table": Param("shop.orders_wide", type="string", title="Table (db.table)"),
        "source": Param("s3://lakeformat/landing/orders/dt={date}/*.parquet", type="string",
                        title="Source", description="path or glob; {date} is the day"),
        "start": Param(None, type=["null", "string"], format="date",
                       title="First day", description="YYYY-MM-DD; empty: today (UTC)"),
        "end": Param(None, type=["null", "string"], format="date",
                     title="Last day", description="YYYY-MM-DD; empty: the first day"),
        "mode": Param("append", enum=["append", "overwrite"], title="Mode"),
        "format": Param("", enum=["", "parquet", "csv", "json"], title="Format"),
        "merge_schema": Param(False, type="boolean", title="Merge schema"),
    },
    tags=["lakeformat", "on-call"],
    doc_md=__doc__,
):

    @task
    def days(params: dict | None = None) -> list[dict]:
        """One set of ingest arguments per day of the range (a bad form fails at once)."""
        from airflow.sdk.exceptions import AirflowFailException

        try:
            start = (dt.date.fromisoformat(str(params["start"])) if params["start"]
                     else dt.datetime.now(dt.UTC).date())
            end = dt.date.fromisoformat(str(params["end"])) if params["end"] else start
        except ValueError as e:
            raise AirflowFailException(f"start/end must be YYYY-MM-DD: {e}") from None
        if end < start:
            raise AirflowFailException(f"end {end} is before start {start}")
        count = (end - start).days + 1
        if count > MAX_DAYS:
            raise AirflowFailException(f"{count} days asked; a backfill takes at most "
                                       f"{MAX_DAYS}")
        if "{date}" not in params["source"]:
            raise AirflowFailException(f"source {params['source']!r} has no {{date}} "
                                       "placeholder")
        if params["mode"] == "overwrite":
            _check_overwrite(params["table"])
        out = []
        for i in range(count):
            day = start + dt.timedelta(days=i)
            midnight = dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC)
            out.append({"source": params["source"].replace("{date}", day.isoformat()),
                        "commit_identifier": int(midnight.timestamp() * 1000),
                        "merge_schema": bool(params["merge_schema"])})
        return out

    LakeformatIngestOperator.partial(
        task_id="ingest", table="{{ params.table }}", mode="{{ params.mode }}",
        format="{{ params.format }}",
        commit_user="airflow:lakeformat_backfill:{{ run_id }}",
        max_active_tis_per_dagrun=1,
    ).expand_kwargs(days())
