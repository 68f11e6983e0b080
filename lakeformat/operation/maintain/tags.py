"""Creating tags, and deleting one with the files only it still held (Paimon's TagDeletion).

A tag keeps everything its snapshot reads from expiry. Deleting it removes the tag file; if
the tagged snapshot still exists, or another tag names the same snapshot, nothing else goes.
Otherwise the data, changelog and manifest files that only this tag still used are deleted:
those not used by the earliest snapshot or by any other tag (Java compares with the two
neighbouring tags only; every other tag is consulted here, which can only delete less).
Nor does a file any branch's snapshot, tag or changelog references go: Java's `TagDeletion`
does not look at branches, so deleting the tag a branch was made from (which Java allows, as
here) would leave the branch unreadable once its snapshot expired. Nor what a long-lived
changelog (`changelog/changelog-<id>`, decoupled changelog) still reads: its lists that remain,
their manifests, the files its changelog list adds and (`changelog-producer=none`) the level-0
files its delta adds. Java's tag deletion never deletes changelog manifests or files; for
`none` it deletes the delta's lists and files, which a retained changelog then cannot replay:
here those stay until changelog expiry removes them.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Collection

from lakeformat.errors import InvalidOptionError, SnapshotNotFoundError
from lakeformat.meta.changelog import ChangelogManager
from lakeformat.meta.snapshot import SnapshotManager
from lakeformat.meta.tag import Tag, TagManager, check_tag_name
from lakeformat.operation.maintain.cleanup import delete_together
from lakeformat.operation.maintain.references import TableReferences, keep_branch_files
from lakeformat.options import parse_duration
from lakeformat.results import MaintenanceResult, TagInfo
from lakeformat.schema.table_schema import TableSchema
from lakeformat.storage import FileIO


def tag_info(tag: Tag) -> TagInfo:
    return TagInfo(tag.name, tag.snapshot_id, tag.snapshot.schema_id, tag.snapshot.time_millis,
                   tag.create_time, tag.time_retained)


def list_tags(file_io: FileIO, table_path: str) -> list[TagInfo]:
    """Every tag, ordered by tagged snapshot id then name."""
    return [tag_info(t) for t in TagManager(file_io, table_path).tags()]


def create_tag(file_io: FileIO, table_path: str, name: str, snapshot_id: int | None = None,
               time_retained: dt.timedelta | str | None = None) -> TagInfo:
    check_tag_name(name)
    sm = SnapshotManager(file_io, table_path)
    if snapshot_id is None:
        snap = sm.latest_snapshot()
        if snap is None:
            raise SnapshotNotFoundError(f"cannot tag {table_path}: the table has no snapshot "
                                        "yet")
    else:
        try:
            snap = sm.snapshot(int(snapshot_id))
        except FileNotFoundError:
            raise SnapshotNotFoundError(f"cannot tag snapshot {snapshot_id}: it does not exist "
                                        "(expired or never written)") from None
    if isinstance(time_retained, str):
        time_retained = parse_duration(time_retained, "time_retained")
    if time_retained is not None and not isinstance(time_retained, dt.timedelta):
        raise InvalidOptionError(f"time_retained must be a timedelta or duration text, got "
                                 f"{time_retained!r}")
    return tag_info(TagManager(file_io, table_path).create(name, snap, time_retained))


def delete_tag(file_io: FileIO, table_path: str, schema: TableSchema, table_name: str,
               name: str, dry_run: bool = False, *, excluded: Collection[str] = ()
               ) -> MaintenanceResult:
    """`excluded`: tags to take as deleted already (the dry run of several deletions)."""
    start = time.monotonic()
    manager = TagManager(file_io, table_path)
    tag = manager.get(name)
    result = MaintenanceResult(table_name, "delete-tag", dry_run=dry_run)
    sm = SnapshotManager(file_io, table_path)
    others = [t for t in manager.tags() if t.name != name and t.name not in excluded]
    tag_file = manager.tag_path(name)
    if sm.exists(tag.snapshot_id) or any(t.snapshot_id == tag.snapshot_id for t in others):
        result.deleted = [tag_file]
        result.other_files_deleted = 1
        if not dry_run:
            manager.delete_file(name)
        result.duration_s = round(time.monotonic() - start, 3)
        return result
    refs = TableReferences(file_io, table_path, schema)
    keepers = [t.snapshot for t in others]
    earliest = sm.earliest_snapshot_id()
    if earliest is not None:
        keepers.append(sm.snapshot(earliest))
    data: dict[str, int] = {}
    changelog: dict[str, int] = {}
    manifests: dict[str, int] = {}
    stats: list[str] = []
    try:
        keep_files, keep_meta = refs.keep_sets(keepers)
        # a retained changelog replays from these (one that cannot be read: nothing deleted)
        changelogs = ChangelogManager(file_io, table_path).changelogs()
        cl_files, cl_meta = refs.changelog_keep_sets(changelogs)
        keep_files |= cl_files
        keep_meta |= cl_meta
        snap = tag.snapshot
        for e in refs.live_entries(snap):
            for r in refs.file_refs(e):
                if r.path not in keep_files:
                    data.setdefault(r.path, r.size)
        for e in refs.changelog_entries(snap):
            for r in refs.file_refs(e):
                if r.path not in keep_files:
                    changelog.setdefault(r.path, r.size)
        index = {snap.index_manifest} if snap.index_manifest else set()
        names = refs.metadata_names(snap)
        sizes = refs.manifest_sizes()  # after metadata_names: it records the lists' sizes
        for n in sorted(names - keep_meta - index):
            manifests[refs.manifest_path(n)] = sizes.get(n, 0)
        if snap.statistics and snap.statistics not in keep_meta:
            stats.append(refs.statistics_path(snap.statistics))
    except Exception as e:  # cannot know what is still used: only the tag file goes
        result.skipped.append(f"kept the tag's files: {type(e).__name__}: {e}")
        data, changelog, manifests, stats = {}, {}, {}, []
    # what a branch reads stays (Java's TagDeletion does not look at branches, so a branch made
    # from this tag would lose its files); a branch that cannot be read raises: nothing deleted
    held_stats = dict.fromkeys(stats, 0)
    kept = keep_branch_files(file_io, table_path, schema, "delete-tag", data, changelog,
                             manifests, held_stats)
    if kept:
        stats = list(held_stats)
        result.notes.append(kept)
    result.data_files_deleted = len(data)
    result.changelog_files_deleted = len(changelog)
    result.manifest_files_deleted = len(manifests)
    result.other_files_deleted = 1 + len(stats)
    result.bytes_deleted = sum(data.values()) + sum(changelog.values()) + sum(manifests.values())
    result.deleted = [tag_file, *data, *changelog, *manifests, *stats]
    if not dry_run:
        manager.delete_file(name)  # first: a crash later leaves orphans, never a broken tag
        # files before the manifests naming them; each step's batches in flight at once
        failed = delete_together(file_io, list(data), list(changelog))
        failed += delete_together(file_io, list(manifests), list(stats))
        if failed:
            result.skipped.append(f"{len(failed)} files could not be deleted: {failed[:5]}")
            not_deleted = set(failed)
            result.deleted = [p for p in result.deleted if p not in not_deleted]
    result.earliest_snapshot = earliest
    result.duration_s = round(time.monotonic() - start, 3)
    return result
