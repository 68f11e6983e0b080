"""Data jobs that write no data file: their commit changes only what the metadata says.

* `DropPartitionsJob` — drop whole partitions (Paimon's `ALTER TABLE ... DROP PARTITION`): one
  OVERWRITE snapshot with no new file, deleting every file live in the partitions at commit
  time. Partition expiry and a delete by predicate on partition columns run it.
* `CompactManifestsJob` — Paimon's `compactManifest`: one COMPACT snapshot of the same data
  whose manifests hold only the live files (`FileStoreCommit.compact_manifests`). Schema
  retention runs it so that the schemas of deleted files can go.

Both are `DataJob`s: `plan()` reads the latest snapshot once and picks the units (the
partitions a selector picks; the snapshot whose manifests hold DELETE entries); `execute` has
nothing to write, so the messages are the units; `commit` makes the one snapshot; `abort` has
nothing to remove. Commit identity and "already landed" are the base's. The files a dropped
partition held go when the snapshots holding them expire.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from lakeformat.meta.snapshot import Snapshot
from lakeformat.operation.commit.file_store_commit import NOT_WATCHED, AlreadyCommitted
from lakeformat.operation.commit.job import DataJob
from lakeformat.operation.runner import Runner
from lakeformat.schema.table_schema import TableSchema
from lakeformat.storage import FileIO

__all__ = ["CompactManifestsJob", "DropPartitionsJob", "MetadataJob", "PartitionSelector"]

#: picks the partitions to drop (serialized partition rows) from the latest snapshot (None:
#: the table has none)
PartitionSelector = Callable[[Snapshot | None], Iterable[bytes]]

UnitT = TypeVar("UnitT")


class MetadataJob(DataJob[UnitT, UnitT, "Snapshot | None"]):
    """A job that writes no data file: its units are its commit messages (`execute` has
    nothing to run) and a failed commit leaves nothing to remove (`abort`). Subclasses plan
    `units` and commit them."""

    units: list

    def execute(self, units: Sequence[UnitT] | None = None, runner: Runner | None = None
                ) -> list[UnitT]:
        """Nothing to write: the messages are the units (default: the planned ones)."""
        if units is not None:
            self.units = list(units)
        return list(self.units)

    def abort(self) -> None:
        """Nothing was written."""


class DropPartitionsJob(MetadataJob[bytes]):
    """Drop the partitions `select` picks from the latest snapshot, as one OVERWRITE snapshot
    with no file (see the module docstring). The result is that snapshot, or None when there
    was nothing to drop (no partition picked, or another job emptied them first); the data
    files it deleted are `committer.committed_entries`.

    With a commit identity, the snapshot carries `operation` (e.g. "delete") as its operation
    property; a run whose commit already landed plans nothing and `commit` returns that
    snapshot (`landed`), and so does a run that finds another run of the same identity landed
    while it committed (`AlreadyCommitted`).

    Of the `DataJob` base it overrides `plan` and `commit` (`execute` and `abort` are
    `MetadataJob`'s: the messages are the partitions); `operation` is the caller's.
    """

    def __init__(self, file_io: FileIO, table_path: str, schema: TableSchema,
                 select: PartitionSelector, table_name: str | None = None, *,
                 operation: str = "drop-partitions", commit_user: str | None = None,
                 commit_identifier: int | None = None):
        super().__init__(file_io, table_path, schema, table_name, commit_user=commit_user,
                         commit_identifier=commit_identifier)
        self.operation = operation
        self.select = select
        self.open_committer(properties=self.operation_properties())
        #: the latest snapshot when planned: another run of this identity is looked for after it
        self.base: Snapshot | None = None
        self.units: list[bytes] = []

    def plan(self) -> list[bytes]:
        """The partitions `select` picks from the latest snapshot; none when this job's
        commit identity already landed."""
        if self.find_landed() is not None:
            return []
        self.base = self.committer.snapshots.latest_snapshot()
        self.units = list(self.select(self.base))
        return self.units

    def commit(self, messages: Sequence[bytes] | None = None) -> Snapshot | None:
        """The OVERWRITE snapshot deleting every file live in the partitions (`messages`,
        default the planned ones) at commit time; None when there is nothing to drop."""
        if self.landed is not None:
            return self.landed
        partitions = list(self.units if messages is None else messages)
        if not partitions:
            return None
        watch = NOT_WATCHED if self.commit_identifier is None else (
            self.base.id if self.base is not None else None)
        try:
            return self.committer.commit([], overwrite_partitions=partitions,
                                         other_runs_after=watch)
        except AlreadyCommitted as twin:  # another run of this identity landed first
            self.landed = twin.snapshot
            return twin.snapshot


class CompactManifestsJob(MetadataJob[Snapshot]):
    """Compact the manifests of the latest snapshot (Paimon's `compactManifest`): one COMPACT
    snapshot of the same data whose base manifest list holds only the ADD entries of live
    files (see the module docstring). The result is that snapshot, or None when there was
    nothing to compact (no snapshot, or no DELETE entry in its manifests, also when a commit
    meanwhile left none).

    Of the `DataJob` base it overrides `plan` (the latest snapshot, when its manifests hold
    DELETE entries: `deletes` counts them) and `commit` (`execute` and `abort` are
    `MetadataJob`'s), and `operation` and `commit_kinds` (COMPACT).
    """

    operation = "manifest compaction"
    commit_kinds = ("COMPACT",)

    def __init__(self, file_io: FileIO, table_path: str, schema: TableSchema,
                 table_name: str | None = None, *, commit_user: str | None = None,
                 commit_identifier: int | None = None):
        super().__init__(file_io, table_path, schema, table_name, commit_user=commit_user,
                         commit_identifier=commit_identifier)
        self.open_committer()
        #: the latest snapshot when planned, and the DELETE entries its data manifests hold
        self.base: Snapshot | None = None
        self.deletes = 0
        self.units: list[Snapshot] = []

    def plan(self) -> list[Snapshot]:
        """[the latest snapshot] when its manifests hold a DELETE entry, else []; [] too when
        this job's commit identity already landed."""
        if self.find_landed() is not None:
            return []
        self.base = self.committer.snapshots.latest_snapshot()
        self.deletes = 0 if self.base is None else sum(
            m.num_deleted_files for m in self.committer.scan.data_manifests(self.base))
        self.units = [self.base] if self.base is not None and self.deletes else []
        return self.units

    def commit(self, messages: Sequence[Snapshot] | None = None) -> Snapshot | None:
        """The COMPACT snapshot over the latest snapshot at commit time (which may be newer
        than the planned one); None when there is nothing to compact."""
        if self.landed is not None:
            return self.landed
        if not (self.units if messages is None else messages):
            return None
        return self.committer.compact_manifests()
