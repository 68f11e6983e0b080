"""What snapshots and tags reference: manifest lists, manifests, data and changelog files.

Every cleanup job (snapshot expiry, tag deletion, rollback, orphan files, schema retention)
decides what it may delete from these sets, so they live in one place. Manifest lists and
manifests are immutable, so each is read at most once per `TableReferences` (cached by name).
A read failure is never swallowed here: callers decide to delete less.
"""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from threading import Lock

from lakeformat.meta.binary_row import from_avro_bytes
from lakeformat.meta.data_file_meta import FileKind, ManifestEntry, ManifestFileMeta, merge_entries
from lakeformat.meta.manifest import ManifestFile, ManifestList
from lakeformat.meta.snapshot import Snapshot
from lakeformat.operation.paths import PathFactory
from lakeformat.schema.table_schema import TableSchema
from lakeformat.storage import FileIO

MANIFEST_DIR = "manifest"
STATISTICS_DIR = "statistics"


@dataclass(frozen=True)
class FileRef:
    """A data or changelog file as cleanup sees it: where it is and how big."""

    path: str
    size: int
    schema_id: int


class TableReferences:
    def __init__(self, file_io: FileIO, table_path: str, schema: TableSchema):
        self.file_io = file_io
        self.table_path = table_path
        self.partition_types = [f.type for f in schema.partition_fields()]
        self.lists = ManifestList(file_io, table_path, schema.options)
        self.manifests = ManifestFile(file_io, table_path, self.partition_types, schema.options)
        self.paths = PathFactory(file_io, table_path, schema)
        self._list_cache: dict[str, list[ManifestFileMeta]] = {}
        self._entry_cache: dict[str, list[ManifestEntry]] = {}
        self._partitions: dict[bytes, tuple] = {}
        self._list_sizes: dict[str, int] = {}
        self._lock = Lock()
        self.manifest_reads = 0

    # -- cached reads ----------------------------------------------------------------------------
    def manifest_list(self, name: str) -> list[ManifestFileMeta]:
        cached = self._list_cache.get(name)
        if cached is None:
            cached = self.lists.read(name)
            with self._lock:
                self._list_cache[name] = cached
        return cached

    def entries(self, manifest_name: str) -> list[ManifestEntry]:
        cached = self._entry_cache.get(manifest_name)
        if cached is None:
            cached = self.manifests.read(manifest_name)
            with self._lock:
                self._entry_cache[manifest_name] = cached
                self.manifest_reads += 1
        return cached

    def prefetch(self, metas: Iterable[ManifestFileMeta]) -> None:
        """Read manifests not yet cached, in parallel (object stores reward concurrency)."""
        todo = sorted({m.file_name for m in metas} - set(self._entry_cache))
        if len(todo) <= 1:
            for name in todo:
                self.entries(name)
            return
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(self.entries, todo))

    # -- what a snapshot references ----------------------------------------------------------
    def data_manifests(self, snap: Snapshot) -> list[ManifestFileMeta]:
        return self.manifest_list(snap.base_manifest_list) + self.manifest_list(
            snap.delta_manifest_list)

    def changelog_manifests(self, snap: Snapshot) -> list[ManifestFileMeta]:
        if not snap.changelog_manifest_list:
            return []
        return self.manifest_list(snap.changelog_manifest_list)

    def _read(self, metas: list[ManifestFileMeta]) -> list[ManifestEntry]:
        self.prefetch(metas)
        return [e for m in metas for e in self.entries(m.file_name)]

    def live_entries(self, snap: Snapshot) -> list[ManifestEntry]:
        """Data files live in `snap` (base + delta merged, as a reader sees them)."""
        return merge_entries(self._read(self.data_manifests(snap)))

    def delta_entries(self, snap: Snapshot) -> list[ManifestEntry]:
        return self._read(self.manifest_list(snap.delta_manifest_list))

    def changelog_entries(self, snap: Snapshot) -> list[ManifestEntry]:
        return self._read(self.changelog_manifests(snap))

    def all_entries(self, snap: Snapshot) -> list[ManifestEntry]:
        """Every entry of every manifest a snapshot names (ADD and DELETE, data and changelog)."""
        return self._read(self.data_manifests(snap) + self.changelog_manifests(snap))

    def metadata_names(self, snap: Snapshot) -> set[str]:
        """Names under `manifest/` a snapshot needs: its lists and the manifests in them
        (the index manifest by name: lakeformat never deletes index files it cannot read)."""
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
        return self.file_io.join(self.table_path, MANIFEST_DIR, name)

    def statistics_path(self, name: str) -> str:
        return self.file_io.join(self.table_path, STATISTICS_DIR, name)

    def manifest_sizes(self) -> dict[str, int]:
        """Sizes of the manifests and lists seen so far, as the manifest lists and snapshots
        record them (no extra requests)."""
        sizes: dict[str, int] = dict(self._list_sizes)
        for metas in self._list_cache.values():
            for m in metas:
                sizes[m.file_name] = m.file_size
        return sizes


def identifiers(entries: Iterable[ManifestEntry]) -> set:
    return {e.identifier for e in entries}


def deleted_in(entries: list[ManifestEntry]) -> list[ManifestEntry]:
    """DELETE entries of a delta whose file the same delta does not add again (an upgrade
    moves a file to another level under the same name: it is still live)."""
    added = {(e.partition, e.bucket, e.file.file_name) for e in entries if e.kind == FileKind.ADD}
    return [e for e in entries if e.kind == FileKind.DELETE
            and (e.partition, e.bucket, e.file.file_name) not in added]
