"""The trigger (`LakeformatSnapshotTrigger`) that waits for a new snapshot of a table in the
triggerer: a thin poller of the library's `lakeformat.SnapshotWatch` (the watermark, rollback
detection and partition-delta matching live there, and the sensor runs the same watch), plus
the conversions of the sensor's rendered arguments.

The trigger keeps no open handle between runs: it is rebuilt from `serialize()` anywhere, and
does its blocking work (the connection read and the store reads) in a worker thread, so the
triggerer's event loop never waits on S3. Reading the connection synchronously from a worker
thread is what Airflow 3.3's triggerer supports for sync hook code (its comms bridge such calls
onto the loop); only a call from the loop's own thread would deadlock.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from lakeformat.errors import InvalidArgumentError
from lakeformat_airflow import DEFAULT_CONN_ID

__all__ = ["COMMIT_KINDS", "LakeformatSnapshotTrigger", "commit_kind_arg", "instant_millis",
           "snapshot_id_arg"]

if TYPE_CHECKING:
    from lakeformat import SnapshotWatch

#: commit kinds a wait can ask for: `lakeformat.SnapshotWatch.COMMIT_KINDS`, spelled out here
#: because the sensor checks its argument when a DAG file is parsed, and loading the watch
#: loads pyarrow (a unit test keeps the two equal)
COMMIT_KINDS = ("APPEND", "COMPACT", "OVERWRITE")
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


# -- arguments ----------------------------------------------------------------------------------
def _unset(value: Any) -> bool:
    """A template that rendered to nothing (`""`, or `"None"` from an empty XCom pull)."""
    return value is None or (isinstance(value, str) and value.strip() in ("", "None"))


def commit_kind_arg(value: Any) -> str | None:
    """`APPEND` / `COMPACT` / `OVERWRITE` in any case, or None."""
    if _unset(value):
        return None
    kind = str(value).strip().upper() if isinstance(value, str) else value
    if kind not in COMMIT_KINDS:
        raise InvalidArgumentError(f"commit_kind must be one of {', '.join(COMMIT_KINDS)} "
                         f"(any case), got {value!r}")
    return kind


def snapshot_id_arg(value: Any) -> int | None:
    """A snapshot id as an int or digit text (a rendered template), or None."""
    if _unset(value):
        return None
    if isinstance(value, bool):
        raise InvalidArgumentError(f"after_snapshot_id must be a snapshot id, got {value!r}")
    if isinstance(value, int):
        sid = value
    elif isinstance(value, str) and value.strip().isdigit():
        sid = int(value.strip())
    else:
        raise InvalidArgumentError(f"after_snapshot_id must be a snapshot id (digits), "
                                   f"got {value!r}")
    if sid < 0:
        raise InvalidArgumentError(f"after_snapshot_id must be >= 0, got {value!r}")
    return sid


def instant_millis(value: Any, name: str = "newer_than") -> int | None:
    """Epoch millis of a datetime or ISO text (`"{{ data_interval_end }}"`); a value without
    a zone is UTC, as Airflow's own dates are."""
    if _unset(value):
        return None
    when = value
    if isinstance(value, str):
        try:
            when = dt.datetime.fromisoformat(value.strip())
        except ValueError:
            raise InvalidArgumentError(f"{name} must be a datetime or ISO 8601 text, "
                                       f"got {value!r}") from None
    elif isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        when = dt.datetime(value.year, value.month, value.day)
    if not isinstance(when, dt.datetime):
        raise InvalidArgumentError(f"{name} must be a datetime or ISO 8601 text, got {value!r}")
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    micros = (when - EPOCH) // dt.timedelta(microseconds=1)
    return -(-micros // 1000)  # "at or after": a partial millisecond rounds up


# -- the trigger --------------------------------------------------------------------------------
class LakeformatSnapshotTrigger(BaseTrigger):
    """Polls a table every `poll_interval` seconds until a new snapshot matches; fires one
    event: `{"status": "success", "snapshot": {...}}` (the sensor's result dict) or
    `{"status": "error", "message": ..., "fatal": bool}` — fatal for errors a retry cannot
    fix (a missing table or connection, a bad argument), as the provider's error policy says.

    `after_snapshot_id` is the watermark (the sensor hands over the id it already checked up
    to), `newer_than_millis` the time bound in epoch millis; with neither, the latest snapshot
    when the trigger starts is the watermark.
    """

    def __init__(self, *, table: str, lakeformat_conn_id: str = DEFAULT_CONN_ID,
                 after_snapshot_id: int | None = None, newer_than_millis: int | None = None,
                 commit_kind: str | None = None, partition: Mapping[str, Any] | None = None,
                 poll_interval: float = 60.0, **kwargs: Any):
        super().__init__(**kwargs)
        self.table = table
        self.lakeformat_conn_id = lakeformat_conn_id
        self.after_snapshot_id = snapshot_id_arg(after_snapshot_id)
        self.newer_than_millis = None if newer_than_millis is None else int(newer_than_millis)
        self.commit_kind = commit_kind_arg(commit_kind)
        self.partition = dict(partition) if partition else None
        self.poll_interval = float(poll_interval)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (f"{type(self).__module__}.{type(self).__qualname__}", {
            "table": self.table, "lakeformat_conn_id": self.lakeformat_conn_id,
            "after_snapshot_id": self.after_snapshot_id,
            "newer_than_millis": self.newer_than_millis, "commit_kind": self.commit_kind,
            "partition": self.partition, "poll_interval": self.poll_interval})

    async def run(self) -> AsyncIterator[TriggerEvent]:
        from lakeformat import SnapshotWatch

        watch = SnapshotWatch(after_snapshot_id=self.after_snapshot_id,
                              newer_than_millis=self.newer_than_millis,
                              commit_kind=self.commit_kind, partition=self.partition)
        handle: list[Any] = []  # the table, opened once in the worker thread
        self.log.info("waiting for a snapshot of %s: %s", self.table, watch.describe())
        while True:
            try:
                found = await asyncio.to_thread(self._check, watch, handle)
            except Exception as e:  # noqa: BLE001 - reported to the task as its error
                yield TriggerEvent(self._error_event(e))
                return
            if found is not None:
                self.log.info("snapshot %s of %s matches", found["snapshot_id"], self.table)
                yield TriggerEvent({"status": "success", "snapshot": found})
                return
            await asyncio.sleep(self.poll_interval)

    def _check(self, watch: SnapshotWatch, handle: list[Any]) -> dict[str, Any] | None:
        """One poll, in a worker thread (blocking connection and store reads)."""
        from lakeformat_airflow.operators.base import library_errors

        with library_errors():
            if not handle:
                from lakeformat_airflow.hooks.lakeformat import LakeformatHook

                handle.append(LakeformatHook(self.lakeformat_conn_id).get_table(self.table))
            return watch.check(handle[0])

    def _error_event(self, error: Exception) -> dict[str, Any]:
        from airflow.sdk.exceptions import AirflowFailException

        fatal = isinstance(error, AirflowFailException)
        message = str(error) if isinstance(error, AirflowFailException) else (
            f"{type(error).__name__}: {error}")
        return {"status": "error", "fatal": fatal,
                "message": f"waiting for a snapshot of {self.table}: {message}"}
