"""The operators' Airflow metrics: what a task did to a table, as StatsD-style counters, gauges
and timers under `lakeformat.`, each tagged with the table.

`measures(operation, result)` turns an operator's result dict (the XCom it returns) into
`Measure`s; `emit` sends them through Airflow's `Stats` (`[metrics]` configuration:
`statsd_on`, `statsd_host`, `statsd_port`, `statsd_prefix`; the `table` tag reaches a plain
StatsD server only with `statsd_influxdb_enabled`). A name is `lakeformat.<operation>.<what>`:

* `<operation>.duration` (timer) — every operator, the time of its library call;
* `<operation>.errors` (counter) — a run that raised (the error still fails or retries the task);
* compaction (`compact`): `files_compacted`, `bytes_compacted` (the files it rewrote),
  `files_written`, `bytes_written`, `rows_written`, `buckets_compacted`, `snapshots_committed`,
  `partitions_failed`;
* writes (`ingest`, `backfill`): `files_written`, `bytes_written`, `rows_written`,
  `files_replaced` (an overwrite's), `snapshots_committed`; a commit found already landed
  (a retry of the same date) counts nothing;
* cleanup (`expire_snapshots`, `clean_schemas`, `remove_orphan_files`, `expire_partitions`,
  `rollback`): `files_deleted`, `bytes_deleted`, `data_files_deleted`,
  `manifest_files_deleted`, `schema_files_removed`, `snapshots_expired` (expiry; `rollback`
  says `snapshots_deleted`), `partitions_expired`, `files_dropped`, `bytes_dropped`; a dry
  run deletes nothing and counts nothing;
* due maintenance: `run_due_actions.actions_run` / `actions_skipped`, each action's own
  measures under its operation (a compaction it ran counts under `compact`), and the gauges
  `health.score_before` / `health.score_after`; `due_actions` sets `health.score` and
  `health.actions_due` per table it examined.

Counters that would add 0 are not sent. Metrics are best effort: `emit` logs a failure and
never raises, so a metrics backend cannot fail a task.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["PREFIX", "Measure", "emit", "measures", "metric_name", "operation_name",
           "send"]

log = logging.getLogger(__name__)

PREFIX = "lakeformat"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")
_WORD = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


@dataclass(frozen=True)
class Measure:
    """One metric: `kind` is `incr` (counter), `gauge` or `timing` (seconds)."""

    kind: str
    name: str
    value: float
    table: str | None = None


def metric_name(*parts: str) -> str:
    """`lakeformat.<parts>` with anything StatsD refuses (outside `[A-Za-z0-9_.-]`) as `_`."""
    return ".".join([PREFIX, *(_UNSAFE.sub("_", p.replace("-", "_")) for p in parts)])


def operation_name(operator: Any) -> str:
    """An operator's metric operation: its `metrics_operation` attribute, else its class name
    without `Lakeformat`/`Operator`, in snake case (`LakeformatExpireSnapshotsOperator` ->
    `expire_snapshots`)."""
    given = getattr(operator, "metrics_operation", None)
    if given:
        return str(given)
    name = type(operator).__name__.removeprefix("Lakeformat").removesuffix("Operator")
    return _WORD.sub("_", name).lower() or "operator"


def _tag(table: str | None) -> dict[str, str] | None:
    """The `table` tag, its value StatsD-safe (Airflow drops values with `,` or `=`)."""
    return None if not table else {"table": _UNSAFE.sub("_", table)}


def _count(value: Any) -> int:
    if isinstance(value, (list, tuple, dict)):
        return len(value)
    return int(value or 0)


def _counters(operation: str, table: str | None, figures: Iterable[tuple[str, Any]]
              ) -> list[Measure]:
    out = []
    for what, value in figures:
        n = _count(value)
        if n:
            out.append(Measure("incr", metric_name(operation, what), n, table))
    return out


def _is_compaction(r: Mapping[str, Any]) -> bool:
    return isinstance(r.get("total"), Mapping) and "full" in r


def _is_commit(r: Mapping[str, Any]) -> bool:
    return "files_added" in r and "rows_written" in r


def _is_cleanup(r: Mapping[str, Any]) -> bool:
    return "operation" in r and "deleted" in r


def _is_backfill(r: Mapping[str, Any]) -> bool:
    return isinstance(r.get("days"), list) and "landed" in r


def _is_due_run(r: Mapping[str, Any]) -> bool:
    return isinstance(r.get("actions"), list) and "health_before" in r


def measures(operation: str, result: Any, table: str | None = None) -> list[Measure]:
    """The measures of one result dict (`to_dict()` of a library result, or an operator's
    own); a shape it does not know gives none."""
    if not isinstance(result, Mapping):
        return []
    table = result.get("table") if isinstance(result.get("table"), str) else table
    if _is_compaction(result):
        t = result["total"]
        return _counters(operation, table, (
            ("files_compacted", t.get("files_in")), ("bytes_compacted", t.get("bytes_in")),
            ("files_written", t.get("files_out")), ("bytes_written", t.get("bytes_out")),
            ("rows_written", t.get("rows_out")),
            ("buckets_compacted", t.get("buckets_compacted")),
            ("snapshots_committed", result.get("snapshot_ids")),
            ("partitions_failed", result.get("failed"))))
    if _is_commit(result):
        if result.get("already_committed") or result.get("snapshot_id") is None:
            return []
        return _counters(operation, table, (
            ("files_written", result.get("files_added")),
            ("bytes_written", result.get("bytes_added")),
            ("rows_written", result.get("rows_written")),
            ("files_replaced", result.get("files_deleted")), ("snapshots_committed", 1)))
    if _is_cleanup(result):
        if result.get("dry_run"):
            return []
        expired = "snapshots_expired" if result.get("operation") == "expire-snapshots" \
            else "snapshots_deleted"
        return _counters(operation, table, (
            ("files_deleted", result.get("deleted")),
            ("bytes_deleted", result.get("bytes_deleted")),
            ("data_files_deleted", result.get("data_files_deleted")),
            ("manifest_files_deleted", result.get("manifest_files_deleted")),
            ("schema_files_removed", result.get("schema_files_deleted")),
            (expired, result.get("snapshots_deleted")),
            ("partitions_expired", result.get("partitions_expired")),
            ("tags_expired", result.get("tags_deleted")),
            ("files_dropped", result.get("data_files_dropped")),
            ("bytes_dropped", result.get("bytes_dropped"))))
    if _is_backfill(result):
        landed = [d for d in result["days"] if isinstance(d, Mapping)
                  and d.get("status") == "landed"]
        return _counters(operation, table, (
            ("days_landed", landed), ("days_skipped", result.get("skipped")),
            ("rows_written", sum(int(d.get("rows_written") or 0) for d in landed)),
            ("snapshots_committed", [d for d in landed if d.get("snapshot_id") is not None])))
    if _is_due_run(result):
        return _due_run(operation, table, result)
    return []


def _action_operation(result: Mapping[str, Any], kind: str) -> str:
    """The operation an action's result counts under: the standalone operator's."""
    if _is_compaction(result):
        return "compact"
    if _is_cleanup(result):
        return str(result["operation"]).replace("-", "_")
    return kind.replace("-", "_")


def _due_run(operation: str, table: str | None, result: Mapping[str, Any]) -> list[Measure]:
    out = _counters(operation, table, (("actions_run", result.get("actions")),
                                       ("actions_skipped", result.get("skipped"))))
    for done in result["actions"]:
        if not isinstance(done, Mapping) or not isinstance(done.get("result"), Mapping):
            continue
        action, inner = done.get("action") or {}, done["result"]
        op = _action_operation(inner, str(action.get("kind") or "action"))
        out += measures(op, inner, table)
        seconds = inner.get("duration_s")
        if isinstance(seconds, (int, float)) and not isinstance(seconds, bool):
            out.append(Measure("timing", metric_name(op, "duration"), float(seconds), table))
    for key, what in (("health_before", "score_before"), ("health_after", "score_after")):
        score = (result.get(key) or {}).get("score")
        if isinstance(score, (int, float)) and not isinstance(score, bool):
            out.append(Measure("gauge", metric_name("health", what), score, table))
    return out


def send(items: Iterable[Measure]) -> None:
    """Send `items` through Airflow's `Stats` (raises what the backend raises)."""
    from airflow.sdk.observability import stats

    for m in items:
        tags = _tag(m.table)
        if m.kind == "incr":
            stats.incr(m.name, int(m.value), tags=tags)
        elif m.kind == "gauge":
            stats.gauge(m.name, m.value, tags=tags)
        else:
            stats.timing(m.name, dt.timedelta(seconds=m.value), tags=tags)


def emit(operation: str, table: str | None, result: Any = None, seconds: float | None = None,
         *, failed: bool = False, extra: Iterable[Measure] = (),
         logger: logging.Logger | None = None) -> None:
    """Send one operator run's metrics: its `result`'s measures, `extra` ones, the duration
    (`seconds`) and, when `failed`, an error count. Never raises: a failure is logged."""
    try:
        items = [] if failed else measures(operation, result, table)
        items += list(extra)
        if failed:
            items.append(Measure("incr", metric_name(operation, "errors"), 1, table))
        if seconds is not None:
            items.append(Measure("timing", metric_name(operation, "duration"), seconds, table))
        send(items)
    except Exception as e:  # noqa: BLE001 - metrics are best effort: never fail the task
        (logger or log).warning("lakeformat metrics of %s on %s not sent: %s: %s", operation,
                                table, type(e).__name__, e)
