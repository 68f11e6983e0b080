"""The last maintenance of each table, from Airflow's metadata DB: the task instances of the
maintenance DAGs' per-table task (`maintain`, mapped with `map_index_template="{{ task.table }}"`,
so its rendered map index is the table's name) and their results (XCom `return_value`: the
`DueRunResult` of `LakeformatRunDueActionsOperator`).

A task instance records its table's name but not its connection, and both DAGs run on
`lakeformat_default` (`MAINTENANCE_CONN`). So runs are shown for that connection's tables
only: a table of the same name on another connection is not the one they maintained, and it
shows none.

A lookup failure (no metadata DB in this process, a schema of another Airflow version) gives
no runs: the rest of the page still shows.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections.abc import Iterable
from typing import Any

from lakeformat_airflow import DEFAULT_CONN_ID

log = logging.getLogger(__name__)

#: the DAGs whose per-table task results the view shows, and that task's id
MAINTENANCE_DAGS = ("lakeformat_maintenance", "lakeformat_on_debt")
MAINTAIN_TASK = "maintain"
#: the connection those DAGs use: the only one whose tables their runs are shown for
MAINTENANCE_CONN = DEFAULT_CONN_ID
#: rows scanned for the table list's "last maintenance" column (newest first)
SCAN_LIMIT = 2000


def _iso(value: dt.datetime | None) -> str | None:
    return None if value is None else value.isoformat(timespec="seconds")


def _query(session: Any, tables: Iterable[str], limit: int) -> list[Any]:
    from airflow.models.taskinstance import TaskInstance as TI
    from sqlalchemy import func, select

    rendered = TI.__table__.c.rendered_map_index
    when = func.coalesce(TI.end_date, TI.start_date)
    stmt = (select(TI.dag_id, TI.run_id, TI.task_id, TI.map_index, rendered, TI.state,
                   TI.start_date, TI.end_date, TI.try_number)
            .where(TI.dag_id.in_(MAINTENANCE_DAGS), TI.task_id == MAINTAIN_TASK,
                   rendered.in_(list(tables)))
            .order_by(when.desc().nulls_last()).limit(limit))
    return list(session.execute(stmt).all())


def _results(session: Any, rows: list[Any]) -> dict[tuple[str, str, int], Any]:
    from airflow.models.xcom import XComModel
    from sqlalchemy import or_, select

    if not rows:
        return {}
    keys = {(r.dag_id, r.run_id, r.map_index) for r in rows}
    stmt = select(XComModel.dag_id, XComModel.run_id, XComModel.map_index, XComModel.value) \
        .where(XComModel.task_id == MAINTAIN_TASK, XComModel.key == "return_value",
               or_(*[(XComModel.dag_id == d) & (XComModel.run_id == r)
                     for d, r in {(d, r) for d, r, _ in keys}]))
    out = {}
    for d, r, i, value in session.execute(stmt).all():
        if (d, r, i) in keys:
            if isinstance(value, (str, bytes)):
                try:
                    value = json.loads(value)
                except ValueError:
                    pass
            out[(d, r, i)] = value
    return out


def summarize(result: Any) -> str:
    """A result in a line: the actions done, the skipped ones, the score before -> after."""
    if not isinstance(result, dict):
        return ""
    kinds = []
    for a in result.get("actions") or []:
        action = a.get("action") if isinstance(a, dict) else None
        kind = (action or {}).get("kind") if isinstance(action, dict) else None
        if kind:
            kinds.append(str(kind))
    parts = [", ".join(kinds) if kinds else "nothing done"]
    skipped = result.get("skipped") or []
    if skipped:
        parts.append(f"{len(skipped)} skipped")
    before = (result.get("health_before") or {}).get("score")
    after = (result.get("health_after") or {}).get("score")
    if before is not None or after is not None:
        parts.append(f"score {before if before is not None else '?'} -> "
                     f"{after if after is not None else '?'}")
    return "; ".join(parts)


def _run(row: Any, result: Any = None) -> dict[str, Any]:
    return {"table": row[4], "dag_id": row.dag_id, "run_id": row.run_id, "task_id": row.task_id,
            "map_index": row.map_index, "state": None if row.state is None else str(row.state),
            "start_date": _iso(row.start_date), "end_date": _iso(row.end_date),
            "try_number": row.try_number, "result": result, "summary": summarize(result)}


def last_runs(tables: Iterable[tuple[str, str]]) -> dict[tuple[str, str], dict[str, Any]]:
    """{(connection, "db.t"): its newest maintenance task instance} for the (connection,
    table) pairs that have one (tables of `MAINTENANCE_CONN` only)."""
    names = sorted({t for conn, t in tables if conn == MAINTENANCE_CONN})
    if not names:
        return {}
    try:
        from airflow.utils.session import create_session

        with create_session() as session:
            rows = _query(session, names, SCAN_LIMIT)
    except Exception as e:  # noqa: BLE001 - the page shows without the column
        log.warning("lake view: cannot read maintenance runs: %s", type(e).__name__)
        return {}
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for row in rows:
        out.setdefault((MAINTENANCE_CONN, row[4]), _run(row))
    return out


def table_runs(conn: str, table: str, limit: int = 10) -> list[dict[str, Any]]:
    """The newest `limit` maintenance task instances of one table of connection `conn`, with
    their results (none for another connection than `MAINTENANCE_CONN`)."""
    if conn != MAINTENANCE_CONN:
        return []
    try:
        from airflow.utils.session import create_session

        with create_session() as session:
            rows = _query(session, [table], limit)
            results = _results(session, rows)
    except Exception as e:  # noqa: BLE001 - the page shows without the section
        log.warning("lake view: cannot read maintenance runs: %s", type(e).__name__)
        return []
    return [_run(r, results.get((r.dag_id, r.run_id, r.map_index))) for r in rows]
