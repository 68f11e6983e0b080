"""What snapshots and tags reference: manifest lists, manifests, data and changelog files.

Every cleanup job (snapshot expiry, tag deletion, rollback, orphan files, schema retention)
decides what it may delete from these sets, so they live in one place. Manifest lists and
manifests are immutable, so each is read at most once per `TableReferences` (cached by name).
A read failure is never swallowed here: callers decide to delete less.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from threading import Lock

import numpy as np

from lakeformat.errors import CleanupAbortedError
from lakeformat.layout import CHANGELOG_PREFIX, SNAPSHOT_PREFIX, TAG_PREFIX, TablePaths, numbered_id
from lakeformat.meta.binary_row import from_avro_bytes
from lakeformat.meta.branch import BranchManager
from lakeformat.meta.data_file_meta import FileKind, ManifestEntry, ManifestFileMeta
from lakeformat.meta.index_manifest import IndexManifestFile
from lakeformat.meta.snapshot import Snapshot, SnapshotManager
from lakeformat.meta.tag import TagManager
from lakeformat.operation.paths import PathFactory
from lakeformat.operation.scan import FileStoreScan
from lakeformat.options import CoreOptions
from lakeformat.schema.table_schema import TableSchema
from lakeformat.storage import FileIO
from lakeformat.storage.parallel import concurrently, parallel_map, quietly

MAX_SCAN_ROUNDS = 10


@dataclass(frozen=True)
class FileRef:
    """A data or changelog file as cleanup sees it: where it is and how big."""

    path: str
    size: int
    schema_id: int


class TableReferences(FileStoreScan):
    """The scan's manifest reading, remembering every list and manifest it read (they are
    immutable), for jobs that walk many snapshots sharing most of their manifests."""

    def __init__(self, file_io: FileIO, table_path: str, schema: TableSchema):
        super().__init__(file_io, table_path, schema)
        self.paths = PathFactory(file_io, table_path, schema)
        self._list_cache: dict[str, list[ManifestFileMeta]] = {}
        self._entry_cache: dict[str, list[ManifestEntry]] = {}
        self._partitions: dict[bytes, tuple] = {}
        self._list_sizes: dict[str, int] = {}
        self._index_cache: dict[str, dict[str, int]] = {}
        self.index_file = IndexManifestFile(file_io, table_path, schema.options)
        self._lock = Lock()

    # -- cached reads ----------------------------------------------------------------------------
    def read_list(self, file_name: str) -> list[ManifestFileMeta]:
        cached = self._list_cache.get(file_name)
        if cached is None:
            cached = super().read_list(file_name)
            with self._lock:
                self._list_cache[file_name] = cached
        return cached

    def read_manifest(self, file_name: str) -> list[ManifestEntry]:
        cached = self._entry_cache.get(file_name)
        if cached is None:
            cached = super().read_manifest(file_name)
            with self._lock:
                self._entry_cache[file_name] = cached
        return cached

    def prefetch(self, metas: Iterable[ManifestFileMeta]) -> None:
        """Read the manifests not yet cached, in parallel."""
        self.read_manifests([m.file_name for m in metas if m.file_name not in self._entry_cache])

    def warm(self, live: Iterable[Snapshot], deltas: Iterable[Snapshot]) -> None:
        """Read at once, in two rounds, what a cleanup job will ask about these snapshots: every
        manifest list of each, then the manifests (all of a `live` snapshot's, the delta and
        changelog ones of a `deltas` one) and the index manifests. Failures are ignored here:
        the job reads the same file again when it needs it, and deletes less if it fails."""
        live, deltas = list(live), list(deltas)
        lists = dict.fromkeys(n for s in live + deltas
                              for n in (s.base_manifest_list, s.delta_manifest_list,
                                        s.changelog_manifest_list)
                              if n and n not in self._list_cache)
        parallel_map(quietly(self.read_list), lists)

        def listed(name: str | None) -> list[ManifestFileMeta]:
            return (self._list_cache.get(name) or []) if name else []

        manifests = dict.fromkeys(
            m.file_name
            for s, names in [(s, (s.base_manifest_list, s.delta_manifest_list,
                                  s.changelog_manifest_list)) for s in live]
            + [(s, (s.delta_manifest_list, s.changelog_manifest_list)) for s in deltas]
            for n in names for m in listed(n) if m.file_name not in self._entry_cache)
        index = dict.fromkeys(s.index_manifest for s in live + deltas
                              if s.index_manifest and s.index_manifest not in self._index_cache)
        calls = ([lambda n=n: self.read_manifest(n) for n in manifests]
                 + [lambda n=n: self.index_files(n) for n in index])
        parallel_map(quietly(lambda call: call()), calls)

    # -- what a snapshot references ----------------------------------------------------------
    def delta_entries(self, snap: Snapshot) -> list[ManifestEntry]:
        return self.read_entries(self.read_list(snap.delta_manifest_list))

    def changelog_entries(self, snap: Snapshot) -> list[ManifestEntry]:
        return self.read_entries(self.changelog_manifests(snap))

    def metadata_names(self, snap: Snapshot) -> set[str]:
        """Names under `manifest/` a snapshot needs: its lists and the manifests in them
        (and the index manifest by name)."""
        names = {snap.base_manifest_list, snap.delta_manifest_list}
        for name, size in ((snap.base_manifest_list, snap.base_manifest_list_size),
                           (snap.delta_manifest_list, snap.delta_manifest_list_size),
                           (snap.changelog_manifest_list, snap.changelog_manifest_list_size)):
            if name and size:
                self._list_sizes[name] = size
        names.update(m.file_name for m in self.data_manifests(snap))
        if snap.changelog_manifest_list:
            names.add(snap.changelog_manifest_list)
            names.update(m.file_name for m in self.changelog_manifests(snap))
        if snap.index_manifest:
            names.add(snap.index_manifest)
        return names

    def index_files(self, index_manifest: str | None) -> dict[str, int]:
        """Path -> size of the index files an index manifest lists (read once, cached)."""
        if not index_manifest:
            return {}
        cached = self._index_cache.get(index_manifest)
        if cached is None:
            cached = {self.index_file.index_file_path(e): e.file_size
                      for e in self.index_file.read(index_manifest)}
            with self._lock:
                self._index_cache[index_manifest] = cached
        return cached

    def existing_lists(self, names: Iterable[str | None], gone: Collection[str] = ()
                       ) -> dict[str, list[ManifestFileMeta]]:
        """The manifest lists among `names` that still exist, each with its manifests. A
        long-lived changelog names lists snapshot expiry may have removed as Java does (its base
        and delta lists when a changelog list carries the changelog): a missing list, or one
        whose path is in `gone` (deleted by a job planned in the same dry run), is left out.
        Any other read failure raises."""
        found: dict[str, list[ManifestFileMeta]] = {}
        for name in names:
            if not name or name in found or self.manifest_path(name) in gone:
                continue
            try:
                found[name] = self.read_list(name)
            except FileNotFoundError:
                continue
        return found

    def changelog_keep_sets(self, changelogs: Iterable[Snapshot]) -> tuple[set[str], set[str]]:
        """What long-lived changelogs need kept, their lists read leniently
        (`existing_lists`): paths of the files a changelog reader opens (those its changelog
        list adds; with `changelog-producer=none`, those an APPEND changelog's delta adds), and
        the names under `manifest/` and `statistics/` they need (`changelog_metadata`)."""
        none = CoreOptions(self.schema.options).changelog_producer == "none"
        files: set[str] = set()
        meta: set[str] = set()
        for c in changelogs:
            lists, names = self.changelog_metadata(c)
            meta |= names
            read = c.changelog_manifest_list or (
                c.delta_manifest_list if none and c.commit_kind == "APPEND" else None)
            for e in self.read_entries(lists.get(read or "", [])):
                if e.kind == FileKind.ADD:
                    files.update(r.path for r in self.file_refs(e))
        return files, meta

    def changelog_metadata(self, changelog: Snapshot
                           ) -> tuple[dict[str, list[ManifestFileMeta]], set[str]]:
        """A long-lived changelog's own lists still there (`existing_lists`), and the names
        under `manifest/` and `statistics/` it needs: those lists, their manifests, its index
        manifest and statistics. Its own lists are those changelog expiry removes with it: its
        changelog list, or without one its base and delta lists (`changelog-producer=none`;
        otherwise Java's snapshot expiry removed them, and any still there belong to a tag).
        """
        c = changelog
        lists = self.existing_lists((c.changelog_manifest_list,) if c.changelog_manifest_list
                                    else (c.base_manifest_list, c.delta_manifest_list))
        names = set(lists).union(m.file_name for metas in lists.values() for m in metas)
        names.update(n for n in (c.index_manifest, c.statistics) if n)
        return lists, names

    def keep_index(self, keepers: Iterable[Snapshot]) -> set[str]:
        """Paths of the index files these snapshots/tags use (raises when one cannot be read:
        the caller then deletes no index file)."""
        out: set[str] = set()
        for k in keepers:
            out.update(self.index_files(k.index_manifest))
        return out

    def keep_sets(self, keepers: Iterable[Snapshot]) -> tuple[set[str], set[str]]:
        """What cleanup must keep for these snapshots/tags: paths of every data, changelog and
        extra file they read, and the names under `manifest/` and `statistics/` they need."""
        files: set[str] = set()
        meta: set[str] = set()
        for k in keepers:
            meta |= self.metadata_names(k)
            if k.statistics:
                meta.add(k.statistics)
            for e in self.live_entries(k) + self.changelog_entries(k):
                files.update(r.path for r in self.file_refs(e))
        return files, meta

    # -- paths ----------------------------------------------------------------------------------
    def partition_values(self, partition: bytes) -> tuple:
        values = self._partitions.get(partition)
        if values is None:
            values = tuple(from_avro_bytes(partition, self.partition_types))
            self._partitions[partition] = values
        return values

    def file_refs(self, entry: ManifestEntry) -> list[FileRef]:
        """The data file of an entry and its extra files (same directory)."""
        f = entry.file
        path = self.paths.data_file(self.partition_values(entry.partition), entry.bucket, f)
        out = [FileRef(path, f.file_size, f.schema_id)]
        folder = path.rsplit("/", 1)[0]
        out += [FileRef(self.file_io.join(folder, x), 0, f.schema_id) for x in f.extra_files]
        return out

    def manifest_path(self, name: str) -> str:
        return TablePaths(self.file_io, self.table_path).manifest(name)

    def statistics_path(self, name: str) -> str:
        return TablePaths(self.file_io, self.table_path).statistics(name)

    def manifest_sizes(self) -> dict[str, int]:
        """Sizes of the manifests and lists seen so far, as the manifest lists and snapshots
        record them (no extra requests)."""
        sizes: dict[str, int] = dict(self._list_sizes)
        for metas in self._list_cache.values():
            for m in metas:
                sizes[m.file_name] = m.file_size
        return sizes


def deleted_in(entries: list[ManifestEntry]) -> list[ManifestEntry]:
    """DELETE entries of a delta whose file the same delta does not add again (an upgrade
    moves a file to another level under the same name: it is still live)."""
    added = {(e.partition, e.bucket, e.file.file_name) for e in entries if e.kind == FileKind.ADD}
    return [e for e in entries if e.kind == FileKind.DELETE
            and (e.partition, e.bucket, e.file.file_name) not in added]


class ReferenceScan:
    """Every snapshot, tag and long-lived changelog (`changelog/changelog-N`) of a table, and
    what they reference: file names (lists, manifests, index manifest, statistics, data,
    changelog and extra files) and schema ids (their `schemaId` and every file's `_SCHEMA_ID`).

    `refresh()` reads only what appeared since the last call, so calling it until it returns 0
    covers commits made while the scan ran. Any failure raises naming what could not be read.
    """

    def __init__(self, file_io: FileIO, table_path: str, schema: TableSchema, operation: str,
                 main: bool = True):
        self.file_io = file_io
        self.table_path = table_path
        self.operation = operation
        #: False: only the branches' snapshots, tags and changelogs (`branch_references`)
        self.main = main
        self.branches = BranchManager(file_io, table_path)
        self.refs = TableReferences(file_io, table_path, schema)
        self.snapshots = SnapshotManager(file_io, table_path)
        self.tags = TagManager(file_io, table_path)
        self.read: dict[tuple[str, str], Snapshot] = {}
        self.names: set[str] = set()
        self.schema_ids: set[int] = set()
        #: the first snapshot, tag or changelog found with each `schemaId`, as (kind, name)
        self.holders: dict[int, tuple[str, str]] = {}
        #: (data manifests, changelog manifests) of each snapshot, tag or changelog read
        self.manifests_of: dict[tuple[str, str], tuple[list[str], list[str]]] = {}
        self._manifests_done: set[str] = set()
        self._manifest_schemas: dict[str, np.ndarray] = {}  # manifest -> unique schema ids
        self._entry_columns: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._deleted_keys: dict[tuple[str, str], np.ndarray] = {}

    def _fail(self, what: str, e: Exception) -> CleanupAbortedError:
        return CleanupAbortedError(f"{self.operation} of {self.table_path} aborted, nothing "
                                   f"deleted: cannot read {what}: {e}")

    def _load(self, path: str) -> Snapshot | None:
        """A snapshot, tag or changelog file; None when it is gone (expired or deleted since
        the listing: what only it referenced is being deleted by that job anyway)."""
        try:
            return Snapshot.from_json(self.file_io.read_bytes(path), path)
        except FileNotFoundError:
            return None

    def _listing(self) -> list[tuple[tuple[str, str], str, bool]]:
        """(key, path, is a long-lived changelog) of every file to read: the snapshot, tag,
        changelog and branch directories, listed at once."""
        io = self.file_io
        if self.main:
            ids, tags, changelogs, branches = concurrently(
                self.snapshots.snapshot_ids, self.tags.names,
                lambda: self._changelogs(TablePaths(io, self.table_path).changelog_dir),
                self._branch_listing)
        else:
            ids, tags, changelogs, branches = [], [], [], self._branch_listing()
        out = [(("snapshot", str(sid)), self.snapshots.snapshot_path(sid), False)
               for sid in ids]
        out += [(("tag", name), self.tags.tag_path(name), False) for name in tags]
        out += [(("changelog", base), path, True) for base, path in changelogs]
        return out + branches

    def _changelogs(self, changelog_dir: str) -> list[tuple[str, str]]:
        """(file name, path) of each `changelog-<id>` in a `changelog/` directory."""
        out = []
        for st in self.file_io.list_status(changelog_dir):
            base = st.path.rsplit("/", 1)[-1]
            if numbered_id(base, CHANGELOG_PREFIX) is not None:
                out.append((base, st.path))
        return out

    def _branch_listing(self) -> list[tuple[tuple[str, str], str, bool]]:
        """Every branch's snapshots, tags and changelogs, keyed `("branch", "<name>:<file>")`:
        a branch's data files and manifests live in the table's directories (Java's
        `OrphanFilesClean` gathers used files over every branch). A branch's changelogs are
        read as the main branch's are (leniently: `_changelog_refs`)."""

        def one(name: str) -> list[tuple[tuple[str, str], str, bool]]:
            snapshots, tags = self.branches.snapshots(name), self.branches.tags(name)
            ids, tag_names, changelogs = concurrently(
                snapshots.snapshot_ids, tags.names,
                lambda: self._changelogs(self.branches.paths(name).changelog_dir))
            out = [(("branch", f"{name}:{SNAPSHOT_PREFIX}{sid}"), snapshots.snapshot_path(sid),
                    False) for sid in ids]
            out += [(("branch", f"{name}:{TAG_PREFIX}{tag}"), tags.tag_path(tag), False)
                    for tag in tag_names]
            out += [(("branch", f"{name}:{base}"), path, True) for base, path in changelogs]
            return out

        return [x for found in parallel_map(one, self.branches.names()) for x in found]

    def refresh(self) -> int:
        """Read what appeared since the last call; returns how many files were new."""
        try:
            listing = self._listing()
        except Exception as e:
            raise self._fail("the snapshot, tag, changelog and branch directories", e) from e
        todo = [(key, path, changelog) for key, path, changelog in listing
                if key not in self.read]

        def load(path: str) -> Snapshot | Exception | None:
            try:
                return self._load(path)
            except Exception as e:  # noqa: BLE001 - raised below, naming the file
                return e

        loaded = parallel_map(load, [path for _, path, _ in todo])
        snaps = [s for s in loaded if isinstance(s, Snapshot)]
        self.refs.warm(snaps, [])  # their lists, then manifests and index manifests, at once
        new = 0
        for (key, path, changelog), snap in zip(todo, loaded):
            try:
                if isinstance(snap, Exception):
                    raise snap
                if snap is None:
                    continue
                self._add(snap, key, changelog)
            except Exception as e:
                raise self._fail(f"{key[0]} {key[1]} ({path})", e) from e
            self.read[key] = snap
            new += 1
        return new

    def scan_until_stable(self) -> None:
        for _ in range(MAX_SCAN_ROUNDS):
            if self.refresh() == 0:
                return
        raise CleanupAbortedError(f"{self.operation} of {self.table_path} aborted, nothing "
                                  f"deleted: snapshots and tags kept changing over "
                                  f"{MAX_SCAN_ROUNDS} scans")

    def _add(self, snap: Snapshot, key: tuple[str, str], changelog_file: bool) -> None:
        refs = self.refs
        self.schema_ids.add(snap.schema_id)
        self.holders.setdefault(snap.schema_id, key)
        if changelog_file:
            data, changelog = self._changelog_refs(snap)
        else:
            self.names.update(refs.metadata_names(snap))
            self.names.update(p.rsplit("/", 1)[-1] for p in refs.index_files(snap.index_manifest))
            if snap.statistics:
                self.names.add(snap.statistics)
            data, changelog = refs.data_manifests(snap), refs.changelog_manifests(snap)
        self.manifests_of[key] = ([m.file_name for m in data], [m.file_name for m in changelog])
        todo = [m for m in data + changelog if m.file_name not in self._manifests_done]
        refs.prefetch(todo)
        for m in todo:
            entries = refs.read_manifest(m.file_name)
            self.names.update(e.file.file_name for e in entries)
            self.names.update(x.rsplit("/", 1)[-1] for e in entries for x in e.file.extra_files)
            ids = np.unique(np.fromiter((e.file.schema_id for e in entries), np.int64,
                                        len(entries)))
            self._manifest_schemas[m.file_name] = ids
            self.schema_ids.update(ids.tolist())
            self._manifests_done.add(m.file_name)

    def _changelog_refs(self, snap: Snapshot) -> tuple[list[ManifestFileMeta],
                                                       list[ManifestFileMeta]]:
        """A long-lived changelog names what its snapshot named, but snapshot expiry removed
        part of it as Java does (the base and delta lists when a changelog list carries the
        changelog; the index manifest; the statistics): the lists that still exist and what
        they list are referenced, a missing list is not an error. A manifest missing from an
        existing list still is."""
        refs = self.refs
        found = refs.existing_lists((snap.base_manifest_list, snap.delta_manifest_list,
                                     snap.changelog_manifest_list))
        self.names.update(found)
        if snap.index_manifest:
            try:
                files = refs.index_files(snap.index_manifest)
                self.names.add(snap.index_manifest)
                self.names.update(p.rsplit("/", 1)[-1] for p in files)
            except FileNotFoundError:
                pass
        if snap.statistics:
            self.names.add(snap.statistics)
        data = found.get(snap.base_manifest_list, []) + found.get(snap.delta_manifest_list, [])
        changelog = found.get(snap.changelog_manifest_list or "", [])
        self.names.update(m.file_name for m in data + changelog)
        return data, changelog

    def holders_listing(self, schema_id: int) -> list[tuple[str, str]]:
        """The snapshots, tags and changelogs read whose manifests list a file (added or
        deleted) of `schema_id`, as (kind, name)."""
        return [key for key, (data, changelog) in self.manifests_of.items()
                if any(schema_id in self._manifest_schemas.get(n, ())
                       for n in data + changelog)]

    # -- why a schema id is referenced (reporting only: never decides a deletion) -------------
    def why_referenced(self, schema_id: int) -> tuple[str, str] | None:
        """(kind, reason) of the first reference found to `schema_id`: the `schemaId` of a
        snapshot, tag or changelog; else a file a snapshot reads ("live-file"); else files its
        manifests only list as deleted ("deleted-file"). None: not referenced."""
        holder = self.holders.get(schema_id)
        if holder is not None:
            return holder[0], f"schemaId of {_holder_text(holder)}"
        deleted_only: tuple[str, str] | None = None
        for key, (data, changelog) in self.manifests_of.items():
            where = _holder_text(key)
            hit = [n for n in changelog if schema_id in self._manifest_schemas.get(n, ())]
            if hit:
                return "live-file", f"a changelog file in manifest {hit[0]} of {where}"
            hit = [n for n in data if schema_id in self._manifest_schemas.get(n, ())]
            if not hit:
                continue
            live = self._live_file(key, hit, schema_id)
            if live is not None:
                return "live-file", f"data file {live[1]} in manifest {live[0]} of {where}"
            if deleted_only is None:
                deleted_only = ("deleted-file", f"deleted data files still listed (ADD/DELETE "
                                f"entries) in manifest {hit[0]} of {where}: kept until {where}"
                                " expires; compact_manifests (CLI --compact-manifests) keeps them "
                                "out of newer snapshots")
        return deleted_only

    def _columns(self, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(schema id, is DELETE, level:file name) of each entry of a manifest, as arrays."""
        cols = self._entry_columns.get(name)
        if cols is None:
            entries = self.refs.read_manifest(name)
            n = len(entries)
            cols = (np.fromiter((e.file.schema_id for e in entries), np.int64, n),
                    np.fromiter((e.kind == FileKind.DELETE for e in entries), np.bool_, n),
                    np.array([f"{e.file.level}:{e.file.file_name}" for e in entries],
                             dtype=str))
            self._entry_columns[name] = cols
        return cols

    def _live_file(self, key: tuple[str, str], hit: list[str], schema_id: int
                   ) -> tuple[str, str] | None:
        """(manifest, file name) of a file of `schema_id` that snapshot (or tag) `key` reads:
        ADDed in one of its manifests `hit` and DELETEd in none of its data manifests."""
        deleted = self._deleted_keys.get(key)
        if deleted is None:
            cols = map(self._columns, self.manifests_of[key][0])
            gone = [keys[dels] for _, dels, keys in cols if dels.any()]
            deleted = np.concatenate(gone) if gone else np.array([], dtype=str)
            self._deleted_keys[key] = deleted
        for name in hit:
            ids, dels, keys = self._columns(name)
            added = keys[(ids == schema_id) & ~dels]
            live = added[~np.isin(added, deleted)] if len(deleted) else added
            if len(live):
                return name, str(live[0]).split(":", 1)[1]
        return None

    @property
    def snapshot_ids(self) -> list[int]:
        return sorted(int(k[1]) for k in self.read if k[0] == "snapshot")


def _holder_text(key: tuple[str, str]) -> str:
    kind, name = key
    if kind == "branch":
        branch, _, file = name.partition(":")
        return f"{file} of branch {branch!r}"
    return f"tag {name!r}" if kind == "tag" else f"{kind} {name}"


def branch_references(file_io: FileIO, table_path: str, schema: TableSchema, operation: str
                      ) -> ReferenceScan | None:
    """What the snapshots, tags and changelogs of every branch reference (`names`: lists,
    manifests, index manifests and files, statistics, data, changelog and extra files, all in
    the table's own directories; `schema_ids`), or None when the table has no branch.

    Java's snapshot expiry and tag deletion do not look at branches (only its orphan-file
    cleaning does), so a branch made from a tag loses its files once that tag is deleted and
    its snapshot expires; here the cleanup of the main branch keeps them. A branch that cannot
    be read raises `CleanupAbortedError` naming the branch and the file: deleting anything
    then could delete what it needs.
    """
    try:
        names = BranchManager(file_io, table_path).names()
    except Exception as e:
        raise CleanupAbortedError(f"{operation} of {table_path} aborted, nothing deleted: "
                                  f"cannot list its branches: {e}") from e
    if not names:
        return None
    scan = ReferenceScan(file_io, table_path, schema, operation, main=False)
    scan.scan_until_stable()
    return scan


def keep_branch_files(file_io: FileIO, table_path: str, schema: TableSchema, operation: str,
                      *planned: dict[str, int]) -> str | None:
    """Take out of each planned deletion (path -> size) every file a branch's snapshot, tag or
    changelog references, matched by file name as Java's orphan cleaning matches (names are
    unique, and a match can only keep a file); returns what was kept, for the result (None:
    nothing). Reads the branches only when something is planned; a branch that cannot be read
    raises `CleanupAbortedError`: the caller deletes nothing."""
    if not any(planned):
        return None
    scan = branch_references(file_io, table_path, schema, operation)
    if scan is None:
        return None
    kept = 0
    for paths in planned:
        for path in [p for p in paths if p.rsplit("/", 1)[-1] in scan.names]:
            del paths[path]
            kept += 1
    if not kept:
        return None
    holders = sorted({key[1].split(":", 1)[0] for key in scan.read})
    return f"kept {kept} files that branches {holders} still reference"
