"""Result objects of table operations: printable, and a plain dict for XCom and `--json`."""

from __future__ import annotations

from dataclasses import asdict, dataclass
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
