"""A table's history for the Lake view: its latest snapshots (the timeline) and schema
versions, read through the table object of a health-cache state at that state's snapshot ids,
once per state (`State.derived`)."""

from __future__ import annotations

import datetime as dt
import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from lakeformat_airflow.lake_view.cache import State

#: the commit user the provider's operators write: `airflow:<dag>.<task>` with `[<map index>]`
#: for a mapped task, and `:<action>` for a due action's compaction; a backfill stream's
#: `airflow:<dag>:<source>` has no task
_AIRFLOW_USER = re.compile(
    r"^airflow:(?P<dag>[^.:\[\]]+)(?:\.(?P<task>[^:\[\]]+)(?:\[(?P<map>\d+)\])?)?(?::.*)?$")
_READERS = 8


def committed_by(commit_user: str | None) -> dict[str, Any]:
    """{"dag", "task", "map_index"} of an Airflow operator's commit user (None each when the
    commit was not made by one)."""
    match = _AIRFLOW_USER.match(commit_user or "")
    if match is None:
        return {"dag": None, "task": None, "map_index": None}
    index = match.group("map")
    return {"dag": match.group("dag"), "task": match.group("task"),
            "map_index": None if index is None else int(index)}


def snapshot_timeline(state: State, name: str, limit: int) -> list[dict[str, Any]]:
    """The latest `limit` snapshots of the state's table up to its latest id, oldest first, as
    `lakeformat.snapshot_info` dicts with `committed_by` merged in; an id expired meanwhile
    is left out."""
    from lakeformat import snapshot_info

    def read() -> list[dict[str, Any]]:
        latest, earliest = state.ids or (None, None)
        if latest is None:
            return []
        first = max(earliest if earliest is not None else latest, latest - limit + 1)
        manager = state.table.snapshot_manager

        def one(sid: int) -> dict[str, Any] | None:
            try:
                snap = manager.snapshot(sid)
            except FileNotFoundError:
                return None
            return {**snapshot_info(name, snap), **committed_by(snap.commit_user)}

        ids = range(first, latest + 1)
        with ThreadPoolExecutor(max_workers=min(_READERS, len(ids))) as pool:
            return [s for s in pool.map(one, ids) if s is not None]

    return state.derived(("snapshots", limit), read)


def _iso(millis: int) -> str | None:
    if not millis:
        return None
    return dt.datetime.fromtimestamp(millis / 1000, dt.UTC).isoformat(timespec="seconds")


def schema_versions(state: State) -> list[dict[str, Any]]:
    """Every schema file of the state's table, oldest first: id, time, field names, keys, and
    the options that differ from the version before; the page adds what keeps each (the
    health report's `schemas.kept`)."""

    def read() -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        before: dict[str, str] = {}
        for s in sorted(state.table.schemas(), key=lambda s: s.id):
            options = dict(s.options)
            changed = sorted(k for k in set(options) | set(before)
                             if options.get(k) != before.get(k))
            out.append({"id": s.id, "time": _iso(s.time_millis), "fields": s.field_names,
                        "primary_keys": list(s.primary_keys),
                        "partition_keys": list(s.partition_keys),
                        "options_changed": changed if out else []})
            before = options
        return out

    return state.derived(("schemas",), read)
