"""Automatic tags (`tag.automatic-creation`), as Java's `TagAutoCreation` and
`TagBatchCreation` make them after a commit.

* `process-time` / `watermark`: every snapshot after the newest auto-created tag's is looked
  at in id order; its time (commit time, or watermark — a snapshot without one is passed over)
  less `tag.creation-delay` reaching the end of the period after the last tagged one makes a
  tag named for the period before the snapshot's (`tag.automatic-completion`: the next period
  in line instead, so no period is skipped). Tags get `tag.default-time-retained`; an
  existing tag of that name is left alone. Past `tag.num-retained-max` auto-created tags, the
  oldest (by snapshot) are deleted — tags of other names are not counted. Nothing is done on a
  `write-only` table (Java builds no tag manager for its commits).
* `batch`: the latest snapshot is tagged `batch-write-<yyyy-MM-dd>` (its commit date in
  `sink.process-time-zone`) or `tag.batch.customized-name`, replacing a tag of that name; then
  every tag counts for `tag.num-retained-max`, the oldest snapshots' tags going first.

A deleted tag takes the files only it held with it (`tags.delete_tag`). The state is read
from the tags themselves, so a second run after the same commit (a retried job) creates
nothing new.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, nullcontext
from dataclasses import asdict, dataclass, field
from typing import Any

from lakeformat.errors import CleanupAbortedError, TagAlreadyExistsError, TagNotFoundError
from lakeformat.meta.snapshot import Snapshot, SnapshotManager
from lakeformat.meta.tag import Tag, TagManager
from lakeformat.operation.maintain.tag_period import TagAutoOptions, local_time, tag_auto_options
from lakeformat.operation.maintain.tags import delete_tag
from lakeformat.operation.support import TAG_CREATION, check_supported
from lakeformat.schema.table_schema import TableSchema
from lakeformat.storage import FileIO
from lakeformat.storage.parallel import parallel_map

_log = logging.getLogger(__name__)

BATCH_PREFIX = "batch-write-"
#: snapshots read at once while looking for the next tag
READ_AHEAD = 32

#: enters the table's maintenance lock, yielding the FileIO fenced by it (tags are deleted
#: under it, as every maintenance deletion is)
Locker = Callable[[], AbstractContextManager[FileIO]]


@dataclass
class AutoTagResult:
    """What automatic tag creation did after a commit: the tags it created and those
    `tag.num-retained-max` deleted (with the files only they held)."""

    table: str
    mode: str
    created: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    files_deleted: int = 0
    skipped: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        if self.mode == "none":
            return f"{self.table}: tag.automatic-creation is none"
        done = [f"created {', '.join(self.created)}"] if self.created else []
        if self.deleted:
            done.append(f"deleted {', '.join(self.deleted)} ({self.files_deleted} files)")
        notes = f" ({'; '.join(self.skipped)})" if self.skipped else ""
        return f"{self.table}: {self.mode} tags: {'; '.join(done) or 'nothing due'}{notes}"


def check_auto_tags(schema: TableSchema, table_path: str) -> TagAutoOptions:
    """The table's automatic-tag options, checked before a job writes anything: a bad value,
    or a tag callback lakeformat cannot run, is an error naming the option."""
    opts = tag_auto_options(schema.options)
    if opts.creates_tags:
        check_supported(schema, TAG_CREATION, table_path)
    return opts


def check_manual_tag(file_io: FileIO, table_path: str, schema: TableSchema, name: str,
                     snapshot_id: int | None) -> None:
    """Java's `TagManager` on a table creating tags by process-time or watermark: a tag named
    like an auto-created one is refused on a snapshot that already has an auto-created tag
    (each snapshot holds at most one, which `tag.num-retained-max` relies on)."""
    opts = tag_auto_options(schema.options)
    if opts.mode not in ("process-time", "watermark") or not opts.period.is_auto_tag(name):
        return
    if snapshot_id is None:
        snapshot_id = SnapshotManager(file_io, table_path).latest_snapshot_id()
    already = [t.name for t in TagManager(file_io, table_path).tags()
               if t.snapshot_id == snapshot_id and opts.period.is_auto_tag(t.name)]
    if already:
        raise TagAlreadyExistsError(f"snapshot {snapshot_id} is already auto-tagged with "
                                    f"{already}: not tagging it {name!r} too")


class _Deleter:
    """Deletes tags under the maintenance lock, taken at the first deletion and held to the
    end of the run."""

    def __init__(self, file_io: FileIO, table_path: str, schema: TableSchema, table_name: str,
                 lock: Locker | None, stack: ExitStack, result: AutoTagResult):
        self.file_io, self.path, self.schema, self.name = file_io, table_path, schema, table_name
        self.lock = lock or (lambda: nullcontext(file_io))
        self.stack, self.result = stack, result
        self.fenced: FileIO | None = None

    def delete(self, name: str) -> None:
        if self.fenced is None:
            self.fenced = self.stack.enter_context(self.lock())
        try:
            res = delete_tag(self.fenced, self.path, self.schema, self.name, name, False)
        except TagNotFoundError:  # deleted by someone else meanwhile: what we wanted
            return
        self.result.deleted.append(name)
        self.result.files_deleted += len(res.deleted)
        self.result.skipped += res.skipped


def create_auto_tags(file_io: FileIO, table_path: str, schema: TableSchema, table_name: str,
                     *, lock: Locker | None = None, committed: bool = True) -> AutoTagResult:
    """Run the table's `tag.automatic-creation` now, as after a commit. `committed`: the job
    just committed (or found its commit already landed); batch mode tags only then. `lock`
    enters the maintenance lock for deletions (None: `file_io` is fenced already)."""
    opts = check_auto_tags(schema, table_path)
    result = AutoTagResult(table_name, opts.mode)
    with ExitStack() as stack:
        deleter = _Deleter(file_io, table_path, schema, table_name, lock, stack, result)
        if opts.mode in ("process-time", "watermark"):
            if opts.write_only:
                result.skipped.append("write-only=true: Paimon's writers create no tags")
            else:
                _TagAutoCreation(file_io, table_path, opts, deleter, result).run()
        elif opts.mode == "batch" and committed:
            _batch_creation(file_io, table_path, opts, deleter, result)
    return result


def _create(tags: TagManager, snapshot: Snapshot, name: str, opts: TagAutoOptions) -> bool:
    try:
        tags.create(name, snapshot, opts.default_time_retained, check_name=False)
        return True
    except TagAlreadyExistsError:  # created meanwhile by another run: Java ignores it too
        return False


class _TagAutoCreation:
    def __init__(self, file_io: FileIO, table_path: str, opts: TagAutoOptions,
                 deleter: _Deleter, result: AutoTagResult):
        self.opts, self.period = opts, opts.period
        self.snapshots = SnapshotManager(file_io, table_path)
        self.tags = TagManager(file_io, table_path)
        self.deleter, self.result = deleter, result
        auto = [(t, n) for n in self.tags.names()
                if (t := self.period.tag_to_time(n)) is not None]
        if not auto:  # no auto tag yet: from the earliest snapshot on
            self.next_snapshot = self.snapshots.earliest_snapshot_id() or 1
            self.next_tag = None
        else:  # the newest auto tag by its time says where the last run stopped
            time, name = max(auto)
            self.next_snapshot = self.tags.get(name).snapshot_id + 1
            self.next_tag = self.period.next_time(time)

    def _read(self, snapshot_id: int) -> Snapshot | None:
        try:
            return self.snapshots.snapshot(snapshot_id)
        except FileNotFoundError:
            return None

    def _ahead(self) -> Iterator[Snapshot | None]:
        """Snapshots from `next_snapshot` on, read a few at a time; None where one is missing."""
        latest = self.snapshots.latest_snapshot_id()
        while latest is not None and self.next_snapshot <= latest:
            ids = range(self.next_snapshot, min(latest, self.next_snapshot + READ_AHEAD - 1) + 1)
            for snap in parallel_map(self._read, ids):
                yield snap
                if snap is None:
                    return
            latest = max(latest, self.snapshots.latest_snapshot_id() or latest)

    def run(self) -> None:
        while True:
            for snap in self._ahead():
                if snap is None:
                    break
                self._try_create(snap)
                self.next_snapshot += 1
            else:
                return  # read up to the latest snapshot
            earliest = self.snapshots.earliest_snapshot_id()  # expired meanwhile: skip ahead
            if earliest is None or earliest <= self.next_snapshot:
                return
            self.next_snapshot = earliest

    def _try_create(self, snap: Snapshot) -> None:
        time = self.opts.tag_time(snap.time_millis, snap.watermark)
        if time is None:  # no watermark in this snapshot
            return
        if self.next_tag is not None and time - self.opts.delay < self.period.next_time(
                self.next_tag):
            return
        this_tag = self.period.normalize_to_previous(time)
        if self.opts.automatic_completion and self.next_tag is not None:
            this_tag = self.next_tag
        name = self.period.time_to_tag(this_tag)
        if name not in self.tags.names():
            # Java's TagManager refuses a second auto-created tag on one snapshot
            already = [t.name for t in self._auto_tags() if t.snapshot_id == snap.id]
            if already:
                raise TagAlreadyExistsError(f"snapshot {snap.id} is already auto-tagged with "
                                            f"{already}: not tagging it {name!r} too")
            if _create(self.tags, snap, name, self.opts):
                self.result.created.append(name)
        self.next_tag = self.period.next_time(this_tag)
        if self.opts.num_retained_max is not None:
            self._retain()

    def _auto_tags(self) -> list[Tag]:
        return [t for t in self.tags.tags() if self.period.is_auto_tag(t.name)]

    def _retain(self) -> None:
        """Only auto-created tags count; the oldest snapshots' go first."""
        by_snapshot: dict[int, list[str]] = {}
        for t in self._auto_tags():
            by_snapshot.setdefault(t.snapshot_id, []).append(t.name)
        excess = len(by_snapshot) - self.opts.num_retained_max  # type: ignore[operator]
        for sid in sorted(by_snapshot)[:max(0, excess)]:
            names = by_snapshot[sid]
            if len(names) != 1:
                raise CleanupAbortedError(f"snapshot {sid} has more than one auto-created tag "
                                          f"({', '.join(names)}): not deleting any of them")
            self.deleter.delete(names[0])


def _batch_creation(file_io: FileIO, table_path: str, opts: TagAutoOptions, deleter: _Deleter,
                    result: AutoTagResult) -> None:
    snapshots = SnapshotManager(file_io, table_path)
    tags = TagManager(file_io, table_path)
    snap = snapshots.latest_snapshot()
    if snap is None:
        return
    name = opts.batch_name or BATCH_PREFIX + local_time(
        snap.time_millis, opts.process_zone).strftime("%Y-%m-%d")
    try:
        existing = tags.get(name)
    except TagNotFoundError:
        existing = None
    if existing is None or existing.snapshot_id != snap.id:  # a re-run leaves its own tag
        if existing is not None:
            deleter.delete(name)
        if _create(tags, snap, name, opts):
            result.created.append(name)
    limit = opts.num_retained_max
    if limit is None:
        return
    # every tag counts here (Java's TagBatchCreation): whole snapshots' tags while that stays
    # above the limit, then the oldest-written tags of the next snapshot
    all_tags = tags.tags()
    count = len(all_tags)
    by_snapshot: dict[int, list[str]] = {}
    for t in all_tags:
        by_snapshot.setdefault(t.snapshot_id, []).append(t.name)
    mtimes = {s.path.rsplit("/", 1)[-1]: s.mtime for s in file_io.list_status(tags.tag_dir)}
    for sid in sorted(by_snapshot):
        if count <= limit:
            break
        names = by_snapshot[sid]
        if count - len(names) <= limit:
            names = sorted(names, key=lambda n: (mtimes.get(f"tag-{n}", 0.0), n))
            names = names[:count - limit]
        for n in names:
            deleter.delete(n)
            count -= 1


def after_commit(file_io: FileIO, table_path: str, schema: TableSchema, table_name: str,
                 *, lock: Locker | None = None, committed: bool = True
                 ) -> AutoTagResult | None:
    """`create_auto_tags` as a writer runs it once its commit landed: a failure here cannot
    undo the commit, so it is logged (the next commit's run makes the tags it missed; a
    batch job's re-run makes its tag) and None is returned."""
    try:
        if tag_auto_options(schema.options).mode == "none":
            return None
        result = create_auto_tags(file_io, table_path, schema, table_name, lock=lock,
                                  committed=committed)
    except Exception as e:  # noqa: BLE001 - the commit landed: report, never undo
        _log.warning("%s: automatic tag creation failed after the commit: %s: %s",
                     table_name, type(e).__name__, e)
        return None
    if result.created or result.deleted:
        _log.info("%s", result)
    return result
