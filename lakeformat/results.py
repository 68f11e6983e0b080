"""Result objects of table operations: printable, and a plain dict for XCom and `--json`."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class CommitResult:
    """What a write or delete committed (snapshot_id None when there was nothing to commit)."""

    table: str
    snapshot_id: int | None
    commit_kind: str | None
    rows_written: int
    files_added: int
    files_deleted: int
    bytes_added: int
    duration_s: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        if self.snapshot_id is None:
            return f"{self.table}: nothing to commit"
        return (f"{self.table}: snapshot {self.snapshot_id} ({self.commit_kind}), "
                f"{self.rows_written} rows, +{self.files_added}/-{self.files_deleted} files, "
                f"{self.bytes_added} bytes in {self.duration_s:.2f}s")


@dataclass
class MaintenanceResult:
    """What a cleanup job deleted — or, with `dry_run`, exactly what it would delete.

    `deleted` lists every path in deletion order; counts are per kind of file. `bytes_deleted`
    sums the sizes the metadata records (data, changelog and manifest files).
    """

    table: str
    operation: str
    dry_run: bool = False
    snapshots_deleted: list[int] = field(default_factory=list)
    data_files_deleted: int = 0
    changelog_files_deleted: int = 0
    manifest_files_deleted: int = 0
    schema_files_deleted: int = 0
    other_files_deleted: int = 0
    bytes_deleted: int = 0
    earliest_snapshot: int | None = None
    latest_snapshot: int | None = None
    deleted: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # why less than planned was deleted
    duration_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def files_deleted(self) -> int:
        return len(self.deleted)

    def __str__(self) -> str:
        verb = "would delete" if self.dry_run else "deleted"
        parts = [f"{len(self.snapshots_deleted)} snapshots"] if self.snapshots_deleted else []
        for label, n in (("data files", self.data_files_deleted),
                         ("changelog files", self.changelog_files_deleted),
                         ("manifest files", self.manifest_files_deleted),
                         ("schema files", self.schema_files_deleted),
                         ("other files", self.other_files_deleted)):
            if n:
                parts.append(f"{n} {label}")
        what = ", ".join(parts) if parts else "nothing"
        tail = f"; earliest snapshot {self.earliest_snapshot}" \
            if self.earliest_snapshot is not None else ""
        notes = f" ({'; '.join(self.skipped)})" if self.skipped else ""
        return (f"{self.table}: {self.operation} {verb} {what} ({self.bytes_deleted} bytes) in "
                f"{self.duration_s:.2f}s{tail}{notes}")
