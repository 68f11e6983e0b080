"""HTML of the Lake view: the frame every page shares and the table list. Every value is
escaped (`html.escape`); the pages load only the package's own `static/lake.css` and
`static/lake.js` (no CDN), and hold no connection option — only the warehouse URI, redacted."""

from __future__ import annotations

from html import escape
from typing import Any

from starlette.requests import Request

from lakeformat_airflow.lake_view import urls

NONE = "\u2014"  # an em dash: nothing due, no run
#: the columns of the table list: (class, header, sort type)
COLUMNS = [("connection", "Connection", "text"), ("table", "Table", "text"),
           ("score", "Score", "number"), ("sorted-runs", "Sorted runs (worst bucket)", "number"),
           ("small-files", "Small files", "number"), ("snapshots", "Snapshots", "number"),
           ("schema-files", "Schema files", "number"), ("due", "Due actions", "text"),
           ("last-maintenance", "Last maintenance", "text")]


def e(value: Any) -> str:
    return escape("" if value is None else str(value))


def score_class(score: Any) -> str:
    if not isinstance(score, int):
        return "unknown"
    return "good" if score >= 80 else "fair" if score >= 50 else "poor"


def layout(request: Request, title: str, body: str, crumbs: str = "") -> str:
    app, root = urls.app_root(request), urls.airflow_root(request)
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(title)}</title>"
        f'<link rel="stylesheet" href="{e(app)}static/lake.css">'
        f'<script src="{e(app)}static/lake.js" defer></script></head>'
        f'<body data-app-root="{e(app)}" data-airflow-root="{e(root)}">'
        f'<header><a class="home" href="{e(app)}">Lake</a>{crumbs}</header>'
        f"<main>{body}</main></body></html>")


def run_link(request: Request, run: dict[str, Any], text: str) -> str:
    """A link to a task instance's page in Airflow's UI (`data-spa`: lake.js opens it in the
    UI's own window when the page is framed)."""
    href = urls.task_run(request, run["dag_id"], run["run_id"], run["task_id"],
                         int(run.get("map_index", -1)))
    return f'<a class="airflow-link" data-spa href="{e(href)}">{e(text)}</a>'


def last_maintenance_cell(request: Request, run: dict[str, Any] | None) -> str:
    if run is None:
        return f'<td class="last-maintenance" data-value="">{NONE}</td>'
    when = run.get("end_date") or run.get("start_date") or ""
    text = f"{run.get('state') or 'queued'} {when[:16].replace('T', ' ')}".strip()
    title = f"{run['dag_id']} / {run['run_id']}"
    return (f'<td class="last-maintenance state-{e(run.get("state"))}" data-value="{e(when)}" '
            f'title="{e(title)}">{run_link(request, run, text)}</td>')


def _num(cls: str, value: Any) -> str:
    shown = NONE if value is None else value
    return f'<td class="{cls}" data-value="{e(value if value is not None else "")}">{e(shown)}</td>'


def table_row(request: Request, row: Any, run: dict[str, Any] | None) -> str:
    conn, name = row.connection, row.table
    error = row.error
    if name is None:  # a connection that cannot be read
        return (f'<tr class="error connection-error" data-table="" data-connection="{e(conn)}">'
                f'<td class="connection" data-value="{e(conn)}">{e(conn)}</td>'
                f'<td class="table" data-value="">{NONE}</td>'
                f'<td class="error-text" colspan="{len(COLUMNS) - 2}">{e(error)}</td></tr>')
    link = f'<a href="{e(urls.table_page(request, conn, name))}">{e(name)}</a>'
    head = (f'<td class="connection" data-value="{e(conn)}">{e(conn)}</td>'
            f'<td class="table" data-value="{e(name)}">{link}</td>')
    if error is not None or row.report is None or row.report.health is None:
        return (f'<tr class="error" data-table="{e(name)}" data-connection="{e(conn)}">{head}'
                f'<td class="error-text" colspan="{len(COLUMNS) - 2}">{e(error)}</td></tr>')
    report, health = row.report, row.report.health
    kinds = list(dict.fromkeys(a.kind for a in report.actions))
    urgent = any(a.urgent for a in report.actions)
    return (f'<tr data-table="{e(name)}" data-connection="{e(conn)}"'
            f'{" class=urgent" if urgent else ""}>{head}'
            f'<td class="score {score_class(report.score)}" data-value="{e(report.score)}">'
            f"{e(report.score)}</td>"
            + _num("sorted-runs", health.totals.get("max_sorted_runs"))
            + _num("small-files", health.totals.get("small_files"))
            + _num("snapshots", health.snapshots.get("count"))
            + _num("schema-files", health.schemas.get("files"))
            + f'<td class="due" data-value="{e(len(kinds))}">'
            + (e(", ".join(kinds)) if kinds else NONE) + "</td>"
            + last_maintenance_cell(request, run) + "</tr>")


def list_page(request: Request, rows: list[Any], runs: dict[tuple[str, str], dict[str, Any]],
              ttl: float) -> str:
    """The table list; `runs` by (connection, table) (`runs.last_runs`)."""
    tables = [r for r in rows if r.table is not None]
    errors = sum(1 for r in rows if r.error)
    due = sum(1 for r in tables if r.report is not None and r.report.actions)
    heads = "".join(f'<th data-sort="{c}" data-type="{t}" scope="col">{e(h)}</th>'
                    for c, h, t in COLUMNS)
    body_rows = "".join(table_row(request, r, runs.get((r.connection, r.table or "")))
                        for r in rows)
    if not rows:
        body_rows = (f'<tr class="empty"><td colspan="{len(COLUMNS)}">No tables: no '
                     "<code>lakeformat</code> connection lists one (see <code>[lakeformat] "
                     "lake_view_connections</code> and <code>lake_view_tables</code>).</td></tr>")
    summary = (f"{len(tables)} tables, {due} with maintenance due, {errors} that cannot be read. "
               f"Health is read from each table's metadata and kept up to {ttl:g} s; "
               "click a column to sort.")
    body = (f'<h1>Lake</h1><p class="summary" id="summary">{e(summary)}</p>'
            f'<table id="lake-tables" class="sortable"><thead><tr>{heads}</tr></thead>'
            f"<tbody>{body_rows}</tbody></table>")
    return layout(request, "Lake", body)


def message_page(request: Request, title: str, text: str) -> str:
    return layout(request, title, f'<h1>{e(title)}</h1><p class="message">{e(text)}</p>')
