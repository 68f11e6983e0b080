"""Rollback to a snapshot or tag, as Paimon's RollbackHelper does.

The target becomes the latest snapshot: `LATEST` is pointed at it first, then later snapshot
files are deleted newest first (readers never see a gap), then the long-lived changelogs
(`changelog/changelog-<id>`) after the target, newest first once `changelog/LATEST` names the
target (or -1 when none is left; Java's `RollbackHelper.cleanLongLivedChangelogs`: a streaming
reader must not replay a history rolled back), then tags of later snapshots. Data
and manifest files that only the removed snapshots used are left for `remove_orphan_files`,
as in Paimon. Rolling back to a tag whose snapshot has expired restores the snapshot file from
the tag first. A dry run checks the target and lists what a rollback would delete, changing
nothing.
"""

from __future__ import annotations

import time
from dataclasses import replace

from lakeformat.errors import SnapshotNotFoundError
from lakeformat.layout import EARLIEST
from lakeformat.meta.changelog import ChangelogManager
from lakeformat.meta.snapshot import SnapshotManager
from lakeformat.meta.tag import TagManager
from lakeformat.results import MaintenanceResult
from lakeformat.storage import FileIO


def rollback_to(file_io: FileIO, table_path: str, table_name: str, target: int | str,
                dry_run: bool = False) -> MaintenanceResult:
    start = time.monotonic()
    sm = SnapshotManager(file_io, table_path)
    tags = TagManager(file_io, table_path)
    result = MaintenanceResult(table_name, "rollback", dry_run=dry_run)
    if isinstance(target, str) and not target.isdigit():
        snap = tags.get(target).snapshot
        if not sm.exists(snap.id) and not dry_run:
            restored = replace(snap, extra={k: v for k, v in snap.extra.items()
                                            if k not in ("tagCreateTime", "tagTimeRetained")})
            file_io.write_if_absent(sm.snapshot_path(snap.id), restored.to_json().encode())
            sm.commit_earliest_hint(snap.id)
        target_id = snap.id
    else:
        target_id = int(target)
        if not sm.exists(target_id):
            raise SnapshotNotFoundError(f"cannot roll {table_name} back to snapshot {target_id}: "
                                        "it does not exist (expired or never written); roll "
                                        "back to a tag instead")
    latest = sm.latest_snapshot_id() or target_id
    if not dry_run:
        sm.commit_latest_hint(target_id)
    for sid in range(latest, target_id, -1):
        path = sm.snapshot_path(sid)
        if sm.exists(sid):
            if not dry_run:
                file_io.delete(path)
            result.snapshots_deleted.append(sid)
            result.deleted.append(path)
    _clean_changelogs(file_io, table_path, target_id, result, dry_run)
    for tag in tags.tags():
        if tag.snapshot_id > target_id:
            if not dry_run:
                tags.delete_file(tag.name)
            result.deleted.append(tags.tag_path(tag.name))
            result.other_files_deleted += 1
    result.latest_snapshot = target_id
    earliest = sm.earliest_snapshot_id()
    # a dry run to a tag whose snapshot expired: the rollback would restore it as the earliest
    result.earliest_snapshot = target_id if earliest is None or earliest > target_id \
        else earliest
    result.duration_s = round(time.monotonic() - start, 3)
    return result


def _clean_changelogs(file_io: FileIO, table_path: str, target_id: int,
                      result: MaintenanceResult, dry_run: bool) -> None:
    """Delete `changelog-<id>` for every id after the target, newest first, the LATEST hint
    rewritten first (-1 when none is left, as Java writes it; the EARLIEST hint then goes too,
    which Java leaves: it would name a changelog that expiry writes again later, hiding the
    older ones it writes with it). Their files are left for orphan removal, as the snapshots'
    are."""
    manager = ChangelogManager(file_io, table_path)
    ids = manager.changelog_ids()
    later = [i for i in reversed(ids) if i > target_id]
    if not later:
        return
    if not dry_run:
        if len(later) < len(ids):
            manager.commit_latest_hint(target_id)
        else:
            manager.commit_latest_hint(-1)
            file_io.delete_many([manager.hint_path(EARLIEST)])
    for cid in later:
        path = manager.changelog_path(cid)
        if not dry_run:
            file_io.delete(path)
        result.changelogs_deleted.append(cid)
        result.deleted.append(path)
