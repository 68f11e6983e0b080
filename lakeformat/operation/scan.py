"""Planning: the live data files of a snapshot, grouped into (partition, bucket) splits."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from lakeformat.meta.binary_row import from_avro_bytes
from lakeformat.meta.data_file_meta import (
    DataFileMeta,
    ManifestEntry,
    ManifestFileMeta,
    merge_entries,
)
from lakeformat.meta.deletion_vector import DeletionFile, deletion_files
from lakeformat.meta.index_manifest import IndexManifestFile
from lakeformat.meta.manifest import ManifestFile, ManifestList
from lakeformat.meta.snapshot import Snapshot
from lakeformat.schema.table_schema import TableSchema
from lakeformat.storage import FileIO
from lakeformat.storage.parallel import parallel_map

PartitionPredicate = Callable[[dict[str, Any]], bool]


@dataclass(frozen=True)
class Split:
    """One bucket of one partition at one snapshot: the unit of work of a read."""

    partition: bytes
    partition_values: tuple[Any, ...]
    bucket: int
    total_buckets: int
    files: tuple[DataFileMeta, ...]
    #: data file name -> its deletion vector, for the files that have one
    deletion_files: dict[str, DeletionFile] = field(default_factory=dict, compare=False)

    @property
    def row_count(self) -> int:
        return sum(f.row_count for f in self.files)


class FileStoreScan:
    """Reads a snapshot's manifest lists and manifests: the one implementation planning, reads
    and cleanup (`references.TableReferences`, which adds a cache) share. A failed read raises;
    callers that delete decide to delete less."""

    def __init__(self, file_io: FileIO, table_path: str, schema: TableSchema):
        self.file_io = file_io
        self.table_path = table_path
        self.schema = schema
        self.partition_types = [f.type for f in schema.partition_fields()]
        self.manifest_list = ManifestList(file_io, table_path, schema.options)
        self.manifest_file = ManifestFile(file_io, table_path, self.partition_types, schema.options)
        self.index_file = IndexManifestFile(file_io, table_path, schema.options)

    def read_list(self, file_name: str) -> list[ManifestFileMeta]:
        return self.manifest_list.read(file_name)

    def read_manifest(self, file_name: str) -> list[ManifestEntry]:
        return self.manifest_file.read(file_name)

    def data_manifests(self, snapshot: Snapshot) -> list[ManifestFileMeta]:
        """The base list's manifests, then the delta list's (both lists read at once)."""
        base, delta = parallel_map(self.read_list, [snapshot.base_manifest_list,
                                                    snapshot.delta_manifest_list])
        return base + delta

    def changelog_manifests(self, snapshot: Snapshot) -> list[ManifestFileMeta]:
        if not snapshot.changelog_manifest_list:
            return []
        return self.read_list(snapshot.changelog_manifest_list)

    def read_manifests(self, names: Sequence[str]) -> dict[str, list[ManifestEntry]]:
        """Entries of each named manifest (each read once), in parallel."""
        todo = list(dict.fromkeys(names))
        return dict(zip(todo, parallel_map(self.read_manifest, todo)))

    def read_entries(self, metas: Sequence[ManifestFileMeta]) -> list[ManifestEntry]:
        """All entries of the given manifests, in their order."""
        read = self.read_manifests([m.file_name for m in metas])
        return [e for m in metas for e in read[m.file_name]]

    def live_entries(self, snapshot: Snapshot | None,
                     partition_filter: PartitionPredicate | None = None) -> list[ManifestEntry]:
        if snapshot is None:
            return []
        metas = self.data_manifests(snapshot)
        if partition_filter is not None and self.partition_types:
            metas = [m for m in metas if self._manifest_may_match(m, partition_filter)]
        entries = merge_entries(self.read_entries(metas))
        if partition_filter is not None and self.partition_types:
            keep: dict[bytes, bool] = {}
            out = []
            for e in entries:
                ok = keep.get(e.partition)
                if ok is None:
                    ok = keep[e.partition] = partition_filter(self.partition_dict(e.partition))
                if ok:
                    out.append(e)
            entries = out
        return entries

    def _manifest_may_match(self, meta: ManifestFileMeta, pred: PartitionPredicate) -> bool:
        """A manifest whose partition range is a single partition can be pruned exactly."""
        stats = meta.partition_stats
        try:
            lo = from_avro_bytes(stats.min_values, self.partition_types)
            hi = from_avro_bytes(stats.max_values, self.partition_types)
        except Exception:  # unreadable stats never prune: read the manifest instead
            return True
        if lo == hi and None not in lo:
            return pred(dict(zip(self.schema.partition_keys, lo)))
        return True

    def partition_dict(self, partition: bytes) -> dict[str, Any]:
        values = from_avro_bytes(partition, self.partition_types)
        return dict(zip(self.schema.partition_keys, values))

    def splits(self, snapshot: Snapshot | None,
               partition_filter: PartitionPredicate | None = None) -> list[Split]:
        groups: dict[tuple[bytes, int], list[ManifestEntry]] = {}
        for e in self.live_entries(snapshot, partition_filter):
            groups.setdefault((e.partition, e.bucket), []).append(e)
        dvs = self.deletion_files(snapshot) if groups else {}
        out = []
        for (partition, bucket), entries in sorted(groups.items(), key=lambda kv: kv[0]):
            values = tuple(from_avro_bytes(partition, self.partition_types))
            files = tuple(e.file for e in entries)
            bucket_dvs = dvs.get((partition, bucket), {})
            out.append(Split(partition, values, bucket, entries[0].total_buckets, files,
                             {f.file_name: bucket_dvs[f.file_name] for f in files
                              if f.file_name in bucket_dvs}))
        return out

    def deletion_files(self, snapshot: Snapshot | None
                       ) -> dict[tuple[bytes, int], dict[str, DeletionFile]]:
        """Per (partition, bucket), the deletion vectors of a snapshot's data files."""
        if snapshot is None or not snapshot.index_manifest:
            return {}
        return deletion_files(self.index_file, self.index_file.read(snapshot.index_manifest))
