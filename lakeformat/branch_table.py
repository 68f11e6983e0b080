"""A branch read as a table (`Table.branch(name)`), read-only.

A branch's snapshots, tags and schemas are under `branch/branch-<name>/`; its data files and
manifests are in the table's own directories (Java's path factory of a branch is the table's).
lakeformat reads branches but neither writes nor maintains them: every public verb of `Table`
beyond the reads in `BRANCH_READS` is refused on a branch, a verb added later included (it would
act on the table's own snapshots). The table's cleanup keeps what every branch references.

`BranchView` holds what differs from a table (where the branch's files are, its tags); the
`BranchTable` class itself joins it to `Table` in `lakeformat.table`, which calls
`refuse_other_verbs` on it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from lakeformat.errors import NotFoundError, TagNotFoundError, UnsupportedError
from lakeformat.lock.table_locks import TableLocks
from lakeformat.meta.branch import BranchManager, check_branch_name
from lakeformat.meta.snapshot import Snapshot, SnapshotManager
from lakeformat.meta.tag import TagManager
from lakeformat.operation.maintain import list_tags
from lakeformat.operation.read import TableInspect
from lakeformat.results import TagInfo
from lakeformat.schema.schema_manager import SchemaManager
from lakeformat.schema.table_schema import TableSchema
from lakeformat.storage import FileIO

#: what a branch offers: reads (every other public verb of `Table` is refused on a branch)
BRANCH_READS = frozenset({"read", "read_batches", "to_pandas", "to_polars", "files",
                          "snapshots", "schemas", "latest_snapshot", "list_tags", "refresh",
                          "find_commit", "delta_partitions"})


class _Parent(Protocol):
    name: str
    path: str
    file_io: FileIO
    locks: TableLocks


class BranchView:
    """What a branch changes of a table: its snapshots, schemas and tags are the branch's, its
    data files and manifests the table's. Joined before `Table` (`lakeformat.table.BranchTable`)."""

    name: str
    path: str
    file_io: FileIO
    _schema: TableSchema
    _latest_schema: Callable[[], TableSchema]

    def __init__(self, table: _Parent, branch: str):
        check_branch_name(branch)
        manager = BranchManager(table.file_io, table.path)
        if not manager.exists(branch):
            raise NotFoundError(f"branch {branch!r} of {table.name} does not exist")
        self.name = f"{table.name}$branch_{branch}"
        self.branch_name = branch
        self.path = table.path  # manifests and data files are the table's
        self.branch_path = manager.branch_path(branch)
        self.locks = table.locks
        self.file_io = table.file_io
        self.schema_manager = SchemaManager(self.file_io, self.branch_path)
        self.snapshot_manager = SnapshotManager(self.file_io, self.branch_path)
        self._schema = self._latest_schema()

    def __repr__(self) -> str:
        return f"BranchTable({self.name!r}, {self.branch_path!r})"

    def _tag_snapshot(self, tag: str) -> Snapshot:
        try:
            return TagManager(self.file_io, self.branch_path).get(tag).snapshot
        except TagNotFoundError:
            raise TagNotFoundError(f"tag {tag!r} does not exist in {self.name}") from None

    def list_tags(self) -> list[TagInfo]:
        return list_tags(self.file_io, self.branch_path)

    @property
    def inspect(self) -> TableInspect:
        raise UnsupportedError(f"inspect on {self.name}: not offered for branches")


def _read_only(verb: str) -> Callable[..., Any]:
    def refuse(self: BranchView, *args: Any, **kwargs: Any) -> Any:
        raise UnsupportedError(f"{verb} on {self.name}: lakeformat reads branches but does not "
                               "write or maintain them (maintain the table: its cleanup keeps "
                               "what every branch references)")
    refuse.__name__ = verb
    return refuse


def refuse_other_verbs(branch_cls: type, table_cls: type) -> None:
    """Make every public callable of `table_cls` not in `BRANCH_READS` (nor defined by the
    branch class itself) raise `UnsupportedError` on `branch_cls`."""
    own = set(vars(branch_cls)) | set(vars(BranchView))
    for verb, member in list(vars(table_cls).items()):
        if not verb.startswith("_") and callable(member) and verb not in BRANCH_READS \
                and verb not in own:
            setattr(branch_cls, verb, _read_only(verb))
