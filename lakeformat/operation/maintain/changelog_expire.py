"""Changelog expiry: the long-lived changelogs (`changelog/changelog-<id>`) by their own
retention, as Paimon's `ExpireChangelogImpl` and `ChangelogDeletion` do it.

A table's changelog is *decoupled* from its snapshots when a changelog setting exceeds its
snapshot one (`changelog.num-retained.max` > `snapshot.num-retained.max`,
`changelog.num-retained.min` > `snapshot.num-retained.min`, or `changelog.time-retained` >
`snapshot.time-retained`; each changelog setting falls back to the snapshot one). Snapshot expiry
then turns each expiring snapshot into `changelog-<id>` and keeps what it needs (its changelog
files; with `changelog-producer=none` its manifest lists and the level-0 files its delta added),
and this job removes them later:

Selection (ids are snapshot ids): keep changelogs from `latest snapshot - changelog.num-retained.max
+ 1` at the most, at least those from `latest snapshot - changelog.num-retained.min + 1`; never
the one a consumer reads next or later; never the newest changelog (the walk stops before it);
at most `snapshot.expire.limit` per run; a changelog expires only while it is older than
`changelog.time-retained` (the walk stops at the first younger one).

For each expiring changelog `[earliest, end)`: the changelog files its changelog list adds, or,
without a changelog list, the data files its delta deletes; its changelog list (else its delta
and base lists) and their manifests — except what the earliest snapshot, the changelog `end` and
any tag uses; then `changelog-<id>` itself, and `changelog/EARLIEST` becomes `end`. Index and
statistics files are snapshot expiry's. Safer than Java: nothing live in the earliest snapshot or
in any tag (data and changelog files) is deleted (Java consults only the nearest earlier tag),
a read failure deletes less, and `changelog-<id>` goes before the files it names (a crash leaves
orphans for orphan removal, never a changelog whose files are gone).
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from lakeformat import clock
from lakeformat.errors import InvalidOptionError
from lakeformat.meta.changelog import ChangelogManager
from lakeformat.meta.consumer import ConsumerManager
from lakeformat.meta.data_file_meta import FileKind
from lakeformat.meta.snapshot import Snapshot, SnapshotManager
from lakeformat.meta.tag import TagManager
from lakeformat.operation.maintain.cleanup import (
    OlderThan,
    delete_paths,
    delete_together,
    past_cutoff_millis,
)
from lakeformat.operation.maintain.references import (
    TableReferences,
    deleted_in,
    keep_branch_files,
)
from lakeformat.options import CoreOptions
from lakeformat.results import MaintenanceResult
from lakeformat.schema.table_schema import TableSchema
from lakeformat.storage import FileIO


@dataclass(frozen=True)
class ExpireConfig:
    """Snapshot and changelog retention of one expiry run, as Java's `ExpireConfig`: each
    changelog setting the table leaves unset is the snapshot one in force."""

    snapshot_retain_min: int
    snapshot_retain_max: int
    snapshot_cutoff_ms: int
    max_deletes: int
    changelog_retain_min: int
    changelog_retain_max: int
    changelog_cutoff_ms: int
    #: the changelog outlives snapshots (a changelog setting above the snapshot one)
    decoupled: bool
    #: `consumer.changelog-only`: consumers pin changelogs only, not snapshots
    consumer_changelog_only: bool = False


def expire_config(opts: CoreOptions, retain_min: int | None, retain_max: int | None,
                  older_than: OlderThan, max_deletes: int | None, now_ms: int) -> ExpireConfig:
    """The commit-time configuration (`CoreOptions.expireConfig`), the snapshot settings taken
    from the arguments where given."""
    s_min = opts.snapshot_num_retained_min if retain_min is None else int(retain_min)
    s_max = opts.snapshot_num_retained_max if retain_max is None else int(retain_max)
    limit = opts.snapshot_expire_limit if max_deletes is None else int(max_deletes)
    s_cut = past_cutoff_millis(older_than, opts.snapshot_time_retained, now_ms,
                               "a snapshot committed right now would count as expired")
    raw = opts.raw
    c_min = opts.changelog_num_retained_min if "changelog.num-retained.min" in raw else s_min
    c_max = opts.changelog_num_retained_max if "changelog.num-retained.max" in raw else s_max
    c_cut = (now_ms - _millis(opts.changelog_time_retained)
             if "changelog.time-retained" in raw else s_cut)
    decoupled = c_max > s_max or c_min > s_min or c_cut < s_cut
    return ExpireConfig(s_min, s_max, s_cut, limit, c_min, c_max, c_cut, decoupled,
                        opts.consumer_changelog_only and decoupled)


def changelog_config(opts: CoreOptions, retain_max: int | None, retain_min: int | None,
                     older_than: OlderThan, max_deletes: int | None, now_ms: int
                     ) -> ExpireConfig:
    """`expire_changelogs`' settings: the arguments, else the table's changelog settings
    (themselves falling back to the snapshot ones)."""
    c_min = opts.changelog_num_retained_min if retain_min is None else int(retain_min)
    c_max = opts.changelog_num_retained_max if retain_max is None else int(retain_max)
    limit = opts.snapshot_expire_limit if max_deletes is None else int(max_deletes)
    cut = past_cutoff_millis(older_than, opts.changelog_time_retained, now_ms,
                             "a changelog written right now would count as expired")
    return ExpireConfig(c_min, c_max, cut, limit, c_min, c_max, cut, True)


def _millis(d: dt.timedelta) -> int:
    return int(d.total_seconds() * 1000)


def check_config(cfg: ExpireConfig) -> None:
    """Refuse changelog settings Java refuses (before anything is deleted)."""
    if cfg.changelog_retain_min < 1:
        raise InvalidOptionError(f"changelog retain_min must be at least 1, got "
                                 f"{cfg.changelog_retain_min}")
    if cfg.changelog_retain_max < cfg.changelog_retain_min:
        raise InvalidOptionError(f"changelog retain_max ({cfg.changelog_retain_max}) must not be "
                                 f"less than retain_min ({cfg.changelog_retain_min})")
    if cfg.max_deletes < 1:
        raise InvalidOptionError(f"max_deletes must be at least 1, got {cfg.max_deletes}")


@dataclass
class ChangelogPlan:
    earliest: int
    end: int
    changelog_ids: list[int] = field(default_factory=list)  # changelog-<id> files to delete
    data: dict[str, int] = field(default_factory=dict)  # path -> size
    changelog: dict[str, int] = field(default_factory=dict)
    manifests: dict[str, int] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)


class ChangelogView:
    """The long-lived changelogs as they are on storage, plus those a snapshot expiry is about
    to write (`pending`: a dry run plans changelog expiry as the real run would see it)."""

    def __init__(self, manager: ChangelogManager, pending: dict[int, Snapshot] | None = None):
        self.manager = manager
        self.pending = dict(pending or {})
        self._cache: dict[int, Snapshot | None] = {}
        self.ids = sorted(set(manager.changelog_ids()) | set(self.pending))

    def get(self, changelog_id: int) -> Snapshot | None:
        if changelog_id in self.pending:
            return self.pending[changelog_id]
        if changelog_id not in self._cache:
            try:
                self._cache[changelog_id] = self.manager.changelog(changelog_id)
            except FileNotFoundError:
                self._cache[changelog_id] = None  # removed by a concurrent expiry
        return self._cache[changelog_id]


def changelog_range(view: ChangelogView, latest_snapshot: int | None, pinned: int | None,
                    cfg: ExpireConfig) -> tuple[int, int] | None:
    """Changelogs `[earliest, end)` that expire (None: no snapshot or no changelog)."""
    if latest_snapshot is None or not view.ids:
        return None
    earliest, latest = view.ids[0], view.ids[-1]
    low = max(latest_snapshot - cfg.changelog_retain_max + 1, earliest)
    end = latest_snapshot - cfg.changelog_retain_min + 1
    if pinned is not None:
        end = min(end, pinned)
    end = min(end, earliest + cfg.max_deletes, latest)
    if end <= earliest:
        return earliest, earliest
    for cid in range(low, end + 1):
        found = view.get(cid)
        if found is not None and cfg.changelog_cutoff_ms <= found.time_millis:
            return earliest, max(cid, earliest)
    return earliest, end


def _skip_set(refs: TableReferences, keepers: list[Snapshot], end_changelog: Snapshot | None
              ) -> tuple[set[str], set[str]]:
    """(files, names under manifest/ and statistics/) that the keepers use: live data and
    changelog files, lists, manifests, index manifests, statistics."""
    files, meta = refs.keep_sets(keepers)
    if end_changelog is not None:
        meta |= refs.changelog_metadata(end_changelog)[1]
    return files, meta


def plan_changelog_expire(file_io: FileIO, table_path: str, schema: TableSchema,
                          view: ChangelogView, earliest: int, end: int,
                          earliest_snapshot: Snapshot | None, delete_all: bool = False,
                          gone: frozenset[str] = frozenset()) -> ChangelogPlan:
    """What expiring changelogs `[earliest, end)` deletes. `delete_all`: every changelog,
    the newest included (`end` is past it), keeping what the earliest snapshot and tags use.
    `gone`: paths a snapshot expiry planned in the same dry run deletes (read as missing)."""
    plan = ChangelogPlan(earliest, end)
    if end <= earliest:
        return plan
    refs = TableReferences(file_io, table_path, schema)
    end_changelog = None if delete_all else view.get(end)
    if end_changelog is None and not delete_all:
        plan.skipped.append(f"changelog {end} is gone: nothing expired")
        return plan
    listed = set(view.ids)
    ids = [i for i in range(earliest, end) if i in listed]
    changelogs = [c for c in (view.get(i) for i in ids) if c is not None]
    plan.changelog_ids = [c.id for c in changelogs]
    keepers = [earliest_snapshot] if earliest_snapshot is not None else []
    try:
        keepers += [t.snapshot for t in TagManager(file_io, table_path).tags()]
        keep_files, keep_meta = _skip_set(refs, keepers, end_changelog)
    except Exception as e:  # cannot know what is in use: delete no file, only the metadata
        plan.skipped.append(f"kept every file of the expired changelogs: could not read what "
                            f"the earliest snapshot, changelog {end} and the tags use "
                            f"({type(e).__name__}: {e})")
        return plan
    sizes: dict[str, int] = {}
    for c in changelogs:
        names: set[str] = set()
        try:
            lists = refs.existing_lists((c.changelog_manifest_list,) if c.changelog_manifest_list
                                        else (c.delta_manifest_list, c.base_manifest_list),
                                        gone)
            if c.changelog_manifest_list:
                metas = lists.get(c.changelog_manifest_list)
                if metas is not None:
                    names.add(c.changelog_manifest_list)
                    names.update(m.file_name for m in metas)
                    sizes.update((m.file_name, m.file_size) for m in metas)
                    for e in refs.read_entries(metas):
                        if e.kind == FileKind.ADD:
                            for r in refs.file_refs(e):
                                if r.path not in keep_files:
                                    plan.changelog.setdefault(r.path, r.size)
            else:
                metas = lists.get(c.delta_manifest_list)
                if metas is not None:
                    names.add(c.delta_manifest_list)
                    names.update(m.file_name for m in metas)
                    sizes.update((m.file_name, m.file_size) for m in metas)
                    for e in deleted_in(refs.read_entries(metas)):
                        for r in refs.file_refs(e):
                            if r.path not in keep_files:
                                plan.data.setdefault(r.path, r.size)
                base = lists.get(c.base_manifest_list)
                if base is not None:
                    names.add(c.base_manifest_list)
                    names.update(m.file_name for m in base)
                    sizes.update((m.file_name, m.file_size) for m in base)
        except Exception as e:
            plan.skipped.append(f"kept the files of changelog {c.id}: {e}")
            continue
        for name in sorted(names - keep_meta):
            plan.manifests.setdefault(refs.manifest_path(name), sizes.get(name, 0))
    # what a branch reads stays (a branch that cannot be read raises: nothing deleted)
    kept = keep_branch_files(file_io, table_path, schema, "expire-changelogs", plan.data,
                             plan.changelog, plan.manifests)
    if kept:
        plan.skipped.append(kept)
    return plan


def run_changelog_expiry(file_io: FileIO, table_path: str, schema: TableSchema,
                         cfg: ExpireConfig, result: MaintenanceResult, dry_run: bool,
                         pending: dict[int, Snapshot] | None = None,
                         earliest_snapshot: Callable[[], Snapshot | None] | None = None,
                         delete_all: bool = False) -> None:
    """Expire changelogs under `cfg` and add what it deleted (or would) to `result`."""
    check_config(cfg)
    sm = SnapshotManager(file_io, table_path)
    manager = ChangelogManager(file_io, table_path)
    view = ChangelogView(manager, pending)
    latest = sm.latest_snapshot_id()
    if latest is None or not view.ids:
        return
    first = earliest_snapshot() if earliest_snapshot is not None else _earliest(sm)
    if delete_all:
        if first is not None and view.ids[-1] >= first.id:
            raise InvalidOptionError(
                f"{table_path}: the latest changelog ({view.ids[-1]}) is not older than the "
                f"earliest snapshot ({first.id}); delete_all removes only changelogs that "
                "outlived their snapshots")
        span: tuple[int, int] | None = (view.ids[0], view.ids[-1] + 1)
    else:
        span = changelog_range(view, latest, ConsumerManager(file_io, table_path)
                               .min_next_snapshot(), cfg)
    if span is None:
        return
    # a dry run after snapshot expiry's: what that one deletes is still on storage here
    gone = frozenset(result.deleted)
    plan = plan_changelog_expire(file_io, table_path, schema, view, span[0], span[1], first,
                                 delete_all, gone)
    for planned in (plan.data, plan.changelog, plan.manifests):
        for path in gone.intersection(planned):
            del planned[path]
    result.changelogs_deleted = plan.changelog_ids
    result.data_files_deleted += len(plan.data)
    result.changelog_files_deleted += len(plan.changelog)
    result.manifest_files_deleted += len(plan.manifests)
    result.bytes_deleted += (sum(plan.data.values()) + sum(plan.changelog.values())
                             + sum(plan.manifests.values()))
    metadata = [manager.changelog_path(i) for i in plan.changelog_ids]
    files = list(plan.data) + list(plan.changelog) + list(plan.manifests)
    result.deleted += metadata + files
    result.skipped += [f"changelog expiry: {s}" for s in plan.skipped]
    if dry_run or not plan.changelog_ids and not delete_all:
        return
    failed = delete_paths(file_io, metadata)
    if failed:  # a changelog still names them: keep its files
        result.skipped.append(f"{len(failed)} changelog files could not be deleted, nor what "
                              f"they name: {failed[:5]}")
        result.deleted = [p for p in result.deleted if p not in set(failed) | set(files)]
        return
    # files before the manifests naming them; each step's batches in flight at once
    failed = delete_together(file_io, list(plan.data), list(plan.changelog))
    failed += delete_paths(file_io, list(plan.manifests))
    if delete_all:
        manager.delete_hints()
    else:
        manager.commit_earliest_hint(plan.end)
    if failed:
        result.skipped.append(f"{len(failed)} files could not be deleted: {failed[:5]}")
        result.deleted = [p for p in result.deleted if p not in set(failed)]


def _earliest(sm: SnapshotManager) -> Snapshot | None:
    sid = sm.earliest_snapshot_id()
    return None if sid is None else sm.snapshot(sid)


def expire_changelogs(file_io: FileIO, table_path: str, schema: TableSchema, table_name: str,
                      retain_max: int | None = None, retain_min: int | None = None,
                      older_than: OlderThan = None, max_deletes: int | None = None,
                      delete_all: bool = False, dry_run: bool = False) -> MaintenanceResult:
    """Paimon's `expire_changelogs` procedure: expire long-lived changelogs by the arguments
    (defaults: the table's changelog settings), or with `delete_all` every one of them."""
    start = time.monotonic()
    opts = CoreOptions(schema.options)
    cfg = changelog_config(opts, retain_max, retain_min, older_than, max_deletes,
                           clock.now_millis())
    result = MaintenanceResult(table_name, "expire-changelogs", dry_run=dry_run)
    result.expire_limit = cfg.max_deletes
    run_changelog_expiry(file_io, table_path, schema, cfg, result, dry_run,
                         delete_all=delete_all)
    result.duration_s = round(time.monotonic() - start, 3)
    return result
