"""The rules of what maintenance is due, each over the metadata pass (`view`) and the table's
own Paimon options (with the caller's overrides). A rule proposes only work its action does:
compaction rules fire where the compaction planner itself picks files (`plan_from_entries`),
expiry where expiry's dry run expires snapshots, schema cleanup where its plan removes files,
the manifest rule where `compact_manifests` rewrites manifests. Every rule that finds nothing
says why in `not_due`.

Rule ids (the keys of `not_due`, the `rule` of an action): `num-sorted-run.stop-trigger`,
`num-sorted-run.compaction-trigger` (`compaction.min.file-num` for append tables),
`full-compaction.delta-commits`, `compaction.delete-ratio-threshold`, `snapshot-expiry`,
`schema-files`, `manifest-merge`, `partition.expiration-time`, `orphan-files`, `tag-expiry`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import numpy as np

from lakeformat.health.assess import manifest_rule_due, merge_state, score_inputs
from lakeformat.health.results import DueAction
from lakeformat.health.score import ScoreInputs, score
from lakeformat.health.view import TableView
from lakeformat.operation.compact import CompactTask
from lakeformat.operation.maintain import (
    PARTITION_EXPIRY_OPTIONS,
    expired_partitions,
    partition_expiry_options,
    partitions_per_run,
    past_retention,
)
from lakeformat.operation.support import EXPIRE_PARTITIONS, EXPIRE_TAGS, check_supported
from lakeformat.options import parse_bool
from lakeformat.results import human_size, id_ranges

#: the floor of a metadata-only action's work estimate (a few manifest and snapshot files)
METADATA_WORK = 64 << 10
MIB = 1 << 20

STOP = "num-sorted-run.stop-trigger"
TRIGGER = "num-sorted-run.compaction-trigger"
MIN_FILES = "compaction.min.file-num"
DELTA_COMMITS = "full-compaction.delta-commits"
DELETE_RATIO = "compaction.delete-ratio-threshold"
EXPIRY = "snapshot-expiry"
SCHEMAS = "schema-files"
MANIFESTS = "manifest-merge"
PARTITIONS = "partition.expiration-time"
ORPHANS = "orphan-files"
TAGS = "tag-expiry"

NotDue = dict[str, str]


class Due:
    """The actions and not-due reasons of one table, and the score to measure gains from."""

    def __init__(self, view: TableView):
        self.view = view
        self.inputs = score_inputs(view)
        self.now_score = score(self.inputs)[0]
        self.actions: list[DueAction] = []
        self.not_due: NotDue = {}
        self.full_tasks: list[CompactTask] = []  # what the full-compaction action covers
        #: the partitions the partition-expiry action drops: not worth compacting first (and,
        #: by update time, a compaction would make them look freshly written)
        self.expiring: set[bytes] = set()
        f = view.figures
        self.index = {(p, int(b)): i for i, (p, b) in enumerate(zip(f.partition,
                                                                     f.bucket.tolist()))}

    def gain(self, after: ScoreInputs) -> float:
        return float(score(after)[0] - self.now_score)

    def mask(self, keys: set[tuple[bytes, int]]) -> np.ndarray:
        m = np.zeros(len(self.view.figures), np.bool_)
        for k in keys:
            if k in self.index:
                m[self.index[k]] = True
        return m

    def add(self, action: DueAction, after: ScoreInputs) -> None:
        action.expected_gain = max(0.0, self.gain(after))
        action.benefit = round(action.expected_gain / max(1.0, action.work_bytes / MIB), 6)
        self.actions.append(action)


def _where(view: TableView, partition: bytes, bucket: int) -> str:
    spec = view.parts.of(partition)[0]
    return f"bucket {bucket}" + (f" of {spec}" if spec else "")


def _partition_specs(view: TableView, partitions: list[bytes]) -> list[dict[str, Any]]:
    if not view.schema.partition_keys:
        return []
    return [view.parts.of(p)[2] for p in dict.fromkeys(partitions)]


def _compact_action(due: Due, kind: str, rule: str, tasks: list[CompactTask], reasons: list[str],
                    urgent: bool, figures: dict[str, Any]) -> None:
    """The action of a compaction rule that picked `tasks`. Its verb compacts whole partitions
    (the whole table when unpartitioned) and rewrites every bucket its planner picks there, so
    the buckets, work, engine and gain are those of the planner's tasks in that scope."""
    view = due.view
    specs = _partition_specs(view, [t.partition for t in tasks])
    plan = view.full_plan() if kind == "full-compact" else view.minor or []
    chosen = {t.partition for t in tasks}
    scope = [t for t in plan if not specs or t.partition in chosen]
    named = {(t.partition, t.bucket) for t in tasks}
    more = [t for t in scope if (t.partition, t.bucket) not in named]
    work = sum(f.file_size for t in scope for f in t.files)
    m = due.mask({(t.partition, t.bucket) for t in scope})
    x = due.inputs
    after = x.after(picked=x.picked & ~m, runs=np.where(m, 1, x.runs),
                    level0=np.where(m, 0, x.level0), small=np.where(m, 0, x.small),
                    small_bytes=np.where(m, 0, x.small_bytes),
                    dv_rows=np.where(m, 0, x.dv_rows) if kind == "full-compact" else x.dv_rows)
    shown = reasons[:3] + ([f"and {len(reasons) - 3} more buckets"] if len(reasons) > 3 else [])
    if more:
        where = "the table" if not specs else "its partition" + ("s" if len(specs) > 1 else "")
        listed = [_where(view, t.partition, t.bucket) for t in more]
        shown.append(f"the compaction of {where} also rewrites {len(more)} more buckets its "
                     f"planner picks ({', '.join(sorted({t.reason for t in more}))}: "
                     f"{', '.join(listed[:3])}{' and more' if len(listed) > 3 else ''}; "
                     f"{sum(len(t.files) for t in more)} files, "
                     f"{human_size(sum(f.file_size for t in more for f in t.files))})")
    engine = "spark" if work >= view.opts.compaction_spark_threshold else "local"
    args: dict[str, Any] = {"full": kind == "full-compact"}
    if specs:
        args["partitions"] = specs
    due.add(DueAction(
        table=view.name, kind=kind, rule=rule, reason="; ".join(shown),
        figures={**figures, "rewritten_buckets": len(scope)}, partitions=specs,
        buckets=[{"partition": view.parts.of(t.partition)[0], "bucket": t.bucket}
                 for t in scope],
        work_files=sum(len(t.files) for t in scope), work_bytes=work, urgent=urgent,
        arguments=args, engine=engine), after)


def rule_compaction(due: Due) -> None:
    """Minor compaction where the planner picks files: urgent at stop-trigger - 1 runs."""
    view, o = due.view, due.view.opts
    rule = TRIGGER if view.pk else MIN_FILES
    if view.minor is None:
        due.not_due[rule] = view.compact_refused or "compaction refuses this table"
        return
    trigger, stop = o.num_sorted_run_compaction_trigger, o.num_sorted_run_stop_trigger
    urgent_at = max(trigger, stop - 1)
    f = view.figures
    tasks, reasons, gated = [], [], []
    urgent = False
    local_now = view.local_ms
    interval = o.compaction_optimization_interval
    full = [a for a in due.actions if a.kind == "full-compact"]
    covered = {t.partition for t in due.full_tasks}
    skipped, expiring = [], []
    for t in view.minor:
        i = due.index[(t.partition, t.bucket)]
        where = _where(view, t.partition, t.bucket)
        if t.partition in due.expiring:
            expiring.append(where)
            continue
        runs = int(f.sorted_runs[i])
        if full and (t.partition in covered or not view.schema.partition_keys):
            # the full compaction due there does this work too; what was urgent stays so
            skipped.append(where)
            if view.pk and runs >= urgent_at:
                for a in full:
                    a.urgent = True
            continue
        size = human_size(sum(x.file_size for x in t.files))
        if t.reason == "optimization-interval" and interval is not None:
            last = int(f.last_full[i])
            if last and local_now - last < interval.total_seconds() * 1000:
                gated.append(where)
                continue
        if not view.pk:
            reasons.append(f"{where} has {int(f.small_files[i])} files below "
                           f"{human_size(o.compaction_file_size_of(False))}, "
                           f"{len(t.files)} picked >= {MIN_FILES} {o.compaction_min_file_num}"
                           f" ({size})")
        elif t.reason == "postpone":
            reasons.append(f"{where} holds {len(t.files)} postpone files, "
                           f"{sum(x.row_count for x in t.files)} records readers do not see "
                           f"until a compaction assigns them to buckets ({size})")
        elif runs >= urgent_at and runs >= trigger:
            urgent = True
            reasons.append(f"{where} has {runs} sorted runs >= {STOP} {stop} - 1: writers "
                           f"stall above {stop} ({t.reason}: {len(t.files)} files, {size})")
        elif t.reason == "force-l0":
            reasons.append(f"{where} has {int(f.level0[i])} level-0 files: a lookup or "
                           "deletion-vector table compacts every level-0 file (batch reads "
                           f"skip them until then) ({len(t.files)} files, {size})")
        elif t.reason in ("optimization-interval", "total-size-threshold",
                          "incremental-size-threshold"):
            reasons.append(f"{where}: compaction.{t.reason} asks for a full compaction of its "
                           f"{runs} sorted runs ({size})")
        else:
            reasons.append(f"{where} has {runs} sorted runs >= {TRIGGER} {trigger} "
                           f"({t.reason}: {len(t.files)} files, {size})")
        tasks.append(t)
    if not tasks and (skipped or expiring):
        due.not_due[rule] = "; ".join(why for why in (
            skipped and (f"the full compaction due covers {', '.join(skipped[:3])}"
                         + (f" and {len(skipped) - 3} more" if len(skipped) > 3 else "")),
            expiring and (f"partition expiry drops {', '.join(expiring[:3])}"
                          + (f" and {len(expiring) - 3} more" if len(expiring) > 3 else "")))
            if why)
        return
    if not tasks:
        why = _no_compaction(view, trigger)
        if gated:
            why += (f"; compaction.optimization-interval {interval} has not passed since the "
                    f"last full compaction of {', '.join(gated[:3])}")
        due.not_due[rule] = why
        return
    runs = [int(f.sorted_runs[due.index[(t.partition, t.bucket)]]) for t in tasks]
    _compact_action(due, "compact", STOP if urgent else rule, tasks, reasons, urgent,
                    {"buckets": len(tasks), "max_sorted_runs": max(runs),
                     "compaction_trigger": trigger, "stop_trigger": stop,
                     "picks": sorted({t.reason for t in tasks})})


def _no_compaction(view: TableView, trigger: int) -> str:
    f = view.figures
    if not len(f):
        return "no live data file"
    if not view.pk:
        i = int(np.argmax(f.small_files))
        return (f"compaction picks no files: at most {int(f.small_files[i])} files below "
                f"{human_size(view.opts.compaction_file_size_of(False))} in a bucket "
                f"({_where(view, f.partition[i], int(f.bucket[i]))}), "
                f"{MIN_FILES} {view.opts.compaction_min_file_num}")
    i = int(np.argmax(f.sorted_runs))
    runs = int(f.sorted_runs[i])
    rel = "<" if runs < trigger else "=" if runs == trigger else ">"
    return (f"max sorted runs {runs} {rel} {TRIGGER} {trigger} "
            f"({_where(view, f.partition[i], int(f.bucket[i]))}); compaction picks nothing")


def rule_full(due: Due) -> None:
    """`full-compaction.delta-commits` and `compaction.delete-ratio-threshold`: a full
    compaction of the buckets they name, where a full compaction rewrites something."""
    view, o = due.view, due.view.opts
    f = view.figures
    picks: dict[tuple[bytes, int], CompactTask] = {}
    reasons: list[str] = []
    rules: list[str] = []
    n = o.full_compaction_delta_commits
    if n is None:
        due.not_due[DELTA_COMMITS] = f"{DELTA_COMMITS} not set"
    elif not view.pk or o.bucket < 1 or o.changelog_producer == "lookup":
        due.not_due[DELTA_COMMITS] = (f"{DELTA_COMMITS} applies to primary-key tables with a "
                                      "fixed bucket count and no lookup changelog")
    elif view.minor is None:
        due.not_due[DELTA_COMMITS] = view.compact_refused or "compaction refuses this table"
    else:
        plan = view.full_plan()
        lasts = [int(f.last_full[due.index[(t.partition, t.bucket)]]) for t in plan]
        since = view.snapshots_since(min(lasts)) if plan else []
        times = np.array([s.time_millis + view.offset_ms for s in since], np.int64)
        hit = 0
        most = 0
        for t, last in zip(plan, lasts):
            if t.partition in due.expiring:
                continue
            count = int((times > last).sum())
            most = max(most, count)
            if count >= n:
                hit += 1
                picks[(t.partition, t.bucket)] = t
                reasons.append(f"{_where(view, t.partition, t.bucket)} has {count} commits "
                               f"since its last full compaction >= {DELTA_COMMITS} {n}")
        if hit:
            rules.append(DELTA_COMMITS)
        else:
            due.not_due[DELTA_COMMITS] = (f"at most {most} commits since a bucket's last full "
                                          f"compaction < {DELTA_COMMITS} {n}")
    threshold = o.compaction_delete_ratio_threshold
    if not view.dvs:
        due.not_due[DELETE_RATIO] = "no deletion vectors in the latest snapshot"
    elif not view.pk:
        due.not_due[DELETE_RATIO] = ("append-table compaction does not rewrite files for "
                                     "their deleted rows, so this rule is not applied")
    elif view.minor is None:
        due.not_due[DELETE_RATIO] = view.compact_refused or "compaction refuses this table"
    else:
        ratio = f.dv_rows / np.maximum(1, f.rows)
        full = {(t.partition, t.bucket): t for t in view.full_plan()}
        worst = float(ratio.max()) if len(ratio) else 0.0
        hit = 0
        for i in np.flatnonzero(ratio > threshold).tolist():
            key = (f.partition[i], int(f.bucket[i]))
            if key not in full or key[0] in due.expiring:
                continue
            hit += 1
            picks[key] = full[key]
            reasons.append(f"{_where(view, *key)} has {int(f.dv_rows[i])} of {int(f.rows[i])} "
                           f"rows deleted ({ratio[i]:.2f}) > {DELETE_RATIO} {threshold}")
        if hit:
            rules.append(DELETE_RATIO)
        else:
            due.not_due[DELETE_RATIO] = (f"deleted-row ratio at most {worst:.2f} <= "
                                         f"{DELETE_RATIO} {threshold}")
    if picks:
        tasks = [picks[k] for k in sorted(picks)]
        due.full_tasks = tasks
        _compact_action(due, "full-compact", rules[0], tasks, reasons, False,
                        {"buckets": len(tasks), "rules": rules})


def rule_expiry(due: Due) -> None:
    view, o = due.view, due.view.opts
    ex = view.expiry
    if ex.refused:
        due.not_due[EXPIRY] = ex.refused
        return
    settings = (f"snapshot.num-retained.min {o.snapshot_num_retained_min}, "
                f"snapshot.time-retained {o.get('snapshot.time-retained', '1 h')}")
    if not ex.expirable:
        count = 0 if ex.earliest is None or view.latest is None else (
            view.latest.id - ex.earliest + 1)
        why = f"0 snapshots expirable: {count} retained under {settings}"
        pinned = min(view.consumers.values(), default=None)
        if pinned is not None and ex.earliest is not None and pinned <= ex.earliest + 1:
            why += f"; consumers pin snapshot {pinned}"
        due.not_due[EXPIRY] = why
        return
    more = (f"; +{ex.backlog} more beyond snapshot.expire.limit {o.snapshot_expire_limit}"
            if ex.backlog else "")
    reason = (f"{ex.expirable} snapshots ({ex.earliest}-{ex.end - 1}) expire under {settings}: "
              f"{ex.files} files, {human_size(ex.bytes)} only they hold{more}")
    x = due.inputs
    due.add(DueAction(
        table=view.name, kind="expire-snapshots", rule=EXPIRY, reason=reason,
        figures={"snapshots": ex.expirable, "first": ex.earliest, "last": ex.end - 1,
                 "beyond_limit": ex.backlog, "files": ex.files, "bytes": ex.bytes,
                 "manifests": ex.manifests, "limit": o.snapshot_expire_limit},
        work_files=ex.files + ex.manifests, work_bytes=max(METADATA_WORK, ex.bytes)),
        x.after(expirable=ex.backlog))


def rule_manifests(due: Due) -> None:
    view, o = due.view, due.view.opts
    kind, fig = merge_state(view)
    sc = view.schemas
    x = due.inputs
    if manifest_rule_due(view):
        what = (f"{fig['must_change']} manifests to rewrite ({human_size(fig['must_change_bytes'])}"
                f" >= manifest.full-compaction-threshold-size "
                f"{human_size(o.manifest_full_compaction_threshold)})" if kind == "full" else
                f"{fig['manifests']} manifests, {fig['trailing_small']} small ones at the end "
                f">= manifest.merge-min-count {o.manifest_merge_min_count}")
        reason = f"{what}; {fig['delete_entries']} DELETE entries"
    elif sc.freed_by_manifests:
        reason = (f"schemas {id_ranges(sc.freed_by_manifests)} are kept only by DELETE entries "
                  f"in the latest snapshot's manifests ({fig['delete_entries']} entries)")
    else:
        due.not_due[MANIFESTS] = (
            f"{fig['manifests']} manifests ({fig['delete_entries']} DELETE entries): "
            + ("no merge due (manifest.merge-min-count "
               f"{o.manifest_merge_min_count}, manifest.full-compaction-threshold-size "
               f"{human_size(o.manifest_full_compaction_threshold)})" if kind is None else
               "the merge the next commit makes; compact_manifests acts only on DELETE entries"))
        return
    due.add(DueAction(
        table=view.name, kind="compact-manifests", rule=MANIFESTS, reason=reason,
        figures={**fig, "merge": kind, "frees_schemas": list(sc.freed_by_manifests)},
        work_files=fig["manifests"], work_bytes=max(METADATA_WORK, fig["bytes"])),
        x.after(manifest_merge_due=False, schemas_freed_by_manifests=0))


def rule_schemas(due: Due) -> None:
    view = due.view
    sc = view.schemas
    x = due.inputs
    if not sc.removable:
        kinds: dict[str, int] = {}
        for kind, _ in sc.kept.values():
            kinds[kind] = kinds.get(kind, 0) + 1
        kept = ", ".join(f"{v} {k}" for k, v in sorted(kinds.items()))
        due.not_due[SCHEMAS] = (f"no schema file removable: {len(sc.ids)} files, kept as "
                                f"{kept or 'none'} (schema.num-retained.min {sc.retain_min}, "
                                f"schema.time-retained {sc.time_retained})")
        return
    reason = (f"schemas {', '.join(id_ranges(sc.removable))} removable "
              f"(schema.num-retained.min {sc.retain_min}, schema.time-retained "
              f"{sc.time_retained})")
    due.add(DueAction(
        table=view.name, kind="clean-schemas", rule=SCHEMAS, reason=reason,
        figures={"removable": list(sc.removable), "files": len(sc.ids)},
        work_files=len(sc.removable), work_bytes=METADATA_WORK),
        x.after(removable_schemas=0))


def rule_partitions(due: Due) -> None:
    view, o = due.view, due.view.opts
    expiration = o.partition_expiration_time
    if expiration is None:
        due.not_due[PARTITIONS] = "partition.expiration-time not set"
        return
    if not view.schema.partition_keys:
        due.not_due[PARTITIONS] = "the table has no partition keys"
        return
    now = dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=view.local_ms)
    # the options in force (the table's, overridden) as the overlay the action's verb takes
    overlay = {k: v for k, v in o.raw.items() if k in PARTITION_EXPIRY_OPTIONS}
    # update-time: each partition's last update, as the verb reads it from the manifests
    by_update = str(overlay.get("partition.expiration-strategy", "")).strip() == "update-time"
    older = "not updated within" if by_update else "older than"
    try:  # the same pure function partition expiry runs, on the partitions already read
        check_supported(view.schema.copy(options={**view.schema.options, **overlay}),
                        EXPIRE_PARTITIONS, view.path)
        found = expired_partitions(view.schema, view.partition_update_times if by_update
                                   else dict.fromkeys(view.figures.partition),
                                   None, now, options=overlay)
        max_num = partitions_per_run(partition_expiry_options(view.schema, overlay))
    except Exception as e:
        due.not_due[PARTITIONS] = f"partition expiry refuses this table: {e}"
        return
    expired = found.expired
    unreadable = [why.split(":", 1)[0] for why in found.kept]
    if not expired:
        why = f"no partition {older} partition.expiration-time {o.get(PARTITIONS)}"
        if unreadable:
            why += (f"; no creation time on the files of {', '.join(unreadable[:5])}"
                    if by_update else f"; no time in the values of {', '.join(unreadable[:5])}")
        due.not_due[PARTITIONS] = why
        return
    chosen = expired[:max_num]
    chosen_parts = {p for _, p in chosen}
    due.expiring = chosen_parts
    f = view.figures
    m = np.fromiter((p in chosen_parts for p in f.partition), np.bool_, len(f))
    x = due.inputs
    keep = ~m
    after = x.after(**{k: getattr(x, k)[keep] for k in (
        "runs", "level0", "bytes", "files", "small", "small_bytes", "picked", "dv_rows",
        "rows")})
    more = (f" (+{len(expired) - max_num} beyond partition.expiration-max-num {max_num})"
            if len(expired) > max_num else "")
    due.add(DueAction(
        table=view.name, kind="expire-partitions", rule=PARTITIONS,
        reason=(f"{len(chosen)} partitions {older} partition.expiration-time "
                f"{o.get(PARTITIONS)}: {', '.join(s for s, _ in chosen[:5])}{more}"),
        figures={"partitions": [s for s, _ in chosen], "unreadable": unreadable},
        partitions=_partition_specs(view, [p for _, p in chosen]),
        work_files=int(f.files[m].sum()), work_bytes=max(METADATA_WORK, int(f.bytes[m].sum()))),
        after)


def rule_orphans(due: Due) -> None:
    view = due.view
    if view.orphans is None:
        due.not_due[ORPHANS] = "no orphan scan ran (orphans=True lists the table directory)"
        return
    if not view.orphans["files"]:
        due.not_due[ORPHANS] = "no orphan file older than 1 day"
        return
    o = view.orphans
    due.add(DueAction(
        table=view.name, kind="remove-orphans", rule=ORPHANS,
        reason=f"{o['files']} orphan files older than 1 day ({human_size(o['bytes'])})",
        figures=dict(o), work_files=o["files"], work_bytes=max(METADATA_WORK, o["bytes"])),
        due.inputs)


def rule_tags(due: Due) -> None:
    """Tags past their `time_retained` (what Java's commits expire unless
    `tag.time-expire-enabled` is false): `expire_tags` deletes them."""
    view = due.view
    if not parse_bool(view.opts.raw, "tag.time-expire-enabled", True):
        due.not_due[TAGS] = "tag.time-expire-enabled is false"
        return
    now = dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=view.local_ms)
    expired = [t for t in view.tags if past_retention(t, now)]
    if not expired:
        timed = sum(t.time_retained is not None for t in view.tags)
        due.not_due[TAGS] = (f"no tag past its retention ({len(view.tags)} tags, {timed} with "
                             "a time_retained)")
        return
    try:
        check_supported(view.schema, EXPIRE_TAGS, view.path)
    except Exception as e:
        due.not_due[TAGS] = f"tag expiry refuses this table: {e}"
        return
    names = [t.name for t in expired]
    due.add(DueAction(
        table=view.name, kind="expire-tags", rule=TAGS,
        reason=f"{len(names)} tags past their time_retained: {', '.join(names[:5])}"
               + (f" and {len(names) - 5} more" if len(names) > 5 else ""),
        figures={"tags": names, "snapshots": sorted({t.snapshot_id for t in expired})},
        work_files=len(names), work_bytes=METADATA_WORK), due.inputs)


#: partition expiry is judged first: compaction rules leave the partitions it drops alone
RULES: tuple[Callable[[Due], None], ...] = (
    rule_partitions, rule_full, rule_compaction, rule_tags, rule_manifests, rule_expiry,
    rule_schemas, rule_orphans)


def due_actions(view: TableView) -> tuple[list[DueAction], NotDue]:
    due = Due(view)
    for rule in RULES:
        try:
            rule(due)
        except Exception as e:  # one rule's failure is reported, the others still run
            name = rule.__name__.removeprefix("rule_")
            view.errors.append(f"rule {name}: {type(e).__name__}: {e}")
    return due.actions, due.not_due

