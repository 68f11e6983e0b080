"""`LakeformatSnapshotSensor`: wait for a new snapshot of a table — any commit, or one of a
kind (APPEND, COMPACT, OVERWRITE), or one that changed a given partition.

Where the wait's baseline lives, by mode:

* poke — on the sensor instance: the first poke reads the latest snapshot id, later pokes
  (same process) only read snapshots committed since;
* reschedule — in the task instance's `task_state_store` (Airflow 3.3): every try is a new
  process, and XComs are cleared at the start of each try (the execution API clears a task's
  XComs unless it resumes from a deferral), so XCom cannot carry the baseline from try to try;
  the state store is kept per task instance and a retry (a new task instance id) starts afresh;
* deferrable — in the trigger's arguments: `execute` checks once, then hands the watermark it
  reached to `LakeformatSnapshotTrigger`, which polls in the triggerer.

Errors follow the provider's policy (`operators.base.library_errors`): a missing table, a bad
connection or a partition key the table does not have fails the task at once instead of poking
until the timeout; a store fault propagates, so Airflow's retries apply.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseSensorOperator, PokeReturnValue

from lakeformat_airflow import DEFAULT_CONN_ID
from lakeformat_airflow.operators.base import (
    Conversion,
    check_table_name,
    convert_arguments,
    library_errors,
    to_flag,
    to_structure,
)
from lakeformat_airflow.triggers.snapshot import (
    LakeformatSnapshotTrigger,
    commit_kind_arg,
    instant_millis,
    snapshot_id_arg,
)

if TYPE_CHECKING:
    from lakeformat import SnapshotWatch, Table

#: `task_state_store` key of the watermark in reschedule mode
STATE_KEY = "lakeformat_snapshot_watermark"


def _checked_instant(name: str, value: Any) -> Any:
    """`newer_than` as given (the watch converts it), once it is known to convert."""
    return None if instant_millis(value, name) is None else value


def _partition(name: str, value: Any) -> dict[str, Any] | None:
    return to_structure(name, value, dict, "a {key: value} dict, e.g. {'dt': '{{ ds }}'}")


#: the sensor's arguments and their conversions (see `LakeformatBaseOperator`)
ARGUMENTS: dict[str, Conversion] = {
    "commit_kind": lambda name, value: commit_kind_arg(value),
    "after_snapshot_id": lambda name, value: snapshot_id_arg(value),
    "newer_than": _checked_instant,
    "partition": _partition,
}


def default_deferrable() -> bool:
    """`[operators] default_deferrable` (env `AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE`), read
    when the sensor is built, as Airflow's own providers default their `deferrable`."""
    from airflow.sdk import conf

    return conf.getboolean("operators", "default_deferrable", fallback=False)


class LakeformatSnapshotSensor(BaseSensorOperator):
    """Wait until table `table` (`database.table`) has a new snapshot; return it as a dict
    (`snapshot_id`, `commit_kind`, `commit_user`, `commit_identifier`, `time_millis`, `time`
    (ISO, UTC), `schema_id`, `delta_record_count`, `total_record_count`, `table`).

    New means: id above `after_snapshot_id` (templated; an int or digit text) when given;
    committed at or after `newer_than` (templated; a datetime or ISO text such as
    `"{{ data_interval_end }}"`) when given — both must hold when both are given; with neither,
    newer than the latest snapshot when the sensor first pokes. `commit_kind` keeps only
    snapshots of that kind; `partition` (`{key: value}`, templated, values as text such as
    `{"dt": "{{ ds }}"}`) only snapshots whose own changes touch that partition (by some or all
    of its keys). The first matching snapshot, oldest first, is returned.

    `deferrable=True` waits in the triggerer (`LakeformatSnapshotTrigger`, polling every
    `poke_interval` seconds); its default is Airflow's `[operators] default_deferrable`
    (false unless set). `timeout` bounds the wait in every mode. `table`, the bounds,
    `commit_kind` and `partition` may be templates: a literal value is checked when the DAG is
    parsed, a template once rendered (a bad one fails the task at once).
    """

    template_fields: Sequence[str] = ("table", *ARGUMENTS)
    ui_color = "#cfe8f3"

    def __init__(self, *, table: str, lakeformat_conn_id: str = DEFAULT_CONN_ID,
                 after_snapshot_id: int | str | None = None,
                 newer_than: dt.datetime | str | None = None, commit_kind: str | None = None,
                 partition: dict[str, Any] | None = None, deferrable: bool | None = None,
                 **kwargs: Any):
        super().__init__(**kwargs)
        check_table_name(table)
        self.table = table
        self.lakeformat_conn_id = lakeformat_conn_id
        self.commit_kind = commit_kind
        self.after_snapshot_id = after_snapshot_id
        self.newer_than = newer_than
        self.partition = partition
        convert_arguments(self, ARGUMENTS, rendered=False)
        self.deferrable = to_flag("deferrable", default_deferrable() if deferrable is None
                                  else deferrable)
        self._watch: SnapshotWatch | None = None
        self._table: Table | None = None

    # -- the wait ------------------------------------------------------------------------------
    def _rendered_watch(self) -> SnapshotWatch:
        """The criteria from the rendered template fields (a bad value raises
        `InvalidArgumentError`, which fails the task at once)."""
        check_table_name(self.table)
        convert_arguments(self, ARGUMENTS, rendered=True)
        from lakeformat import SnapshotWatch

        return SnapshotWatch(after_snapshot_id=self.after_snapshot_id,
                             newer_than_millis=instant_millis(self.newer_than),
                             commit_kind=self.commit_kind, partition=self.partition or None)

    def _store(self, context: Any) -> Any:
        return context.get("task_state_store") if self.reschedule else None

    def _start(self, context: Any, table: Table, watch: SnapshotWatch) -> SnapshotWatch:
        if self._watch is not None:
            return self._watch
        store = self._store(context)
        saved = store.get(STATE_KEY) if store is not None else None
        if isinstance(saved, dict) and isinstance(saved.get("after_snapshot_id"), int):
            # a later try of a rescheduled wait: resume from the watermark it reached
            watch.after_id = max(watch.after_id or 0, saved["after_snapshot_id"])
        watch.start(table)
        self.log.info("waiting for a snapshot of %s: %s", self.table, watch.describe())
        self._watch = watch
        return watch

    def poke(self, context: Any) -> bool | PokeReturnValue:
        with library_errors():
            # the rendered arguments are checked before the store is touched
            watch = self._watch or self._rendered_watch()
            if self._table is None:
                from lakeformat_airflow.hooks.lakeformat import LakeformatHook

                self._table = LakeformatHook(self.lakeformat_conn_id).get_table(self.table)
            watch = self._start(context, self._table, watch)
            found = watch.check(self._table)
        store = self._store(context)
        if found is None:
            if store is not None and watch.after_id is not None:
                store.set(STATE_KEY, {"after_snapshot_id": watch.after_id})
            self.log.info("no matching snapshot of %s yet (checked up to id %s)", self.table,
                          watch.after_id)
            return False
        self.log.info("snapshot %s of %s (%s) matches", found["snapshot_id"], self.table,
                      found["commit_kind"])
        return PokeReturnValue(is_done=True, xcom_value=found)

    # -- deferrable ----------------------------------------------------------------------------
    def execute(self, context: Any) -> Any:
        if not self.deferrable:
            return super().execute(context)
        first = self.poke(context)
        if isinstance(first, PokeReturnValue):
            return first.xcom_value
        assert self._watch is not None
        self.defer(
            trigger=LakeformatSnapshotTrigger(
                table=self.table, lakeformat_conn_id=self.lakeformat_conn_id,
                after_snapshot_id=self._watch.after_id,
                newer_than_millis=self._watch.newer_than_millis,
                commit_kind=self.commit_kind, partition=self._watch.partition,
                poll_interval=self.poke_interval),
            method_name="execute_complete", timeout=dt.timedelta(seconds=self.timeout))

    def execute_complete(self, context: Any, event: dict[str, Any] | None = None) -> Any:
        """Resume after the trigger fired: the snapshot it found, or its error."""
        from airflow.sdk.exceptions import AirflowException, AirflowFailException

        if not event or event.get("status") not in ("success", "error"):
            raise AirflowException(f"unexpected event from the snapshot trigger: {event!r}")
        if event["status"] == "error":
            error = AirflowFailException if event.get("fatal") else AirflowException
            raise error(event.get("message", "the snapshot trigger failed"))
        snapshot = event["snapshot"]
        self.log.info("snapshot %s of %s (%s) matches", snapshot["snapshot_id"], self.table,
                      snapshot["commit_kind"])
        return snapshot
