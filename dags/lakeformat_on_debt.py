"""Maintenance within minutes of the writes that made it due, with no DAG run spent polling.

The DAG is scheduled on the asset `lakeformat_debt`, whose watcher is
`LakeformatDebtTrigger`: in Airflow's triggerer it polls the tables matching
`$LAKEFORMAT_MAINTAIN_TABLES` (default `*.*`) every `$LAKEFORMAT_DEBT_POLL_SECONDS` (default
60) — one snapshot-id read per table, and the library's due rules only for a table that
committed since — and fires when compaction becomes due on a table (a bucket reaching
`num-sorted-run.compaction-trigger` sorted runs, or `num-sorted-run.stop-trigger` - 1, ...).
`$LAKEFORMAT_DEBT_THRESHOLDS` (a JSON object) overrides the rules' options by Paimon name
for the trigger and the run alike; a bad one fails this file's import, naming it. A table's
debt fires once per episode (until a check finds nothing due): growing debt fires again only
when it turns urgent or after the trigger's `refire_after` (1 h) — see the trigger.

A run reads all its triggering events (the scheduler folds events that arrive before the run
starts into one run) and runs just those tables' due actions, as `lakeformat_maintenance`
does: `due_actions` asks again what is due (the event is a hint, the table's metadata is the
truth), `maintain` runs one task per table, each action under the table's maintenance lease.
A run without events (manual, `dag.test()`) takes its tables from the run's conf
(`{"tables": "db.t1,db.t2"}`), else every table of the pattern.

Params: `engine` (default `$LAKEFORMAT_ENGINE` or `auto`: compaction of 2 GiB or more on the
`spark_default` connection's Spark).
"""

from __future__ import annotations

import datetime as dt
import json
import os

from airflow.sdk import DAG, Asset, AssetWatcher, Param

from lakeformat_airflow.operators import (
    LakeformatDueActionsOperator,
    LakeformatRunDueActionsOperator,
)
from lakeformat_airflow.triggers import LakeformatDebtTrigger

PATTERN = os.environ.get("LAKEFORMAT_MAINTAIN_TABLES", "*.*")
ENGINE = os.environ.get("LAKEFORMAT_ENGINE", "auto")


def _thresholds() -> dict:
    """`$LAKEFORMAT_DEBT_THRESHOLDS`, a JSON object; anything else fails the DAG's import with
    the value named (the trigger checks the names and values)."""
    text = os.environ.get("LAKEFORMAT_DEBT_THRESHOLDS") or "{}"
    try:
        value = json.loads(text)
    except ValueError as e:
        raise ValueError(f"$LAKEFORMAT_DEBT_THRESHOLDS is not JSON ({e}): {text!r}") from None
    if not isinstance(value, dict):
        raise ValueError(f"$LAKEFORMAT_DEBT_THRESHOLDS must be a JSON object of option name to "
                         f"value, got {text!r}")
    return value


THRESHOLDS = _thresholds()

DEBT = Asset(name="lakeformat_debt", watchers=[AssetWatcher(
    name="lakeformat_debt_watcher",
    trigger=LakeformatDebtTrigger(
        pattern=PATTERN, thresholds=THRESHOLDS,
        poll_interval=float(os.environ.get("LAKEFORMAT_DEBT_POLL_SECONDS", "60"))))])

with DAG(
    dag_id="lakeformat_on_debt",
    schedule=[DEBT],
    start_date=dt.datetime(2024, 1, 1, tzinfo=dt.UTC),
    catchup=False,
    max_active_runs=1,
    default_args={"retries": 2, "retry_delay": dt.timedelta(minutes=1)},
    params={"engine": Param(ENGINE, enum=["auto", "local", "spark"],
                            description="compaction engine (auto: Spark from 2 GiB of work)")},
    tags=["lakeformat"],
    doc_md=__doc__,
):
    due = LakeformatDueActionsOperator(
        task_id="due_actions", pattern=PATTERN, thresholds=THRESHOLDS,
        tables_from_events=True)
    LakeformatRunDueActionsOperator.partial(
        task_id="maintain", engine="{{ params.engine }}", thresholds=THRESHOLDS,
        max_active_tis_per_dagrun=2, map_index_template="{{ task.table }}",
    ).expand_kwargs(due.output)
