"""Commit: turn the files a job wrote into one snapshot, with optimistic concurrency.

Each attempt reads the latest snapshot, writes the delta manifest and new manifest lists, and
publishes `snapshot-<latest+1>` through write-if-absent. Losing the race for the id is not a
conflict: the attempt's metadata is removed and the commit retries with back-off. Deleting a
file that is no longer live is a conflict and is not retried.

Sequence numbers: a write numbers its records after the largest sequence number of each bucket
in its base snapshot. If another commit added records to one of those buckets since then, the
new records would tie with (or sort before) records committed earlier, and readers would not
see "the later commit wins". Such a commit raises `SequenceConflict` before publishing, and the
writer renumbers those buckets against the new base (see `operation/write/table_write.py`).
A compaction whose inputs' sequence range overlaps a level-0 file added after its plan would
change which of two tied records wins, so it is refused as a conflict.

A publish whose outcome cannot be decided (the request failed, and reading the snapshot back
failed too) raises `CommitStateUnknownError` and deletes nothing.
"""

from __future__ import annotations

import random
import time
import uuid as uuidlib
from collections.abc import Mapping, Sequence

from lakeformat import clock
from lakeformat.errors import (
    CommitConflictError,
    CommitError,
    CommitFailedError,
    CommitStateUnknownError,
    LockError,
    UnsupportedError,
)
from lakeformat.layout import TablePaths
from lakeformat.meta.data_file_meta import (
    FileKind,
    ManifestEntry,
    ManifestFileMeta,
)
from lakeformat.meta.index_manifest import IndexManifestEntry, IndexManifestFile
from lakeformat.meta.manifest import DeferredWrites, ManifestFile, ManifestList
from lakeformat.meta.manifest_merge import compact_fully, merge_manifests
from lakeformat.meta.snapshot import BATCH_COMMIT_IDENTIFIER, Snapshot, SnapshotManager
from lakeformat.operation.commit.checks import (
    CommitMessage,
    SequenceBase,
    check_compaction_ties,
    check_lsm_overlap,
    check_sequence_base,
    snapshot_identity,
)
from lakeformat.operation.commit.index import INHERIT, next_index_manifest, removed_files
from lakeformat.operation.scan import FileStoreScan
from lakeformat.options import CoreOptions
from lakeformat.schema.schema_manager import SchemaManager
from lakeformat.schema.table_schema import TableSchema
from lakeformat.storage import FileIO
from lakeformat.storage.parallel import parallel_map
from lakeformat.version import __version__

ADD, DELETE = FileKind.ADD, FileKind.DELETE
#: times a snapshot is read back after its publish request failed
READ_BACK_ATTEMPTS = 3
WRITER_VERSION = f"lakeformat-{__version__}"


#: `other_runs_after` value that turns the check for another run of the same commit off
NOT_WATCHED = -1
#: the snapshot kinds a write commits
WRITE_KINDS = ("APPEND", "OVERWRITE")


class AlreadyCommitted(CommitError):
    """Another run of the same commit user and identifier landed this write first; nothing of
    this attempt was published (the job drops its files and reports that snapshot)."""

    def __init__(self, snapshot: Snapshot):
        super().__init__(f"commit {snapshot.commit_user}/{snapshot.commit_identifier} already "
                         f"landed as snapshot {snapshot.id}")
        self.snapshot = snapshot


class FileStoreCommit:
    def __init__(self, file_io: FileIO, table_path: str, schema: TableSchema,
                 commit_user: str | None = None, commit_identifier: int | None = None,
                 properties: dict[str, str] | None = None):
        self.file_io = file_io
        self.table_path = table_path
        self.schema = schema
        self.options = CoreOptions(schema.options)
        self.commit_user = commit_user or str(uuidlib.uuid4())
        self.commit_identifier = (BATCH_COMMIT_IDENTIFIER if commit_identifier is None
                                  else commit_identifier)
        #: the snapshot's free-form `properties` (None: the key is left out, as Java does)
        self.properties = dict(properties) if properties else None
        #: the data-file entries (delta manifests) of the last snapshot this committer published
        self.committed_entries: list[ManifestEntry] = []
        self.snapshots = SnapshotManager(file_io, table_path)
        self.schemas = SchemaManager(file_io, table_path)
        self.scan = FileStoreScan(file_io, table_path, schema)
        partition_types = [f.type for f in schema.partition_fields()]
        self.manifest_file = ManifestFile(file_io, table_path, partition_types, schema.options)
        self.manifest_list = ManifestList(file_io, table_path, schema.options)
        self.index_file = IndexManifestFile(file_io, table_path, schema.options)
        #: id of a snapshot whose publish failed and read back absent (it could still land)
        self.ambiguous_publish: int | None = None
        self._ambiguous_uuid: str | None = None
        #: uuids of every snapshot this committer tried to publish: only these are "ours" when
        #: deciding whether a failed-looking attempt landed (a user may run several jobs)
        self._attempted: set[str] = set()
        #: (snapshot, schema id) the job read at plan: its first attempt takes them as latest
        #: (`assume_latest`), a lost write-if-absent of the next id then re-reads
        self._planned: tuple[Snapshot | None, int] | None = None

    def assume_latest(self, snapshot: Snapshot | None, schema_id: int) -> None:
        """The latest snapshot and schema id as this job read them at plan. The next commit's
        first attempt builds on them without reading them again: if its snapshot lands (a
        write-if-absent of the next id), they were the latest; if not, it reads again."""
        self._planned = (snapshot, schema_id)

    # -- public --------------------------------------------------------------------------------
    def commit(self, messages: Sequence[CommitMessage], kind: str = "APPEND",
               overwrite_partitions: Sequence[bytes] | None = None,
               overwrite_all: bool = False,
               sequence_base: SequenceBase | None = None,
               other_runs_after: int | None = NOT_WATCHED,
               index_added: Sequence[IndexManifestEntry] = (),
               index_base: str | None = None,
               deletions_seen: Mapping[str, tuple[str, int] | None] | None = None
               ) -> Snapshot | None:
        """Publish one snapshot. Returns None when there is nothing to commit (empty batch).

        With `overwrite_partitions` (or `overwrite_all`) every file live in those partitions at
        commit time is deleted, recomputed on each attempt as Paimon's overwrite does. With
        `sequence_base`, raises `SequenceConflict` (nothing published) when another commit
        added records to one of its buckets after the base snapshot. With `other_runs_after`
        (a snapshot id, None for "from the first"), raises `AlreadyCommitted` (nothing
        published) as soon as another run of this commit user and identifier is found to have
        landed a write after that snapshot — checked on every attempt, so a twin landing while
        this one retries is seen too.

        `index_added`: HASH index files of a dynamic-bucket write, each replacing the live file
        of its (partition, bucket); `index_base` names the index manifest they were computed
        from: if another commit changed the index of one of their partitions since, the
        commit is refused (CommitConflictError), as the assignment would be stale. An
        overwrite drops the index files of the partitions it replaces.

        Deletion vectors of the data files a commit removes leave the index with them.
        `deletions_seen` (a compaction's inputs -> the deletion vector it read, None for none):
        if another commit changed one since, the commit is refused (CommitConflictError), as
        the rewrite would bring deleted rows back.
        """
        overwrite = overwrite_all or overwrite_partitions is not None
        if overwrite:
            kind = "OVERWRITE"
        base_entries = self._entries(messages)
        changelog = [ManifestEntry(ADD, m.partition, m.bucket, m.total_buckets, f)
                     for m in messages for f in m.changelog_files]
        if not base_entries and not changelog and not overwrite and not index_added:
            return None
        start = time.monotonic()
        wait = self.options.commit_min_retry_wait
        seen_latest: int | None = None
        watched = other_runs_after
        attempt = 0
        planned, self._planned = self._planned, None
        while True:
            # the schema id the job listed serves every attempt (listed once per job); the
            # planned base only the first, which re-reads it beside its manifest writes
            known_schema = planned[1] if planned is not None else None
            verify = attempt == 0 and planned is not None
            latest = planned[0] if verify else self._read_latest()  # type: ignore[index]
            if attempt > 0:
                landed = self.find_landed(seen_latest, latest, kind)
                if landed is not None:
                    self._clear_ambiguous()
                    self.committed_entries = self.delta_entries(landed)
                    return landed
                self._settle_ambiguous(latest)
            if watched != NOT_WATCHED:
                twin = self.find_other_run(watched, latest, WRITE_KINDS)
                if twin is not None:
                    raise AlreadyCommitted(twin)
                watched = latest.id if latest else None
            seen_latest = latest.id if latest else None
            entries = list(base_entries)
            guard = (sequence_base is not None and not overwrite
                     and snapshot_identity(latest) != sequence_base.snapshot)
            if guard or overwrite or kind == "COMPACT" or any(e.kind == DELETE
                                                              for e in entries):
                live = self.scan.live_entries(latest)
                if overwrite:
                    entries = self._overwrite_deletes(live, overwrite_partitions,
                                                      overwrite_all) + entries
                self._check(live, entries, kind)
                if guard:
                    check_sequence_base(live, sequence_base, latest,  # type: ignore[arg-type]
                                        self.table_path)
                if kind == "COMPACT" and self.schema.primary_keys:  # append: no keys, no ties
                    check_lsm_overlap(live, entries, self.schema, self.table_path)
                    check_compaction_ties(live, messages, self.table_path)
            if not entries and not changelog and not index_added:
                return None
            pending = DeferredWrites(self.file_io)  # the index manifest too, with the rest
            self.index_file.deferred = pending
            try:
                index_name = next_index_manifest(
                    self.index_file, latest, index_added, index_base, overwrite_partitions,
                    overwrite_all, removed_files(entries), deletions_seen, self.table_path)
            finally:
                self.index_file.deferred = None
            snap = self._try_commit(latest, entries, kind, changelog, index_manifest=index_name,
                                    known_schema=known_schema, verify_base=verify,
                                    pending=pending)
            if snap is not None:
                self._clear_ambiguous()
                self.snapshots.commit_latest_hint(snap.id)
                self.committed_entries = entries
                return snap
            attempt += 1
            wait = self._back_off(attempt, start, wait, latest)

    def compact_manifests(self) -> Snapshot | None:
        """Paimon's `compactManifest`: a COMPACT snapshot of the same data (same files, record
        counts and schema id) whose base manifest list holds only the ADD entries of live
        files, with an empty delta. None when the latest snapshot's manifests hold no DELETE
        entry, or there is no snapshot: nothing to do, as in Java."""
        start = time.monotonic()
        wait = self.options.commit_min_retry_wait
        seen_latest: int | None = None
        attempt = 0
        while True:
            latest = self.snapshots.latest_snapshot()
            if attempt > 0:
                landed = self.find_landed(seen_latest, latest, "COMPACT")
                if landed is not None:
                    self._clear_ambiguous()
                    self.committed_entries = []
                    return landed
                self._settle_ambiguous(latest)
            if latest is None:
                return None
            seen_latest = latest.id
            if not any(m.num_deleted_files for m in self.scan.data_manifests(latest)):
                return None
            snap = self._try_commit(latest, [], "COMPACT", compact_manifests=True)
            if snap is not None:
                self._clear_ambiguous()
                self.snapshots.commit_latest_hint(snap.id)
                self.committed_entries = []
                return snap
            attempt += 1
            wait = self._back_off(attempt, start, wait, latest)

    def _back_off(self, attempt: int, start: float, wait: float, latest: Snapshot | None
                  ) -> float:
        """Sleep before the next attempt (or give up); returns the next wait."""
        elapsed = time.monotonic() - start
        timeout = self.options.commit_timeout
        if attempt > self.options.commit_max_retries or (timeout is not None
                                                         and elapsed > timeout):
            raise CommitFailedError(
                f"commit to {self.table_path} gave up after {attempt} attempts: snapshot "
                f"{(latest.id + 1) if latest else 1} kept being taken by other writers")
        time.sleep(wait * (1 + random.random() * 0.2))
        return min(wait * 2, self.options.commit_max_retry_wait)

    def delta_entries(self, snap: Snapshot) -> list[ManifestEntry]:
        """What a published snapshot changed in data files (its delta manifests): read back only
        for a commit found landed, whose entries this committer did not publish itself."""
        return self.scan.read_entries(self.scan.manifest_list.read(snap.delta_manifest_list))

    # -- steps ---------------------------------------------------------------------------------
    @staticmethod
    def _entries(messages: Sequence[CommitMessage]) -> list[ManifestEntry]:
        out = []
        for m in messages:
            out += [ManifestEntry(DELETE, m.partition, m.bucket, m.total_buckets, f)
                    for f in m.deleted_files]
            out += [ManifestEntry(ADD, m.partition, m.bucket, m.total_buckets, f)
                    for f in m.new_files]
        return out

    @staticmethod
    def _overwrite_deletes(live: list[ManifestEntry], partitions: Sequence[bytes] | None,
                           overwrite_all: bool) -> list[ManifestEntry]:
        targets = None if overwrite_all else set(partitions or ())
        return [ManifestEntry(DELETE, e.partition, e.bucket, e.total_buckets, e.file)
                for e in live if targets is None or e.partition in targets]

    def _check(self, live: list[ManifestEntry], entries: list[ManifestEntry], kind: str) -> None:
        """Paimon's conflict checks, run (as in Java) when a commit deletes files or compacts."""
        deletes = [e for e in entries if e.kind == DELETE]
        partitions = {e.partition for e in entries}
        live = [e for e in live if e.partition in partitions]
        if kind != "OVERWRITE":
            # postpone files (total -2) have no bucket count [JAVA ConflictDetection]
            buckets = {e.partition: e.total_buckets for e in live if e.total_buckets > 0}
            for e in entries:
                had = buckets.get(e.partition)
                if e.kind == ADD and had is not None and had != e.total_buckets \
                        and e.total_buckets > 0:
                    raise CommitConflictError(
                        f"total buckets of a partition of {self.table_path} changed from {had} "
                        f"to {e.total_buckets} without overwrite")
        if not deletes and kind != "COMPACT":
            return
        live_ids = {e.identifier for e in live}
        for e in entries:
            if e.kind == ADD and e.identifier in live_ids and kind != "OVERWRITE":
                raise CommitConflictError(
                    f"file deletion conflict in {self.table_path}: {e.file.file_name} is already"
                    " live; give up and run again")
        added_ids = {e.identifier for e in entries if e.kind == ADD}
        for e in deletes:
            if e.identifier in added_ids and kind != "OVERWRITE":
                raise CommitConflictError(f"commit adds and deletes {e.file.file_name}")
            if e.identifier not in live_ids:
                raise CommitConflictError(
                    f"file deletion conflict in {self.table_path}: {e.file.file_name} is no "
                    "longer live (another job removed it); give up and run again")

    def _try_commit(self, latest: Snapshot | None, entries: list[ManifestEntry],
                    kind: str, changelog: Sequence[ManifestEntry] = (),
                    compact_manifests: bool = False,
                    index_manifest: str | None | object = INHERIT,
                    known_schema: int | None = None, verify_base: bool = False,
                    pending: DeferredWrites | None = None) -> Snapshot | None:
        """One attempt; `compact_manifests`: the base list is `compact_fully` of the latest
        snapshot's manifests and the snapshot keeps its schema id, statistics and row ids.
        `index_manifest`: the new snapshot's (written for this attempt, deleted with its other
        files when the attempt does not land), None for none, or INHERIT. `known_schema`: the
        latest schema id the job listed (else listed here); `verify_base`: `latest` is the
        planned base, read again beside the manifest writes (`_flush_checking`)."""
        written_manifests: list[ManifestFileMeta] = []
        written_lists: list[str] = [] if index_manifest is INHERIT or index_manifest is None \
            else [str(index_manifest)]
        # built first, then written in one round trip (with the attempt's index manifest)
        pending = pending if pending is not None else DeferredWrites(self.file_io)
        self.manifest_file.deferred = self.manifest_list.deferred = pending
        try:
            delta = self.manifest_file.write(entries) if entries else []
            written_manifests += delta
            previous = self.scan.data_manifests(latest) if latest else []
            if compact_manifests:
                base, new_files = compact_fully(previous, self.manifest_file,
                                                self.options.manifest_target_file_size)
            else:
                base, new_files = merge_manifests(
                    previous, self.manifest_file, self.options.manifest_target_file_size,
                    self.options.manifest_merge_min_count,
                    self.options.manifest_full_compaction_threshold)
            written_manifests += new_files
            base_name, base_size = self.manifest_list.write(base)
            written_lists.append(base_name)
            delta_name, delta_size = self.manifest_list.write(delta)
            written_lists.append(delta_name)
            changelog_name = changelog_size = changelog_rows = None
            if changelog:
                changelog_manifests = self.manifest_file.write(changelog)
                written_manifests += changelog_manifests
                changelog_name, changelog_size = self.manifest_list.write(changelog_manifests)
                written_lists.append(changelog_name)
                changelog_rows = sum(e.file.row_count for e in changelog)
            self.manifest_file.deferred = self.manifest_list.deferred = None
            added = sum(e.file.row_count for e in entries if e.kind == ADD)
            removed = sum(e.file.row_count for e in entries if e.kind == DELETE)
            new_id = (latest.id + 1) if latest else 1
            # Java records the latest schema: listed again, unless this job listed it already
            schema_id = self.schemas.schema_ids()[-1] if known_schema is None else max(
                known_schema, latest.schema_id if latest else 0)
            same = compact_manifests and latest is not None
            if same:  # Java's compactManifest keeps what the latest snapshot says
                schema_id = latest.schema_id  # type: ignore[union-attr]
            snap = Snapshot(
                version=3, id=new_id, schema_id=schema_id,
                base_manifest_list=base_name, base_manifest_list_size=base_size,
                delta_manifest_list=delta_name, delta_manifest_list_size=delta_size,
                changelog_manifest_list=changelog_name,
                changelog_manifest_list_size=changelog_size,
                changelog_record_count=changelog_rows,
                index_manifest=(latest.index_manifest if latest else None)
                if index_manifest is INHERIT else index_manifest,  # type: ignore[arg-type]
                commit_user=self.commit_user, commit_identifier=self.commit_identifier,
                commit_kind=kind, time_millis=clock.now_millis(),
                total_record_count=((latest.total_record_count or 0) if latest else 0)
                + added - removed,
                delta_record_count=added - removed,
                watermark=latest.watermark if latest else None,
                uuid=str(uuidlib.uuid4()), writer_version=WRITER_VERSION,
                properties=self.properties,
                statistics=latest.statistics if same else None,  # type: ignore[union-attr]
                next_row_id=latest.next_row_id if same else None,  # type: ignore[union-attr]
            )
            landed: bool | None = False
            if self._flush_checking(pending, latest if verify_base else None):
                self._attempted.add(snap.uuid)
                landed = self._publish(snap)
            if landed:
                return snap
        except CommitStateUnknownError:
            raise  # the snapshot may reference these files: delete nothing
        except BaseException:
            self.manifest_file.deferred = self.manifest_list.deferred = None
            self._cleanup(written_manifests, written_lists)
            raise
        if landed is None:
            # absent now, but the failed request could still land: keep this attempt's files
            # (orphan cleanup removes them) and let the caller retry
            self.ambiguous_publish, self._ambiguous_uuid = snap.id, snap.uuid
        else:
            self._cleanup(written_manifests, written_lists)
        return None

    def _read_latest(self) -> Snapshot | None:
        """The latest snapshot; a stale LATEST hint found on the way is set right (a plan that
        trusts the hint would otherwise build on the same stale base every time)."""
        latest, hint_ok = self.snapshots.latest_and_hint()
        if not hint_ok and latest is not None:
            self.snapshots.commit_latest_hint(latest.id)
        return latest

    def _flush_checking(self, pending: DeferredWrites, base: Snapshot | None) -> bool:
        """Write the attempt's metadata files; with `base` (the snapshot the job's plan read,
        not read again since), read it again at the same time: False when it is gone or is
        another snapshot now (a rollback re-used its id), then the attempt must not publish.
        Landing `base.id + 1` with write-if-absent proves no later snapshot existed; only
        this re-read proves `base` itself is still the one planned on."""
        if base is None:
            pending.flush()
            return True
        _, same = parallel_map(lambda step: step(), [pending.flush,
                                                     lambda: self._unchanged(base)])
        return same

    def _unchanged(self, snap: Snapshot) -> bool:
        try:
            return snapshot_identity(self.snapshots.snapshot(snap.id)) == snapshot_identity(snap)
        except FileNotFoundError:
            return False

    def _publish(self, snap: Snapshot) -> bool | None:
        """Write-if-absent of the snapshot file. True: ours landed; False: the id was taken;
        None: the request failed and nothing is there yet, but it could still land.

        A failed request may still have landed: the snapshot is read back (a few times) and
        its uuid decides. If that cannot be read either, the outcome is unknown and
        `CommitStateUnknownError` is raised: the caller must delete nothing.
        """
        path = self.snapshots.snapshot_path(snap.id)
        try:
            return self.file_io.write_if_absent(path, snap.to_json().encode())
        except (LockError, UnsupportedError):
            raise  # refused before the write was sent (lock not held, a store without
            # conditional writes): nothing landed
        except Exception as error:
            return self._read_back(snap, path, error)

    def _settle_ambiguous(self, latest: Snapshot | None) -> None:
        """A failed publish of id K can never land once another snapshot holds K."""
        k = self.ambiguous_publish
        if k is None or latest is None or latest.id < k:
            return
        try:
            if self.snapshots.snapshot(k).uuid != self._ambiguous_uuid:
                self.ambiguous_publish = None
        except Exception:
            pass  # cannot tell: stay ambiguous

    def _read_back(self, snap: Snapshot, path: str, error: Exception) -> bool | None:
        """Whether `snap` landed at `path` (None: nothing there). Raises
        `CommitStateUnknownError` when the snapshot cannot be read back."""
        wait = self.options.commit_min_retry_wait
        last: Exception = error
        for attempt in range(READ_BACK_ATTEMPTS):
            if attempt:
                time.sleep(wait)
                wait = min(wait * 2, self.options.commit_max_retry_wait)
            try:
                return self.snapshots.snapshot(snap.id).uuid == snap.uuid
            except FileNotFoundError:
                return None
            except Exception as e:
                last = e
        raise CommitStateUnknownError(
            f"publishing snapshot {snap.id} of {self.table_path} failed ({error}) and reading it "
            f"back failed too ({last}): it may or may not have landed. Nothing was deleted. "
            f"If snapshot {snap.id} exists with commitUser {self.commit_user} the commit "
            "landed; otherwise run the job again (remove_orphan_files removes the files it "
            "left)", path=path, snapshot_id=snap.id, commit_user=self.commit_user) from last

    def find_landed(self, seen: int | None, latest: Snapshot | None, kind: str) -> Snapshot | None:
        """A snapshot this committer published although the attempt looked failed: its user,
        kind and identifier (Paimon's rule) and one of the uuids it tried."""
        for s in self._snapshots_after(seen, latest):
            if (s.uuid in self._attempted and s.commit_user == self.commit_user
                    and s.commit_kind == kind and s.commit_identifier == self.commit_identifier):
                return s
        return None

    def find_other_run(self, after: int | None, latest: Snapshot | None,
                       kinds: Sequence[str]) -> Snapshot | None:
        """A snapshot of one of `kinds` landed after `after` by another run of this commit
        user and identifier (not by this committer)."""
        for s in self._snapshots_after(after, latest):
            if (s.uuid not in self._attempted and s.commit_user == self.commit_user
                    and s.commit_identifier == self.commit_identifier and s.commit_kind in kinds):
                return s
        return None

    def _snapshots_after(self, after: int | None, latest: Snapshot | None) -> list[Snapshot]:
        if latest is None:
            return []
        found = []
        for sid in range((after or 0) + 1, latest.id + 1):
            try:
                found.append(latest if sid == latest.id else self.snapshots.snapshot(sid))
            except FileNotFoundError:  # expired meanwhile
                continue
        return found

    def _clear_ambiguous(self) -> None:
        """A snapshot of ours landed: an earlier doubtful publish is settled (its id is taken)."""
        self.ambiguous_publish = None
        self._ambiguous_uuid = None

    def raise_if_ambiguous(self, error: BaseException, job: str) -> None:
        """After a publish whose request failed (absent when read back, but it could still
        land), the job's files may be referenced by a snapshot yet to appear: instead of
        deleting or rewriting them, end with CommitStateUnknownError."""
        k = self.ambiguous_publish
        if k is None:
            return
        raise CommitStateUnknownError(
            f"{job} of {self.table_path} stopped ({error}) after publishing snapshot {k} failed "
            f"in a way that may still land; nothing was deleted. If snapshot {k} appears with "
            f"commitUser {self.commit_user} it landed; otherwise run it again (with the same "
            "commit_user and commit_identifier it lands at most once; remove_orphan_files "
            "removes the files it left)", path=self.table_path, snapshot_id=k,
            commit_user=self.commit_user) from error

    def _cleanup(self, manifests: list[ManifestFileMeta], lists: list[str]) -> None:
        layout = TablePaths(self.file_io, self.table_path)
        paths = [layout.manifest(n) for n in [m.file_name for m in manifests] + lists]
        if paths:
            self.file_io.delete_many(paths)
