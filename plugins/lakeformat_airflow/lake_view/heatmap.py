"""The heat map of a table's page: an inline SVG grid of its buckets, a row per partition and a
column per bucket, each cell coloured by the bucket's compaction debt (`BucketHealth.debt`,
0 green to 1 red) and labelled with its sorted runs; hovering shows the bucket's figures."""

from __future__ import annotations

from html import escape
from typing import Any

CELL = 22
GAP = 2
#: the most partitions drawn (the ones with the most debt; the page says how many are left out)
MAX_PARTITIONS = 120
#: the most buckets drawn per partition
MAX_BUCKETS = 256


def colour(debt: float) -> str:
    """Green (no debt) through amber to red (1.0) as an `hsl()` colour."""
    d = min(1.0, max(0.0, float(debt or 0.0)))
    return f"hsl({round(120 * (1 - d))}, 62%, {round(46 + 8 * (1 - d))}%)"


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


def heatmap(buckets: list[dict[str, Any]]) -> tuple[str, str]:
    """(the SVG, a note of what was left out) from `TableHealth.to_dict()["buckets"]`."""
    by_partition: dict[str, dict[int, dict[str, Any]]] = {}
    for b in buckets:
        by_partition.setdefault(str(b.get("partition") or ""), {})[int(b["bucket"])] = b
    worst = sorted(by_partition, key=lambda p: (-max(float(b.get("debt") or 0)
                                                     for b in by_partition[p].values()), p))
    shown = sorted(worst[:MAX_PARTITIONS])
    notes = []
    if len(worst) > len(shown):
        notes.append(f"{len(worst) - len(shown)} partitions with less debt not shown")
    width_buckets = min(MAX_BUCKETS, 1 + max((max(by_partition[p]) for p in shown), default=0))
    if any(max(by_partition[p]) >= MAX_BUCKETS for p in shown):
        notes.append(f"buckets from {MAX_BUCKETS} on not shown")
    label_w = max([len(p or "(unpartitioned)") for p in shown] + [4]) * 7 + 12
    top = 18
    width = label_w + width_buckets * (CELL + GAP)
    height = top + len(shown) * (CELL + GAP)
    out = [f'<svg id="heatmap" xmlns="http://www.w3.org/2000/svg" width="{width}" '
           f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
           f'aria-label="sorted runs per partition and bucket">']
    for i in range(width_buckets):
        x = label_w + i * (CELL + GAP) + CELL / 2
        out.append(f'<text class="bucket-label" x="{x:.0f}" y="12" text-anchor="middle">{i}'
                   '</text>')
    for row, partition in enumerate(shown):
        y = top + row * (CELL + GAP)
        out.append(f'<text class="partition-label" x="{label_w - 6}" y="{y + 15}" '
                   f'text-anchor="end">{escape(partition or "(unpartitioned)")}</text>')
        for bucket, b in sorted(by_partition[partition].items()):
            if bucket >= MAX_BUCKETS:
                continue
            x = label_w + bucket * (CELL + GAP)
            runs = int(b.get("sorted_runs") or 0)
            tip = (f"{partition or '(unpartitioned)'} bucket {bucket}: {runs} sorted runs, "
                   f"{b.get('files', 0)} files ({b.get('level0_files', 0)} at level 0, "
                   f"{b.get('small_files', 0)} small), {b.get('rows', 0)} rows, "
                   f"{_size(int(b.get('bytes') or 0))}, debt {float(b.get('debt') or 0):.2f}"
                   + (f", last compacted in snapshot {b['last_compaction_snapshot']}"
                      if b.get("last_compaction_snapshot") is not None else ""))
            out.append(
                f'<g><rect class="cell" x="{x}" y="{y}" width="{CELL}" height="{CELL}" rx="3" '
                f'fill="{colour(b.get("debt") or 0)}" data-partition="{escape(partition)}" '
                f'data-bucket="{bucket}" data-runs="{runs}"><title>{escape(tip)}</title></rect>'
                f'<text class="runs" x="{x + CELL / 2:.0f}" y="{y + 15}" '
                f'text-anchor="middle">{runs}</text></g>')
    out.append("</svg>")
    return "".join(out), "; ".join(notes)
