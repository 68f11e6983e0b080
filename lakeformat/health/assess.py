"""From the metadata pass (`view`) to a `TableHealth`: the per-bucket figures, the table
figures and the score."""

from __future__ import annotations

import datetime as dt
import time

import numpy as np

from lakeformat.health.buckets import local_iso
from lakeformat.health.results import BucketHealth, TableHealth
from lakeformat.health.score import ScoreInputs, score
from lakeformat.health.view import TableView, utc_iso
from lakeformat.meta.manifest_merge import manifest_merge_due


def picked_mask(view: TableView) -> np.ndarray:
    """Per bucket of `view.figures`: does the minor compaction plan hold a task for it?"""
    f = view.figures
    if not view.minor:
        return np.zeros(len(f), np.bool_)
    due = {(t.partition, t.bucket) for t in view.minor}
    return np.fromiter(((p, int(b)) in due for p, b in zip(f.partition, f.bucket.tolist())),
                       np.bool_, len(f))


def merge_state(view: TableView) -> tuple[str | None, dict[str, int]]:
    o = view.opts
    return manifest_merge_due(view.metas, o.manifest_target_file_size,
                              o.manifest_merge_min_count, o.manifest_full_compaction_threshold)


def manifest_rule_due(view: TableView) -> bool:
    """The manifest-merge rule fires only where its action acts: `compact_manifests` rewrites
    the manifests of the latest snapshot when they hold DELETE entries."""
    kind, figures = merge_state(view)
    return kind is not None and figures["delete_entries"] > 0


def score_inputs(view: TableView) -> ScoreInputs:
    o, f = view.opts, view.figures
    pk = view.pk
    return ScoreInputs(
        # first-row compacts by lookup too (its level-0 files are always picked)
        pk=pk, lookup=pk and (o.lookup_merge or o.merge_engine == "first-row" or bool(view.dvs)),
        deleted_rows_apply=pk and (o.deletion_vectors_enabled or bool(view.dvs)),
        trigger=o.num_sorted_run_compaction_trigger, stop=o.num_sorted_run_stop_trigger,
        target=o.target_file_size_of(pk), delete_ratio=o.compaction_delete_ratio_threshold,
        runs=f.sorted_runs, level0=f.level0, bytes=f.bytes, files=f.files,
        small=f.small_files, small_bytes=f.small_bytes, picked=picked_mask(view),
        dv_rows=f.dv_rows, rows=f.rows,
        expirable=(view.expiry.expirable + view.expiry.backlog
                   if view.expiry.refused is None else 0),
        expire_limit=o.snapshot_expire_limit, manifests=len(view.metas),
        merge_min_count=o.manifest_merge_min_count, manifest_merge_due=manifest_rule_due(view),
        removable_schemas=len(view.schemas.removable),
        schemas_freed_by_manifests=len(view.schemas.freed_by_manifests),
        schema_retain_min=view.schemas.retain_min)


def build_health(view: TableView, started: float) -> TableHealth:
    points, components, debt = score(score_inputs(view))
    f = view.figures
    buckets = []
    for i in range(len(f)):
        spec, values, _ = view.parts.of(f.partition[i])
        rows, dv = int(f.rows[i]), int(f.dv_rows[i])
        last = int(f.last_compaction[i])
        buckets.append(BucketHealth(
            partition=spec, partition_values=values, bucket=int(f.bucket[i]),
            sorted_runs=int(f.sorted_runs[i]), level0_files=int(f.level0[i]),
            max_level=int(f.max_level[i]), files=int(f.files[i]), rows=rows,
            bytes=int(f.bytes[i]), small_files=int(f.small_files[i]),
            small_bytes=int(f.small_bytes[i]), dv_rows=dv,
            dv_ratio=round(dv / rows, 6) if rows else 0.0,
            dv_unknown_files=int(f.dv_unknown[i]),
            last_compaction_snapshot=view.compaction_snapshots.get(last) if last else None,
            last_compaction_time=local_iso(last), debt=round(float(debt[i]), 4)))
    order = sorted(range(len(buckets)), key=lambda i: (-buckets[i].debt,
                                                       -buckets[i].sorted_runs,
                                                       buckets[i].partition,
                                                       buckets[i].bucket))
    buckets = [buckets[i] for i in order]
    ex = view.expiry
    snaps = {
        "count": (view.latest.id - view.earliest_id + 1
                  if view.latest is not None and view.earliest_id is not None else 0),
        "earliest_id": view.earliest_id,
        "earliest_time": utc_iso(view.earliest.time_millis) if view.earliest else None,
        "latest_id": view.latest.id if view.latest else None,
        "latest_time": utc_iso(view.latest.time_millis) if view.latest else None,
        "expirable": ex.expirable, "expirable_ids": ([ex.earliest, ex.end - 1]
                                                     if ex.expirable else []),
        "expirable_beyond_limit": ex.backlog, "expirable_files": ex.files,
        "expirable_bytes": ex.bytes, "expirable_manifests": ex.manifests,
        "expirable_changelog_files": ex.changelog_files,
        "expire_limit": view.opts.snapshot_expire_limit, "expiry_refused": ex.refused,
    }
    local_now = dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=view.local_ms)
    expired = [t.name for t in view.tags if t.create_time is not None
               and t.time_retained is not None and t.create_time + t.time_retained < local_now]
    merge_kind, merge_figures = merge_state(view)
    sc = view.schemas
    totals = {"buckets": len(f), "files": int(f.files.sum()), "rows": int(f.rows.sum()),
              "bytes": int(f.bytes.sum()), "small_files": int(f.small_files.sum()),
              "dv_rows": int(f.dv_rows.sum()), "level0_files": int(f.level0.sum()),
              "max_sorted_runs": int(f.sorted_runs.max()) if len(f) else 0,
              "partitions": len(set(f.partition))}
    o = view.opts
    return TableHealth(
        table=view.name, snapshot_id=view.latest.id if view.latest else None,
        computed_at=utc_iso(view.now_ms) or "", duration_s=round(time.monotonic() - started, 3),
        score=points, components=components, buckets=buckets, totals=totals, snapshots=snaps,
        tags={"count": len(view.tags), "names": [t.name for t in view.tags],
              "expired": expired},
        consumers=dict(view.consumers),
        schemas={"files": len(sc.ids), "ids": list(sc.ids), "removable": list(sc.removable),
                 "kept": {k: why for k, (_, why) in sc.kept.items()},
                 "kept_kinds": {str(k): kind for k, (kind, _) in sc.kept.items()},
                 "freed_by_manifest_compaction": list(sc.freed_by_manifests)},
        manifests={"files": len(view.metas), "bytes": merge_figures["bytes"],
                   "add_entries": sum(m.num_added_files for m in view.metas),
                   "delete_entries": merge_figures["delete_entries"], "merge": merge_kind},
        changelog_files=sum(m.num_added_files for m in view.changelog_metas),
        orphans=view.orphans, errors=list(view.errors),
        kind="primary-key" if view.pk else "append",
        thresholds={"num-sorted-run.compaction-trigger": o.num_sorted_run_compaction_trigger,
                    "num-sorted-run.stop-trigger": o.num_sorted_run_stop_trigger,
                    "compaction.min.file-num": o.compaction_min_file_num,
                    "compaction.delete-ratio-threshold": o.compaction_delete_ratio_threshold,
                    "target-file-size": o.target_file_size_of(view.pk),
                    "small-file-size": o.compaction_file_size_of(view.pk),
                    "snapshot.num-retained.min": o.snapshot_num_retained_min,
                    "snapshot.expire.limit": o.snapshot_expire_limit,
                    "manifest.merge-min-count": o.manifest_merge_min_count,
                    "schema.num-retained.min": sc.retain_min})
