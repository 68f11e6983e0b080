"""The checks a commit runs against the live files before it publishes, and the records they
read: what a work unit changed (`CommitMessage`), what a write numbered its records after
(`SequenceBase`), Paimon's LSM overlap and compaction-tie checks, and the sequence check that
sends a write to renumber (`SequenceConflict`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from lakeformat.errors import CommitConflictError
from lakeformat.mergetree import KeyComparator
from lakeformat.meta.data_file_meta import DataFileMeta, FileKind, ManifestEntry
from lakeformat.meta.snapshot import Snapshot
from lakeformat.schema.table_schema import TableSchema

ADD, DELETE = FileKind.ADD, FileKind.DELETE


@dataclass
class CommitMessage:
    """What one work unit changed in one (partition, bucket)."""

    partition: bytes
    bucket: int
    total_buckets: int
    new_files: list[DataFileMeta] = field(default_factory=list)
    deleted_files: list[DataFileMeta] = field(default_factory=list)
    changelog_files: list[DataFileMeta] = field(default_factory=list)

    @property
    def is_empty(self) -> bool:
        return not (self.new_files or self.deleted_files or self.changelog_files)


@dataclass(frozen=True)
class SequenceBase:
    """What a write numbered its records after: the base snapshot id and, per (partition,
    bucket) it writes, the number its records start after (the largest sequence number live
    there in the base snapshot, -1 for none; more after a renumbering). A record committed by
    anyone else since, numbered above it, would tie with or outrank this write's records."""

    snapshot: tuple | None  # `snapshot_identity` of the base (None: the table was empty)
    max_sequence: dict[tuple[bytes, int], int]


class SequenceConflict(CommitConflictError):
    """Records were committed to buckets of this write after its base snapshot: its sequence
    numbers must be renumbered. `buckets` maps (partition, bucket) to the largest sequence
    number now live there; `snapshot_id` is the snapshot that was checked."""

    def __init__(self, table_path: str, buckets: dict[tuple[bytes, int], int],
                 snapshot: Snapshot | None):
        snapshot_id = snapshot.id if snapshot else None
        super().__init__(f"{table_path}: other commits wrote to {len(buckets)} bucket(s) of this "
                         f"write after its base snapshot (now {snapshot_id}); its records must be "
                         "renumbered")
        self.buckets = buckets
        self.snapshot = snapshot


def check_lsm_overlap(live: Sequence[ManifestEntry], entries: Sequence[ManifestEntry],
                      schema: TableSchema, table_path: str) -> None:
    """Paimon's LSM check: after the commit, files of one level >= 1 of a bucket must not
    overlap in key range (two compactions that both wrote a level would break reads)."""

    buckets = {(e.partition, e.bucket) for e in entries}
    deleted = {e.identifier for e in entries if e.kind == DELETE}
    after = [e for e in live if (e.partition, e.bucket) in buckets
             and e.identifier not in deleted]
    after += [e for e in entries if e.kind == ADD]
    cmp = KeyComparator([f.type for f in schema.key_fields()])
    runs: dict[tuple[bytes, int, int], list[DataFileMeta]] = {}
    for e in after:
        if e.file.level >= 1:
            runs.setdefault((e.partition, e.bucket, e.file.level), []).append(e.file)
    for (_, bucket, level), files in runs.items():
        files.sort(key=lambda f: cmp.key(f.min_key))
        for a, b in zip(files, files[1:]):
            if cmp.key(a.max_key) >= cmp.key(b.min_key):
                raise CommitConflictError(
                    f"LSM conflicts detected in {table_path}: bucket {bucket} level {level} "
                    f"files {a.file_name} and {b.file_name} overlap in key range; give up and "
                    "run the compaction again")


def snapshot_identity(snap: Snapshot | None) -> tuple | None:
    """What tells two snapshots apart even when a rollback reused an id."""
    return None if snap is None else (snap.id, snap.time_millis, snap.commit_user, snap.uuid)


def check_sequence_base(live: Sequence[ManifestEntry], base: SequenceBase,
                        latest: Snapshot | None, table_path: str) -> None:
    """Raise `SequenceConflict` for the buckets of `base` where records numbered above the
    write's start are live now (another commit wrote there meanwhile)."""
    wanted = base.max_sequence
    now: dict[tuple[bytes, int], int] = {}
    for e in live:
        key = (e.partition, e.bucket)
        if key in wanted:
            now[key] = max(now.get(key, -1), e.file.max_sequence_number)
    moved = {k: v for k, v in now.items() if v > wanted[k]}
    if moved:
        raise SequenceConflict(table_path, moved, latest)


def check_compaction_ties(live: Sequence[ManifestEntry], messages: Sequence[CommitMessage],
                          table_path: str) -> None:
    """A level-0 file added to a compacted bucket after the compaction's plan (any live level-0
    file that is not one of its inputs) whose sequence range overlaps the inputs' could hold a
    record tied with one the compaction merged; the tie would then be broken differently than
    before (level 0 wins over the output level), so the compaction must be redone."""
    # postpone files (bucket -2) are not numbered: no tie to break there
    wanted = {(m.partition, m.bucket) for m in messages if m.deleted_files and m.bucket >= 0}
    level0: dict[tuple[bytes, int], list[DataFileMeta]] = {}
    for e in live:
        if e.file.level == 0 and (e.partition, e.bucket) in wanted:
            level0.setdefault((e.partition, e.bucket), []).append(e.file)
    for m in messages:
        if not m.deleted_files:
            continue
        inputs = {f.file_name for f in m.deleted_files}
        lo = min(f.min_sequence_number for f in m.deleted_files)
        hi = max(f.max_sequence_number for f in m.deleted_files)
        for f in level0.get((m.partition, m.bucket), ()):
            if (f.file_name not in inputs and f.min_sequence_number <= hi
                    and f.max_sequence_number >= lo):
                raise CommitConflictError(
                    f"{table_path}: {f.file_name} was added to bucket {m.bucket} during the "
                    f"compaction with sequence numbers {f.min_sequence_number}.."
                    f"{f.max_sequence_number} overlapping its inputs' {lo}..{hi} (a writer "
                    "outside lakeformat numbered records from an old base); run the compaction "
                    "again")
