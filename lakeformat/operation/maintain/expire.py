"""Snapshot expiry, as Paimon's `ExpireSnapshotsImpl` does it — and a little safer.

Selection: keep at least `snapshot.num-retained.min` snapshots and at most
`snapshot.num-retained.max`; a snapshot expires only once the snapshot after it is older than
the cut-off (`snapshot.time-retained`); consumers pin the snapshot they read next and all later
ones; at most `snapshot.expire.limit` snapshots go per run. With `[earliest, end)` expiring:

1. data files deleted by the deltas of snapshots `(earliest, end]`,
2. changelog files added by snapshots `[earliest, end)`,
3. their manifest lists and manifests, and statistics files,
4. the snapshot files, then the `EARLIEST` hint.

Files any branch's snapshot, tag or changelog references stay (Java's expiry does not look at
branches; a branch shares the table's files): a branch that cannot be read stops the run
before anything is deleted.

Index manifests of expired snapshots and the index files they list (HASH files of dynamic-bucket
tables, deletion-vector files) go too, unless the new earliest snapshot or a tag still uses them.

Decoupled changelog (a `changelog.*` retention above the snapshot one, or `changelog/` already
holding long-lived changelogs): each expiring snapshot is written as `changelog/changelog-<id>`
(then `changelog/LATEST`) before its snapshot file goes; step 2 is skipped and its changelog list
and manifests stay; with `changelog-producer=none` (the changelog is the delta) its base and
delta lists stay too, and data files written by writers (file source APPEND, or none recorded)
that a compaction deleted stay for changelog expiry (`changelog_expire`), which then runs under
the changelog retention, as Java's commit does after snapshot expiry. `consumer.changelog-only`
(decoupled tables) lets consumers pin only the changelog.

Safer than Java: nothing live in the new earliest snapshot or in any tag is deleted (Java only
consults the nearest earlier tag), and when a manifest or an index manifest cannot be read less
is deleted, never more (no index file at all when a kept one cannot be read). The whole
deletion list is planned before the first delete, so `dry_run` reports exactly what a real run
deletes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from lakeformat import clock
from lakeformat.errors import InvalidOptionError
from lakeformat.layout import EARLIEST
from lakeformat.meta.changelog import ChangelogManager, changelog_of
from lakeformat.meta.consumer import ConsumerManager
from lakeformat.meta.data_file_meta import FileKind, FileSource
from lakeformat.meta.snapshot import Snapshot, SnapshotManager
from lakeformat.meta.tag import Tag, TagManager
from lakeformat.operation.maintain.changelog_expire import (
    ExpireConfig,
    check_config,
    expire_config,
    run_changelog_expiry,
)
from lakeformat.operation.maintain.cleanup import OlderThan, delete_paths, delete_together
from lakeformat.operation.maintain.references import (
    TableReferences,
    deleted_in,
    keep_branch_files,
)
from lakeformat.operation.maintain.survey import Survey, survey
from lakeformat.operation.support import EXPIRE_SNAPSHOTS, check_supported
from lakeformat.options import CoreOptions
from lakeformat.results import MaintenanceResult
from lakeformat.schema.table_schema import TableSchema
from lakeformat.storage import FileIO
from lakeformat.storage.parallel import IO_WORKERS, parallel_map


@dataclass
class ExpirePlan:
    earliest: int
    end: int
    snapshots: list[Snapshot]
    data: dict[str, int] = field(default_factory=dict)  # path -> size, in deletion order
    changelog: dict[str, int] = field(default_factory=dict)
    index: dict[str, int] = field(default_factory=dict)  # index files
    manifests: dict[str, int] = field(default_factory=dict)
    statistics: list[str] = field(default_factory=list)
    snapshot_files: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    #: decoupled changelog: the expiring snapshots outlive themselves as `changelog-<id>`
    decoupled: bool = False
    changelogs: list[Snapshot] = field(default_factory=list)  # changelog-<id> files to write


def read_snapshots(sm: SnapshotManager, ids: Sequence[int], cache: dict[int, Snapshot]
                   ) -> dict[int, Snapshot]:
    """Snapshots of `ids` (missing ones skipped), read in parallel and kept in `cache`."""
    todo = [i for i in ids if i not in cache]

    def one(sid: int) -> Snapshot | None:
        try:
            return sm.snapshot(sid)
        except FileNotFoundError:
            return None  # removed by a concurrent expiry

    found = parallel_map(one, todo)
    cache.update({s.id: s for s in found if s is not None})
    return {i: cache[i] for i in ids if i in cache}


@dataclass(frozen=True)
class ExpireRange:
    """Snapshots `[earliest, end)` expire in this run; `eligible_end` is where expiry would
    stop without the per-run limit (`> end` when the limit stopped it)."""

    earliest: int
    end: int
    eligible_end: int

    @property
    def remaining_eligible(self) -> int:
        return max(self.eligible_end - self.end, 0)


def expire_range(sm: SnapshotManager, consumers: ConsumerManager, retain_min: int,
                 retain_max: int, cutoff_ms: int, max_deletes: int,
                 cache: dict[int, Snapshot] | None = None) -> ExpireRange | None:
    """Which snapshots expire (None: no snapshot at all)."""
    cache = {} if cache is None else cache
    if retain_min < 1:
        raise InvalidOptionError(f"retain_min must be at least 1, got {retain_min}")
    if retain_max < retain_min:
        raise InvalidOptionError(f"retain_max ({retain_max}) must not be less than retain_min "
                                 f"({retain_min})")
    if max_deletes < 1:
        raise InvalidOptionError(f"max_deletes must be at least 1, got {max_deletes}")
    latest = sm.latest_snapshot_id()
    earliest = sm.earliest_snapshot_id()
    if latest is None or earliest is None:
        return None
    low = max(latest - retain_max + 1, earliest)
    unlimited = latest - retain_min + 1
    pinned = consumers.min_next_snapshot()
    if pinned is not None:
        unlimited = min(unlimited, pinned)
    end = min(unlimited, earliest + max_deletes)
    found = read_snapshots(sm, range(low + 1, end + 1), cache) if end > low else {}
    for sid in range(low, end):
        nxt = found.get(sid + 1)
        if nxt is not None and cutoff_ms <= nxt.time_millis:
            return ExpireRange(earliest, sid, sid)
    end = max(end, earliest)
    if unlimited <= end:
        return ExpireRange(earliest, end, end)
    # the limit stopped the walk: count what the next runs may expire (a report only)
    eligible = _first_young(sm, max(low, end), unlimited, cutoff_ms, cache)
    return ExpireRange(earliest, end, eligible)


def _first_young(sm: SnapshotManager, lo: int, hi: int, cutoff_ms: int,
                 cache: dict[int, Snapshot]) -> int:
    """The first id in `[lo, hi)` whose next snapshot was committed at or after the cut-off
    (`hi` if none): a search, as commit times grow with ids, so a backlog of thousands of
    snapshots costs a few rounds of reads. A missing snapshot (expired meanwhile) counts as
    old."""
    return first_snapshot(sm, lo + 1, hi + 1, lambda s: cutoff_ms <= s.time_millis,
                          cache) - 1


def first_snapshot(sm: SnapshotManager, lo: int, hi: int, test: Callable[[Snapshot], bool],
                   cache: dict[int, Snapshot]) -> int:
    """The first id in `[lo, hi)` whose snapshot passes `test` (`hi` if none), for a test that
    once passed passes for every later snapshot (commit times grow with ids); a missing
    snapshot fails it. Each round reads up to `IO_WORKERS` evenly spaced snapshots at once, so
    the rounds are a logarithm to that base, not to 2."""
    while lo < hi:
        step = -(-(hi - lo) // IO_WORKERS)
        probes = list(range(lo, hi, step))
        found = read_snapshots(sm, probes, cache)
        new_lo, new_hi = lo, hi
        for p in probes:
            snap = found.get(p)
            if snap is not None and test(snap):
                new_hi = p
                break
            new_lo = p + 1
        lo, hi = new_lo, new_hi
    return lo


def plan_expire(file_io: FileIO, table_path: str, schema: TableSchema, earliest: int,
                end: int, cache: dict[int, Snapshot] | None = None,
                decoupled: bool | None = None, tags: list[Tag] | None = None
                ) -> ExpirePlan | None:
    """What expiring `[earliest, end)` deletes; None when `end` no longer exists.
    `decoupled` (default: the table's settings, or changelog files present) keeps the
    changelog of the expiring snapshots as `changelog-<id>` files; `tags`: the table's tags
    when the caller read them already."""
    sm = SnapshotManager(file_io, table_path)
    snaps = list(read_snapshots(sm, range(earliest, end + 1), {} if cache is None
                                else cache).values())
    if not snaps or snaps[-1].id != end:
        return None
    plan = ExpirePlan(earliest, end, [s for s in snaps if s.id != end])
    plan.decoupled = changelog_decoupled(file_io, table_path, schema) if decoupled is None \
        else decoupled
    # with changelog-producer=none a changelog is its snapshot's delta: keep its lists and the
    # level-0 (APPEND) files it added, which changelog expiry deletes [JAVA SnapshotDeletion]
    delta_changelog = plan.decoupled and CoreOptions(schema.options).changelog_producer == "none"
    if plan.decoupled:
        plan.changelogs = [changelog_of(s) for s in plan.snapshots]
    refs = TableReferences(file_io, table_path, schema)
    if tags is None:
        tags = TagManager(file_io, table_path).tags()
    keepers = [snaps[-1]] + [t.snapshot for t in tags]
    refs.warm(keepers, snaps)  # every list, manifest and index manifest read below, at once

    # what the new earliest snapshot and every tag still use: never deleted
    try:
        keep_files, keep_meta = refs.keep_sets(keepers)
    except Exception as e:  # cannot know what is in use: delete no file at all
        plan.skipped.append(f"kept every file: could not read what snapshot {end} and the "
                            f"tags reference ({type(e).__name__}: {e})")
        plan.snapshot_files = [sm.snapshot_path(s.id) for s in plan.snapshots]
        return plan

    for s in snaps:
        if s.id == earliest:
            continue  # its deletions were handled when the previous earliest expired
        try:
            entries = deleted_in(refs.delta_entries(s))
        except Exception as e:
            plan.skipped.append(f"kept data files deleted by snapshot {s.id}: {e}")
            continue
        if delta_changelog:
            entries = [e for e in entries if e.file.file_source not in (None, FileSource.APPEND)]
        for e in entries:
            for r in refs.file_refs(e):
                if r.path not in keep_files:
                    plan.data.setdefault(r.path, r.size)
    for s in [] if plan.decoupled else plan.snapshots:
        try:
            entries = refs.changelog_entries(s)
        except Exception as e:
            plan.skipped.append(f"kept changelog files of snapshot {s.id}: {e}")
            continue
        for e in entries:
            if e.kind == FileKind.ADD:
                for r in refs.file_refs(e):
                    if r.path not in keep_files:
                        plan.changelog.setdefault(r.path, r.size)
    index_names = {s.index_manifest for s in snaps if s.index_manifest} - _plan_index(
        refs, keepers, plan, keep_meta)
    per_snapshot: list[tuple[Snapshot, set[str]]] = []
    for s in plan.snapshots:
        try:
            per_snapshot.append((s, _expiring_names(refs, s, plan.decoupled, delta_changelog)))
        except Exception as e:
            plan.skipped.append(f"kept manifests of snapshot {s.id}: {e}")
            per_snapshot.append((s, set()))
    sizes = refs.manifest_sizes()
    for s, names in per_snapshot:
        for name in sorted(names - keep_meta - index_names):
            plan.manifests.setdefault(refs.manifest_path(name), sizes.get(name, 0))
        if s.statistics and s.statistics not in keep_meta:
            plan.statistics.append(refs.statistics_path(s.statistics))
    stats = dict.fromkeys(plan.statistics, 0)
    kept = keep_branch_files(file_io, table_path, schema, "expire-snapshots", plan.data,
                             plan.changelog, plan.index, plan.manifests, stats)
    if kept:
        plan.statistics = list(stats)
        plan.skipped.append(kept)
    plan.snapshot_files = [sm.snapshot_path(s.id) for s in plan.snapshots]
    return plan


def _expiring_names(refs: TableReferences, s: Snapshot, decoupled: bool,
                    delta_changelog: bool) -> set[str]:
    """Names under `manifest/` an expiring snapshot may free: all it names; with a decoupled
    changelog not its changelog list and manifests (the changelog's now), nor with
    changelog-producer=none its base and delta lists [JAVA SnapshotDeletion
    .planManifestsCleaner]."""
    names = refs.metadata_names(s)
    if not decoupled:
        return names
    if s.changelog_manifest_list:
        names -= {s.changelog_manifest_list} | {m.file_name for m in refs.changelog_manifests(s)}
    if delta_changelog:
        names -= ({s.base_manifest_list, s.delta_manifest_list}
                  | {m.file_name for m in refs.data_manifests(s)})
    return names


def changelog_decoupled(file_io: FileIO, table_path: str, schema: TableSchema) -> bool:
    """Expiry keeps a changelog: the table's changelog settings outlive its snapshot ones, or
    `changelog/` already holds long-lived changelogs (left by such settings since lowered: they
    stay readable until changelog expiry removes them, where Java would delete what they use)."""
    return (CoreOptions(schema.options).changelog_lifecycle_decoupled
            or bool(ChangelogManager(file_io, table_path).changelog_ids()))


def _plan_index(refs: TableReferences, keepers: list[Snapshot], plan: ExpirePlan,
                keep_meta: set[str]) -> set[str]:
    """Plan the index files of the expiring snapshots nothing kept uses; returns the index
    manifests that may go with them (each one read, and not kept)."""
    try:
        keep = refs.keep_index(keepers)
    except Exception as e:
        plan.skipped.append(f"kept every index file: could not read the index manifest of "
                            f"snapshot {keepers[0].id} or a tag ({type(e).__name__}: {e})")
        return set()
    free: set[str] = set()
    for name in dict.fromkeys(s.index_manifest for s in plan.snapshots if s.index_manifest):
        if name in keep_meta:
            continue
        try:
            files = refs.index_files(name)
        except Exception as e:
            plan.skipped.append(f"kept index manifest {name} and its files: {e}")
            continue
        for path, size in files.items():
            if path not in keep:
                plan.index.setdefault(path, size)
        free.add(name)
    for name in free:
        plan.manifests.setdefault(refs.manifest_path(name), 0)
    return free


class _Pinned:
    """The consumers' pin as the survey read it (None: no consumer, or
    `consumer.changelog-only`, where consumers pin the changelog, not the snapshots)."""

    def __init__(self, pinned: int | None):
        self.pinned = pinned

    def min_next_snapshot(self) -> int | None:
        return self.pinned


def expire_snapshots(file_io: FileIO, table_path: str, schema: TableSchema, table_name: str,
                     retain_min: int | None = None, retain_max: int | None = None,
                     older_than: OlderThan = None, max_deletes: int | None = None,
                     dry_run: bool = False) -> MaintenanceResult:
    """Snapshot expiry, then — when the changelog is decoupled — changelog expiry, as Java's
    commit-time expiry runs them (`AbstractFileStoreTable.newExpireRunnable`)."""
    start = time.monotonic()
    opts = check_supported(schema, EXPIRE_SNAPSHOTS, table_path)
    cfg = expire_config(opts, retain_min, retain_max, older_than, max_deletes,
                        clock.now_millis())
    result = MaintenanceResult(table_name, "expire-snapshots", dry_run=dry_run)
    result.expire_limit = cfg.max_deletes
    found = survey(file_io, table_path, consumers=not cfg.consumer_changelog_only)
    decoupled = cfg.decoupled or bool(found.changelog_ids)
    if decoupled:
        check_config(cfg)
    sm = SnapshotManager(file_io, table_path)
    cache: dict[int, Snapshot] = {}
    plan = _expire(file_io, table_path, schema, cfg, decoupled, result, dry_run, found, cache)
    if decoupled:
        pending = {c.id: c for c in plan.changelogs} if dry_run and plan is not None else None

        def earliest() -> Snapshot | None:
            if dry_run and plan is not None and plan.end in cache:
                return cache[plan.end]
            sid = sm.earliest_snapshot_id()
            return None if sid is None else sm.snapshot(sid)

        run_changelog_expiry(file_io, table_path, schema, cfg, result, dry_run, pending,
                             earliest)
    result.duration_s = round(time.monotonic() - start, 3)
    return result


def _expire(file_io: FileIO, table_path: str, schema: TableSchema, cfg: ExpireConfig,
            decoupled: bool, result: MaintenanceResult, dry_run: bool, found: Survey,
            cache: dict[int, Snapshot]) -> ExpirePlan | None:
    """Snapshot expiry over what `found` listed: snapshot files are read without probing
    them first, and the deletions of one kind are batched and issued at once."""
    sm = found.snapshots
    consumers = _Pinned(found.min_next_snapshot)
    span = expire_range(sm, consumers, cfg.snapshot_retain_min,  # type: ignore[arg-type]
                        cfg.snapshot_retain_max, cfg.snapshot_cutoff_ms, cfg.max_deletes, cache)
    if span is None:
        return None
    earliest, end = span.earliest, span.end
    result.snapshots_remaining_eligible = span.remaining_eligible
    result.earliest_snapshot = earliest
    result.latest_snapshot = sm.latest_snapshot_id()
    plan = plan_expire(file_io, table_path, schema, earliest, end, cache, decoupled,
                       found.tags) if end > earliest else None
    if plan is None:
        if not dry_run and end <= earliest and not file_io.exists(
                sm.manager.paths.snapshot_hint(EARLIEST)):
            sm.manager.commit_earliest_hint(earliest)
        return None
    result.snapshots_deleted = [s.id for s in plan.snapshots]
    result.changelogs_written = [c.id for c in plan.changelogs]
    result.data_files_deleted = len(plan.data)
    result.changelog_files_deleted = len(plan.changelog)
    result.manifest_files_deleted = len(plan.manifests)
    result.other_files_deleted = len(plan.statistics) + len(plan.index)
    result.bytes_deleted = (sum(plan.data.values()) + sum(plan.changelog.values())
                            + sum(plan.index.values()) + sum(plan.manifests.values()))
    result.deleted = (list(plan.data) + list(plan.changelog) + list(plan.index)
                      + list(plan.manifests) + plan.statistics + plan.snapshot_files)
    result.skipped = plan.skipped
    result.earliest_snapshot = end
    if not dry_run:
        # files before the manifests naming them, before the snapshot files naming those,
        # before the EARLIEST hint; within each step every batch is in flight at once
        failed = delete_together(file_io, list(plan.data), list(plan.changelog),
                                 list(plan.index))
        failed += delete_together(file_io, list(plan.manifests), plan.statistics)
        if plan.changelogs:  # each snapshot outlives itself as changelog-<id> before it goes
            manager = ChangelogManager(file_io, table_path)
            parallel_map(manager.commit, plan.changelogs)
            manager.commit_latest_hint(plan.changelogs[-1].id)
        failed += delete_paths(file_io, plan.snapshot_files)
        sm.manager.commit_earliest_hint(end)
        if failed:
            result.skipped.append(f"{len(failed)} files could not be deleted: {failed[:5]}")
            not_deleted = set(failed)
            result.deleted = [p for p in result.deleted if p not in not_deleted]
    return plan
