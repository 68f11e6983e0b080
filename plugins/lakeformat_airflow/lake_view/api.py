"""The Lake view's JSON API (every route of it needs a user the auth manager lets in:
`access`).

* `GET api/tables` — `[{"connection", "table", "report": DueReport.to_dict() | null,
  "error": str | null}]`, one per listed table (a table that cannot be read has `error`), then
  one per connection that cannot be read (`table` null).
* `GET api/tables/{db}/{table}?conn=` — `{"health": TableHealth.to_dict(), "due":
  DueReport.to_dict()}`: one `Table.maintenance_due()` read gives both.
* `GET api/tables/{db}/{table}/snapshots?conn=&limit=` — the latest `limit` snapshots (default
  100), oldest first: `lakeformat.snapshot_info` dicts plus `dag`, `task`, `map_index` parsed
  from an Airflow operator's commit user (`airflow:<dag>.<task>[<i>]...`).

A bad name is 400 (lakeformat's identifier check, message included), a connection or table
the view does not list 404, a table whose metadata cannot be read 502 with its error, a
`[lakeformat]` setting the view cannot use 500 naming it (`config`).
`conn` defaults to `lakeformat_default`. The `X-Lake-Cache` header says what the health cache
did (`cache`). Routes are plain `def`s: FastAPI runs them in its
thread pool, so blocking store reads never stall the server's event loop.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Query, Response

from lakeformat_airflow import DEFAULT_CONN_ID
from lakeformat_airflow.lake_view.access import api_user

router = APIRouter(prefix="/api", dependencies=[Depends(api_user)])

#: the most snapshots one request reads
MAX_SNAPSHOTS = 1000
#: what the health cache did for the answer (`cache`)
CACHE_HEADER = "X-Lake-Cache"


def _state(conn: str, db: str, table: str, response: Response) -> tuple[Any, str, Any]:
    """(source, "db.t", the table's one cache state), or the HTTP error of the URL / state."""
    from lakeformat_airflow.lake_view import service

    try:
        source, name, state, outcome = service.table_state(conn, db, table)
    except service.BadName as e:
        raise HTTPException(status_code=400, detail=str(e)) from None
    except (service.UnknownSource, service.NotListed) as e:
        raise HTTPException(status_code=404, detail=str(e)) from None
    if state.error is not None:
        status = 404 if state.error.startswith(("TableNotFoundError", "DatabaseNotFoundError")) \
            else 502
        raise HTTPException(status_code=status, detail=state.error,
                            headers={CACHE_HEADER: outcome})
    response.headers[CACHE_HEADER] = outcome
    return source, name, state


@router.get("/tables")
def tables(response: Response) -> list[dict[str, Any]]:
    from lakeformat_airflow.lake_view import service

    rows = service.list_rows()
    response.headers[CACHE_HEADER] = service.cache_header(rows)
    return [row.to_dict() for row in rows]


@router.get("/tables/{db}/{table}")
def table(db: str, table: str, response: Response,
          conn: str = DEFAULT_CONN_ID) -> dict[str, Any]:
    _, _, state = _state(conn, db, table, response)
    report = state.report
    return {"health": report.health.to_dict(), "due": report.to_dict()}


@router.get("/tables/{db}/{table}/snapshots")
def snapshots(db: str, table: str, response: Response, conn: str = DEFAULT_CONN_ID,
              limit: int = Query(100, ge=1, le=MAX_SNAPSHOTS)) -> list[dict[str, Any]]:
    from lakeformat_airflow.lake_view.history import snapshot_timeline

    source, name, state = _state(conn, db, table, response)
    try:
        return snapshot_timeline(state, name, limit)
    except Exception as e:  # noqa: BLE001 - the store's error, redacted
        from lakeformat_airflow.lake_view.sources import error_text

        raise HTTPException(status_code=502, detail=error_text(e, source.secrets)) from None
