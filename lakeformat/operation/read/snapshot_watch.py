"""Waiting for a new snapshot of a table, as a check to run again and again: `SnapshotWatch`
keeps the watermark between checks, sees rollbacks, and matches the commit kind and the
partition a snapshot's delta touched. Airflow's snapshot sensor and trigger poll it; anything
else that waits for new data (a loop, a CLI, a scheduler of another kind) can too.

A snapshot is *new* when its id is above a watermark (`after_snapshot_id`: given, or the latest
id when the wait began) and, with `newer_than_millis`, it was committed at or after that
instant (Paimon's `timeMillis`, the committer's clock). Among new snapshots the first, oldest
first, that has the asked commit kind and whose delta touches the asked partition is the
answer. Snapshots checked and rejected raise the watermark, so each check reads only the
snapshot files committed since the last one (plus the delta manifests of those whose kind
already matched). A rollback seen during a wait lowers the watermark to the new latest id,
since the next commits reuse the ids above it.

A check costs one request when nothing changed: the `LATEST` hint, which every commit rewrites,
is read alone, and when it still names the latest id the previous check saw, that is the
answer. When it moved forward, the snapshots up to it are read at once (no schema listing, no
existence probes); when it moved back, is missing or unreadable, and at every
`FULL_CHECK_EVERY`-th check in any case (a writer that died between its snapshot and its hint
leaves the hint behind), the check re-reads the schema and the latest id as a first check does.

The watch holds no open handle: it is plain state (ids, millis, the criteria), and each check
is given the table to read (a `Table`, or anything with the few members `WatchedTable` names).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any, Protocol

from lakeformat.errors import SnapshotNotFoundError
from lakeformat.layout import LATEST
from lakeformat.meta.snapshot import Snapshot
from lakeformat.operation.read.snapshot_delta import partition_spec
from lakeformat.schema.table_schema import TableSchema
from lakeformat.storage.parallel import IO_WORKERS, parallel_map

__all__ = ["COMMIT_KINDS", "EPOCH", "SnapshotWatch", "WatchedTable", "snapshot_info"]

#: commit kinds a wait can ask for (Paimon's `commitKind`; ANALYZE commits change no data)
COMMIT_KINDS = ("APPEND", "COMPACT", "OVERWRITE")
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
#: every this many checks one re-reads the schema and verifies the latest id past the hint
FULL_CHECK_EVERY = 10


class _Snapshots(Protocol):
    def latest_snapshot_id(self) -> int | None: ...
    def earliest_snapshot_id(self) -> int | None: ...
    def exists(self, snapshot_id: int) -> bool: ...
    def snapshot(self, snapshot_id: int) -> Snapshot: ...


class WatchedTable(Protocol):
    """What a watch reads of a table (`lakeformat.Table` has it all)."""

    name: str

    @property
    def table_schema(self) -> TableSchema: ...
    @property
    def snapshot_manager(self) -> _Snapshots: ...
    def refresh(self) -> Any: ...
    def delta_partitions(self, snapshot_id: int,
                         partition: dict[str, Any] | None = None) -> list[dict[str, Any]]: ...


def snapshot_info(table: str, snap: Snapshot) -> dict[str, Any]:
    """The plain dict a matching snapshot is reported as (XCom, trigger event)."""
    time = EPOCH + dt.timedelta(milliseconds=snap.time_millis)
    return {"table": table, "snapshot_id": snap.id, "commit_kind": snap.commit_kind,
            "commit_user": snap.commit_user, "commit_identifier": snap.commit_identifier,
            "time_millis": snap.time_millis, "time": time.isoformat(timespec="milliseconds"),
            "schema_id": snap.schema_id, "delta_record_count": snap.delta_record_count,
            "total_record_count": snap.total_record_count}


class SnapshotWatch:
    """The state of one wait: the watermark and the criteria (see the module docstring).

    `start(table)` checks the partition against the table and, when neither bound is given,
    takes the latest snapshot id as the watermark; `check(table)` returns the first matching
    new snapshot's `snapshot_info`, or None. Both do blocking store reads.
    """

    #: commit kinds a wait can ask for (`commit_kind`)
    COMMIT_KINDS = COMMIT_KINDS

    def __init__(self, *, after_snapshot_id: int | None = None,
                 newer_than_millis: int | None = None, commit_kind: str | None = None,
                 partition: Mapping[str, Any] | None = None):
        self.after_id = after_snapshot_id
        self.newer_than_millis = newer_than_millis
        self.commit_kind = commit_kind
        self.partition = dict(partition) if partition else None
        self.started = False
        self.latest_seen: int | None = None  # the latest id at the previous check
        self._quick_checks = 0  # checks answered from the LATEST hint since the last full one

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

    def start(self, table: WatchedTable) -> None:
        partition_spec(table.table_schema, self.partition, table.name)  # names a bad key
        if self.after_id is None and self.newer_than_millis is None:
            self.after_id = table.snapshot_manager.latest_snapshot_id() or 0
        self.started = True

    def check(self, table: WatchedTable) -> dict[str, Any] | None:
        if not self.started:
            self.start(table)
        manager = table.snapshot_manager
        hint = self._quick_hint(manager)
        if hint is not None:
            self._quick_checks += 1
            if hint == self.latest_seen:
                return None  # one GET: nothing was committed since the previous check
            candidates = self._candidates(manager, hint)
            ids = [s.id for s in candidates]
            # the hint is proven only by the snapshots it names: every id after the watermark
            # up to it read. A hint ahead of the snapshots (written late, after a rollback)
            # would otherwise raise the watermark over ids new commits will take again.
            if ids == list(range((self.after_id or 0) + 1, hint + 1)):
                return self._scan(table, hint, candidates)
        self._quick_checks = 0
        table.refresh()  # a table dropped meanwhile fails here, not by timing out
        latest = manager.latest_snapshot_id()
        if latest is None:
            self.after_id = self.after_id or 0
            return None
        return self._scan(table, latest, None)

    def _scan(self, table: WatchedTable, latest: int, candidates: list[Snapshot] | None
              ) -> dict[str, Any] | None:
        """The first new snapshot up to `latest` that matches (None: none did), moving the
        watermark past those that do not."""
        if self.latest_seen is not None and latest < self.latest_seen:
            # rolled back: the ids above `latest` will be taken again by new commits
            self.after_id = min(self.after_id or 0, latest)
        self.latest_seen = latest
        if candidates is None:
            candidates = self._candidates(table.snapshot_manager, latest)
        for snap in candidates:
            if self._matches(table, snap):
                return snapshot_info(table.name, snap)
            self.after_id = snap.id
        self.after_id = max(self.after_id or 0, latest)
        return None

    def _quick_hint(self, manager: _Snapshots) -> int | None:
        """The LATEST hint when this check may trust it: after a full check, not due for the
        next one, and at or above the latest id seen (None: do the full check)."""
        if (self.latest_seen is None or self.after_id is None
                or self._quick_checks + 1 >= FULL_CHECK_EVERY):
            return None
        file_io, paths = getattr(manager, "file_io", None), getattr(manager, "paths", None)
        if file_io is None or paths is None:
            return None
        try:
            hint = int(file_io.read_bytes(paths.snapshot_hint(LATEST)).decode().strip())
        except (OSError, ValueError, UnicodeDecodeError):
            return None  # gone (a dropped table?) or torn: the full check says what happened
        return hint if hint >= self.latest_seen else None

    def _candidates(self, manager: _Snapshots, latest: int) -> list[Snapshot]:
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
        # a watermark far below the earliest retained snapshot: start there, not at the gap
        if latest - start >= IO_WORKERS and not manager.exists(start):
            start = max(start, manager.earliest_snapshot_id() or start)
        snaps = parallel_map(lambda sid: _snapshot_or_none(manager, sid),
                             range(start, latest + 1))
        return [s for s in snaps if s is not None]

    def _matches(self, table: WatchedTable, snap: Snapshot) -> bool:
        if self.newer_than_millis is not None and snap.time_millis < self.newer_than_millis:
            return False
        if self.commit_kind is not None and snap.commit_kind != self.commit_kind:
            return False
        if not self.partition:
            return True
        try:
            return bool(table.delta_partitions(snap.id, self.partition))
        except SnapshotNotFoundError:  # expired while we looked: it is gone, not a match
            return False
        except FileNotFoundError:
            if table.snapshot_manager.exists(snap.id):
                raise  # a live snapshot missing its manifest: fail, never guess
            return False


def _snapshot_or_none(manager: _Snapshots, snapshot_id: int) -> Snapshot | None:
    try:
        return manager.snapshot(snapshot_id)
    except FileNotFoundError:
        return None
