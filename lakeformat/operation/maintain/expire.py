"""Snapshot expiry, as Paimon's `ExpireSnapshotsImpl` does it — and a little safer.

Selection: keep at least `snapshot.num-retained.min` snapshots and at most
`snapshot.num-retained.max`; a snapshot expires only once the snapshot after it is older than
the cut-off (`snapshot.time-retained`); consumers pin the snapshot they read next and all later
ones; at most `snapshot.expire.limit` snapshots go per run. With `[earliest, end)` expiring:

1. data files deleted by the deltas of snapshots `(earliest, end]`,
2. changelog files added by snapshots `[earliest, end)`,
3. their manifest lists and manifests, and statistics files,
4. the snapshot files, then the `EARLIEST` hint.

Index manifests of expired snapshots and the index files they list (HASH files of dynamic-bucket
tables, deletion-vector files) go too, unless the new earliest snapshot or a tag still uses them.

Safer than Java: nothing live in the new earliest snapshot or in any tag is deleted (Java only
consults the nearest earlier tag), and when a manifest or an index manifest cannot be read less
is deleted, never more (no index file at all when a kept one cannot be read). The whole
deletion list is planned before the first delete, so `dry_run` reports exactly what a real run
deletes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from lakeformat import clock
from lakeformat.errors import InvalidOptionError, UnsupportedError
from lakeformat.layout import CHANGELOG_PREFIX, EARLIEST, TablePaths
from lakeformat.meta.consumer import ConsumerManager
from lakeformat.meta.data_file_meta import FileKind
from lakeformat.meta.snapshot import Snapshot, SnapshotManager
from lakeformat.meta.tag import TagManager
from lakeformat.operation.maintain.cleanup import OlderThan, delete_paths, past_cutoff_millis
from lakeformat.operation.maintain.references import TableReferences, deleted_in
from lakeformat.operation.support import EXPIRE_SNAPSHOTS, check_supported
from lakeformat.options import CoreOptions
from lakeformat.results import MaintenanceResult
from lakeformat.schema.table_schema import TableSchema
from lakeformat.storage import FileIO
from lakeformat.storage.parallel import parallel_map


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


def read_snapshots(sm: SnapshotManager, ids: range, cache: dict[int, Snapshot]
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
    (`hi` if none): a binary search, as commit times grow with ids, so a backlog of thousands
    of snapshots costs a dozen reads. A missing snapshot (expired meanwhile) counts as old."""
    while lo < hi:
        mid = (lo + hi) // 2
        nxt = read_snapshots(sm, range(mid + 1, mid + 2), cache).get(mid + 1)
        if nxt is not None and cutoff_ms <= nxt.time_millis:
            hi = mid
        else:
            lo = mid + 1
    return lo


def plan_expire(file_io: FileIO, table_path: str, schema: TableSchema, earliest: int,
                end: int, cache: dict[int, Snapshot] | None = None) -> ExpirePlan | None:
    """What expiring `[earliest, end)` deletes; None when `end` no longer exists."""
    sm = SnapshotManager(file_io, table_path)
    snaps = list(read_snapshots(sm, range(earliest, end + 1), {} if cache is None
                                else cache).values())
    if not snaps or snaps[-1].id != end:
        return None
    plan = ExpirePlan(earliest, end, [s for s in snaps if s.id != end])
    refs = TableReferences(file_io, table_path, schema)
    tags = TagManager(file_io, table_path).tags()
    keepers = [snaps[-1]] + [t.snapshot for t in tags]

    # what the new earliest snapshot and every tag still use: never deleted
    try:
        keep_files, keep_meta = refs.keep_sets(keepers)
    except Exception as e:  # cannot know what is in use: delete no file at all
        plan.skipped.append(f"kept every file: could not read what snapshot {end} and the "
                            f"tags reference ({type(e).__name__}: {e})")
        plan.snapshot_files = [sm.snapshot_path(s.id) for s in plan.snapshots]
        return plan

    _prefetch_deltas(refs, snaps, plan)
    for s in snaps:
        if s.id == earliest:
            continue  # its deletions were handled when the previous earliest expired
        try:
            entries = deleted_in(refs.delta_entries(s))
        except Exception as e:
            plan.skipped.append(f"kept data files deleted by snapshot {s.id}: {e}")
            continue
        for e in entries:
            for r in refs.file_refs(e):
                if r.path not in keep_files:
                    plan.data.setdefault(r.path, r.size)
    for s in plan.snapshots:
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
            per_snapshot.append((s, refs.metadata_names(s)))
        except Exception as e:
            plan.skipped.append(f"kept manifests of snapshot {s.id}: {e}")
            per_snapshot.append((s, set()))
    sizes = refs.manifest_sizes()
    for s, names in per_snapshot:
        for name in sorted(names - keep_meta - index_names):
            plan.manifests.setdefault(refs.manifest_path(name), sizes.get(name, 0))
        if s.statistics and s.statistics not in keep_meta:
            plan.statistics.append(refs.statistics_path(s.statistics))
    plan.snapshot_files = [sm.snapshot_path(s.id) for s in plan.snapshots]
    return plan


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


def _prefetch_deltas(refs: TableReferences, snaps: list[Snapshot], plan: ExpirePlan) -> None:
    """Read the expiring range's delta and changelog manifests in parallel (each once); a
    failure here is ignored: the per-snapshot reads below hit it again and delete less."""
    def lists(s: Snapshot) -> list:
        try:
            return refs.read_list(s.delta_manifest_list) + refs.changelog_manifests(s)
        except Exception:
            return []

    metas = [m for found in parallel_map(lists, snaps) for m in found]
    try:
        refs.prefetch(metas)
    except Exception:
        pass


def _refuse_decoupled_changelog(file_io: FileIO, table_path: str, schema: TableSchema) -> None:
    """Paimon keeps a decoupled changelog (`changelog/changelog-N`) alive past its snapshots;
    lakeformat does not maintain one, so it refuses rather than delete files it still needs."""
    check_supported(schema, EXPIRE_SNAPSHOTS, table_path)
    folder = TablePaths(file_io, table_path).changelog_dir
    if any(st.path.rsplit("/", 1)[-1].startswith(CHANGELOG_PREFIX)
           for st in file_io.list_status(folder)):
        raise UnsupportedError(f"{folder} holds long-lived changelog files; lakeformat's expiry "
                               "does not maintain them")


def expire_snapshots(file_io: FileIO, table_path: str, schema: TableSchema, table_name: str,
                     retain_min: int | None = None, retain_max: int | None = None,
                     older_than: OlderThan = None, max_deletes: int | None = None,
                     dry_run: bool = False) -> MaintenanceResult:
    start = time.monotonic()
    opts = CoreOptions(schema.options)
    retain_min = opts.snapshot_num_retained_min if retain_min is None else int(retain_min)
    retain_max = opts.snapshot_num_retained_max if retain_max is None else int(retain_max)
    max_deletes = opts.snapshot_expire_limit if max_deletes is None else int(max_deletes)
    cutoff = past_cutoff_millis(older_than, opts.snapshot_time_retained, clock.now_millis(),
                                "a snapshot committed right now would count as expired")
    result = MaintenanceResult(table_name, "expire-snapshots", dry_run=dry_run)
    _refuse_decoupled_changelog(file_io, table_path, schema)
    sm = SnapshotManager(file_io, table_path)
    cache: dict[int, Snapshot] = {}
    result.expire_limit = max_deletes
    span = expire_range(sm, ConsumerManager(file_io, table_path), retain_min, retain_max,
                        cutoff, max_deletes, cache)
    if span is None:
        result.duration_s = round(time.monotonic() - start, 3)
        return result
    earliest, end = span.earliest, span.end
    result.snapshots_remaining_eligible = span.remaining_eligible
    result.earliest_snapshot = earliest
    result.latest_snapshot = sm.latest_snapshot_id()
    plan = plan_expire(file_io, table_path, schema, earliest, end, cache) \
        if end > earliest else None
    if plan is None:
        if not dry_run and end <= earliest and not file_io.exists(
                sm.paths.snapshot_hint(EARLIEST)):
            sm.commit_earliest_hint(earliest)
        result.duration_s = round(time.monotonic() - start, 3)
        return result
    result.snapshots_deleted = [s.id for s in plan.snapshots]
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
        failed: list[str] = []
        for batch in (list(plan.data), list(plan.changelog), list(plan.index),
                      list(plan.manifests), plan.statistics, plan.snapshot_files):
            failed += delete_paths(file_io, batch)
        sm.commit_earliest_hint(end)
        if failed:
            result.skipped.append(f"{len(failed)} files could not be deleted: {failed[:5]}")
            not_deleted = set(failed)
            result.deleted = [p for p in result.deleted if p not in not_deleted]
    result.duration_s = round(time.monotonic() - start, 3)
    return result
