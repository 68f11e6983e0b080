"""The backfill operator: ingest one landed source per day over a range of days, in date order,
each day its own commit, so a later day's row wins a key as in the daily ingest.

Why one task and not one mapped task per day: mapped instances run, fail and retry on their
own, so a day filled in later lands after the days behind it, and nothing stops the next day
when one fails. Here the days run in order inside one task; the first failing day stops the
task (the days after it are not run) and a retry or a cleared task resumes at that day.

The landed record is the table's snapshots, kept per source: a table widened by several
streams (orders, payments) is backfilled once per stream, and one stream's landed days say
nothing of another's. A day is ingested under the commit user `airflow:<dag_id>:<source>`
(`source` with its `{date}` placeholder; `commit_user` overrides the whole user) with the
day's UTC midnight in epoch ms as its commit identifier, so any earlier backfill run's commit
of that source and day is found and the day is skipped (reported, not written again).
`reingest=True` ingests every day of the range again under `<user>:reingest:<run_id>`: a retry
of that same run still lands each day once, and its commits count as landed days too. The
order check compares days of the same source (each stream writes its own columns).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lakeformat.errors import InvalidArgumentError
from lakeformat_airflow.operators.base import (
    LakeformatBaseOperator,
    choice,
    to_flag,
    to_text,
)

if TYPE_CHECKING:
    from lakeformat import Table

FORMATS = (None, "parquet", "csv", "json")
MODES = ("append", "overwrite")
#: the most days one backfill run takes (a year and a day)
MAX_DAYS = 366
#: snapshot kinds a day's ingest commits (compactions reuse no backfill identity)
_WRITE_KINDS = ("APPEND", "OVERWRITE")
_DAY_MS = 86_400_000


def day_identifier(day: dt.date) -> int:
    """A day's commit identifier: its UTC midnight in epoch milliseconds (what the daily DAG
    uses for a logical date, so both read alike in `lakeformat snapshots`)."""
    return int(dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC).timestamp() * 1000)


def parse_day(name: str, value: Any) -> dt.date | None:
    """A day as `YYYY-MM-DD` (a date, or empty for the default)."""
    if value is None or (isinstance(value, str) and value.strip() in ("", "None")):
        return None
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    try:
        return dt.date.fromisoformat(str(value).strip())
    except ValueError:
        raise InvalidArgumentError(f"{name} must be a day as YYYY-MM-DD, got {value!r}") from None


def day_range(start: dt.date, end: dt.date, max_days: int = MAX_DAYS) -> list[dt.date]:
    """The days from `start` to `end` inclusive, refused when reversed or too long."""
    if end < start:
        raise InvalidArgumentError(f"end {end} is before start {start}")
    count = (end - start).days + 1
    if count > max_days:
        raise InvalidArgumentError(f"{count} days asked ({start} to {end}); a backfill takes "
                                   f"at most {max_days}: split the range")
    return [start + dt.timedelta(days=i) for i in range(count)]


def check_source(name: str, source: Any) -> str:
    """A path or glob with `{date}` where the day goes."""
    if not isinstance(source, str) or "{date}" not in source:
        raise InvalidArgumentError(f"{name} {source!r} has no {{date}} placeholder: give a path "
                                   "or glob with {date} where the day (YYYY-MM-DD) goes")
    return source


def merges_in_commit_order(options: dict[str, str], primary_keys: Sequence[str]) -> bool:
    """Whether a key's winner is decided by commit order: a primary-key table without
    `sequence.field` (an append table has no winner; a sequence field orders by the data)."""
    return bool(primary_keys) and not (options.get("sequence.field") or "").strip()


def adds_rows_again(options: dict[str, str], primary_keys: Sequence[str]) -> bool:
    """Whether ingesting a day's rows a second time changes the table: an append table keeps
    both copies, an aggregating table (`merge-engine=aggregation` or a field's
    `aggregate-function`) may add them up. Deduplicate, first-row and partial-update without
    aggregates upsert the same values again."""
    if not primary_keys:
        return True
    engine = (options.get("merge-engine") or "deduplicate").strip().lower()
    return engine == "aggregation" or any(
        k.startswith("fields.") and k.endswith(".aggregate-function") for k in options)


@dataclass
class DayOutcome:
    """What the backfill did with one day."""

    day: dt.date
    commit_identifier: int
    source: str
    status: str = "pending"  # landed | skipped | failed | not run
    snapshot_id: int | None = None
    commit_user: str | None = None
    rows_written: int = 0
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"day": self.day.isoformat(), "commit_identifier": self.commit_identifier,
                "source": self.source, "status": self.status, "snapshot_id": self.snapshot_id,
                "commit_user": self.commit_user, "rows_written": self.rows_written,
                "reason": self.reason}

    def __str__(self) -> str:
        where = f" snapshot {self.snapshot_id}" if self.snapshot_id is not None else ""
        why = f": {self.reason}" if self.reason else ""
        return f"{self.day} {self.status}{where}{why}"


@dataclass
class BackfillResult:
    """Every day of the range in date order, with what happened to it."""

    table: str
    commit_user: str
    reingest: bool
    mode: str
    days: list[DayOutcome] = field(default_factory=list)

    def of(self, status: str) -> list[str]:
        return [d.day.isoformat() for d in self.days if d.status == status]

    def to_dict(self) -> dict[str, Any]:
        return {"table": self.table, "commit_user": self.commit_user, "reingest": self.reingest,
                "mode": self.mode, "landed": self.of("landed"), "skipped": self.of("skipped"),
                "days": [d.to_dict() for d in self.days]}

    def __str__(self) -> str:
        lines = [f"{self.table}: {len(self.of('landed'))} days landed, "
                 f"{len(self.of('skipped'))} skipped (already landed)"]
        return "\n".join(lines + [f"  {d}" for d in self.days])


def stream_user(dag_id: str, source: str, commit_user: str | None = None) -> str:
    """The commit user of one source's backfilled days (see the module docstring)."""
    return commit_user or f"airflow:{dag_id}:{source}"


def landed_days(snapshots: Sequence[Any], commit_user: str) -> dict[int, list[Any]]:
    """{commit identifier: the retained write snapshots (oldest first)} of every commit of a
    day (a UTC midnight) made by `commit_user` or by one of its re-ingests
    (`<commit_user>:reingest:<run_id>`) — the table's record of the days of one source this
    backfill DAG landed."""
    prefix = commit_user + ":reingest:"
    out: dict[int, list[Any]] = {}
    for snap in snapshots:
        if (snap.commit_kind in _WRITE_KINDS and snap.commit_identifier % _DAY_MS == 0
                and (snap.commit_user == commit_user or snap.commit_user.startswith(prefix))):
            out.setdefault(snap.commit_identifier, []).append(snap)
    return out


class LakeformatBackfillOperator(LakeformatBaseOperator):
    """Ingest `source` (a path or glob with `{date}` for the day, `YYYY-MM-DD`) for every day
    from `start` to `end` (inclusive; empty: the day the run was triggered, UTC), in date order,
    one commit per day; see the module docstring for the order, the landed record and retries.

    Refused before anything is written (`AirflowFailException`, no retry):

    * a day to ingest when a later day already landed on a table whose merge order is commit
      order (primary key, no `sequence.field`): the earlier day's rows would win every key
      over the later day's. Later days this run (re)ingests after it do not count.
    * on a table where a second ingest of a day adds its rows again (append or aggregating
      tables), a day absent from the retained snapshots when older snapshots were expired:
      whether it landed in an expired snapshot cannot be told, and ingesting it again could
      double its rows. `reingest=True` ingests it anyway once you have checked.
    * `mode="overwrite"` on an unpartitioned table (only the last day would stay) or a
      partial-update table (one source's files would wipe the other sources' columns).

    The return value (XCom) lists every day with its status (`landed`, `skipped`) and
    snapshot; a failing day fails the task naming the day and the days not run.
    """

    arguments = {"source": check_source, "start": parse_day, "end": parse_day,
                 "format": choice(*FORMATS), "mode": choice(*MODES), "merge_schema": to_flag,
                 "reingest": to_flag, "commit_user": to_text}
    template_fields: Sequence[str] = ("table", *arguments)
    writes_table = True

    def __init__(self, *, table: str, source: str, start: Any = None, end: Any = None,
                 format: str | None = None, mode: str = "append", merge_schema: Any = False,
                 reingest: Any = False, commit_user: str | None = None,
                 max_days: int = MAX_DAYS, **kwargs: Any):
        super().__init__(table=table, **kwargs)
        self.source = source
        self.start = start
        self.end = end
        self.format = format
        self.mode = mode
        self.merge_schema = merge_schema
        self.reingest = reingest
        self.commit_user = commit_user
        self.max_days = max_days
        self.convert_arguments(rendered=False)

    def check_arguments(self) -> None:
        """A literal range is checked when the DAG is parsed, a templated one once rendered."""
        first = self.start if isinstance(self.start, dt.date) else None
        last = self.end if isinstance(self.end, dt.date) else None
        if first is not None:
            day_range(first, last or first, self.max_days)

    def changed(self, result: Any) -> bool:
        return bool(result.of("landed"))

    def days(self, context: Any) -> list[dt.date]:
        """The range: `start` (default the run's trigger day, UTC — stable across retries)
        to `end` (default `start`)."""
        start = self.start or context["dag_run"].run_after.astimezone(dt.UTC).date()
        return day_range(start, self.end or start, self.max_days)

    def run(self, table: Table, context: Any) -> BackfillResult:
        base = stream_user(context["ti"].dag_id, self.source, self.commit_user)
        reingest = self.reingest
        user = f"{base}:reingest:{context['run_id']}" if reingest else base
        result = BackfillResult(table.name, user, reingest, self.mode)
        if self.mode == "overwrite":
            _check_overwrite(table)
        snapshots = table.snapshots()
        record = landed_days(snapshots, base)
        for day in self.days(context):
            ident = day_identifier(day)
            out = DayOutcome(day, ident, self.source.replace("{date}", day.isoformat()))
            done = [s for s in record.get(ident, []) if not reingest or s.commit_user == user]
            if done:
                out.status, out.snapshot_id = "skipped", done[-1].id
                out.commit_user = done[-1].commit_user
                out.reason = (f"already landed as snapshot {done[-1].id} by "
                              f"{done[-1].commit_user}")
            result.days.append(out)
        todo = [d for d in result.days if d.status == "pending"]
        if not reingest:
            self._refuse_unknown(table, snapshots, record, todo)
        self._refuse_out_of_order(table, record, todo)
        self._ingest(table, result)
        return result

    def _refuse_unknown(self, table: Table, snapshots: Sequence[Any], record: dict[int, Any],
                        todo: list[DayOutcome]) -> None:
        """Fail closed where expired snapshots hide whether a day landed and a second ingest
        would add its rows again."""
        if not snapshots or snapshots[0].id <= 1:
            return
        if not adds_rows_again(table.options, table.primary_keys):
            return
        unknown = [d.day.isoformat() for d in todo if d.commit_identifier not in record]
        if unknown:
            found = [_day_of(i) for i in sorted(record)]
            known = (f" The retained snapshots show {', '.join(found)} landed; a reingest run "
                     "over those days would land them a second time." if found else "")
            _fail(f"{table.name}: snapshots before {snapshots[0].id} were expired, so whether "
                  f"day(s) {', '.join(unknown)} of {self.source} already landed cannot be told, "
                  "and ingesting a day again would add its rows a second time on this "
                  f"{'append' if not table.primary_keys else 'aggregating'} table; nothing was "
                  f"written.{known} Check the table for those days' rows, then re-run with "
                  "reingest and start/end covering only the days to ingest")

    def _refuse_out_of_order(self, table: Table, record: dict[int, Any],
                             todo: list[DayOutcome]) -> None:
        """An earlier day may not land after a later one where commit order picks a key's
        winner; later days this run (re)ingests after it are fine."""
        if not todo or not merges_in_commit_order(table.options, table.primary_keys):
            return
        first = todo[0]
        coming = {d.commit_identifier for d in todo}
        later = sorted(i for i in record if i > first.commit_identifier and i not in coming)
        if not later:
            return
        days = ", ".join(_day_of(i) for i in later)
        _fail(f"{table.name}: day(s) {days} already landed; {first.day} landing after them "
              "would make its rows win every key over theirs, since this table merges in "
              "commit order (primary key, no sequence.field). Nothing was written. Re-run the "
              f"range from {first.day} through {_day_of(later[-1])} with "
              "reingest (the later days land again after it), or set the table's "
              "sequence.field so the data decides which row wins")

    def _ingest(self, table: Table, result: BackfillResult) -> None:
        import lakeformat as lf
        from lakeformat_airflow.operators.write import ingest_files

        for out in result.days:
            if out.status != "pending":
                self.log.info("day %s skipped: %s", out.day, out.reason)
                continue
            self.log.info("day %s: ingesting %s (%s, commit %s / %s)", out.day, out.source,
                          self.mode, result.commit_user, out.commit_identifier)
            try:
                landed = ingest_files(table, out.source, self.format,
                                      self.mode == "overwrite", self.merge_schema,
                                      commit_user=result.commit_user,
                                      commit_identifier=out.commit_identifier)
            except Exception as e:
                out.status, out.reason = "failed", f"{type(e).__name__}: {e}"
                for later in result.days:
                    if later.status == "pending":
                        later.status = "not run"
                self.log.error("%s", result)
                stopped = [d.day.isoformat() for d in result.days if d.status == "not run"]
                message = (f"{table.name}: day {out.day} ({out.source}) failed: "
                           f"{out.reason}. Days after it were not run"
                           f"{' (' + ', '.join(stopped) + ')' if stopped else ''}; days before "
                           "it stay landed. Fix the day's source, then retry or clear this "
                           f"task: it resumes at {out.day}")
                self.log.error("%s", message)
                if isinstance(e, lf.RETRYABLE_ERRORS) or not isinstance(e, lf.LakeformatError):
                    raise  # worth Airflow's retry, which resumes at this day
                _fail(message, e)
            out.status = "skipped" if landed.already_committed else "landed"
            out.snapshot_id, out.commit_user = landed.snapshot_id, landed.commit_user
            out.rows_written = 0 if landed.already_committed else landed.rows_written
            if landed.already_committed:
                out.reason = f"already landed as snapshot {landed.snapshot_id}"
            self.log.info("day %s: %s", out.day, landed)


def _check_overwrite(table: Table) -> None:
    """Overwrite replaces whole partitions: refuse it where that loses rows."""
    if not table.partition_keys:
        _fail(f"{table.name} is not partitioned: an overwrite per day would keep only the last "
              "day; use mode append")
    if (table.options.get("merge-engine") or "").strip().lower() == "partial-update":
        _fail(f"{table.name} is a partial-update table: overwriting a day with one source's "
              "files would wipe the columns other sources wrote; use mode append "
              "(re-ingesting merges)")


def _day_of(identifier: int) -> str:
    return dt.datetime.fromtimestamp(identifier / 1000, dt.UTC).date().isoformat()


def _fail(message: str, cause: BaseException | None = None) -> None:
    """Fail the task at once: Airflow's retry would meet the same refusal."""
    from airflow.sdk.exceptions import AirflowFailException

    raise AirflowFailException(message) from cause
