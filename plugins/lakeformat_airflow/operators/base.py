"""What every lakeformat operator shares: the connection, the table, argument checks, the
error policy, the commit identity of a run, outlets, and the result returned for XCom.

Error policy: errors lakeformat marks as worth a retry (`lakeformat.RETRYABLE_ERRORS`:
conflicts, a commit whose outcome is unknown, a lock held too long, an engine failure) and
errors outside lakeformat (store faults, network) propagate, so Airflow retries the task as
configured; every other lakeformat error — and a connection that cannot work — fails the task
at once (`AirflowFailException`) with the library's message: retrying a bad argument helps no
one.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Iterator, Sequence
from typing import Any

from airflow.sdk import BaseOperator

from lakeformat.errors import InvalidArgumentError
from lakeformat_airflow import DEFAULT_CONN_ID
from lakeformat_airflow.assets import connection_alias, table_asset

ENGINES = ("local", "spark")
DEFAULT_SPARK_CONN_ID = "spark_default"


def templated(value: Any) -> bool:
    """Whether `value` is (or holds) a Jinja template or a value another task provides (an
    XComArg, a mapped argument): it is checked after rendering instead."""
    if hasattr(value, "resolve"):
        return True
    if isinstance(value, str):
        return "{{" in value or "{%" in value
    if isinstance(value, (list, tuple)):
        return any(templated(v) for v in value)
    if isinstance(value, dict):
        return any(templated(v) for v in value.values())
    return False


def check_table_name(table: Any) -> None:
    """'database.table' — unless a template or a mapped/XCom argument resolves it later."""
    if templated(table):
        return
    if not isinstance(table, str) or table.count(".") != 1 or not all(table.split(".")):
        raise InvalidArgumentError(f"table must be 'database.table', got {table!r}")


def check_choice(name: str, value: Any, choices: Sequence[Any]) -> None:
    if templated(value):
        return
    if value not in choices:
        raise InvalidArgumentError(f"{name} must be one of {', '.join(map(repr, choices))}, "
                                   f"got {value!r}")


def check_count(name: str, value: Any, minimum: int = 1) -> None:
    """An optional whole number of at least `minimum` (retention counts, limits)."""
    if value is None or templated(value):
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidArgumentError(f"{name} must be a whole number >= {minimum}, got {value!r}")


def check_duration(name: str, value: Any) -> None:
    """An optional age: a timedelta, a datetime (the cut-off) or Paimon's text ("7 d")."""
    if value is None or templated(value) or isinstance(value, (dt.timedelta, dt.datetime)):
        return
    from lakeformat.options import parse_duration

    try:
        parse_duration(value, name)
    except Exception as e:  # noqa: BLE001 - re-raised as the operator's argument error
        raise InvalidArgumentError(f"{name}: {e}") from None


@contextlib.contextmanager
def library_errors() -> Iterator[None]:
    """The error policy of the module docstring."""
    from airflow.sdk.exceptions import AirflowFailException, AirflowNotFoundException

    import lakeformat as lf
    from lakeformat_airflow.hooks.lakeformat import ConnectionConfigError

    try:
        yield
    except lf.RETRYABLE_ERRORS:
        raise
    except (lf.LakeformatError, ConnectionConfigError, AirflowNotFoundException) as e:
        raise AirflowFailException(f"{type(e).__name__}: {e}") from e


class LakeformatBaseOperator(BaseOperator):
    """One library call on one table of a `lakeformat` connection.

    `table` is `database.table`; `lakeformat_conn_id` the connection (default
    `lakeformat_default`). `skip_when_busy=True` skips the task instead of failing it when
    another job holds the table's maintenance lease (a frequent job such as hourly expiry,
    which the next run catches up on). Operators that commit to the table (`writes_table`)
    declare the connection's asset alias as an outlet and, when a run changed the table,
    attach an event for the table's Asset `paimon://<warehouse>/<db>/<table>` to it (see
    `lakeformat_airflow.assets`): the warehouse is the connection's real one, read in the
    task, and templated or mapped table names get their events too.
    """

    template_fields: Sequence[str] = ("table",)
    ui_color = "#cfe8f3"
    writes_table = False

    def __init__(self, *, table: str, lakeformat_conn_id: str = DEFAULT_CONN_ID,
                 skip_when_busy: bool = False, **kwargs: Any):
        check_table_name(table)
        if self.writes_table and "outlets" not in kwargs:
            kwargs["outlets"] = [connection_alias(lakeformat_conn_id)]
        super().__init__(**kwargs)
        self.table = table
        self.lakeformat_conn_id = lakeformat_conn_id
        self.skip_when_busy = skip_when_busy

    def hook(self) -> Any:
        from lakeformat_airflow.hooks.lakeformat import LakeformatHook

        return LakeformatHook(self.lakeformat_conn_id)

    def execute(self, context: Any) -> dict[str, Any]:
        import lakeformat as lf

        try:
            with library_errors():
                check_table_name(self.table)
                self.check_rendered()
                hook = self.hook()
                table = hook.get_table(self.table)
                result = self.run(table, context)
        except lf.LockTimeoutError as e:
            if not self.skip_when_busy:
                raise
            from airflow.sdk.exceptions import AirflowSkipException

            raise AirflowSkipException(f"{e} — skipped (skip_when_busy): the next run does "
                                       "it") from e
        self.log.info("%s", result)
        if self.writes_table and self.changed(result):
            self.emit_asset_event(context, hook.warehouse())
        return result.to_dict()

    def emit_asset_event(self, context: Any, warehouse: str) -> None:
        """An event for the table's Asset, through the connection's alias when declared."""
        alias = connection_alias(self.lakeformat_conn_id)
        if not any(getattr(o, "name", None) == alias.name for o in self.outlets or []):
            return
        events = context.get("outlet_events")
        if events is not None:
            events[alias].add(table_asset(warehouse, self.table))

    def changed(self, result: Any) -> bool:
        """Whether `result` committed something new (an asset event is due)."""
        return True

    def check_rendered(self) -> None:
        """Argument checks that had to wait for the templates to render."""

    def run(self, table: Any, context: Any) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError


class CommitIdentityMixin:
    """The commit user and identifier that make a re-run of the same logical date land once.

    Default user `airflow:<dag_id>.<task_id>` (`[<map_index>]` appended for a mapped task:
    each mapped instance commits on its own), identifier the logical date in epoch
    milliseconds (`run_after` for a run without one): a retry or a backfill of that date finds
    its earlier commit and commits nothing. `commit_user` / `commit_identifier` override them
    (templated), e.g. a backfill of several dates in one run gives each date's identifier.
    """

    commit_user: str | None
    commit_identifier: Any

    def commit_identity(self, context: Any) -> tuple[str, int]:
        ti = context["ti"]
        mapped = f"[{ti.map_index}]" if getattr(ti, "map_index", -1) >= 0 else ""
        user = self.commit_user or f"airflow:{ti.dag_id}.{ti.task_id}{mapped}"
        raw = self.commit_identifier
        if raw is None or raw == "":
            when = context.get("logical_date") or context["dag_run"].run_after
            return user, int(when.timestamp() * 1000)
        if isinstance(raw, str):
            raw = raw.strip()
            try:
                return user, int(raw)
            except ValueError:
                pass
            try:
                raw = dt.datetime.fromisoformat(raw)
            except ValueError:
                raise InvalidArgumentError(f"commit_identifier must be an integer or an ISO "
                                           f"date, got {raw!r}") from None
        if isinstance(raw, dt.date) and not isinstance(raw, dt.datetime):
            raw = dt.datetime(raw.year, raw.month, raw.day)
        if isinstance(raw, dt.datetime):  # a date without a zone is a UTC date
            raw = raw if raw.tzinfo else raw.replace(tzinfo=dt.UTC)
            return user, int(raw.timestamp() * 1000)
        return user, int(raw)


class EngineMixin:
    """`engine="local"` runs the job in the task's process; `engine="spark"` runs its execute
    step on the Spark of `spark_conn_id` (a `spark` connection: `local[N]`, `spark://...`,
    `sc://...` for Spark Connect)."""

    engine: str
    spark_conn_id: str

    def use_spark(self) -> bool:
        check_choice("engine", self.engine, ENGINES)
        return self.engine == "spark"

    def spark(self, context: Any) -> Any:
        from lakeformat_airflow.hooks.spark import spark_session

        ti = context["ti"]
        return spark_session(self.spark_conn_id, f"lakeformat:{ti.dag_id}.{ti.task_id}")
