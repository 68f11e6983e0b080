"""The Lake view's pages: `/` (the table list) and `/tables/{db}/{table}?conn=` (one table).

An anonymous request is sent to Airflow's login (307), a user the auth manager refuses gets
403 (`access`). A bad table name is 400, a table or connection the view does not list 404,
a table that cannot be read 502 — each a small page saying why (redacted); a `[lakeformat]`
setting the view cannot use is 500 naming it (`application`). Routes are plain `def`s, run in
FastAPI's thread pool.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse

from lakeformat_airflow import DEFAULT_CONN_ID
from lakeformat_airflow.lake_view.access import page_user

router = APIRouter(dependencies=[Depends(page_user)])

#: snapshots on a table's page
PAGE_SNAPSHOTS = 50


def _html(text: str, status: int = 200, cache: str = "") -> HTMLResponse:
    headers = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"}
    if cache:
        headers["X-Lake-Cache"] = cache
    return HTMLResponse(text, status_code=status, headers=headers)


@router.get("/", response_class=HTMLResponse)
def table_list(request: Request) -> Any:
    from lakeformat_airflow.lake_view import render, runs, service

    config = service.settings()
    rows = service.list_rows(config)
    last = runs.last_runs((r.connection, r.table) for r in rows if r.table)
    return _html(render.list_page(request, rows, last, config.ttl),
                 cache=service.cache_header(rows))


@router.get("/tables/{db}/{table}", response_class=HTMLResponse)
def table_view(request: Request, db: str, table: str, conn: str = DEFAULT_CONN_ID) -> Any:
    from lakeformat_airflow.lake_view import history, render, runs, service
    from lakeformat_airflow.lake_view.table_page import table_page

    try:
        source, name, state, outcome = service.table_state(conn, db, table)
    except service.BadName as e:
        return _html(render.message_page(request, "Bad table name", str(e)), 400)
    except (service.UnknownSource, service.NotListed) as e:
        return _html(render.message_page(request, "Not found", str(e)), 404)
    if state.error is not None:
        missing = state.error.startswith(("TableNotFoundError", "DatabaseNotFoundError"))
        return _html(render.message_page(request, f"{db}.{table} cannot be read", state.error),
                     404 if missing else 502)
    report = state.report
    try:
        snapshots = history.snapshot_timeline(state, name, PAGE_SNAPSHOTS)
        versions = history.schema_versions(state)
    except Exception as e:  # noqa: BLE001 - the store's error, redacted
        from lakeformat_airflow.lake_view.sources import error_text

        return _html(render.message_page(request, f"{name} cannot be read",
                                         error_text(e, source.secrets)), 502)
    return _html(table_page(request, conn, name, source.warehouse, report.health.to_dict(),
                            report.to_dict(), snapshots, versions, runs.table_runs(conn, name),
                            PAGE_SNAPSHOTS), cache=outcome)
