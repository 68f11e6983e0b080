"""The small reads every cleanup job starts with, overlapped: the snapshot listing, the tags,
the consumers, the changelog listing. Each is a directory listing and then one small file per
entry; the files of one listing are read at once, and the listings of one job are issued
together (`survey`), so the start of an expiry costs one or two round trips, not one per file.

Fail closed as the managers do: a tag or consumer file that cannot be read raises (an unread
consumer could let expiry remove what it pins), one removed since the listing is skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lakeformat.meta.changelog import ChangelogManager
from lakeformat.meta.consumer import ConsumerManager
from lakeformat.meta.snapshot import Snapshot, SnapshotManager
from lakeformat.meta.tag import Tag, TagManager
from lakeformat.storage import FileIO
from lakeformat.storage.parallel import concurrently


class ListedSnapshots:
    """A table's snapshots as one listing saw them: earliest and latest without the hints and
    their existence probes (a listing is what those probes fall back to anyway), reads of
    listed ids only. Snapshot files are read through the manager."""

    def __init__(self, manager: SnapshotManager, ids: list[int]):
        self.manager = manager
        self.ids = ids
        self.listed = set(ids)

    def latest_snapshot_id(self) -> int | None:
        return self.ids[-1] if self.ids else None

    def earliest_snapshot_id(self) -> int | None:
        return self.ids[0] if self.ids else None

    def snapshot_path(self, snapshot_id: int) -> str:
        return self.manager.snapshot_path(snapshot_id)

    def snapshot(self, snapshot_id: int) -> Snapshot:
        if snapshot_id not in self.listed:
            raise FileNotFoundError(f"snapshot {snapshot_id} does not exist "
                                    f"({self.manager.snapshot_path(snapshot_id)})")
        return self.manager.snapshot(snapshot_id)


@dataclass
class Survey:
    """What an expiry reads before it plans, read together."""

    snapshots: ListedSnapshots
    changelog_ids: list[int]
    min_next_snapshot: int | None
    tags: list[Tag] = field(default_factory=list)


def survey(file_io: FileIO, table_path: str, consumers: bool = True) -> Survey:
    """The snapshot listing, the changelog listing, the consumers (`consumers=False`: not
    read) and the tags of a table, all at once."""
    sm = SnapshotManager(file_io, table_path)
    ids, changelog_ids, pinned, tags = concurrently(
        sm.snapshot_ids,
        ChangelogManager(file_io, table_path).changelog_ids,
        (ConsumerManager(file_io, table_path).min_next_snapshot if consumers
         else lambda: None),
        TagManager(file_io, table_path).tags)
    return Survey(ListedSnapshots(sm, ids), changelog_ids, pinned, tags)
