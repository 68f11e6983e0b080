"""Waiting for a new snapshot of a table: the check both the sensor and its trigger run
(`SnapshotWatch`), and the trigger (`LakeformatSnapshotTrigger`) that runs it in the triggerer.

A snapshot is *new* when its id is above a watermark (`after_snapshot_id`: given, or the latest
id when the wait began) and, with `newer_than`, it was committed at or after that instant
(Paimon's `timeMillis`, the committer's clock). Among new snapshots the first, oldest first,
that has the asked commit kind and whose delta touches the asked partition is the answer.
Snapshots checked and rejected raise the watermark, so each poll reads only the snapshot files
committed since the last one (plus the delta manifests of those whose kind already matched).
A rollback seen during a wait lowers the watermark to the new latest id, since the next
commits reuse the ids above it.

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
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from lakeformat.errors import InvalidArgumentError
from lakeformat_airflow import DEFAULT_CONN_ID

#: commit kinds a wait can ask for (Paimon's `commitKind`; ANALYZE commits change no data)
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


def snapshot_info(table: str, snap: Any) -> dict[str, Any]:
    """The plain dict a matching snapshot is reported as (XCom, trigger event)."""
    time = EPOCH + dt.timedelta(milliseconds=snap.time_millis)
    return {"table": table, "snapshot_id": snap.id, "commit_kind": snap.commit_kind,
            "commit_user": snap.commit_user, "commit_identifier": snap.commit_identifier,
            "time_millis": snap.time_millis, "time": time.isoformat(timespec="milliseconds"),
            "schema_id": snap.schema_id, "delta_record_count": snap.delta_record_count,
            "total_record_count": snap.total_record_count}


# -- the check ----------------------------------------------------------------------------------
class SnapshotWatch:
    """The state of one wait: the watermark and the criteria (see the module docstring).

    `start(table)` checks the partition against the table and, when neither bound is given,
    takes the latest snapshot id as the watermark; `check(table)` returns the first matching
    new snapshot's `snapshot_info`, or None. Both do blocking store reads.
    """

    def __init__(self, *, after_snapshot_id: int | None = None,
                 newer_than_millis: int | None = None, commit_kind: str | None = None,
                 partition: Mapping[str, Any] | None = None):
        self.after_id = after_snapshot_id
        self.newer_than_millis = newer_than_millis
        self.commit_kind = commit_kind
        self.partition = dict(partition) if partition else None
        self.started = False
        self.latest_seen: int | None = None  # the latest id at the previous check

    def describe(self) -> str:
        parts = []
        if self.after_id is not None:
            parts.append(f"id > {self.after_id}")
        if self.newer_than_millis is not None:
            when = EPOCH + dt.timedelta(milliseconds=self.newer_than_millis)
            parts.append(f"committed at or after {when.isoformat()}")
        if self.commit_kind:
            parts.append(f"kind {self.commit_kind}")
        if self.partition:
            parts.append(f"touching partition {self.partition}")
        return ", ".join(parts) or "any"

    def start(self, table: Any) -> None:
        from lakeformat.operation.snapshot_delta import partition_spec

        partition_spec(table.table_schema, self.partition, table.name)  # names a bad key
        if self.after_id is None and self.newer_than_millis is None:
            self.after_id = table.snapshot_manager.latest_snapshot_id() or 0
        self.started = True

    def check(self, table: Any) -> dict[str, Any] | None:
        if not self.started:
            self.start(table)
        table.refresh()  # a table dropped meanwhile fails here, not by timing out
        manager = table.snapshot_manager
        latest = manager.latest_snapshot_id()
        if latest is None:
            self.after_id = self.after_id or 0
            return None
        if self.latest_seen is not None and latest < self.latest_seen:
            # rolled back: the ids above `latest` will be taken again by new commits
            self.after_id = min(self.after_id or 0, latest)
        self.latest_seen = latest
        for snap in self._candidates(manager, latest):
            if self._matches(table, snap):
                return snapshot_info(table.name, snap)
            self.after_id = snap.id
        self.after_id = max(self.after_id or 0, latest)
        return None

    def _candidates(self, manager: Any, latest: int) -> list[Any]:
        """New snapshots up to `latest`, oldest first, read one file each."""
        if self.after_id is None:  # only a time bound: walk back to the first older snapshot
            found = []
            for sid in range(latest, 0, -1):
                snap = _snapshot_or_none(manager, sid)
                if snap is None or snap.time_millis < (self.newer_than_millis or 0):
                    break
                found.append(snap)
            return found[::-1]
        start = self.after_id + 1
        if start > latest:
            return []
        if not manager.exists(start):  # the watermark is below the earliest retained snapshot
            start = max(start, manager.earliest_snapshot_id() or start)
        snaps = (_snapshot_or_none(manager, sid) for sid in range(start, latest + 1))
        return [s for s in snaps if s is not None]

    def _matches(self, table: Any, snap: Any) -> bool:
        if self.newer_than_millis is not None and snap.time_millis < self.newer_than_millis:
            return False
        if self.commit_kind is not None and snap.commit_kind != self.commit_kind:
            return False
        if not self.partition:
            return True
        from lakeformat.errors import SnapshotNotFoundError

        try:
            return bool(table.delta_partitions(snap.id, self.partition))
        except SnapshotNotFoundError:  # expired while we looked: it is gone, not a match
            return False
        except FileNotFoundError:
            if table.snapshot_manager.exists(snap.id):
                raise  # a live snapshot missing its manifest: fail, never guess
            return False


def _snapshot_or_none(manager: Any, snapshot_id: int) -> Any:
    try:
        return manager.snapshot(snapshot_id)
    except FileNotFoundError:
        return None


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
