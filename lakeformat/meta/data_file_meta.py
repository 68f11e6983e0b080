"""Typed values of the Avro manifest records: DataFileMeta, ManifestEntry, ManifestFileMeta.

Rows (partition, keys, stats) stay as the exact serialized BinaryRow bytes found on disk (4-byte
arity prefix included), so a file read and written back is byte-identical and identifiers compare
the way Java compares ``BinaryRow``s: by bytes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import IntEnum
from typing import Any, ClassVar

from lakeformat.errors import CorruptFileError

__all__ = [
    "EMPTY_ROW_BYTES",
    "MANIFEST_VERSION",
    "DataFileMeta",
    "FileKind",
    "FileSource",
    "Identifier",
    "ManifestEntry",
    "ManifestFileMeta",
    "SimpleStats",
    "describe_identifier",
    "merge_entries",
]

#: Serialized arity-0 BinaryRow (arity prefix + 8-byte header/null-bits word): the partition of
#: an unpartitioned table, and the min/max rows of empty stats.
EMPTY_ROW_BYTES: bytes = b"\x00\x00\x00\x00" + b"\x00" * 8
#: ``_VERSION`` of manifest entries and manifest-list records; Paimon refuses version 1.
MANIFEST_VERSION = 2
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_MS = timedelta(milliseconds=1)


def _millis(value: Any) -> int | None:
    """``_CREATION_TIME`` as stored: fastavro hands timestamp-millis back as a UTC datetime."""
    if value is None or isinstance(value, int):
        return value
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return (value - _EPOCH) // _ONE_MS
    raise TypeError(f"unexpected _CREATION_TIME value {value!r}")


def _tuple_or_none(value: Any) -> tuple[Any, ...] | None:
    return None if value is None else tuple(value)


def _list_or_none(value: Sequence[Any] | None) -> list[Any] | None:
    return None if value is None else list(value)


class FileKind(IntEnum):
    """``_KIND`` of a manifest entry."""

    ADD = 0
    DELETE = 1


class FileSource(IntEnum):
    """``_FILE_SOURCE``: whether a writer or a compaction produced the file."""

    APPEND = 0
    COMPACT = 1


@dataclass(frozen=True)
class SimpleStats:
    """Min/max rows and per-column null counts (``_KEY_STATS``, ``_VALUE_STATS``, ...)."""

    min_values: bytes
    max_values: bytes
    null_counts: tuple[int | None, ...] | None

    EMPTY: ClassVar[SimpleStats]

    def to_avro(self) -> dict[str, Any]:
        return {"_MIN_VALUES": self.min_values, "_MAX_VALUES": self.max_values,
                "_NULL_COUNTS": _list_or_none(self.null_counts)}

    @staticmethod
    def from_avro(rec: Mapping[str, Any]) -> SimpleStats:
        return SimpleStats(rec["_MIN_VALUES"], rec["_MAX_VALUES"],
                           _tuple_or_none(rec.get("_NULL_COUNTS")))


SimpleStats.EMPTY = SimpleStats(EMPTY_ROW_BYTES, EMPTY_ROW_BYTES, ())


@dataclass(frozen=True)
class DataFileMeta:
    """One data (or changelog) file as a manifest describes it (Java ``DataFileMeta``)."""

    file_name: str
    file_size: int
    row_count: int
    min_key: bytes
    max_key: bytes
    key_stats: SimpleStats
    value_stats: SimpleStats
    min_sequence_number: int
    max_sequence_number: int
    schema_id: int
    level: int
    extra_files: tuple[str, ...] = ()
    creation_time: int | None = None  # epoch millis of a local wall-clock time, as stored
    delete_row_count: int | None = None
    embedded_index: bytes | None = None
    file_source: int | None = None  # FileSource value
    value_stats_cols: tuple[str, ...] | None = None
    external_path: str | None = None
    first_row_id: int | None = None
    write_cols: tuple[str, ...] | None = None

    def upgrade(self, new_level: int) -> DataFileMeta:
        """The file moved up the LSM tree without rewriting, as compaction's upgrade does."""
        if new_level <= self.level:
            raise ValueError(
                f"upgrade of {self.file_name} must raise its level, got {self.level} -> {new_level}"
            )
        return dataclasses.replace(self, level=new_level)

    @property
    def all_files(self) -> tuple[str, ...]:
        """The data file and its sidecars (all live in the same directory)."""
        return (self.file_name, *self.extra_files)

    def to_avro(self) -> dict[str, Any]:
        """The ``_FILE`` record, Java's 20 fields (``_WRITE_COLS_SEQUENCES`` is not written)."""
        return {
            "_FILE_NAME": self.file_name,
            "_FILE_SIZE": self.file_size,
            "_ROW_COUNT": self.row_count,
            "_MIN_KEY": self.min_key,
            "_MAX_KEY": self.max_key,
            "_KEY_STATS": self.key_stats.to_avro(),
            "_VALUE_STATS": self.value_stats.to_avro(),
            "_MIN_SEQUENCE_NUMBER": self.min_sequence_number,
            "_MAX_SEQUENCE_NUMBER": self.max_sequence_number,
            "_SCHEMA_ID": self.schema_id,
            "_LEVEL": self.level,
            "_EXTRA_FILES": list(self.extra_files),
            "_CREATION_TIME": self.creation_time,
            "_DELETE_ROW_COUNT": self.delete_row_count,
            "_EMBEDDED_FILE_INDEX": self.embedded_index,
            "_FILE_SOURCE": None if self.file_source is None else int(self.file_source),
            "_VALUE_STATS_COLS": _list_or_none(self.value_stats_cols),
            "_EXTERNAL_PATH": self.external_path,
            "_FIRST_ROW_ID": self.first_row_id,
            "_WRITE_COLS": _list_or_none(self.write_cols),
        }

    @staticmethod
    def from_avro(f: Mapping[str, Any]) -> DataFileMeta:
        """Read by field name: fields newer than the writer's Paimon version become None."""
        return DataFileMeta(
            file_name=f["_FILE_NAME"],
            file_size=f["_FILE_SIZE"],
            row_count=f["_ROW_COUNT"],
            min_key=f["_MIN_KEY"],
            max_key=f["_MAX_KEY"],
            key_stats=SimpleStats.from_avro(f["_KEY_STATS"]),
            value_stats=SimpleStats.from_avro(f["_VALUE_STATS"]),
            min_sequence_number=f["_MIN_SEQUENCE_NUMBER"],
            max_sequence_number=f["_MAX_SEQUENCE_NUMBER"],
            schema_id=f["_SCHEMA_ID"],
            level=f["_LEVEL"],
            extra_files=tuple(f.get("_EXTRA_FILES") or ()),
            creation_time=_millis(f.get("_CREATION_TIME")),
            delete_row_count=f.get("_DELETE_ROW_COUNT"),
            embedded_index=f.get("_EMBEDDED_FILE_INDEX"),
            file_source=f.get("_FILE_SOURCE"),
            value_stats_cols=_tuple_or_none(f.get("_VALUE_STATS_COLS")),
            external_path=f.get("_EXTERNAL_PATH"),
            first_row_id=f.get("_FIRST_ROW_ID"),
            write_cols=_tuple_or_none(f.get("_WRITE_COLS")),
        )


#: Java's ``FileEntry.Identifier``: (partition, bucket, level, file name, extra files,
#: embedded index, external path). Two entries with the same identifier are the same file.
Identifier = tuple[bytes, int, int, str, tuple[str, ...], bytes | None, str | None]


@dataclass(frozen=True)
class ManifestEntry:
    """One ``ADD`` or ``DELETE`` of a data file in one partition and bucket."""

    kind: int  # FileKind value
    partition: bytes
    bucket: int
    total_buckets: int
    file: DataFileMeta

    @property
    def identifier(self) -> Identifier:
        f = self.file
        return (self.partition, self.bucket, f.level, f.file_name, f.extra_files,
                f.embedded_index, f.external_path)

    @property
    def level(self) -> int:
        return self.file.level

    @property
    def file_name(self) -> str:
        return self.file.file_name

    def with_kind(self, kind: int) -> ManifestEntry:
        """The same file with another kind; a commit deletes a live file this way."""
        return dataclasses.replace(self, kind=FileKind(kind))

    def to_avro(self) -> dict[str, Any]:
        return {"_VERSION": MANIFEST_VERSION, "_KIND": int(self.kind),
                "_PARTITION": self.partition, "_BUCKET": self.bucket,
                "_TOTAL_BUCKETS": self.total_buckets, "_FILE": self.file.to_avro()}

    @staticmethod
    def from_avro(rec: Mapping[str, Any]) -> ManifestEntry:
        """The caller checks ``_VERSION`` (it knows the file to name in the error)."""
        return ManifestEntry(FileKind(rec["_KIND"]), rec["_PARTITION"], rec["_BUCKET"],
                             rec["_TOTAL_BUCKETS"], DataFileMeta.from_avro(rec["_FILE"]))

    @staticmethod
    def add(partition: bytes, bucket: int, total_buckets: int,
            file: DataFileMeta) -> ManifestEntry:
        return ManifestEntry(FileKind.ADD, partition, bucket, total_buckets, file)

    @staticmethod
    def delete(partition: bytes, bucket: int, total_buckets: int,
               file: DataFileMeta) -> ManifestEntry:
        return ManifestEntry(FileKind.DELETE, partition, bucket, total_buckets, file)


@dataclass(frozen=True)
class ManifestFileMeta:
    """One manifest file as a manifest list describes it (Java ``ManifestFileMeta``)."""

    file_name: str
    file_size: int
    num_added_files: int
    num_deleted_files: int
    partition_stats: SimpleStats
    schema_id: int
    min_bucket: int | None = None
    max_bucket: int | None = None
    min_level: int | None = None
    max_level: int | None = None
    min_row_id: int | None = None
    max_row_id: int | None = None

    def to_avro(self) -> dict[str, Any]:
        return {
            "_VERSION": MANIFEST_VERSION,
            "_FILE_NAME": self.file_name,
            "_FILE_SIZE": self.file_size,
            "_NUM_ADDED_FILES": self.num_added_files,
            "_NUM_DELETED_FILES": self.num_deleted_files,
            "_PARTITION_STATS": self.partition_stats.to_avro(),
            "_SCHEMA_ID": self.schema_id,
            "_MIN_BUCKET": self.min_bucket,
            "_MAX_BUCKET": self.max_bucket,
            "_MIN_LEVEL": self.min_level,
            "_MAX_LEVEL": self.max_level,
            "_MIN_ROW_ID": self.min_row_id,
            "_MAX_ROW_ID": self.max_row_id,
        }

    @staticmethod
    def from_avro(rec: Mapping[str, Any]) -> ManifestFileMeta:
        """Read by field name; the bucket/level (Paimon 1.2+) and row-id (1.4+) ranges may be
        absent and then read as None."""
        return ManifestFileMeta(
            file_name=rec["_FILE_NAME"],
            file_size=rec["_FILE_SIZE"],
            num_added_files=rec["_NUM_ADDED_FILES"],
            num_deleted_files=rec["_NUM_DELETED_FILES"],
            partition_stats=SimpleStats.from_avro(rec["_PARTITION_STATS"]),
            schema_id=rec["_SCHEMA_ID"],
            min_bucket=rec.get("_MIN_BUCKET"),
            max_bucket=rec.get("_MAX_BUCKET"),
            min_level=rec.get("_MIN_LEVEL"),
            max_level=rec.get("_MAX_LEVEL"),
            min_row_id=rec.get("_MIN_ROW_ID"),
            max_row_id=rec.get("_MAX_ROW_ID"),
        )


def describe_identifier(identifier: Identifier) -> str:
    """Readable form of an identifier for error messages."""
    part, bucket, level, name, extra, index, ext = identifier
    text = f"file {name} (partition 0x{part.hex()}, bucket {bucket}, level {level}"
    if extra:
        text += f", extra files {list(extra)}"
    if index is not None:
        text += f", embedded index of {len(index)} bytes"
    if ext is not None:
        text += f", external path {ext}"
    return text + ")"


def merge_entries(entries: Iterable[ManifestEntry]) -> list[ManifestEntry]:
    """Live files of a set of manifests: ADD entries whose identifier no DELETE names.

    This is how Java and pypaimon scan a snapshot (deletes apply regardless of order). An
    identifier added twice means corrupt metadata (Java's merge fails the same way), so we stop
    instead of reading a file twice. Order: first appearance of each live ADD.
    """
    deleted: set[Identifier] = set()
    added: dict[Identifier, ManifestEntry] = {}
    for entry in entries:
        ident = entry.identifier
        if entry.kind == FileKind.ADD:
            if ident in added:
                raise CorruptFileError(
                    f"manifest entries add {describe_identifier(ident)} twice"
                )
            added[ident] = entry
        elif entry.kind == FileKind.DELETE:
            deleted.add(ident)
        else:
            raise CorruptFileError(
                f"unknown manifest entry kind {entry.kind!r} for {describe_identifier(ident)}"
            )
    return [e for ident, e in added.items() if ident not in deleted]
