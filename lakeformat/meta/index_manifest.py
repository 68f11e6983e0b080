"""Index manifests (`manifest/index-manifest-<uuid>-<n>`) and the files they list (`index/`).

A snapshot's `indexManifest` names the *full* list of its live index files (not a delta): per
(partition, bucket) a `HASH` file of a dynamic-bucket table (the key hashes the bucket holds,
big-endian int32 each [JAVA HashIndexFile]) or a `DELETION_VECTORS` file. Records are Java's
`IndexManifestEntry` (`_VERSION` 1) [JAVA IndexManifestEntry, IndexFileMeta,
DeletionVectorMeta, GlobalIndexMeta]; lakeformat writes them with Java's Avro names.
"""

from __future__ import annotations

import io
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import count
from typing import Any

import fastavro
import numpy as np
from fastavro.write import Writer

from lakeformat.errors import CorruptFileError, UnsupportedError
from lakeformat.layout import INDEX_DIR, TablePaths
from lakeformat.meta.manifest import (
    DeferredWrites,
    _AvroSettings,
    _opt,
    _read_records,
    write_metadata,
)
from lakeformat.storage import FileIO

INDEX_MANIFEST_VERSION = 1
HASH_INDEX = "HASH"
DELETION_VECTORS_INDEX = "DELETION_VECTORS"
INDEX_MANIFEST_PREFIX = "index-manifest-"
INDEX_FILE_PREFIX = "index-"
ADD, DELETE = 0, 1

_RECORD = "org.apache.paimon.avro.generated.record"
INDEX_MANIFEST_ENTRY_SCHEMA: dict[str, Any] = {
    "type": "record", "name": _RECORD, "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_KIND", "type": "int"},
        {"name": "_PARTITION", "type": "bytes"},
        {"name": "_BUCKET", "type": "int"},
        {"name": "_INDEX_TYPE", "type": "string"},
        {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_ROW_COUNT", "type": "long"},
        _opt("_DELETIONS_VECTORS_RANGES", {"type": "array", "items": {
            "type": "record", "name": _RECORD + "__DELETIONS_VECTORS_RANGES", "fields": [
                {"name": "f0", "type": "string"},
                {"name": "f1", "type": "int"},
                {"name": "f2", "type": "int"},
                _opt("_CARDINALITY", "long")]}}),
        _opt("_EXTERNAL_PATH", "string"),
        _opt("_GLOBAL_INDEX", {
            "type": "record", "name": _RECORD + "__GLOBAL_INDEX", "fields": [
                {"name": "_ROW_RANGE_START", "type": "long"},
                {"name": "_ROW_RANGE_END", "type": "long"},
                {"name": "_INDEX_FIELD_ID", "type": "int"},
                _opt("_EXTRA_FIELD_IDS", {"type": "array", "items": "int"}),
                _opt("_INDEX_META", "bytes"),
                _opt("_SOURCE_META", "bytes")]}),
    ]}
_SCHEMA = fastavro.parse_schema(INDEX_MANIFEST_ENTRY_SCHEMA)


@dataclass(frozen=True)
class DeletionVectorRange:
    """Where one data file's deletion vector sits in a DELETION_VECTORS index file."""

    data_file: str
    offset: int
    length: int
    cardinality: int | None


@dataclass(frozen=True)
class IndexManifestEntry:
    kind: int
    partition: bytes
    bucket: int
    index_type: str
    file_name: str
    file_size: int
    row_count: int
    dv_ranges: tuple[DeletionVectorRange, ...] | None = None
    external_path: str | None = None
    global_index: Mapping[str, Any] | None = None

    @property
    def key(self) -> tuple[bytes, int, str]:
        return (self.partition, self.bucket, self.index_type)

    @staticmethod
    def from_avro(rec: Mapping[str, Any], path: str) -> IndexManifestEntry:
        if rec["_VERSION"] != INDEX_MANIFEST_VERSION:
            raise UnsupportedError(f"index manifest {path} has _VERSION {rec['_VERSION']}; "
                                   f"only {INDEX_MANIFEST_VERSION} is supported")
        ranges = rec.get("_DELETIONS_VECTORS_RANGES")
        return IndexManifestEntry(
            rec["_KIND"], rec["_PARTITION"], rec["_BUCKET"], rec["_INDEX_TYPE"],
            rec["_FILE_NAME"], rec["_FILE_SIZE"], rec["_ROW_COUNT"],
            None if ranges is None else tuple(
                DeletionVectorRange(r["f0"], r["f1"], r["f2"], r.get("_CARDINALITY"))
                for r in ranges),
            rec.get("_EXTERNAL_PATH"), rec.get("_GLOBAL_INDEX"))

    def to_avro(self) -> dict[str, Any]:
        return {
            "_VERSION": INDEX_MANIFEST_VERSION, "_KIND": self.kind,
            "_PARTITION": self.partition, "_BUCKET": self.bucket,
            "_INDEX_TYPE": self.index_type, "_FILE_NAME": self.file_name,
            "_FILE_SIZE": self.file_size, "_ROW_COUNT": self.row_count,
            "_DELETIONS_VECTORS_RANGES": None if self.dv_ranges is None else [
                {"f0": r.data_file, "f1": r.offset, "f2": r.length,
                 "_CARDINALITY": r.cardinality} for r in self.dv_ranges],
            "_EXTERNAL_PATH": self.external_path,
            "_GLOBAL_INDEX": None if self.global_index is None else dict(self.global_index),
        }


class IndexManifestFile:
    """Reads and writes one table's index manifests, and the index files' paths."""

    def __init__(self, file_io: FileIO, table_path: str, options: Mapping[str, str] | None = None):
        self.file_io = file_io
        paths = TablePaths(file_io, table_path)
        self.manifest_dir = paths.manifest_dir
        self.index_dir = file_io.join(table_path, INDEX_DIR)
        self._avro = _AvroSettings(options or {})
        self._uuid = str(uuid.uuid4())
        self._counter = count()
        self._index_counter = count()
        #: when set, index manifests are collected there instead of written (`DeferredWrites`)
        self.deferred: DeferredWrites | None = None

    def path(self, file_name: str) -> str:
        return self.file_io.join(self.manifest_dir, file_name)

    def index_file_path(self, entry: IndexManifestEntry) -> str:
        return entry.external_path or self.file_io.join(self.index_dir, entry.file_name)

    def read(self, file_name: str | None) -> list[IndexManifestEntry]:
        """The live index files a snapshot's `indexManifest` lists (ADD entries)."""
        if not file_name:
            return []
        entries = _read_records(self.file_io, self.path(file_name), IndexManifestEntry.from_avro)
        return [e for e in entries if e.kind == ADD]

    def write(self, entries: Iterable[IndexManifestEntry]) -> str:
        """A new index manifest holding `entries` (all ADD); returns its file name."""
        name = f"{INDEX_MANIFEST_PREFIX}{self._uuid}-{next(self._counter)}"
        buf = io.BytesIO()
        writer = Writer(buf, _SCHEMA, codec=self._avro.codec, compression_level=self._avro.level)
        for e in entries:
            writer.write(e.to_avro())
        writer.flush()
        write_metadata(self.file_io, self.path(name), buf.getvalue(), self.deferred)
        return name

    # -- HASH index files ------------------------------------------------------------------------
    def read_hashes(self, entry: IndexManifestEntry) -> np.ndarray:
        """The key hashes of one HASH index file (int32)."""
        path = self.index_file_path(entry)
        data = self.file_io.read_bytes(path)
        if len(data) % 4 or len(data) // 4 != entry.row_count:
            raise CorruptFileError(f"hash index {path} is {len(data)} bytes; its index manifest "
                                   f"entry says {entry.row_count} hashes of 4 bytes")
        return np.frombuffer(data, dtype=">i4").astype(np.int32)

    def new_index_file_name(self) -> str:
        return f"{INDEX_FILE_PREFIX}{self._uuid}-{next(self._index_counter)}"

    def write_hashes(self, partition: bytes, bucket: int, hashes: np.ndarray
                     ) -> IndexManifestEntry:
        name = self.new_index_file_name()
        data = np.asarray(hashes, dtype=np.int32).astype(">i4").tobytes()
        self.file_io.write_bytes(self.file_io.join(self.index_dir, name), data)
        return IndexManifestEntry(ADD, partition, bucket, HASH_INDEX, name, len(data),
                                  len(data) // 4)


def replace_entries(live: Sequence[IndexManifestEntry], added: Sequence[IndexManifestEntry],
                    dropped_partitions: Iterable[bytes] = (), drop_all: bool = False
                    ) -> list[IndexManifestEntry]:
    """The index files after a commit: `added` replace the live file of their (partition,
    bucket, type); files of `dropped_partitions` (an overwrite) go, or all with `drop_all`."""
    replaced = {e.key for e in added}
    dropped = set(dropped_partitions)
    keep = [e for e in live if e.key not in replaced and not drop_all
            and e.partition not in dropped]
    return keep + list(added)
