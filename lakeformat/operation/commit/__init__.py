"""Committing: the commit protocol of a snapshot (`file_store_commit`: manifests, conflict
checks, the write-if-absent of `snapshot-N`), the index manifest a commit carries (`index`) and
the job driver every data job runs on (`job`: plan -> execute -> commit, commit identity,
"already landed", abort).

A new kind of data job subclasses `DataJob` here and lives with its kind of work
(`write/`, `compact/`, `maintain/`)."""

from __future__ import annotations

from lakeformat.operation.commit.file_store_commit import (
    NOT_WATCHED,
    WRITE_KINDS,
    AlreadyCommitted,
    CommitMessage,
    FileStoreCommit,
    SequenceBase,
    SequenceConflict,
    snapshot_identity,
)
from lakeformat.operation.commit.job import (
    DataJob,
    check_commit_identity,
)

__all__ = [
    "AlreadyCommitted",
    "CommitMessage",
    "DataJob",
    "FileStoreCommit",
    "NOT_WATCHED",
    "SequenceBase",
    "SequenceConflict",
    "WRITE_KINDS",
    "check_commit_identity",
    "snapshot_identity",
]
