"""`health` and `due`: a table's health read from its metadata, and the maintenance due now
with the rule that fired. Both read metadata only and take no lease."""

from __future__ import annotations

from typing import Any

from lakeformat.cli.commands import Context
from lakeformat.cli.errors import TablesFailed, UsageError, kv
from lakeformat.cli.render import human_size, table_text
from lakeformat.health import (
    DueAction,
    DueReport,
    TableHealth,
    maintenance_due_many,
    rank_actions,
)
from lakeformat.options import parse_memory_size

#: buckets a text report lists unless --buckets says otherwise
DEFAULT_BUCKETS = 20


def _partition_filter(specs: list[str] | None) -> list[dict[str, str]]:
    """--partition dt=2024-01-01[,h=3] (repeatable) as partition-spec dicts."""
    return [kv(spec.split(","), "--partition") for spec in specs or []]


def _in(bucket: dict[str, Any], wanted: list[dict[str, str]]) -> bool:
    values = {k: "null" if v is None else str(v)
              for k, v in (bucket.get("partition_values") or {}).items()}
    return any(all(values.get(k) == v for k, v in spec.items()) for spec in wanted)


def health_text(h: dict[str, Any], limit: int | None) -> str:
    """Score and components, the table's figures, then the worst buckets."""
    lines = [f"{h['table']}: health {h['score']}/100 at snapshot {h['snapshot_id']}"]
    comp = h.get("components") or {}
    lines.append(table_text(
        ["COMPONENT", "HEALTH", "WEIGHT", "FIGURES"],
        [[name, f"{c['health']:.2f}", f"{c['weight']:.2f}",
          ", ".join(f"{k}={v}" for k, v in (c.get("figures") or {}).items())]
         for name, c in comp.items()], right=[1, 2]))
    s, t, sc, m = h["snapshots"], h["totals"], h["schemas"], h["manifests"]
    lines.append("")
    lines.append(f"snapshots {s.get('count')} ({s.get('earliest_id')}..{s.get('latest_id')}), "
                 f"{s.get('expirable', 0)} expirable now "
                 f"({s.get('expirable_files', 0)} files, "
                 f"{human_size(s.get('expirable_bytes', 0))} only they hold)")
    lines.append(f"files {t.get('files')} in {t.get('buckets')} buckets, "
                 f"{t.get('rows')} rows, {human_size(t.get('bytes'))}; "
                 f"{t.get('small_files')} small, {t.get('dv_rows')} rows deleted by vectors; "
                 f"worst bucket {t.get('max_sorted_runs')} sorted runs")
    lines.append(f"schema files {sc.get('files')}, removable now "
                 f"{list(sc.get('removable') or [])}; manifests {m.get('files')} "
                 f"({m.get('delete_entries')} DELETE entries); "
                 f"tags {h['tags'].get('count')}, consumers {len(h.get('consumers') or {})}, "
                 f"changelog files {h.get('changelog_files')}")
    if h.get("orphans") is not None:
        o = h["orphans"]
        lines.append(f"orphan files {o.get('files')} ({human_size(o.get('bytes'))})")
    for error in h.get("errors") or []:
        lines.append(f"error: {error}")
    buckets = h.get("buckets") or []
    shown = buckets if limit is None else buckets[:limit]
    if shown:
        lines.append("")
        lines.append(table_text(
            ["PARTITION", "BUCKET", "SORTED RUNS", "LEVEL-0", "FILES", "SMALL", "ROWS",
             "DELETED", "SIZE", "DEBT"],
            [[b["partition"] or "-", b["bucket"], b["sorted_runs"], b["level0_files"],
              b["files"], b["small_files"], b["rows"], b["dv_rows"], human_size(b["bytes"]),
              f"{b['debt']:.2f}"] for b in shown], right=range(1, 10)))
        if len(shown) < len(buckets):
            lines.append(f"... {len(buckets) - len(shown)} more buckets (--buckets N)")
    return "\n".join(lines)


def health(ctx: Context) -> None:
    a = ctx.args
    table = ctx.table()
    wanted = _partition_filter(a.partition)
    keys = list(table.table_schema.partition_keys)
    unknown = sorted({k for spec in wanted for k in spec if k not in keys})
    if unknown:
        raise UsageError(f"--partition names {', '.join(unknown)}, not partition keys of "
                         f"{table.name} ({', '.join(keys) or 'it is not partitioned'})")
    result: TableHealth = table.health(orphans=a.orphans)
    h = result.to_dict()
    if wanted:
        h["buckets"] = [b for b in h["buckets"] if _in(b, wanted)]
    ctx.emit(h, lambda: health_text(h, a.buckets) + (
        "\nno live bucket in " + " or ".join(",".join(f"{k}={v}" for k, v in s.items())
                                             for s in wanted)
        if wanted and not h["buckets"] else ""))


def _thresholds(ctx: Context) -> dict[str, str] | None:
    return kv(ctx.args.threshold, "--threshold") or None


def action_line(action: DueAction) -> str:
    work = f"{action.work_files} files, {human_size(action.work_bytes)}"
    urgent = " URGENT" if action.urgent else ""
    return f"{action.table}: {action.kind}{urgent} ({work}): {action.reason}"


def report_text(report: DueReport) -> str:
    lines = [f"{report.table}: health {report.score}/100"]
    for action in report.actions:
        lines.append("  " + action_line(action))
    if not report.actions:
        lines.append("  nothing due")
    for rule, why in report.not_due.items():
        lines.append(f"  not due ({rule}): {why}")
    for error in report.errors:
        lines.append(f"  error: {error}")
    return "\n".join(lines)


def due(ctx: Context) -> None:
    a = ctx.args
    if (a.table is None) == (not a.all):
        raise UsageError("give a table (database.table) or --all, not both")
    max_bytes = parse_memory_size(a.max_bytes, "--max-bytes") if a.max_bytes else None
    thresholds = _thresholds(ctx)
    if a.table is not None:
        reports = [ctx.table().maintenance_due(thresholds, orphans=a.orphans)]
    else:
        reports = maintenance_due_many(ctx.catalog, "*.*", thresholds, orphans=a.orphans)
    chosen = rank_actions(reports, a.max_actions, max_bytes)
    result = {"actions": [x.to_dict() for x in chosen],
              "tables": [_report_dict(r) for r in reports]}
    ctx.emit(result, lambda: _due_text(reports, chosen))
    failed = [r.table for r in reports if r.errors]
    if failed:  # exit 1 after the report, which holds each table's error
        raise TablesFailed(f"{len(failed)} of {len(reports)} tables reported errors: "
                           f"{', '.join(failed)} (each error is in the report)")


def _report_dict(report: DueReport) -> dict[str, Any]:
    d = report.to_dict()
    d.pop("health", None)  # `lakeformat health` prints it; `due` keeps to actions and reasons
    return d


def _due_text(reports: list[DueReport], chosen: list[DueAction]) -> str:
    """One table: its actions and each rule's reason for what is not due. Many tables: the
    actions chosen in rank order, then one line per table."""
    if len(reports) == 1 and not reports[0].errors:
        return report_text(reports[0])
    lines = ["due now, urgent first, then by benefit per byte of work:" if chosen
             else f"nothing due in {len(reports)} tables"]
    lines += [f"  {i}. {action_line(x)}" for i, x in enumerate(chosen, 1)]
    lines.append("")
    for r in reports:
        score = "-" if r.score is None else f"{r.score}/100"
        state = (f"error: {'; '.join(r.errors)}" if r.errors else
                 f"{len(r.actions)} due" if r.actions else "nothing due")
        lines.append(f"{r.table}: health {score}, {state}")
    return "\n".join(lines)
