"""Avro manifest files (``manifest/manifest-*``) and manifest lists (``manifest/manifest-list-*``).

We write Java's field set, order and record names, so Java and pypaimon read our files with their
normal readers; we read by field name, so files from any Java release >= 0.9 and from pypaimon
(which adds fields of its own) decode alike.
"""

from __future__ import annotations

import functools
import io
import math
import uuid
from collections.abc import Iterable, Mapping, Sequence
from itertools import count
from typing import Any

import fastavro
from fastavro.write import Writer

from lakeformat.errors import CorruptFileError, LakeformatError, UnsupportedError
from lakeformat.layout import MANIFEST_LIST_PREFIX, MANIFEST_PREFIX, TablePaths
from lakeformat.meta import binary_row
from lakeformat.meta.data_file_meta import (
    MANIFEST_VERSION,
    FileKind,
    ManifestEntry,
    ManifestFileMeta,
    SimpleStats,
    merge_entries,
)
from lakeformat.options import CoreOptions
from lakeformat.schema.types import DataType
from lakeformat.storage import FileIO
from lakeformat.storage.parallel import parallel_map

__all__ = [
    "MANIFEST_VERSION",
    "ManifestFile",
    "ManifestList",
    "ManifestRollingWriter",
    "avro_codec",
    "merge_entries",
]

CHECK_ROLLING_RECORD_COUNT = 1000  # Java checks the rolling size every 1000 records
_SYNC_INTERVAL = 64000  # Avro's default block size in Java's DataFileWriter

# -- Avro schemas (Java's AvroSchemaConverter output for ManifestEntry / ManifestFileMeta) -------
_RECORD = "org.apache.paimon.avro.generated.record"


def _opt(name: str, avro_type: Any) -> dict[str, Any]:
    return {"name": name, "type": ["null", avro_type], "default": None}


def _stats_schema(record_name: str) -> dict[str, Any]:
    return {
        "type": "record",
        "name": record_name,
        "fields": [
            {"name": "_MIN_VALUES", "type": "bytes"},
            {"name": "_MAX_VALUES", "type": "bytes"},
            _opt("_NULL_COUNTS", {"type": "array", "items": ["null", "long"]}),
        ],
    }


_STRINGS = {"type": "array", "items": "string"}
_FILE_RECORD = _RECORD + "__FILE"
MANIFEST_ENTRY_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": _RECORD,
    "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_KIND", "type": "int"},
        {"name": "_PARTITION", "type": "bytes"},
        {"name": "_BUCKET", "type": "int"},
        {"name": "_TOTAL_BUCKETS", "type": "int"},
        {"name": "_FILE", "type": {
            "type": "record",
            "name": _FILE_RECORD,
            "fields": [
                {"name": "_FILE_NAME", "type": "string"},
                {"name": "_FILE_SIZE", "type": "long"},
                {"name": "_ROW_COUNT", "type": "long"},
                {"name": "_MIN_KEY", "type": "bytes"},
                {"name": "_MAX_KEY", "type": "bytes"},
                {"name": "_KEY_STATS", "type": _stats_schema(_FILE_RECORD + "__KEY_STATS")},
                {"name": "_VALUE_STATS", "type": _stats_schema(_FILE_RECORD + "__VALUE_STATS")},
                {"name": "_MIN_SEQUENCE_NUMBER", "type": "long"},
                {"name": "_MAX_SEQUENCE_NUMBER", "type": "long"},
                {"name": "_SCHEMA_ID", "type": "long"},
                {"name": "_LEVEL", "type": "int"},
                {"name": "_EXTRA_FILES", "type": _STRINGS},
                _opt("_CREATION_TIME", {"type": "long", "logicalType": "timestamp-millis"}),
                _opt("_DELETE_ROW_COUNT", "long"),
                _opt("_EMBEDDED_FILE_INDEX", "bytes"),
                _opt("_FILE_SOURCE", "int"),
                _opt("_VALUE_STATS_COLS", _STRINGS),
                _opt("_EXTERNAL_PATH", "string"),
                _opt("_FIRST_ROW_ID", "long"),
                _opt("_WRITE_COLS", _STRINGS),
            ],
        }},
    ],
}
MANIFEST_FILE_META_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": _RECORD,
    "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_NUM_ADDED_FILES", "type": "long"},
        {"name": "_NUM_DELETED_FILES", "type": "long"},
        {"name": "_PARTITION_STATS", "type": _stats_schema(_RECORD + "__PARTITION_STATS")},
        {"name": "_SCHEMA_ID", "type": "long"},
        _opt("_MIN_BUCKET", "int"),
        _opt("_MAX_BUCKET", "int"),
        _opt("_MIN_LEVEL", "int"),
        _opt("_MAX_LEVEL", "int"),
        _opt("_MIN_ROW_ID", "long"),
        _opt("_MAX_ROW_ID", "long"),
    ],
}
_ENTRY_SCHEMA = fastavro.parse_schema(MANIFEST_ENTRY_SCHEMA)
_META_SCHEMA = fastavro.parse_schema(MANIFEST_FILE_META_SCHEMA)

_CODECS = {
    "zstd": "zstandard", "zstandard": "zstandard",
    "none": "null", "null": "null", "uncompressed": "null",
    "deflate": "deflate", "zlib": "deflate",
    "snappy": "snappy", "bzip2": "bzip2", "xz": "xz",
}


def avro_codec(compression: str | None) -> str:
    """Avro codec for ``manifest.compression``; only codecs Java's Avro can read as well."""
    key = "zstd" if compression is None else str(compression).strip().lower()
    try:
        return _CODECS[key]
    except KeyError:
        raise UnsupportedError(
            f"option 'manifest.compression': unsupported value {compression!r}; "
            f"use one of {sorted(_CODECS)}"
        ) from None


@functools.cache
def _codec_problem(codec: str) -> str | None:
    """Why fastavro cannot use ``codec`` here (a missing optional library), or None."""
    try:
        buf = io.BytesIO()
        fastavro.writer(buf, {"type": "record", "name": "probe", "fields": [
            {"name": "x", "type": "int"}]}, [{"x": 1}], codec=codec)
        buf.seek(0)
        list(fastavro.reader(buf))
        return None
    except Exception as exc:  # fastavro's message names the library to install
        return str(exc)


def require_codec(codec: str, what: str) -> None:
    """Fail with the missing library's name instead of calling a good file corrupt."""
    problem = _codec_problem(codec)
    if problem is not None:
        raise UnsupportedError(f"{what} needs Avro codec {codec!r}, unusable here: {problem}")


class _AvroSettings:
    """Codec settings shared by manifest files and lists (both follow ``manifest.*`` options)."""

    def __init__(self, options: Mapping[str, str]):
        core = CoreOptions(options)
        self.codec = avro_codec(options.get("manifest.compression"))
        self.level = core.zstd_level if self.codec == "zstandard" else None
        require_codec(self.codec, "option 'manifest.compression'")


def _check_version(rec: Mapping[str, Any], what: str, path: str) -> None:
    version = rec["_VERSION"]
    if version != MANIFEST_VERSION:
        raise UnsupportedError(
            f"{what} {path} has _VERSION {version}, only version {MANIFEST_VERSION} is "
            f"supported (Paimon itself refuses such files: the table must be recreated)"
        )


def _entry_from_record(rec: Mapping[str, Any], path: str) -> ManifestEntry:
    _check_version(rec, "manifest file", path)
    return ManifestEntry.from_avro(rec)


def _meta_from_record(rec: Mapping[str, Any], path: str) -> ManifestFileMeta:
    _check_version(rec, "manifest list", path)
    return ManifestFileMeta.from_avro(rec)


#: parsed metadata takes many times the bytes of its compressed Avro file in memory (a zstd
#: manifest of 3,000 entries measured ~31x with tracemalloc); the cache's byte bound counts this
#: multiple of the file size for a parsed file, so the bound is what the process holds
PARSED_SIZE_FACTOR = 32


def _read_records(file_io: FileIO, path: str, convert: Any) -> list[Any]:
    """Decode every record of an Avro file; anything undecodable becomes CorruptFileError.

    Manifest lists, manifests and index manifests have unique names and never change, so the
    decoded records are kept in the FileIO's metadata cache by path (and the bytes a commit
    of this process wrote are found there too, see `cache_written`)."""
    cache = file_io.metadata_cache
    key = (path, getattr(convert, "__qualname__", "records"))
    hit = cache.get(key)
    if hit is not None:
        return list(hit)
    data = cache.get((path, "written"))
    if data is None:
        data = file_io.read_bytes(path)  # a missing file is FileNotFoundError, not corruption
    records = _decode(data, path, convert)
    cache.put(key, tuple(records), len(data) * PARSED_SIZE_FACTOR)
    cache.invalidate((path, "written"))
    return records


class DeferredWrites:
    """Metadata files built but not yet written: a commit builds its manifests and manifest
    lists first, then writes them all at once (`flush`, one round trip instead of one per
    file) before it publishes the snapshot that names them."""

    def __init__(self, file_io: FileIO):
        self.file_io = file_io
        self.files: list[tuple[str, bytes]] = []

    def add(self, path: str, data: bytes) -> None:
        self.files.append((path, data))

    def flush(self) -> None:
        """Write every file (concurrently); the first failure is raised once all ended."""
        files, self.files = self.files, []

        def put(item: tuple[str, bytes]) -> None:
            write_metadata(self.file_io, item[0], item[1])

        parallel_map(put, files)


def write_metadata(file_io: FileIO, path: str, data: bytes,
                   deferred: DeferredWrites | None = None) -> None:
    """Write a uniquely named metadata file and keep it in the cache (or defer both)."""
    if deferred is not None:
        deferred.add(path, data)
        return
    file_io.write_bytes(path, data)
    cache_written(file_io, path, data)


def cache_written(file_io: FileIO, path: str, data: bytes) -> None:
    """A metadata file this process just wrote (a unique name): kept as bytes, decoded on the
    first read, so the next commit reads it without a request and exactly as a reader would."""
    file_io.metadata_cache.put((path, "written"), data, len(data))


def _decode(data: bytes, path: str, convert: Any) -> list[Any]:
    try:
        reader = fastavro.reader(io.BytesIO(data))
        require_codec(str(reader.metadata.get("avro.codec", "null")), f"Avro file {path}")
        return [convert(rec, path) for rec in reader]
    except LakeformatError:
        raise
    except Exception as exc:  # fastavro raises many kinds on truncated or garbage input
        raise CorruptFileError(
            f"cannot decode Avro file {path} ({len(data)} bytes): {type(exc).__name__}: {exc}"
        ) from exc


# -- partition statistics -------------------------------------------------------------------------
def partition_order_key(value: Any) -> Any:
    """Java's ordering where Python's differs: NaN sorts above every float (Float.compare)."""
    if isinstance(value, float) and math.isnan(value):
        return (1, 0.0)
    if isinstance(value, float):
        return (0, value)
    return value


def partition_stats(partition_counts: Mapping[bytes, int],
                    partition_types: Sequence[DataType]) -> SimpleStats:
    """Min, max and null count per partition column over entries (``count`` per distinct row),
    encoded like Java's all-columns stats (all fields nullable)."""
    arity = len(partition_types)
    if arity == 0:
        return SimpleStats.EMPTY
    mins: list[Any] = [None] * arity
    maxs: list[Any] = [None] * arity
    nulls = [0] * arity
    for raw, n in partition_counts.items():
        values = binary_row.from_avro_bytes(raw, list(partition_types))
        for i, v in enumerate(values):
            if v is None:
                nulls[i] += n
                continue
            if mins[i] is None or partition_order_key(v) < partition_order_key(mins[i]):
                mins[i] = v
            if maxs[i] is None or partition_order_key(v) > partition_order_key(maxs[i]):
                maxs[i] = v
    stat_types = [t.copy(nullable=True) for t in partition_types]
    return SimpleStats(binary_row.to_avro_bytes(mins, stat_types),
                       binary_row.to_avro_bytes(maxs, stat_types), tuple(nulls))


# -- manifest files -------------------------------------------------------------------------------
class ManifestFile:
    """Reads and writes ``manifest/manifest-<uuid>-<n>`` files of one table.

    One instance names its files with one random UUID and a counter, like Java's path factory,
    so all files of a commit share a recognisable stem.
    """

    def __init__(self, file_io: FileIO, table_path: str, partition_types: Sequence[DataType],
                 options: Mapping[str, str] | None = None):
        options = options or {}
        self.file_io = file_io
        self.table_path = table_path
        self.manifest_dir = TablePaths(file_io, table_path).manifest_dir
        self.partition_types = list(partition_types)
        self.target_file_size = CoreOptions(options).manifest_target_file_size
        self._avro = _AvroSettings(options)
        self._uuid = str(uuid.uuid4())
        self._counter = count()
        #: when set, files are collected there instead of written (`DeferredWrites`)
        self.deferred: DeferredWrites | None = None

    @property
    def codec(self) -> str:
        return self._avro.codec

    def path(self, file_name: str) -> str:
        return self.file_io.join(self.manifest_dir, file_name)

    def new_file_name(self) -> str:
        return f"{MANIFEST_PREFIX}{self._uuid}-{next(self._counter)}"

    def read(self, file_name: str) -> list[ManifestEntry]:
        """All entries of one manifest file, in file order."""
        return _read_records(self.file_io, self.path(file_name), _entry_from_record)

    def read_all(self, metas: Iterable[ManifestFileMeta]) -> list[ManifestEntry]:
        return [e for m in metas for e in self.read(m.file_name)]

    def write(self, entries: Iterable[ManifestEntry]) -> list[ManifestFileMeta]:
        """Write entries into as many rolling files as the target size asks for; atomic: on
        failure the files written so far are deleted again."""
        writer = self.create_rolling_writer()
        try:
            writer.write_all(entries)
            return writer.close()
        except BaseException:
            writer.abort()
            raise

    def create_rolling_writer(self) -> ManifestRollingWriter:
        return ManifestRollingWriter(self)

    def delete(self, file_name: str) -> bool:
        return self.file_io.delete(self.path(file_name))

    def delete_quietly(self, file_names: Iterable[str]) -> list[str]:
        """Best-effort cleanup; returns the paths that could not be deleted."""
        return self.file_io.delete_many([self.path(n) for n in file_names])

    # encoding helpers used by the rolling writer
    def _new_avro_writer(self, buf: io.BytesIO) -> Writer:
        return Writer(buf, _ENTRY_SCHEMA, codec=self._avro.codec, sync_interval=_SYNC_INTERVAL,
                      compression_level=self._avro.level)


class _FileStats:
    """What a ManifestFileMeta says about the entries of one file (Java ManifestEntryWriter)."""

    def __init__(self) -> None:
        self.added = 0
        self.deleted = 0
        self.schema_id: int | None = None
        self.min_bucket: int | None = None
        self.max_bucket: int | None = None
        self.min_level: int | None = None
        self.max_level: int | None = None
        self.row_ids_known = True
        self.min_row_id: int | None = None
        self.max_row_id: int | None = None
        self.partitions: dict[bytes, int] = {}

    def add(self, e: ManifestEntry) -> None:
        f = e.file
        if e.kind == FileKind.ADD:
            self.added += 1
        elif e.kind == FileKind.DELETE:
            self.deleted += 1
        else:
            raise ValueError(f"unknown manifest entry kind {e.kind!r} for {f.file_name}")
        self.schema_id = f.schema_id if self.schema_id is None else max(self.schema_id, f.schema_id)
        self.min_bucket = e.bucket if self.min_bucket is None else min(self.min_bucket, e.bucket)
        self.max_bucket = e.bucket if self.max_bucket is None else max(self.max_bucket, e.bucket)
        self.min_level = f.level if self.min_level is None else min(self.min_level, f.level)
        self.max_level = f.level if self.max_level is None else max(self.max_level, f.level)
        if self.row_ids_known:
            if f.first_row_id is None:
                self.row_ids_known = False
                self.min_row_id = self.max_row_id = None
            else:
                last = f.first_row_id + f.row_count - 1
                self.min_row_id = f.first_row_id if self.min_row_id is None else min(
                    self.min_row_id, f.first_row_id)
                self.max_row_id = last if self.max_row_id is None else max(self.max_row_id, last)
        self.partitions[e.partition] = self.partitions.get(e.partition, 0) + 1

    def to_meta(self, name: str, size: int,
                partition_types: Sequence[DataType]) -> ManifestFileMeta:
        assert self.schema_id is not None, "a manifest file always holds at least one entry"
        return ManifestFileMeta(
            file_name=name, file_size=size, num_added_files=self.added,
            num_deleted_files=self.deleted,
            partition_stats=partition_stats(self.partitions, partition_types),
            schema_id=self.schema_id, min_bucket=self.min_bucket, max_bucket=self.max_bucket,
            min_level=self.min_level, max_level=self.max_level,
            min_row_id=self.min_row_id, max_row_id=self.max_row_id,
        )


class ManifestRollingWriter:
    """Streams entries into manifest files, starting a new file once the current one reaches
    the target size. As in Java, the size is looked at every 1000 records (counted across
    files) and is the size of the Avro blocks already flushed."""

    def __init__(self, manifest_file: ManifestFile):
        self._mf = manifest_file
        self._records = 0
        self._buf: io.BytesIO | None = None
        self._writer: Writer | None = None
        self._stats: _FileStats | None = None
        self._written: list[ManifestFileMeta] = []
        self._closed = False

    @property
    def written(self) -> list[ManifestFileMeta]:
        """Files completed so far (what :meth:`abort` would delete)."""
        return list(self._written)

    def write(self, entry: ManifestEntry) -> None:
        if self._closed:
            raise ValueError("manifest writer is closed")
        if self._writer is None:
            self._buf = io.BytesIO()
            self._writer = self._mf._new_avro_writer(self._buf)
            self._stats = _FileStats()
        assert self._stats is not None and self._buf is not None
        self._stats.add(entry)
        self._writer.write(entry.to_avro())
        self._records += 1
        if (self._records % CHECK_ROLLING_RECORD_COUNT == 0
                and self._buf.tell() >= self._mf.target_file_size):
            self._finish_file()

    def write_all(self, entries: Iterable[ManifestEntry]) -> None:
        for e in entries:
            self.write(e)

    def _finish_file(self) -> None:
        assert self._writer is not None and self._buf is not None and self._stats is not None
        self._writer.flush()
        data = self._buf.getvalue()
        name = self._mf.new_file_name()
        stats = self._stats
        self._writer = self._buf = self._stats = None
        meta = stats.to_meta(name, len(data), self._mf.partition_types)
        self._written.append(meta)  # before writing, so abort() also removes a partial file
        write_metadata(self._mf.file_io, self._mf.path(name), data, self._mf.deferred)

    def close(self) -> list[ManifestFileMeta]:
        """Finish the last file; returns the metas of every file written, in order."""
        if not self._closed:
            if self._writer is not None:
                self._finish_file()
            self._closed = True
        return list(self._written)

    def abort(self) -> None:
        """Forget buffered entries and delete every file this writer wrote (best effort)."""
        self._closed = True
        self._writer = self._buf = self._stats = None
        self._mf.delete_quietly([m.file_name for m in self._written])
        self._written.clear()


# -- manifest lists -------------------------------------------------------------------------------
class ManifestList:
    """Reads and writes ``manifest/manifest-list-<uuid>-<n>`` files (lists of manifest files)."""

    def __init__(self, file_io: FileIO, table_path: str, options: Mapping[str, str] | None = None):
        self.file_io = file_io
        self.manifest_dir = TablePaths(file_io, table_path).manifest_dir
        self._avro = _AvroSettings(options or {})
        self._uuid = str(uuid.uuid4())
        self._counter = count()
        #: when set, files are collected there instead of written (`DeferredWrites`)
        self.deferred: DeferredWrites | None = None

    def path(self, file_name: str) -> str:
        return self.file_io.join(self.manifest_dir, file_name)

    def new_file_name(self) -> str:
        return f"{MANIFEST_LIST_PREFIX}{self._uuid}-{next(self._counter)}"

    def read(self, file_name: str) -> list[ManifestFileMeta]:
        return _read_records(self.file_io, self.path(file_name), _meta_from_record)

    def write(self, metas: Sequence[ManifestFileMeta]) -> tuple[str, int]:
        """Write one list file (empty lists too: a first snapshot's base list is empty)."""
        buf = io.BytesIO()
        writer = Writer(buf, _META_SCHEMA, codec=self._avro.codec, sync_interval=_SYNC_INTERVAL,
                        compression_level=self._avro.level)
        for m in metas:
            writer.write(m.to_avro())
        writer.flush()
        data = buf.getvalue()
        name = self.new_file_name()
        write_metadata(self.file_io, self.path(name), data, self.deferred)
        return name, len(data)

    def delete(self, file_name: str) -> bool:
        return self.file_io.delete(self.path(file_name))
