"""Committing: the commit protocol of a snapshot (`file_store_commit`: manifests, the
write-if-absent of `snapshot-N`; its conflict checks in `checks`), the index manifest a commit
carries (`index`),
the job driver every data job runs on (`job`: plan -> execute -> commit, commit identity,
"already landed", abort) and the jobs that write no data file (`metadata_jobs`: partition
drop, manifest compaction).

A new kind of data job subclasses `DataJob` here and lives with its kind of work
(`write/`, `compact/`, `maintain/`); one that only commits metadata lives in `metadata_jobs`."""

from __future__ import annotations

from lakeformat.operation.commit.checks import (
    CommitMessage,
    SequenceBase,
    SequenceConflict,
    snapshot_identity,
)
from lakeformat.operation.commit.file_store_commit import (
    NOT_WATCHED,
    WRITE_KINDS,
    AlreadyCommitted,
    FileStoreCommit,
)
from lakeformat.operation.commit.job import (
    DataJob,
    check_commit_identity,
)
from lakeformat.operation.commit.metadata_jobs import (
    CompactManifestsJob,
    DropPartitionsJob,
    PartitionSelector,
)

__all__ = [
    "AlreadyCommitted",
    "CommitMessage",
    "CompactManifestsJob",
    "DataJob",
    "DropPartitionsJob",
    "FileStoreCommit",
    "NOT_WATCHED",
    "PartitionSelector",
    "SequenceBase",
    "SequenceConflict",
    "WRITE_KINDS",
    "check_commit_identity",
    "snapshot_identity",
]
