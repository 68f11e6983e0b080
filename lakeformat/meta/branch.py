"""Branches of a table: `branch/branch-<name>/`, as Paimon's FileSystemBranchManager lays them out.

A branch directory holds its own `schema/`, `snapshot/`, `tag/`, `changelog/` and `consumer/`
directories, laid out as a table's; its data files, manifests, index and statistics files are
written into the table's own directories (the path factory of a branch is the table's), so a
branch shares every file of the tag it was created from with the main branch.

* Names: not `main`, not blank, not only digits (Java's `BranchManager.validateBranch`); the
  branches of a table are the directories under `branch/` named `branch-<name>`.
* Creating from a tag copies the tag file into the branch's `tag/`, the tagged snapshot into
  the branch's `snapshot/` (written from the tag when the snapshot expired) and the schema files
  `0..schemaId` that exist; an empty branch gets the schemas `0..latest` and no snapshot.
* Deleting removes the branch directory only: files written on the branch become orphans of
  the table, which orphan-file removal deletes.
* Fast-forwarding the main branch to a branch deletes the main branch's snapshots from the
  branch's earliest snapshot id on, its schemas from that snapshot's schema id on, its tags of
  those snapshots and its `LATEST` hint, then copies the branch's `snapshot/`, `schema/` and
  `tag/` files over (Java's `FileSystemBranchManager.fastForward`; files only the deleted
  snapshots used become orphans).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import replace

from lakeformat.errors import AlreadyExistsError, InvalidArgumentError, NotFoundError
from lakeformat.layout import BRANCH_DIR, LATEST, TablePaths
from lakeformat.meta.snapshot import SnapshotManager
from lakeformat.meta.tag import TagManager
from lakeformat.results import BranchInfo
from lakeformat.schema.schema_manager import SchemaManager
from lakeformat.storage import FileIO, StorageError

BRANCH_PREFIX = "branch-"
MAIN_BRANCH = "main"
#: keys a tag file adds to its snapshot's JSON (Java's `Tag.trimToSnapshot` drops them)
TAG_KEYS = ("tagCreateTime", "tagTimeRetained")


def check_branch_name(name: str) -> str:
    """Java's rule: not the default branch `main`, not blank, not a pure number."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidArgumentError(f"branch name {name!r} is blank")
    if name == MAIN_BRANCH:
        raise InvalidArgumentError(f"branch name {name!r} is the default branch and cannot be "
                                   "used")
    if name.isdigit():
        raise InvalidArgumentError(f"branch name cannot be a pure number, got {name!r}")
    if "/" in name:
        raise InvalidArgumentError(f"branch name {name!r} contains '/'")
    return name


class BranchManager:
    """The branches of one table directory."""

    def __init__(self, file_io: FileIO, table_path: str):
        self.file_io = file_io
        self.table_path = table_path
        self.branch_dir = TablePaths(file_io, table_path).dir(BRANCH_DIR)

    def branch_path(self, name: str) -> str:
        return self.file_io.join(self.branch_dir, BRANCH_PREFIX + name)

    def names(self) -> list[str]:
        """Every branch, by name (a listing failure raises)."""
        out = []
        for path in self.file_io.list_dirs(self.branch_dir):
            base = path.rstrip("/").rsplit("/", 1)[-1]
            if base.startswith(BRANCH_PREFIX) and len(base) > len(BRANCH_PREFIX):
                out.append(base[len(BRANCH_PREFIX):])
        return sorted(out)

    def exists(self, name: str) -> bool:
        return self.file_io.is_dir(self.branch_path(name))

    def snapshots(self, name: str) -> SnapshotManager:
        return SnapshotManager(self.file_io, self.branch_path(name))

    def tags(self, name: str) -> TagManager:
        return TagManager(self.file_io, self.branch_path(name))

    def schemas(self, name: str) -> SchemaManager:
        return SchemaManager(self.file_io, self.branch_path(name))

    def paths(self, name: str) -> TablePaths:
        """The branch's `snapshot/`, `schema/`, `tag/`, `changelog/` ... directories."""
        return TablePaths(self.file_io, self.branch_path(name))

    def info(self, name: str) -> BranchInfo:
        """What Java's `$branches` shows (name, creation time) and what the branch holds."""
        sm = self.snapshots(name)
        schema_files = self.file_io.list_status(self.schemas(name).schema_dir)
        schemas = self.schemas(name).schema_ids()
        ids = sm.snapshot_ids()
        created = min((st.mtime for st in schema_files), default=None)
        return BranchInfo(
            name=name,
            create_time=None if created is None else dt.datetime.fromtimestamp(created, dt.UTC),
            earliest_snapshot=ids[0] if ids else None,
            latest_snapshot=sm.latest_snapshot_id() if ids else None,
            schema_id=schemas[-1] if schemas else None,
            tags=self.tags(name).names())

    def branches(self) -> list[BranchInfo]:
        return [self.info(n) for n in self.names()]

    # -- create and delete, as Java's FileSystemBranchManager ----------------------------------
    def _check_new(self, name: str) -> None:
        check_branch_name(name)
        if self.exists(name):
            raise AlreadyExistsError(f"branch {name!r} already exists")

    def _copy_schemas(self, name: str, up_to: int) -> None:
        main = SchemaManager(self.file_io, self.table_path)
        target = self.schemas(name)
        for sid in main.schema_ids():
            if sid <= up_to:
                self.file_io.write_bytes(target.schema_path(sid),
                                         self.file_io.read_bytes(main.schema_path(sid)))

    def create(self, name: str, tag: str | None = None) -> BranchInfo:
        """A branch from tag `tag` (its snapshot becomes the branch's first), or an empty one
        with the table's schemas when `tag` is None."""
        self._check_new(name)
        main_schemas = SchemaManager(self.file_io, self.table_path)
        if tag is None:
            latest = main_schemas.schema_ids()
            if not latest:
                raise NotFoundError(f"{self.table_path} holds no schema file")
            self._copy_schemas(name, latest[-1])
            return self.info(name)
        tags = TagManager(self.file_io, self.table_path)
        found = tags.get(tag)  # TagNotFoundError names the tag
        snap = found.snapshot
        io = self.file_io
        io.write_bytes(self.tags(name).tag_path(tag), io.read_bytes(tags.tag_path(tag)))
        main_snapshots = SnapshotManager(io, self.table_path)
        target = self.snapshots(name).snapshot_path(snap.id)
        try:
            data = io.read_bytes(main_snapshots.snapshot_path(snap.id))
        except FileNotFoundError:  # expired: the tag still holds its content
            trimmed = {k: v for k, v in snap.extra.items() if k not in TAG_KEYS}
            data = replace(snap, extra=trimmed).to_json().encode()
        io.write_bytes(target, data)
        self._copy_schemas(name, snap.schema_id)
        return self.info(name)

    def delete(self, name: str) -> None:
        """Remove the branch directory (its snapshots, tags, schemas); the files written on it
        stay until orphan-file removal finds nothing references them."""
        check_branch_name(name)
        if not self.exists(name):
            raise NotFoundError(f"branch {name!r} does not exist")
        self.file_io.delete_dir(self.branch_path(name))

    def fast_forward(self, name: str) -> list[str]:
        """Make the main branch the branch `name` (see the module notes); returns the main
        branch's files it deleted. Every main tag is read before anything is deleted."""
        check_branch_name(name)
        if not self.exists(name):
            raise NotFoundError(f"branch {name!r} does not exist")
        io = self.file_io
        branch = self.snapshots(name)
        earliest = branch.earliest_snapshot_id()
        if earliest is None:
            raise InvalidArgumentError(f"cannot fast-forward to branch {name!r}: it has no "
                                       "snapshot")
        first_schema = branch.snapshot(earliest).schema_id
        snapshots = SnapshotManager(io, self.table_path)
        schemas = SchemaManager(io, self.table_path)
        tags = TagManager(io, self.table_path)
        doomed = [snapshots.snapshot_path(i) for i in snapshots.snapshot_ids() if i >= earliest]
        doomed += [schemas.schema_path(i) for i in schemas.schema_ids() if i >= first_schema]
        doomed += [tags.tag_path(t.name) for t in tags.tags() if t.snapshot_id >= earliest]
        io.delete(snapshots.paths.snapshot_hint(LATEST))
        failed = io.delete_many(doomed)
        if failed:
            raise StorageError(f"fast-forward to branch {name!r} could not delete {failed[:5]}"
                               "; nothing copied yet: run it again")
        source = self.paths(name)
        target = TablePaths(io, self.table_path)
        for src, dst in ((source.snapshot_dir, target.snapshot_dir),
                         (source.schema_dir, target.schema_dir),
                         (source.tag_dir, target.tag_dir)):
            for st in io.list_status(src):
                io.write_bytes(io.join(dst, st.path.rsplit("/", 1)[-1]), io.read_bytes(st.path))
        return doomed
