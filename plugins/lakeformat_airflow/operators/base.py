"""What every lakeformat operator shares: the connection, the table, argument checks, the
error policy, the commit identity of a run, outlets, and the result returned for XCom.

Error policy: errors lakeformat marks as worth a retry (`lakeformat.RETRYABLE_ERRORS`:
conflicts, a commit whose outcome is unknown, a lock held too long, an engine failure) and
errors outside lakeformat (store faults, network) propagate, so Airflow retries the task as
configured; every other lakeformat error — and a connection that cannot work — fails the task
at once (`AirflowFailException`) with the library's message: retrying a bad argument helps no
one.

Every run also sends its metrics (`lakeformat_airflow.operators.metrics`, best effort) and keeps
the table it read for OpenLineage (`lakeformat_airflow.operators.lineage`).
"""

from __future__ import annotations

import ast
import contextlib
import datetime as dt
import json
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from airflow.sdk import BaseOperator

from lakeformat.errors import InvalidArgumentError
from lakeformat_airflow import DEFAULT_CONN_ID
from lakeformat_airflow.assets import connection_alias, table_asset
from lakeformat_airflow.operators.lineage import TableLineageMixin

if TYPE_CHECKING:
    from lakeformat import Table

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
    """'database.table' with names every catalog accepts (`lakeformat.identifier`: Paimon's
    rules and the file system's length limit; `InvalidIdentifierError` otherwise) — unless a
    template or a mapped/XCom argument resolves it later (`execute` checks it then)."""
    if templated(table):
        return
    from lakeformat.identifier import check_identifier

    check_identifier(table)


# -- arguments: literal values checked when the DAG is parsed, all of them after rendering ----
#: (argument name, value) -> the value the library takes, or InvalidArgumentError naming both
Conversion = Callable[[str, Any], Any]

#: what a template that rendered "no value" gives: empty text, Jinja's "None", JSON's null
_NO_VALUE = ("", "none", "null")
_WHOLE = re.compile(r"[+-]?\d+")
_TRUE_FALSE = {"true": True, "false": False}


def no_value(value: Any) -> bool:
    """None, or the text a template renders for nothing."""
    return value is None or (isinstance(value, str) and value.strip().lower() in _NO_VALUE)


def bad_argument(name: str, value: Any, expected: str) -> InvalidArgumentError:
    """The error of a bad argument: its name, what it takes, the value given."""
    return InvalidArgumentError(f"{name} must be {expected}, got {value!r}")


def to_count(name: str, value: Any, *, minimum: int = 1, optional: bool = True) -> int | None:
    """A whole number >= `minimum` (retention counts, limits, ids): an int, or its digits as a
    template renders them; nothing (None, "", "null") is None when the argument is optional."""
    if optional and no_value(value):
        return None
    number = value
    if isinstance(value, str) and _WHOLE.fullmatch(value.strip()):
        number = int(value.strip())
    if isinstance(number, bool) or not isinstance(number, int) or number < minimum:
        blank = " (or empty for the default)" if optional else ""
        raise bad_argument(name, value, f"a whole number >= {minimum}{blank}")
    return number


def to_required_count(name: str, value: Any) -> int:
    """A whole number >= 1 that has no 'unset' (its default is a number)."""
    return to_count(name, value, optional=False)  # type: ignore[return-value]


def to_flag(name: str, value: Any) -> bool:
    """True/False, or the text a template renders for one ("true", "False", any case)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE_FALSE:
        return _TRUE_FALSE[value.strip().lower()]
    raise bad_argument(name, value, "True or False (the text true/false once rendered)")


def to_duration(name: str, value: Any) -> Any:
    """An optional age: a timedelta, a datetime (the cut-off) or Paimon's duration text
    ("7 d", "1 h"); the library parses the text again, so the text is what it gets."""
    if no_value(value):
        return None
    if isinstance(value, (dt.timedelta, dt.datetime)):
        return value
    if isinstance(value, str):
        from lakeformat.options import parse_duration

        try:
            parse_duration(value.strip(), name)
            return value.strip()
        except Exception:  # noqa: BLE001 - any parse failure is this argument's error
            pass
    raise bad_argument(name, value, "a duration such as '7 d', '1 h' or '30 min' (or a timedelta, "
                            "or a datetime cut-off)")


def to_choice(name: str, value: Any, choices: Sequence[Any]) -> Any:
    """One of `choices` (text in any case); nothing is None when None is a choice."""
    if None in choices and no_value(value):
        return None
    key = value.strip().lower() if isinstance(value, str) else value
    if key is None or key not in choices:
        named = ", ".join(repr(c) for c in choices if c is not None)
        blank = " (or empty)" if None in choices else ""
        raise bad_argument(name, value, f"one of {named}{blank}")
    return key


def choice(*choices: Any) -> Conversion:
    """The conversion to one of `choices`."""
    return lambda name, value: to_choice(name, value, choices)


def to_budget(name: str, value: Any) -> int | str | None:
    """An optional memory budget: bytes (an int or its digits) or text such as "512 mb"."""
    if no_value(value):
        return None
    if isinstance(value, str) and _WHOLE.fullmatch(value.strip()):
        value = int(value.strip())
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    if isinstance(value, str):
        from lakeformat.options import parse_memory_size

        try:
            if parse_memory_size(value.strip(), name) > 0:
                return value.strip()
        except Exception:  # noqa: BLE001 - any parse failure is this argument's error
            pass
    raise bad_argument(name, value, "a positive number of bytes or a size such as '512 mb'")


def to_text(name: str, value: Any) -> str | None:
    """Optional text (a commit user, a comment); nothing is None."""
    if no_value(value):
        return None
    if not isinstance(value, str):
        raise bad_argument(name, value, "text")
    return value


def to_name(name: str, value: Any) -> str:
    """Required, non-empty text (a tag name)."""
    if not isinstance(value, str) or not value.strip():
        raise bad_argument(name, value, "a non-empty name")
    return value.strip()


def _literal(name: str, text: str, expected: str) -> Any:
    """A list or dict that a template rendered as text: JSON, or Python's repr of it (what a
    list or dict param renders as without `render_template_as_native_obj`)."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return ast.literal_eval(text.strip())
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise bad_argument(name, text, expected) from None


def to_structure(name: str, value: Any, kind: type, expected: str, *,
                 optional: bool = True) -> Any:
    """A list (tuples become lists) or a dict, given as itself or as the text of one."""
    if optional and no_value(value):
        return None
    if isinstance(value, str):
        value = _literal(name, value, expected)
    if kind is list and isinstance(value, tuple):
        value = list(value)
    if not isinstance(value, kind):
        raise bad_argument(name, value, expected)
    return value


def to_partitions(name: str, value: Any) -> list[dict[str, Any]] | None:
    """Optional partitions: a list of `{key: value}` dicts (or its text)."""
    expected = "a list of {key: value} dicts, e.g. [{'dt': '2024-06-01'}]"
    parts = to_structure(name, value, list, expected)
    if parts is not None and not all(isinstance(p, dict) and p for p in parts):
        raise bad_argument(name, value, expected)
    return parts


def to_names(name: str, value: Any) -> list[str]:
    """Column names: a list, its text, or names separated by commas ("dt, id")."""
    if no_value(value):
        return []
    if isinstance(value, str):
        text = value.strip()
        value = (to_structure(name, text, list, "a list of column names")
                 if text.startswith("[") else [v.strip() for v in text.split(",")])
    if isinstance(value, tuple):
        value = list(value)
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise bad_argument(name, value, "a list of column names (or names separated by commas)")
    return [v.strip() for v in value]


def to_options(name: str, value: Any) -> dict[str, str]:
    """Table options: a dict (or its text); values as Paimon reads them (booleans lower case)."""
    options = to_structure(name, value, dict, "a dict of table options") or {}
    return {str(k): str(v).lower() if isinstance(v, bool) else str(v)
            for k, v in options.items()}


def convert_arguments(operator: Any, arguments: Mapping[str, Conversion], rendered: bool
                      ) -> None:
    """Convert and check `operator`'s `arguments` in place: when the DAG is parsed
    (`rendered=False`) only the literal ones — a template or another task's value is checked
    once rendered; after rendering, every one of them."""
    for name, convert in arguments.items():
        value = getattr(operator, name)
        if not rendered and templated(value):
            continue
        setattr(operator, name, convert(name, value))


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


class LakeformatBaseOperator(TableLineageMixin, BaseOperator):
    """One library call on one table of a `lakeformat` connection.

    `table` is `database.table`; `lakeformat_conn_id` the connection (default
    `lakeformat_default`). `skip_when_busy=True` skips the task instead of failing it when
    another job holds the table's maintenance lease (a frequent job such as hourly expiry,
    which the next run catches up on). Operators that commit to the table (`writes_table`)
    declare the connection's asset alias as an outlet and, when a run changed the table,
    attach an event for the table's Asset `paimon://<warehouse>/<db>/<table>` to it (see
    `lakeformat_airflow.assets`): the warehouse is the connection's real one, read in the
    task, and templated or mapped table names get their events too.

    Arguments: each operator's `arguments` maps an argument to its conversion (the `to_*`
    functions above). A literal value is converted and checked when the DAG is parsed; a
    template or another task's value once rendered, so "{{ params.n }}" becomes the int the
    library takes, and a bad value fails the task at once with `InvalidArgumentError` naming
    the argument. Every one of them is a template field.
    """

    template_fields: Sequence[str] = ("table",)
    ui_color = "#cfe8f3"
    writes_table = False
    arguments: ClassVar[Mapping[str, Conversion]] = {}

    def __init__(self, *, table: str, lakeformat_conn_id: str = DEFAULT_CONN_ID,
                 skip_when_busy: bool = False, **kwargs: Any):
        check_table_name(table)
        if self.writes_table and "outlets" not in kwargs:
            kwargs["outlets"] = [connection_alias(lakeformat_conn_id)]
        super().__init__(**kwargs)
        self.table = table
        self.lakeformat_conn_id = lakeformat_conn_id
        self.skip_when_busy = skip_when_busy

    @classmethod
    def partial(cls, **kwargs: Any) -> Any:
        """`Operator.partial(...)` for dynamic task mapping: a committing operator declares the
        connection's asset alias there too (a mapped task's outlets are its partial's, never
        its `__init__`'s)."""
        from airflow.sdk.bases.operator import partial

        if cls.writes_table and "outlets" not in kwargs:
            conn_id = kwargs.get("lakeformat_conn_id", DEFAULT_CONN_ID)
            kwargs["outlets"] = [connection_alias(conn_id)]
        return partial(cls, **kwargs)

    def hook(self) -> Any:
        from lakeformat_airflow.hooks.lakeformat import LakeformatHook

        return LakeformatHook(self.lakeformat_conn_id)

    def execute(self, context: Any) -> dict[str, Any]:
        import lakeformat as lf
        from lakeformat_airflow.operators import metrics

        operation = metrics.operation_name(self)
        try:
            with library_errors():
                check_table_name(self.table)
                self.convert_arguments(rendered=True)
                hook = self.hook()
                table = hook.get_table(self.table)
                self.record_lineage(hook.warehouse(), [(table.name, table.table_schema)])
                started = time.monotonic()
                result = self.run(table, context)
                seconds = time.monotonic() - started
                # the schema after the run (a merge-schema write or an alter changed it)
                self.record_lineage(hook.warehouse(), [(table.name, table.table_schema)])
        except lf.LockTimeoutError as e:
            if not self.skip_when_busy:
                metrics.emit(operation, self.table, failed=True, logger=self.log)
                raise
            from airflow.sdk.exceptions import AirflowSkipException

            raise AirflowSkipException(f"{e} — skipped (skip_when_busy): the next run does "
                                       "it") from e
        except Exception:
            metrics.emit(operation, self.table, failed=True, logger=self.log)
            raise
        self.log.info("%s", result)
        if self.writes_table and self.changed(result):
            self.emit_asset_event(context, hook.warehouse())
        out = result.to_dict()
        metrics.emit(operation, table.name, out, seconds, logger=self.log)
        return out

    def lineage_start_tables(self) -> tuple[str, list[tuple[str, Any]]] | None:
        """The operator's table, in the connection's warehouse (the connection is read; the
        store is not), before `execute` read its schema."""
        if templated(self.table):
            return None
        warehouse, _ = self.hook().catalog_config()
        return warehouse, [(self.table, None)]

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

    def convert_arguments(self, rendered: bool) -> None:
        """Convert and check `arguments` (see the class docstring), then `check_arguments`.
        Subclasses call it with `rendered=False` at the end of `__init__`."""
        convert_arguments(self, self.arguments, rendered)
        self.check_arguments()

    def check_arguments(self) -> None:
        """Checks across arguments, on the ones already converted (not on templates)."""

    def run(self, table: Table, context: Any) -> Any:  # pragma: no cover - abstract
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
        return to_choice("engine", self.engine, ENGINES) == "spark"

    def spark(self, context: Any) -> Any:
        from lakeformat_airflow.hooks.spark import spark_session

        ti = context["ti"]
        return spark_session(self.spark_conn_id, f"lakeformat:{ti.dag_id}.{ti.task_id}")
