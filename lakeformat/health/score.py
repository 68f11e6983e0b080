"""The health score (0-100) and its components, each a documented formula over figures the
metadata gives (README, "Table health and due maintenance", repeats them).

score = round(100 x sum(w_i x h_i) / sum(w_i)) over the components that apply, each h_i in
[0, 1] and 1 exactly when the rules behind it find nothing to do. Weights: compaction 0.40,
small files 0.20, deleted rows 0.15, metadata 0.25; an append table has no LSM, so the
compaction weight goes to small files; deleted rows apply to primary-key tables with deletion
vectors (the only tables whose compaction rewrites files for their deleted rows).

Every input is a numpy column over the table's buckets, so re-scoring the figures an action
would leave (`expected_gain`) costs as little as scoring.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

WEIGHTS = {"compaction": 0.40, "small_files": 0.20, "deleted_rows": 0.15, "metadata": 0.25}

FORMULAS = {
    "compaction": "h = 1 - (0.5 * max_b d_b + 0.5 * sum_b(bytes_b * d_b) / sum_b bytes_b); "
                  "d_b = 0 when compaction picks nothing in bucket b, else "
                  "clamp((runs_b - T + 1) / (S - T + 1), 0.1, 1), and for lookup and "
                  "deletion-vector tables at least min(1, level0_b / T) "
                  "(T = num-sorted-run.compaction-trigger, S = num-sorted-run.stop-trigger)",
    "small_files": "h = 1 - sum_b e_b / sum_b files_b; e_b = max(0, small_b - "
                   "ceil(small_bytes_b / target-file-size)) in buckets compaction picks, else 0 "
                   "(small: below target-file-size x compaction.small-file-ratio)",
    "deleted_rows": "h = 1 - min(1, R / compaction.delete-ratio-threshold); R = rows marked "
                    "by deletion vectors / rows of live files (a vector without a "
                    "cardinality counts its file's rows)",
    "metadata": "h = mean(h_snapshots, h_manifests, h_schemas); h_snapshots = 1 - min(1, "
                "expirable / snapshot.expire.limit) (expirable ignores the limit: a backlog "
                "one run cannot clear is full debt); h_manifests = 1 - min(1, max(0, manifests "
                "- manifest.merge-min-count + 1) / manifest.merge-min-count) when the merge "
                "rule is due, else 1; h_schemas = 1 - min(1, (removable + freed by a manifest "
                "compaction) / schema.num-retained.min)",
}


@dataclass
class ScoreInputs:
    """Everything the score reads: per-bucket columns and table figures."""

    pk: bool
    lookup: bool  # level-0 files are debt at once (lookup / deletion-vector tables)
    deleted_rows_apply: bool
    trigger: int
    stop: int
    target: int
    delete_ratio: float
    runs: np.ndarray
    level0: np.ndarray
    bytes: np.ndarray
    files: np.ndarray
    small: np.ndarray
    small_bytes: np.ndarray
    picked: np.ndarray  # bool: the minor compaction plan has a task for the bucket
    dv_rows: np.ndarray
    rows: np.ndarray
    expirable: int
    expire_limit: int
    manifests: int
    merge_min_count: int
    manifest_merge_due: bool
    removable_schemas: int
    schemas_freed_by_manifests: int
    schema_retain_min: int

    def after(self, **changes: Any) -> ScoreInputs:
        return replace(self, **changes)


def bucket_debt(x: ScoreInputs) -> tuple[np.ndarray, np.ndarray]:
    """(d_b compaction debt, e_b excess small files) per bucket."""
    if x.pk:
        span = max(1, x.stop - x.trigger + 1)
        d = np.clip((x.runs - x.trigger + 1) / span, 0.1, 1.0)
        if x.lookup:
            d = np.maximum(d, np.minimum(1.0, x.level0 / max(1, x.trigger)))
        d = np.where(x.picked, d, 0.0)
    else:
        d = np.zeros(len(x.runs))
    merged = np.ceil(x.small_bytes / max(1, x.target)).astype(np.int64)
    e = np.where(x.picked, np.maximum(0, x.small - merged), 0)
    return d, e


def score(x: ScoreInputs) -> tuple[int, dict[str, dict[str, Any]], np.ndarray]:
    """(score 0-100, components, debt per bucket 0-1)."""
    d, e = bucket_debt(x)
    total_bytes = int(x.bytes.sum())
    total_files = int(x.files.sum())
    components: dict[str, dict[str, Any]] = {}
    if x.pk:
        worst = float(d.max()) if len(d) else 0.0
        spread = float((x.bytes * d).sum() / total_bytes) if total_bytes else 0.0
        components["compaction"] = _component(
            1.0 - (0.5 * worst + 0.5 * spread), WEIGHTS["compaction"],
            {"buckets_due": int(np.count_nonzero(x.picked)), "worst_debt": round(worst, 4),
             "bytes_weighted_debt": round(spread, 4),
             "max_sorted_runs": int(x.runs.max()) if len(x.runs) else 0,
             "compaction_trigger": x.trigger, "stop_trigger": x.stop})
    small_weight = WEIGHTS["small_files"] + (0.0 if x.pk else WEIGHTS["compaction"])
    excess = int(e.sum())
    components["small_files"] = _component(
        1.0 - (excess / total_files if total_files else 0.0), small_weight,
        {"small_files": int(x.small.sum()), "excess_small_files": excess,
         "files": total_files})
    if x.deleted_rows_apply:
        rows = int(x.rows.sum())
        marked = int(x.dv_rows.sum())
        ratio = marked / rows if rows else 0.0
        components["deleted_rows"] = _component(
            1.0 - min(1.0, ratio / x.delete_ratio) if x.delete_ratio > 0 else
            (0.0 if marked else 1.0), WEIGHTS["deleted_rows"],
            {"dv_rows": marked, "rows": rows, "ratio": round(ratio, 4),
             "threshold": x.delete_ratio})
    h_snap = 1.0 - min(1.0, x.expirable / max(1, x.expire_limit))
    h_man = 1.0
    if x.manifest_merge_due:
        h_man = 1.0 - min(1.0, max(0, x.manifests - x.merge_min_count + 1)
                          / max(1, x.merge_min_count))
    h_schema = 1.0 - min(1.0, (x.removable_schemas + x.schemas_freed_by_manifests)
                         / max(1, x.schema_retain_min))
    components["metadata"] = _component(
        (h_snap + h_man + h_schema) / 3, WEIGHTS["metadata"],
        {"snapshots": round(h_snap, 4), "manifests": round(h_man, 4),
         "schemas": round(h_schema, 4), "expirable_snapshots": x.expirable,
         "manifest_files": x.manifests, "removable_schemas": x.removable_schemas})
    weight = sum(c["weight"] for c in components.values())
    points = sum(c["weight"] * c["health"] for c in components.values())
    for name, c in components.items():
        c["points"] = round(100 * c["weight"] * c["health"] / weight, 2)
        c["formula"] = FORMULAS[name]
    files = np.maximum(1, x.files)
    debt = np.maximum(d, e / files)
    if x.deleted_rows_apply and x.delete_ratio > 0:
        debt = np.maximum(debt, np.minimum(1.0, x.dv_rows / np.maximum(1, x.rows)
                                           / x.delete_ratio))
    return int(round(100 * points / weight)), components, debt


def _component(health: float, weight: float, figures: dict[str, Any]) -> dict[str, Any]:
    return {"health": round(max(0.0, min(1.0, health)), 6), "weight": weight,
            "figures": figures}
