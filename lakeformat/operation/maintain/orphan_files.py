"""Orphan files: files under a table that no snapshot, tag or changelog references.

Paimon's `OrphanFilesClean`, made safer than it: a read failure of any snapshot, tag, manifest
list or manifest aborts the run (Java treats a missing manifest as empty, then deletes what it
named); a table whose snapshots and tags reference nothing while data files exist is refused
(a lost `snapshot/` directory must not turn the whole table into orphans); the cut-off must be
at least an hour in the past (a writer's files exist before its snapshot does) unless the
caller overrides that rail (`enforce_retention_duration=False`, for on-call use once no writer
runs, e.g. after a crash; a future cut-off stays refused); snapshots and
tags are listed again after the scan, until a round finds nothing new.

Referenced names are compared by file name, as Java does: data file names are unique, and a
name match can only keep a file, never delete one that is used elsewhere.
Index files (`index/`) are orphans when no snapshot's or tag's index manifest lists them.

Branches (`branch/branch-<name>/`) write their data files and manifests into the table's own
directories, so, as Java does, what every branch's snapshots, tags and changelogs reference is
used too; a branch without a schema file aborts the run (Java: "Branches ... have no
schemas"), and so does a branch snapshot, tag or manifest that cannot be read. In a branch only
stray files in `snapshot/` (not named `snapshot-*`, `LATEST`, `EARLIEST`) are candidates, as
Java's `cleanBranchSnapshotDir`; its schemas, tags and snapshots are never touched.
Never touched: `schema/`, `consumer/`, `changelog/`, and anything not laid out as Paimon lays
out its files.
"""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass

from lakeformat import clock
from lakeformat.errors import CleanupAbortedError, InvalidOptionError
from lakeformat.layout import (
    BRANCH_DIR,
    BUCKET_PREFIX,
    CHANGELOG_PREFIX,
    EARLIEST,
    INDEX_DIR,
    LATEST,
    MANIFEST_DIR,
    SNAPSHOT_DIR,
    SNAPSHOT_PREFIX,
    STATISTICS_DIR,
    TAG_DIR,
    TAG_PREFIX,
    numbered_id,
)
from lakeformat.meta.branch import BRANCH_PREFIX, BranchManager
from lakeformat.operation.maintain.cleanup import OlderThan, delete_paths, past_cutoff_millis
from lakeformat.operation.maintain.references import (
    ReferenceScan,
)
from lakeformat.results import MaintenanceResult
from lakeformat.schema.table_schema import TableSchema
from lakeformat.storage import FileIO, FileStatus
from lakeformat.storage.parallel import concurrently

DEFAULT_OLDER_THAN = dt.timedelta(days=1)
MIN_AGE_MS = 3600 * 1000  # files younger than an hour may belong to a commit in progress

DATA, CHANGELOG, MANIFEST, OTHER = "data", "changelog", "manifest", "other"
_ORDER = {DATA: 0, CHANGELOG: 0, MANIFEST: 1, OTHER: 2}


@dataclass(frozen=True)
class Candidate:
    status: FileStatus
    kind: str

    @property
    def name(self) -> str:
        return self.status.path.rsplit("/", 1)[-1]


def check_cutoff(older_than: OlderThan, now_ms: int, enforce_retention_duration: bool = True
                 ) -> int:
    """The cut-off in epoch millis. A future one is always refused; one less than an hour ago
    only while `enforce_retention_duration` (the on-call override, as delta-rs's `vacuum`)."""
    cutoff = past_cutoff_millis(older_than, DEFAULT_OLDER_THAN, now_ms,
                                "files being written right now would count as orphans")
    if enforce_retention_duration and cutoff > now_ms - MIN_AGE_MS:
        raise InvalidOptionError(
            f"older_than {older_than!r} is less than 1 hour ago: files of writes that have not "
            "committed yet would count as orphans; use at least 1 hour (default 1 day), or, when "
            "no writer is running (e.g. after a crash), pass enforce_retention_duration=False "
            "(CLI: --no-enforce-retention-duration)")
    return cutoff


def classify(file_io: FileIO, table_path: str, listing: list[FileStatus], partition_keys: int
             ) -> tuple[list[Candidate], bool]:
    """Files that may be orphans by where they are, and whether any data file exists.

    Raises when the listing names paths outside the table (fail closed rather than guess).
    """
    root = file_io.join(table_path, "x")[:-1]
    out: list[Candidate] = []
    data_exists = False
    for st in listing:
        if not st.path.startswith(root):
            raise CleanupAbortedError(f"listing {table_path} returned {st.path}, outside the "
                                      "table; nothing deleted")
        parts = st.path[len(root):].split("/")
        top, name = parts[0], parts[-1]
        if top == BRANCH_DIR:
            # branch/branch-<name>/snapshot/<stray>: Java's cleanBranchSnapshotDir (its rule:
            # any name not starting with `snapshot-`, other than the hints)
            if (len(parts) == 4 and parts[1].startswith(BRANCH_PREFIX)
                    and parts[2] == SNAPSHOT_DIR and not name.startswith(SNAPSHOT_PREFIX)
                    and name not in (LATEST, EARLIEST)):
                out.append(Candidate(st, OTHER))
        elif len(parts) == 2 and top == MANIFEST_DIR:
            out.append(Candidate(st, MANIFEST))
        elif len(parts) == 2 and top in (STATISTICS_DIR, INDEX_DIR):
            out.append(Candidate(st, OTHER))
        elif len(parts) == 2 and top == SNAPSHOT_DIR:
            if numbered_id(name, SNAPSHOT_PREFIX) is None and name not in (LATEST, EARLIEST):
                out.append(Candidate(st, OTHER))
        elif len(parts) == 2 and top == TAG_DIR:
            if not name.startswith(TAG_PREFIX):
                out.append(Candidate(st, OTHER))
        elif (len(parts) == partition_keys + 2 and all("=" in p for p in parts[:-2])
              and parts[-2].startswith(BUCKET_PREFIX)):
            data_exists = True
            out.append(Candidate(st, CHANGELOG if name.startswith(CHANGELOG_PREFIX) else DATA))
    return out, data_exists


def _check_branches(file_io: FileIO, table_path: str) -> None:
    """Java's `validBranches`: every branch must have a schema file, else nothing is deleted."""
    manager = BranchManager(file_io, table_path)
    try:
        abnormal = [n for n in manager.names() if not manager.schemas(n).schema_ids()]
    except Exception as e:
        raise CleanupAbortedError(f"remove-orphan-files of {table_path} aborted, nothing "
                                  f"deleted: cannot list its branches: {e}") from e
    if abnormal:
        raise CleanupAbortedError(
            f"remove-orphan-files of {table_path} aborted, nothing deleted: branches {abnormal} "
            f"have no schema file ({manager.branch_path(abnormal[0])}/schema/); check them")


def remove_orphan_files(file_io: FileIO, table_path: str, schema: TableSchema, table_name: str,
                        older_than: OlderThan, dry_run: bool,
                        enforce_retention_duration: bool = True) -> MaintenanceResult:
    start = time.monotonic()
    cutoff = check_cutoff(older_than, clock.now_millis(), enforce_retention_duration)
    result = MaintenanceResult(table_name, "remove-orphan-files", dry_run=dry_run)
    # list first: a file written after this listing is never a candidate
    listing, _ = concurrently(lambda: file_io.list_recursive(table_path),
                              lambda: _check_branches(file_io, table_path))
    candidates, data_exists = classify(file_io, table_path, listing, len(schema.partition_keys))
    scan = ReferenceScan(file_io, table_path, schema, "remove-orphan-files")
    scan.refresh()  # the look right before deleting repeats until nothing new appears
    if not scan.read and data_exists:
        raise CleanupAbortedError(
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
        # data and changelog files, then manifests, then the rest (a crash in between leaves
        # no manifest naming a file already gone unnoticed: only orphans are deleted here)
        failed = set()
        for rank in sorted({_ORDER[c.kind] for c in orphans}):
            failed.update(delete_paths(file_io, [c.status.path for c in orphans
                                                 if _ORDER[c.kind] == rank]))
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
