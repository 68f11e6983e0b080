"""Due maintenance: the operators that ask the library what is due on each table
(`LakeformatDueActionsOperator`) and do it (`LakeformatRunDueActionsOperator`, mapped over the
first one's list, one task per table).

What is due, why, and how much work it is come from `Table.maintenance_due()` (the table's own
Paimon options, overridden by `thresholds`); each action is performed through the Table verb
that does it today, so it holds the table's maintenance lease as the other maintenance
operators do. The health figures before and after each action come from the library too
(`Table.health()`): these operators only choose the engine, log and report.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperator

from lakeformat.errors import InvalidArgumentError
from lakeformat_airflow import DEFAULT_CONN_ID
from lakeformat_airflow.operators.base import (
    DEFAULT_SPARK_CONN_ID,
    CommitIdentityMixin,
    EngineMixin,
    LakeformatBaseOperator,
    bad_argument,
    choice,
    convert_arguments,
    to_budget,
    to_count,
    to_duration,
    to_flag,
    to_options,
    to_structure,
    to_text,
)
from lakeformat_airflow.operators.lineage import TableLineageMixin

if TYPE_CHECKING:
    from lakeformat import Table

__all__ = ["COMPACTION_KINDS", "DEFAULT_SPARK_THRESHOLD", "DUE_ENGINES",
           "LakeformatDueActionsOperator", "LakeformatRunDueActionsOperator", "health_change",
           "health_summary"]

#: the due-action kinds that compact data files (the only work Spark can take)
COMPACTION_KINDS = ("compact", "full-compact")
#: `engine="auto"`: compaction whose work estimate reaches this size runs on Spark, unless the
#: table's `lakeformat.compaction.spark-threshold` or the operator's `spark_threshold` says
DEFAULT_SPARK_THRESHOLD = "2 gb"
DUE_ENGINES = ("auto", "local", "spark")
#: tables whose due actions one task asks for at once (their reads wait on the store)
TABLE_WORKERS = 8
#: at most this many actions in one task (a kind may run again after others freed more)
MAX_STEPS = 12


# -- health figures -------------------------------------------------------------------------------
def health_summary(health: Any) -> dict[str, Any] | None:
    """A `TableHealth` as XCom carries it: its `summary()` (score, the components' health,
    sorted runs, files, snapshots; `Table.health()` has the rest)."""
    return None if health is None else health.summary()


#: (label, summary key) of the figures a health line shows
_FIGURES = (("score", "score"), ("sorted runs", "max_sorted_runs"), ("files", "files"),
            ("small files", "small_files"), ("snapshots", "snapshots"),
            ("expirable snapshots", "expirable_snapshots"))


def _figures(summary: Mapping[str, Any]) -> dict[str, Any]:
    return {label: summary.get(key) for label, key in _FIGURES}


def health_line(summary: Mapping[str, Any] | None) -> str:
    """'score 41, sorted runs 14, files 120, ...' of a health summary."""
    if summary is None:
        return "health unknown"
    return ", ".join(f"{k} {v}" for k, v in _figures(summary).items() if v is not None)


def health_change(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> str:
    """'score 41 → 96, sorted runs 14 → 6, ...': the figures that changed (the score always)."""
    if before is None or after is None:
        return f"{health_line(before)} → {health_line(after)}"
    old, new = _figures(before), _figures(after)
    return ", ".join(f"{k} {old[k]} → {new[k]}" for k in old
                     if k == "score" or old[k] != new[k])


def _action_line(action: Mapping[str, Any]) -> str:
    work = f"{action.get('work_files', 0)} files, {_size(action.get('work_bytes', 0))}"
    urgent = " [urgent]" if action.get("urgent") else ""
    return f"{action['kind']}{urgent} ({action.get('rule')}): {action.get('reason')}; " \
           f"work {work}"


def _size(n: Any) -> str:
    n = float(n or 0)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"  # pragma: no cover - the loop returns


# -- arguments ------------------------------------------------------------------------------------
def to_actions(name: str, value: Any) -> list[dict[str, Any]]:
    """Due actions as `LakeformatDueActionsOperator` lists them: a list of dicts with `kind`."""
    expected = "a list of due actions (dicts with a 'kind'), as the due-actions task returns"
    actions = to_structure(name, value, list, expected, optional=False)
    if not actions or not all(isinstance(a, dict) and a.get("kind") for a in actions):
        raise bad_argument(name, value, expected)
    return actions


def _bytes(name: str, value: Any) -> int | None:
    """A size argument (bytes or "2 gb") in bytes."""
    if value is None or isinstance(value, int):
        return value
    from lakeformat.options import parse_memory_size

    return parse_memory_size(value, name)


def _thresholds(value: Mapping[str, str] | None) -> dict[str, str] | None:
    return dict(value) if value else None


# -- what is due ----------------------------------------------------------------------------------
class LakeformatDueActionsOperator(TableLineageMixin, BaseOperator):
    """Return the due maintenance of the tables matching `pattern`, ready for dynamic task
    mapping: a list with one `{"table": "db.t", "actions": [DueAction.to_dict(), ...]}` per
    table that has work (`LakeformatRunDueActionsOperator.partial(...).expand_kwargs(
    due.output)`); a table with nothing due is not in it.

    The task log has every table's health, its due actions with the rule and figures that made
    each due, and the reason each other rule has nothing; a table whose metadata cannot be read
    logs its error and the others are still reported (the task fails only when no table could
    be read). `thresholds` override the tables' options by Paimon name (e.g.
    `{"num-sorted-run.compaction-trigger": 3}`; an unknown name fails the task naming it);
    `max_actions` / `max_bytes` (bytes or "10 gb") bound the run, the most valuable actions
    first (urgent ones, then expected health gain per byte); `orphans=True` lists each table's
    directory for orphan files (off by default: it lists every file).

    `tables_from_events=True` (the DAG scheduled on `LakeformatDebtTrigger`'s asset) takes the
    tables from the run's triggering asset events — all of them — and, in a run without events
    (manual, `dag.test()`), from `dag_run.conf["tables"]` (patterns, comma-separated), else
    `pattern`; tables outside `pattern` are left out. The XCom key `tables` holds each
    examined table's score, due kinds, not-due reasons and errors. Metrics: each examined
    table's `lakeformat.health.score` and `lakeformat.health.actions_due`; lineage: the tables
    read, as inputs.
    """

    arguments = {"thresholds": to_options, "max_actions": to_count, "max_bytes": to_budget,
                 "orphans": to_flag, "tables_from_events": to_flag}
    template_fields: Sequence[str] = ("pattern", *arguments)
    ui_color = "#cfe8f3"
    lineage_role = "read"

    def __init__(self, *, pattern: str = "*.*", lakeformat_conn_id: str = DEFAULT_CONN_ID,
                 thresholds: Mapping[str, Any] | None = None, max_actions: int | None = None,
                 max_bytes: int | str | None = None, orphans: bool = False,
                 tables_from_events: bool = False, **kwargs: Any):
        super().__init__(**kwargs)
        if not isinstance(pattern, str) or not pattern.strip():
            raise InvalidArgumentError(f"pattern must be text such as 'db.*', got {pattern!r}")
        self.pattern = pattern
        self.lakeformat_conn_id = lakeformat_conn_id
        self.thresholds = thresholds
        self.max_actions = max_actions
        self.max_bytes = max_bytes
        self.orphans = orphans
        self.tables_from_events = tables_from_events
        convert_arguments(self, self.arguments, rendered=False)

    def execute(self, context: Any) -> list[dict[str, Any]]:
        import time

        from lakeformat_airflow.hooks.lakeformat import LakeformatHook
        from lakeformat_airflow.operators import metrics
        from lakeformat_airflow.operators.base import library_errors

        started = time.monotonic()
        try:
            with library_errors():
                convert_arguments(self, self.arguments, rendered=True)
                from lakeformat.health import check_thresholds, rank_actions

                check_thresholds(_thresholds(self.thresholds))  # a bad name fails here, named
                catalog = LakeformatHook(self.lakeformat_conn_id).get_catalog()
                names = self.table_names(catalog, context)
                reports, failed = self.reports(catalog, names)
                if failed and not reports:  # nothing could be read: the store, not a table
                    raise next(iter(failed.values()))
                ranked = rank_actions(reports, max_actions=self.max_actions,
                                      max_bytes=_bytes("max_bytes", self.max_bytes))
        except Exception:
            metrics.emit("due_actions", None, failed=True, logger=self.log)
            raise
        self.record_lineage(catalog.warehouse, [(name, self._schemas[name])
                                                for name in names if name in self._schemas])
        metrics.emit("due_actions", None, seconds=time.monotonic() - started, extra=[
            measure for r in reports for measure in (
                metrics.Measure("gauge", metrics.metric_name("health", "score"), r.score,
                                r.table),
                metrics.Measure("gauge", metrics.metric_name("health", "actions_due"),
                                len(r.actions), r.table))
            if measure.value is not None], logger=self.log)
        work: dict[str, list[dict[str, Any]]] = {}
        for action in ranked:
            work.setdefault(action.table, []).append(action.to_dict())
        for report in reports:
            if report.actions and report.table not in work:
                self.log.info("%s: %d action(s) due, none within this run's budget "
                              "(max_actions=%s, max_bytes=%s)", report.table,
                              len(report.actions), self.max_actions, self.max_bytes)
        self.log.info("%d of %d table(s) have due maintenance: %s", len(work), len(names),
                      ", ".join(f"{t} ({', '.join(a['kind'] for a in acts)})"
                                for t, acts in work.items()) or "none")
        examined = {r.table: {"score": r.score, "snapshot_id": r.snapshot_id,
                              "due": [a.kind for a in r.actions], "not_due": dict(r.not_due),
                              "errors": list(r.errors)} for r in reports}
        for name, error in failed.items():
            examined[name] = {"score": None, "snapshot_id": None, "due": [], "not_due": {},
                              "errors": [f"{type(error).__name__}: {error}"]}
        context["ti"].xcom_push(key="tables", value=dict(sorted(examined.items())))
        return [{"table": table, "actions": actions} for table, actions in work.items()]

    def table_names(self, catalog: Any, context: Any) -> list[str]:
        """The tables to examine: matching `pattern`, narrowed by the triggering events."""
        from lakeformat_airflow.operators.catalog import matching_tables

        names = matching_tables(catalog, self.pattern)
        if not self.tables_from_events:
            return names
        wanted = event_tables(context)
        source = "the triggering asset events"
        if not wanted:
            conf = getattr(context.get("dag_run"), "conf", None) or {}
            given = conf.get("tables")
            if isinstance(given, (list, tuple)):
                given = ",".join(str(t) for t in given)
            if not given:
                self.log.info("no triggering asset events and no tables in the run's conf: "
                              "every table matching %s", self.pattern)
                return names
            wanted, source = matching_tables(catalog, str(given)), "the run's conf"
        outside = sorted(set(wanted) - set(names))
        if outside:
            self.log.warning("%s name table(s) outside %s or no longer there, left out: %s",
                             source, self.pattern, ", ".join(outside))
        chosen = [n for n in names if n in set(wanted)]
        self.log.info("tables from %s: %s", source, ", ".join(chosen) or "none")
        return chosen

    def reports(self, catalog: Any, names: Sequence[str]
                ) -> tuple[list[Any], dict[str, Exception]]:
        """Each table's `DueReport`, logged; a table that cannot be read is logged and left out
        (its error is returned by name). The thresholds were checked before: an error here is
        the table's own."""
        from concurrent.futures import ThreadPoolExecutor

        self._schemas: dict[str, Any] = {}  # the schemas read, for lineage

        def due(name: str) -> Any:
            try:
                table = catalog.get_table(name)
                self._schemas[name] = table.table_schema
                return table.maintenance_due(_thresholds(self.thresholds), orphans=self.orphans)
            except Exception as e:  # noqa: BLE001 - one broken table must not stop the others
                return e

        reports: list[Any] = []
        failed: dict[str, Exception] = {}
        with ThreadPoolExecutor(max_workers=TABLE_WORKERS) as pool:  # store round trips
            outcomes = list(pool.map(due, names))
        for name, outcome in zip(names, outcomes, strict=True):
            if isinstance(outcome, Exception):
                self.log.error("%s: what is due cannot be told: %s: %s", name,
                               type(outcome).__name__, outcome)
                failed[name] = outcome
                continue
            self.log_report(outcome)
            reports.append(outcome)
        return reports, failed

    def log_report(self, report: Any) -> None:
        summary = health_summary(report.health)
        self.log.info("%s (snapshot %s): %s", report.table, report.snapshot_id,
                      health_line(summary) if summary else f"score {report.score}")
        for error in report.errors:
            self.log.error("%s: %s", report.table, error)
        for action in report.actions:
            self.log.info("%s: due: %s", report.table, _action_line(action.to_dict()))
        for rule, reason in report.not_due.items():
            self.log.info("%s: not due: %s: %s", report.table, rule, reason)
        if not report.actions and not report.errors:
            self.log.info("%s: nothing due", report.table)


def event_tables(context: Any) -> list[str]:
    """The `table` of every triggering asset event's payload (all events of all assets: the
    scheduler folds the events that arrived before the run into one run)."""
    events = context.get("triggering_asset_events") or {}
    names: list[str] = []
    for asset_events in events.values():
        for event in asset_events:
            payload = (getattr(event, "extra", None) or {}).get("payload") or {}
            table = payload.get("table") if isinstance(payload, dict) else None
            if isinstance(table, str) and table not in names:
                names.append(table)
    return names


# -- doing it -------------------------------------------------------------------------------------
@dataclasses.dataclass
class DueRunResult:
    """What `LakeformatRunDueActionsOperator` did on one table."""

    table: str
    actions: list[dict[str, Any]]
    skipped: list[dict[str, Any]]
    health_before: dict[str, Any] | None
    health_after: dict[str, Any] | None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @property
    def snapshot_changed(self) -> bool:
        ids = [(h or {}).get("snapshot_id") for h in (self.health_before, self.health_after)]
        return ids[0] != ids[1]

    def __str__(self) -> str:
        done = ", ".join(f"{a['action']['kind']} on {a['engine']}" for a in self.actions)
        lines = [f"{self.table}: {done or 'nothing done'}; "
                 f"{health_change(self.health_before, self.health_after)}"]
        lines += [f"  skipped {s['kind']}: {s['reason']}" for s in self.skipped]
        return "\n".join(lines)


class LakeformatRunDueActionsOperator(CommitIdentityMixin, EngineMixin, LakeformatBaseOperator):
    """Perform a table's due `actions` (the dicts `LakeformatDueActionsOperator` listed for
    it) in the library's order (compaction, tag expiry, partition expiry, manifest compaction,
    snapshot expiry, schema files, orphans), each through the Table verb that does it — so
    each holds the table's maintenance lease as the maintenance operators do (`skip_when_busy`
    skips the task when another job keeps it).

    Each action is checked again just before it runs (`Table.maintenance_due(thresholds)`):
    one a writer's own compaction already cleared is skipped with the reason. With
    `follow_ups=True` (default) a metadata action that becomes due because an earlier one ran
    (schema files that expiry freed, say) runs too; compaction and orphan removal run only
    when listed. The result (XCom) has per action its result, the engine it ran on, and the
    table's health before and after (score, sorted runs, files, snapshots, ...; the task log
    has the same in a line), plus the table's health before the first and after the last.

    `engine`: `"auto"` (default) compacts on Spark (`spark_conn_id`, default `spark_default`)
    when the action's work estimate (bytes of the files it rewrites) reaches
    `spark_threshold` (bytes or a size text such as "512 mb"; by default the table's option
    `lakeformat.compaction.spark-threshold`, default 2 GiB), in the task's process below it —
    and in-process when no such connection exists (a warning says so); `"local"` /
    `"spark"` force one. Only compaction runs on Spark; the other actions are
    metadata work and run in the task. `partition_idle_time` and `memory_budget` are the
    compaction's (see `LakeformatCompactOperator`); compactions commit idempotently per logical
    date (user `airflow:<dag>.<task>[<map_index>]:<kind>`).
    """

    arguments = {"actions": to_actions, "engine": choice(*DUE_ENGINES),
                 "spark_threshold": to_budget, "thresholds": to_options,
                 "partition_idle_time": to_duration, "memory_budget": to_budget,
                 "follow_ups": to_flag, "commit_user": to_text}
    template_fields: Sequence[str] = ("table", *arguments, "commit_identifier")
    writes_table = True

    def __init__(self, *, table: str, actions: Any, engine: str = "auto",
                 spark_conn_id: str = DEFAULT_SPARK_CONN_ID,
                 spark_threshold: int | str | None = None,
                 thresholds: Mapping[str, Any] | None = None, partition_idle_time: Any = None,
                 memory_budget: int | str | None = None, follow_ups: bool = True,
                 commit_user: str | None = None, commit_identifier: int | str | None = None,
                 **kwargs: Any):
        super().__init__(table=table, **kwargs)
        self.actions = actions
        self.follow_ups = follow_ups
        self.engine = engine
        self.spark_conn_id = spark_conn_id
        self.spark_threshold = spark_threshold
        self.thresholds = thresholds
        self.partition_idle_time = partition_idle_time
        self.memory_budget = memory_budget
        self.commit_user = commit_user
        self.commit_identifier = commit_identifier
        self.convert_arguments(rendered=False)

    def changed(self, result: Any) -> bool:
        return result.snapshot_changed

    def run(self, table: Table, context: Any) -> DueRunResult:
        from lakeformat.health import order_within_table

        thresholds = _thresholds(self.thresholds)
        planned = list(dict.fromkeys(a["kind"] for a in self.actions))
        report = self._due(table, thresholds, planned, ())
        before = first = self._health(table, report)
        self.log.info("%s before: %s", table.name, health_line(before))
        done: list[dict[str, Any]] = []
        ran: list[str] = []
        while len(ran) < MAX_STEPS:
            action = next((a for a in order_within_table(report.actions)
                           if self._wanted(a.kind, planned, ran)), None)
            if action is None:
                break
            engine = self.engine_for(action)
            follow = "" if action.kind in planned else " (due after the actions before it)"
            self.log.info("%s: %s on %s%s", table.name, _action_line(action.to_dict()), engine,
                          follow)
            result = self.perform(table, action, engine, context)
            self.log.info("%s", result)
            ran.append(action.kind)
            report = self._due(table, thresholds, planned, ran)
            after = self._health(table, report)
            self.log.info("%s: %s: %s", table.name, action.kind, health_change(before, after))
            done.append({"action": action.to_dict(), "engine": engine,
                         "result": result.to_dict(), "health_before": before,
                         "health_after": after})
            before = after
        skipped = [{"kind": kind, "reason": self._not_run(kind, report)}
                   for kind in planned if kind not in ran]
        for skip in skipped:
            self.log.info("%s: %s not run: %s", table.name, skip["kind"], skip["reason"])
        left = [a for a in report.actions if a.kind not in ran]
        if left:
            self.log.info("%s: due now, for a later run: %s", table.name,
                          "; ".join(_action_line(a.to_dict()) for a in left))
        return DueRunResult(table=table.name, actions=done, skipped=skipped,
                            health_before=first, health_after=before)

    def _not_run(self, kind: str, report: Any) -> str:
        """Why a listed action did not run: its rule's not-due reason now."""
        if any(a.kind == kind for a in report.actions):  # pragma: no cover - MAX_STEPS reached
            return f"still due: left for a later run ({MAX_STEPS} actions in one task at most)"
        rules = [a.get("rule") for a in self.actions if a["kind"] == kind]
        reasons = [f"{r}: {report.not_due[r]}" for r in rules if r in report.not_due]
        return "no longer due: " + ("; ".join(reasons) or "the rules have nothing for it now")

    def _wanted(self, kind: str, planned: Sequence[str], ran: Sequence[str]) -> bool:
        """Whether a due action of `kind` runs now: a planned kind that has not run; with
        `follow_ups`, also a metadata action that became due because of the actions this task
        ran — one not listed (schema files that expiry freed), or one that ran already and is
        due again after others (expiry again after a manifest compaction). Compaction and
        orphan removal run once, and only when listed: the run's budget was spent on them."""
        if kind not in ran:
            return kind in planned or (self.follow_ups and bool(ran)
                                       and kind not in (*COMPACTION_KINDS, "remove-orphans"))
        if not self.follow_ups or kind in (*COMPACTION_KINDS, "remove-orphans"):
            return False
        last = len(ran) - 1 - ran[::-1].index(kind)
        return last < len(ran) - 1  # something else ran since: its effect may be due

    def _due(self, table: Table, thresholds: dict[str, str] | None, planned: Sequence[str],
             ran: Sequence[str]) -> Any:
        """What is due now; the orphan scan (a listing of the table's directory) only while a
        planned orphan removal has not run."""
        orphans = "remove-orphans" in planned and "remove-orphans" not in ran
        return table.maintenance_due(thresholds, orphans=orphans)

    @staticmethod
    def _health(table: Table, report: Any) -> dict[str, Any] | None:
        return health_summary(report.health if report.health is not None else table.health())

    # -- engine ---------------------------------------------------------------------------------
    def engine_for(self, action: Any) -> str:
        """Where `action` runs: see the class docstring."""
        if action.kind not in COMPACTION_KINDS:
            return "local"
        if self.engine != "auto":
            return self.engine
        if self.spark_threshold is None:  # the library's choice, by the table's option
            threshold = "lakeformat.compaction.spark-threshold"
            if getattr(action, "engine", "local") != "spark":
                return "local"
        else:
            threshold = f"spark_threshold {self.spark_threshold}"
            if action.work_bytes < _bytes("spark_threshold", self.spark_threshold):
                return "local"
        from airflow.sdk import BaseHook
        from airflow.sdk.exceptions import AirflowNotFoundException

        try:
            BaseHook.get_connection(self.spark_conn_id)
        except AirflowNotFoundException:
            self.log.warning("%s: %s of %s reaches %s, but there is no connection %r: "
                             "compacting in the task's process", action.table, action.kind,
                             _size(action.work_bytes), threshold, self.spark_conn_id)
            return "local"
        return "spark"

    def use_spark(self) -> bool:  # EngineMixin's: the engine is chosen per action here
        return self.engine == "spark"

    def perform(self, table: Table, action: Any, engine: str, context: Any) -> Any:
        """One action through its Table verb (the library's `perform`); compaction gets this
        task's commit identity, idle time, memory budget and progress log, and Spark."""
        if action.kind not in COMPACTION_KINDS:
            from lakeformat.health import perform

            return perform(table, action)
        user, identifier = self.commit_identity(context)
        kwargs = {**action.arguments, "partitions": action.arguments.get("partitions") or None,
                  "partition_idle_time": self.partition_idle_time,
                  "memory_budget": self.memory_budget, "progress": self.log.info,
                  "commit_user": f"{user}:{action.kind}", "commit_identifier": identifier}
        if engine != "spark":
            return table.compact(**kwargs)
        import inspect

        from lakeformat.spark.compaction import compact

        spark = self.spark(context)
        if kwargs.get("options") and "options" not in inspect.signature(compact).parameters:
            from lakeformat.spark.runner import SparkRunner  # the overrides need the verb's

            return table.compact(**kwargs, workers=1, runner=SparkRunner(spark))
        return compact(spark, table, **kwargs)
