"""Orphan files: files under a table that no snapshot, tag or changelog references.

Paimon's `OrphanFilesClean`, made safer than it: a read failure of any snapshot, tag, manifest
list or manifest aborts the run (Java treats a missing manifest as empty, then deletes what it
named); a table whose snapshots and tags reference nothing while data files exist is refused
(a lost `snapshot/` directory must not turn the whole table into orphans); the cut-off must be
at least an hour in the past (a writer's files exist before its snapshot does); snapshots and
tags are listed again after the scan, until a round finds nothing new.

Referenced names are compared by file name, as Java does: data file names are unique, and a
name match can only keep a file, never delete one that is used elsewhere.
Never touched: `schema/`, `consumer/`, `index/` (lakeformat cannot read index manifests),
`changelog/`, `branch/`, and anything not laid out as Paimon lays out its files.
"""

from __future__ import annotations

import datetime as dt
import re
import time
from dataclasses import dataclass

from lakeformat.errors import InvalidOptionError, LakeformatError, UnsupportedError
from lakeformat.meta.snapshot import EARLIEST, LATEST, Snapshot, SnapshotManager
from lakeformat.meta.tag import TAG_DIR, TAG_PREFIX, TagManager
from lakeformat.operation.cleanup import OlderThan, cutoff_millis
from lakeformat.operation.references import MANIFEST_DIR, STATISTICS_DIR, TableReferences
from lakeformat.results import MaintenanceResult
from lakeformat.schema.table_schema import TableSchema
from lakeformat.storage import FileIO, FileStatus

DEFAULT_OLDER_THAN = dt.timedelta(days=1)
MIN_AGE_MS = 3600 * 1000  # files younger than an hour may belong to a commit in progress
CHANGELOG_DIR = "changelog"
BRANCH_DIR = "branch"
MAX_SCAN_ROUNDS = 10
_SNAPSHOT_FILE = re.compile(r"snapshot-\d+$")
_CHANGELOG_FILE = re.compile(r"changelog-(\d+)$")

DATA, CHANGELOG, MANIFEST, OTHER = "data", "changelog", "manifest", "other"
_ORDER = {DATA: 0, CHANGELOG: 0, MANIFEST: 1, OTHER: 2}


def now_millis() -> int:
    """The clock every age decision reads (one place, so tests can move it)."""
    return int(time.time() * 1000)


class ReferenceScan:
    """Every snapshot, tag and long-lived changelog (`changelog/changelog-N`) of a table, and
    what they reference: file names (lists, manifests, index manifest, statistics, data,
    changelog and extra files) and schema ids (their `schemaId` and every file's `_SCHEMA_ID`).

    `refresh()` reads only what appeared since the last call, so calling it until it returns 0
    covers commits made while the scan ran. Any failure raises naming what could not be read.
    """

    def __init__(self, file_io: FileIO, table_path: str, schema: TableSchema, operation: str):
        self.file_io = file_io
        self.table_path = table_path
        self.operation = operation
        self.refs = TableReferences(file_io, table_path, schema)
        self.snapshots = SnapshotManager(file_io, table_path)
        self.tags = TagManager(file_io, table_path)
        self.read: dict[tuple[str, str], Snapshot] = {}
        self.names: set[str] = set()
        self.schema_ids: set[int] = set()
        self._manifests_done: set[str] = set()

    def _fail(self, what: str, e: Exception) -> LakeformatError:
        return LakeformatError(f"{self.operation} of {self.table_path} aborted, nothing "
                               f"deleted: cannot read {what}: {e}")

    def _load(self, path: str) -> Snapshot | None:
        """A snapshot, tag or changelog file; None when it is gone (expired or deleted since
        the listing: what only it referenced is being deleted by that job anyway)."""
        try:
            return Snapshot.from_json(self.file_io.read_bytes(path), path)
        except FileNotFoundError:
            return None

    def _listing(self) -> list[tuple[tuple[str, str], str]]:
        io = self.file_io
        out = [(("snapshot", str(sid)), self.snapshots.snapshot_path(sid))
               for sid in self.snapshots.snapshot_ids()]
        out += [(("tag", name), self.tags.tag_path(name)) for name in self.tags.names()]
        for st in io.list_status(io.join(self.table_path, CHANGELOG_DIR)):
            base = st.path.rsplit("/", 1)[-1]
            if _CHANGELOG_FILE.match(base):
                out.append((("changelog", base), st.path))
        return out

    def refresh(self) -> int:
        """Read what appeared since the last call; returns how many files were new."""
        try:
            listing = self._listing()
        except Exception as e:
            raise self._fail("the snapshot, tag and changelog directories", e) from e
        new = 0
        for key, path in listing:
            if key in self.read:
                continue
            try:
                snap = self._load(path)
                if snap is None:
                    continue
                self._add(snap)
            except Exception as e:
                raise self._fail(f"{key[0]} {key[1]} ({path})", e) from e
            self.read[key] = snap
            new += 1
        return new

    def scan_until_stable(self) -> None:
        for _ in range(MAX_SCAN_ROUNDS):
            if self.refresh() == 0:
                return
        raise LakeformatError(f"{self.operation} of {self.table_path} aborted, nothing deleted: "
                              f"snapshots and tags kept changing over {MAX_SCAN_ROUNDS} scans")

    def _add(self, snap: Snapshot) -> None:
        refs = self.refs
        self.schema_ids.add(snap.schema_id)
        self.names.update(refs.metadata_names(snap))
        if snap.statistics:
            self.names.add(snap.statistics)
        metas = refs.data_manifests(snap) + refs.changelog_manifests(snap)
        todo = [m for m in metas if m.file_name not in self._manifests_done]
        refs.prefetch(todo)
        for m in todo:
            for e in refs.entries(m.file_name):
                f = e.file
                self.names.add(f.file_name)
                self.names.update(x.rsplit("/", 1)[-1] for x in f.extra_files)
                self.schema_ids.add(f.schema_id)
            self._manifests_done.add(m.file_name)

    @property
    def snapshot_ids(self) -> list[int]:
        return sorted(int(k[1]) for k in self.read if k[0] == "snapshot")


@dataclass(frozen=True)
class Candidate:
    status: FileStatus
    kind: str

    @property
    def name(self) -> str:
        return self.status.path.rsplit("/", 1)[-1]


def check_cutoff(older_than: OlderThan, now_ms: int) -> int:
    cutoff = cutoff_millis(older_than, DEFAULT_OLDER_THAN, now_ms)
    if cutoff > now_ms:
        raise InvalidOptionError(f"older_than {older_than!r} is in the future: files being "
                                 "written right now would count as orphans")
    if cutoff > now_ms - MIN_AGE_MS:
        raise InvalidOptionError(
            f"older_than {older_than!r} is less than 1 hour ago: files of writes that have not "
            "committed yet would count as orphans; use at least 1 hour (default 1 day)")
    return cutoff


def classify(file_io: FileIO, table_path: str, listing: list[FileStatus], partition_keys: int
             ) -> tuple[list[Candidate], bool]:
    """Files that may be orphans by where they are, and whether any data file exists.

    Raises when the table has branches (their snapshots share these files) or when the
    listing names paths outside the table (fail closed rather than guess).
    """
    root = file_io.join(table_path, "x")[:-1]
    out: list[Candidate] = []
    data_exists = False
    for st in listing:
        if not st.path.startswith(root):
            raise LakeformatError(f"listing {table_path} returned {st.path}, outside the table; "
                                  "nothing deleted")
        parts = st.path[len(root):].split("/")
        top, name = parts[0], parts[-1]
        if top == BRANCH_DIR:
            raise UnsupportedError(f"{table_path} has branches ({BRANCH_DIR}/): remove-orphan-"
                                   "files does not read branch snapshots; nothing deleted")
        if len(parts) == 2 and top == MANIFEST_DIR:
            out.append(Candidate(st, MANIFEST))
        elif len(parts) == 2 and top == STATISTICS_DIR:
            out.append(Candidate(st, OTHER))
        elif len(parts) == 2 and top == "snapshot":
            if not _SNAPSHOT_FILE.match(name) and name not in (LATEST, EARLIEST):
                out.append(Candidate(st, OTHER))
        elif len(parts) == 2 and top == TAG_DIR:
            if not name.startswith(TAG_PREFIX):
                out.append(Candidate(st, OTHER))
        elif (len(parts) == partition_keys + 2 and all("=" in p for p in parts[:-2])
              and parts[-2].startswith("bucket-")):
            data_exists = True
            out.append(Candidate(st, CHANGELOG if name.startswith("changelog-") else DATA))
    return out, data_exists


def remove_orphan_files(file_io: FileIO, table_path: str, schema: TableSchema, table_name: str,
                        older_than: OlderThan, dry_run: bool) -> MaintenanceResult:
    start = time.monotonic()
    cutoff = check_cutoff(older_than, now_millis())
    result = MaintenanceResult(table_name, "remove-orphan-files", dry_run=dry_run)
    # list first: a file written after this listing is never a candidate
    candidates, data_exists = classify(file_io, table_path, file_io.list_recursive(table_path),
                                       len(schema.partition_keys))
    scan = ReferenceScan(file_io, table_path, schema, "remove-orphan-files")
    scan.scan_until_stable()
    if not scan.read and data_exists:
        raise LakeformatError(
            f"{table_name}: no snapshot, tag or changelog references anything, yet data files "
            f"exist under {table_path}; refusing to delete them (is snapshot/ missing?)")
    orphans = [c for c in candidates
               if c.name not in scan.names and c.status.mtime * 1000 < cutoff]
    orphans.sort(key=lambda c: (_ORDER[c.kind], c.status.path))
    # one more look right before deleting: a snapshot committed meanwhile keeps its files
    scan.scan_until_stable()
    orphans = [c for c in orphans if c.name not in scan.names]
    failed: set[str] = set()
    if orphans and not dry_run:
        failed = set(file_io.delete_many([c.status.path for c in orphans]))
        if failed:
            result.skipped.append(f"{len(failed)} files could not be deleted, e.g. "
                                  f"{sorted(failed)[0]}")
    for c in orphans:
        if c.status.path in failed:
            continue
        result.deleted.append(c.status.path)
        result.bytes_deleted += c.status.size
        if c.kind == DATA:
            result.data_files_deleted += 1
        elif c.kind == CHANGELOG:
            result.changelog_files_deleted += 1
        elif c.kind == MANIFEST:
            result.manifest_files_deleted += 1
        else:
            result.other_files_deleted += 1
    ids = scan.snapshot_ids
    result.earliest_snapshot = ids[0] if ids else None
    result.latest_snapshot = ids[-1] if ids else None
    result.duration_s = round(time.monotonic() - start, 3)
    return result
