"""HTML of one table's page: its score and components, the heat map of its buckets, the due
actions with their reasons and the button that asks Airflow to run `lakeformat_on_debt` for
it, its last maintenance runs, the snapshot timeline and the schema versions."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request

from lakeformat_airflow import DEFAULT_CONN_ID
from lakeformat_airflow.lake_view import urls
from lakeformat_airflow.lake_view.heatmap import _size, heatmap
from lakeformat_airflow.lake_view.render import NONE, e, layout, run_link, score_class

#: the DAG the trigger button runs, and the conf key it reads its tables from
TRIGGER_DAG = "lakeformat_on_debt"
TRIGGER_CONF_KEY = "tables"


def _figures(health: dict[str, Any]) -> str:
    t, s = health.get("totals") or {}, health.get("snapshots") or {}
    items = [("Latest snapshot", health.get("snapshot_id")),
             ("Buckets", t.get("buckets")), ("Files", t.get("files")),
             ("Rows", t.get("rows")), ("Size", _size(int(t.get("bytes") or 0))),
             ("Small files", t.get("small_files")), ("Level-0 files", t.get("level0_files")),
             ("Worst bucket's sorted runs", t.get("max_sorted_runs")),
             ("Snapshots", s.get("count")), ("Expirable snapshots", s.get("expirable")),
             ("Schema files", (health.get("schemas") or {}).get("files")),
             ("Manifests", (health.get("manifests") or {}).get("files")),
             ("Health computed", health.get("computed_at"))]
    # one grid cell per figure: its label above its value
    return '<dl class="figures">' + "".join(
        f"<div><dt>{e(k)}</dt><dd>{e(NONE if v is None else v)}</dd></div>"
        for k, v in items) + "</dl>"


def _components(health: dict[str, Any]) -> str:
    rows = "".join(
        f'<tr data-component="{e(name)}"><td>{e(name)}</td><td>{c.get("health", 0):.2f}</td>'
        f'<td>{c.get("weight", 0):g}</td><td>{c.get("points", 0):.1f}</td>'
        f'<td class="formula">{e(c.get("formula"))}</td></tr>'
        for name, c in (health.get("components") or {}).items())
    return ('<table id="components"><thead><tr><th>Component</th><th>Health</th><th>Weight</th>'
            f"<th>Points</th><th>Formula</th></tr></thead><tbody>{rows}</tbody></table>")


def _due(request: Request, conn: str, name: str, due: dict[str, Any]) -> str:
    rows = "".join(
        f'<tr data-kind="{e(a["kind"])}"{" class=urgent" if a.get("urgent") else ""}>'
        f'<td class="kind">{e(a["kind"])}{" (urgent)" if a.get("urgent") else ""}</td>'
        f'<td class="rule"><code>{e(a.get("rule"))}</code></td>'
        f'<td class="reason">{e(a.get("reason"))}</td>'
        f'<td class="work">{e(a.get("work_files", 0))} files, '
        f'{e(_size(int(a.get("work_bytes") or 0)))}</td>'
        f'<td class="gain">+{float(a.get("expected_gain") or 0):.1f}</td></tr>'
        for a in due.get("actions") or [])
    if not rows:
        rows = '<tr class="none"><td colspan="5">Nothing is due.</td></tr>'
    not_due = "".join(f"<li><code>{e(rule)}</code>: {e(why)}</li>"
                      for rule, why in (due.get("not_due") or {}).items())
    if conn == DEFAULT_CONN_ID:
        trigger = (f'<p class="trigger"><button id="trigger" type="button" '
                   f'data-dag="{TRIGGER_DAG}" data-tables="{e(name)}" '
                   f'data-conf-key="{TRIGGER_CONF_KEY}">Run {TRIGGER_DAG} for {e(name)}</button> '
                   '<span id="trigger-result" aria-live="polite"></span></p>')
    else:
        trigger = (f'<p class="trigger note">The maintenance DAGs use the connection '
                   f'<code>{DEFAULT_CONN_ID}</code>; this table is of <code>{e(conn)}</code>.</p>')
    return ('<h2>Due maintenance</h2><table id="due"><thead><tr><th>Action</th><th>Rule</th>'
            "<th>Reason</th><th>Work</th><th>Gain</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>{trigger}"
            + (f'<details class="not-due"><summary>Not due</summary><ul>{not_due}</ul>'
               "</details>" if not_due else ""))


def _maintenance(request: Request, conn: str, runs: list[dict[str, Any]]) -> str:
    rows = "".join(
        f'<tr data-run="{e(r["run_id"])}" class="state-{e(r.get("state"))}">'
        f'<td class="dag">{e(r["dag_id"])}</td>'
        f'<td class="run">{run_link(request, r, r["run_id"])}</td>'
        f'<td class="state">{e(r.get("state") or "queued")}</td>'
        f'<td class="when">{e(r.get("end_date") or r.get("start_date") or NONE)}</td>'
        f'<td class="summary">{e(r.get("summary") or NONE)}</td></tr>' for r in runs)
    if not rows and conn != DEFAULT_CONN_ID:  # the runs name a table, not its connection
        rows = ('<tr class="none"><td colspan="5">Runs are shown for the tables of '
                f"<code>{DEFAULT_CONN_ID}</code> only, the connection the maintenance DAGs "
                "use.</td></tr>")
    elif not rows:
        rows = '<tr class="none"><td colspan="5">No maintenance task has run on it.</td></tr>'
    return ('<h2>Last maintenance</h2><table id="maintenance"><thead><tr><th>DAG</th>'
            "<th>Run</th><th>State</th><th>Ended</th><th>Result</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>")


def _delta(value: Any) -> str:
    if value is None:
        return NONE
    return f"+{value}" if value > 0 else ("\u2212" + str(-value) if value < 0 else "0")


def _snapshots(snapshots: list[dict[str, Any]], limit: int) -> str:
    rows = []
    for s in reversed(snapshots):
        who = e(s.get("commit_user"))
        if s.get("dag"):
            who = (f'<span class="dag">{e(s["dag"])}</span>'
                   + (f' / <span class="task">{e(s["task"])}</span>' if s.get("task") else "")
                   + (f'[{e(s["map_index"])}]' if s.get("map_index") is not None else ""))
        rows.append(
            f'<tr data-snapshot="{e(s["snapshot_id"])}" data-kind="{e(s["commit_kind"])}">'
            f'<td class="id">{e(s["snapshot_id"])}</td>'
            f'<td class="time">{e((s.get("time") or "")[:19].replace("T", " "))}</td>'
            f'<td class="kind">{e(s["commit_kind"])}</td>'
            f'<td class="committer" title="{e(s.get("commit_user"))}">{who}</td>'
            f'<td class="delta">{e(_delta(s.get("delta_record_count")))}</td>'
            f'<td class="total">{e(NONE if s.get("total_record_count") is None else s["total_record_count"])}</td>'  # noqa: E501
            f'<td class="schema">{e(s.get("schema_id"))}</td></tr>')
    body = "".join(rows) or '<tr class="none"><td colspan="7">No snapshot yet.</td></tr>'
    return (f"<h2>Snapshots</h2><p class=\"note\">The latest {limit} at most, newest first; "
            "records added (+) or deleted (\u2212) as the snapshot counts them.</p>"
            '<table id="snapshots"><thead><tr><th>Id</th><th>Time (UTC)</th><th>Kind</th>'
            "<th>Committed by</th><th>Records \u00b1</th><th>Total records</th><th>Schema</th>"
            f"</tr></thead><tbody>{body}</tbody></table>")


def _schemas(versions: list[dict[str, Any]], health: dict[str, Any]) -> str:
    info = health.get("schemas") or {}
    kept = {str(k): v for k, v in (info.get("kept") or {}).items()}
    removable = {str(i) for i in info.get("removable") or []}
    rows = []
    for v in reversed(versions):
        sid = str(v["id"])
        why = kept.get(sid) or ("removable" if sid in removable else NONE)
        changed = ", ".join(v.get("options_changed") or [])
        rows.append(
            f'<tr data-schema="{e(sid)}"{" class=removable" if sid in removable else ""}>'
            f'<td class="id">{e(sid)}</td><td class="time">{e(v.get("time") or NONE)}</td>'
            f'<td class="fields">{e(", ".join(v.get("fields") or []))}</td>'
            f'<td class="options">{e(changed or NONE)}</td><td class="kept">{e(why)}</td></tr>')
    body = "".join(rows) or '<tr class="none"><td colspan="5">No schema file.</td></tr>'
    return ('<h2>Schema versions</h2><table id="schemas"><thead><tr><th>Id</th><th>Time</th>'
            "<th>Fields</th><th>Options changed</th><th>Kept because</th></tr></thead>"
            f"<tbody>{body}</tbody></table>")


def table_page(request: Request, conn: str, name: str, warehouse: str, health: dict[str, Any],
               due: dict[str, Any], snapshots: list[dict[str, Any]],
               versions: list[dict[str, Any]], runs: list[dict[str, Any]],
               snapshot_limit: int) -> str:
    svg, note = heatmap(health.get("buckets") or [])
    score = health.get("score")
    errors = "".join(f"<li>{e(x)}</li>" for x in health.get("errors") or [])
    body = (
        f'<h1 id="table-name">{e(name)}</h1>'
        f'<p class="where">connection <code>{e(conn)}</code>, warehouse '
        f'<code>{e(warehouse)}</code></p>'
        f'<p class="headline">Health <span id="score" class="{score_class(score)}">{e(score)}'
        "</span>/100</p>"
        + (f'<ul class="errors">{errors}</ul>' if errors else "")
        + _figures(health) + _components(health)
        + '<h2>Sorted runs per partition and bucket</h2>'
        + (f'<div class="heatmap">{svg}</div>' if health.get("buckets") else
           '<p class="note">No data file yet.</p>')
        + (f'<p class="note">{e(note)}</p>' if note else "")
        + _due(request, conn, name, due) + _maintenance(request, conn, runs)
        + _snapshots(snapshots, snapshot_limit) + _schemas(versions, health))
    crumbs = f' / <a href="{e(urls.table_page(request, conn, name))}">{e(name)}</a>'
    return layout(request, f"{name} \u2014 Lake", body, crumbs)
