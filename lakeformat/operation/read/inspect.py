"""A table's metadata as Arrow tables: Paimon's system tables (`t$snapshots`, `$files`,
`$partitions`, `$manifests`, `$schemas`, `$tags`) under their own column names, plus
`buckets()` (the LSM shape maintenance looks at) and `history()` (delta-rs' commit log).

Instants Paimon stores as epoch millis (a snapshot's `timeMillis`, a schema's) are
`timestamp[ms, tz=UTC]`. A data file's `_CREATION_TIME` and a tag's create time are Java
`LocalDateTime.now()` — the writer's wall clock, with no zone — so they stay zone-less
`timestamp[ms]` rather than be converted with a guessed zone.

Columns are built from the decoded manifest entries column by column (one attribute read per
entry, each distinct partition decoded once); sums and counts per partition and bucket are
pyarrow group-bys.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.errors import LakeformatError
from lakeformat.layout import bucket_dir_name
from lakeformat.meta.binary_row import from_avro_bytes
from lakeformat.meta.data_file_meta import FileSource, ManifestEntry, ManifestFileMeta
from lakeformat.meta.partition import partition_path, partition_value_text
from lakeformat.meta.snapshot import Snapshot, SnapshotManager, operation_of
from lakeformat.meta.tag import TagManager
from lakeformat.operation.paths import PathFactory
from lakeformat.operation.scan import FileStoreScan
from lakeformat.options import CoreOptions
from lakeformat.schema.schema_manager import SchemaManager
from lakeformat.schema.table_schema import TableSchema
from lakeformat.schema.types import DataField, DataType, arrow_schema
from lakeformat.storage import FileIO
from lakeformat.storage.parallel import parallel_map

UTC_MS = pa.timestamp("ms", tz="UTC")
LOCAL_MS = pa.timestamp("ms")  # a writer's local wall-clock time, as Paimon stores it
STRINGS = pa.list_(pa.string())
PROPERTIES = pa.map_(pa.string(), pa.string())

#: (snapshot id, tag) -> the snapshot (None: the table has none yet) and the schema to read it
Resolve = Callable[[int | None, str | None], tuple[Snapshot | None, TableSchema]]

SNAPSHOTS = pa.schema([
    ("snapshot_id", pa.int64()), ("schema_id", pa.int64()), ("commit_user", pa.string()),
    ("commit_identifier", pa.int64()), ("commit_kind", pa.string()), ("commit_time", UTC_MS),
    ("base_manifest_list", pa.string()), ("delta_manifest_list", pa.string()),
    ("changelog_manifest_list", pa.string()), ("total_record_count", pa.int64()),
    ("delta_record_count", pa.int64()), ("changelog_record_count", pa.int64()),
    ("watermark", pa.int64()), ("next_row_id", pa.int64()), ("operation", pa.string()),
    ("properties", PROPERTIES),
])
FILES = [  # after `partition` and the typed partition columns
    ("bucket", pa.int32()), ("total_buckets", pa.int32()), ("file_name", pa.string()),
    ("file_path", pa.string()), ("file_format", pa.string()), ("schema_id", pa.int64()),
    ("level", pa.int32()), ("record_count", pa.int64()), ("file_size_in_bytes", pa.int64()),
    ("min_key", pa.string()), ("max_key", pa.string()), ("min_sequence_number", pa.int64()),
    ("max_sequence_number", pa.int64()), ("creation_time", LOCAL_MS),
    ("delete_row_count", pa.int64()), ("file_source", pa.string()),
]
PARTITIONS = [("record_count", pa.int64()), ("file_size_in_bytes", pa.int64()),
              ("file_count", pa.int64()), ("bucket_count", pa.int64()),
              ("last_update_time", LOCAL_MS)]
BUCKETS = [("bucket", pa.int32()), ("total_buckets", pa.int32()), ("file_count", pa.int64()),
           ("sorted_runs", pa.int64()), ("level0_files", pa.int64()),
           ("max_level", pa.int32()), ("record_count", pa.int64()),
           ("file_size_in_bytes", pa.int64()), ("last_update_time", LOCAL_MS)]
MANIFESTS = pa.schema([
    ("file_name", pa.string()), ("file_size", pa.int64()), ("num_added_files", pa.int64()),
    ("num_deleted_files", pa.int64()), ("schema_id", pa.int64()),
    ("min_partition_stats", pa.string()), ("max_partition_stats", pa.string()),
    ("min_bucket", pa.int32()), ("max_bucket", pa.int32()), ("min_level", pa.int32()),
    ("max_level", pa.int32()), ("min_row_id", pa.int64()), ("max_row_id", pa.int64()),
    ("manifest_list", pa.string()),
])
SCHEMAS = pa.schema([
    ("schema_id", pa.int64()), ("fields", pa.string()), ("partition_keys", STRINGS),
    ("primary_keys", STRINGS), ("options", pa.string()), ("comment", pa.string()),
    ("update_time", UTC_MS),
])
TAGS = pa.schema([
    ("tag_name", pa.string()), ("snapshot_id", pa.int64()), ("schema_id", pa.int64()),
    ("commit_time", UTC_MS), ("record_count", pa.int64()), ("create_time", LOCAL_MS),
    ("time_retained", pa.duration("ms")),
])



def _column(values: Sequence[Any] | pa.Array, type_: pa.DataType) -> pa.Array:
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return values.cast(type_)
    if pa.types.is_timestamp(type_):  # epoch millis, cast without a detour through datetime
        return pa.array(values, pa.int64()).cast(type_)
    return pa.array(values, type_)


def _table(columns: dict[str, Any], schema: pa.Schema) -> pa.Table:
    return pa.table([_column(columns[f.name], f.type) for f in schema], schema=schema)


def _read_snapshots(manager: SnapshotManager, ids: Sequence[int]) -> list[Snapshot]:
    """The snapshots of `ids` still there (one expired while we listed is left out)."""
    def read(snapshot_id: int) -> Snapshot | None:
        try:
            return manager.snapshot(snapshot_id)
        except FileNotFoundError:
            return None
    return [s for s in parallel_map(read, ids) if s is not None]


def _values_text(values: Sequence[Any], types: Sequence[DataType]) -> str:
    """`[2024-01-01, 3]`: a row of partition (or key) values as text, null as `null`."""
    out = []
    for v, t in zip(values, types, strict=True):
        try:
            text = partition_value_text(v, t, legacy_name=False)
        except LakeformatError:
            text = str(v)
        out.append("null" if text is None else text)
    return "[" + ", ".join(out) + "]"


def _row_text(raw: bytes, types: Sequence[DataType]) -> str | None:
    try:
        return _values_text(from_avro_bytes(raw, types), types)
    except LakeformatError:  # a row this schema cannot decode is shown as unknown
        return None


class _Partitions:
    """The distinct partitions of a list of entries: each decoded once, with per-entry codes."""

    def __init__(self, schema: TableSchema, raw: Sequence[bytes]):
        self.fields: list[DataField] = schema.partition_fields()
        types = [f.type for f in self.fields]
        encoded = pa.array(raw, pa.binary()).dictionary_encode()
        self.codes = encoded.indices
        self.values = [from_avro_bytes(b, types) for b in encoded.dictionary.to_pylist()]
        default = CoreOptions(schema.options).partition_default_name
        self.specs = [self._spec(v, default) for v in self.values]
        typed = arrow_schema(self.fields, with_id=False)
        self.typed = pa.table([pa.array([v[i] for v in self.values], f.type)
                               for i, f in enumerate(typed)], schema=typed)

    def _spec(self, values: Sequence[Any], default: str) -> str:
        try:
            return partition_path(values, self.fields, default, False)
        except LakeformatError:
            return "/".join(f"{f.name}={v}" for f, v in zip(self.fields, values, strict=True))

    def columns(self, codes: pa.Array, taken: set[str]) -> dict[str, pa.Array]:
        """`partition` (its path text) and one typed column per partition key, for each code;
        a key named like a column of the system table itself is `partition_<key>`."""
        out = {"partition": pa.array(self.specs, pa.string()).take(codes)}
        for name, col in zip(self.typed.column_names, self.typed.columns, strict=True):
            label = f"partition_{name}" if name in taken or name == "partition" else name
            out[label] = col.take(codes)
        return out


def _with_partitions(parts: _Partitions, codes: pa.Array, body: pa.Table,
                     sort: Sequence[str] = ()) -> pa.Table:
    """`body` behind the partition columns of `codes`, sorted by partition values then `sort`."""
    cols = parts.columns(codes, set(body.column_names))
    table = pa.table({**cols, **dict(zip(body.column_names, body.columns, strict=True))})
    keys = [c for c in cols if c != "partition"] + list(sort)
    return table.sort_by([(k, "ascending") for k in keys]) if keys and table.num_rows else table


class TableInspect:
    """`Table.inspect`: each method reads the metadata it needs when called."""

    def __init__(self, file_io: FileIO, table_path: str, table_name: str, resolve: Resolve):
        self.file_io = file_io
        self.table_path = table_path
        self.table_name = table_name
        self._resolve = resolve

    def __repr__(self) -> str:
        return f"TableInspect({self.table_name!r})"

    # -- snapshots and history -------------------------------------------------------------------
    def snapshots(self) -> pa.Table:
        """Every retained snapshot, oldest first (Paimon's `$snapshots`)."""
        self._resolve(None, None)  # a dropped table raises here
        manager = SnapshotManager(self.file_io, self.table_path)
        return self._snapshot_table(_read_snapshots(manager, manager.snapshot_ids()))

    def _snapshot_table(self, snaps: Sequence[Snapshot]) -> pa.Table:
        cols: dict[str, list[Any]] = {f.name: [] for f in SNAPSHOTS}
        for s in snaps:
            for name, value in (
                    ("snapshot_id", s.id), ("schema_id", s.schema_id),
                    ("commit_user", s.commit_user), ("commit_identifier", s.commit_identifier),
                    ("commit_kind", s.commit_kind), ("commit_time", s.time_millis),
                    ("base_manifest_list", s.base_manifest_list),
                    ("delta_manifest_list", s.delta_manifest_list),
                    ("changelog_manifest_list", s.changelog_manifest_list),
                    ("total_record_count", s.total_record_count),
                    ("delta_record_count", s.delta_record_count),
                    ("changelog_record_count", s.changelog_record_count),
                    ("watermark", s.watermark), ("next_row_id", s.next_row_id),
                    ("operation", operation_of(s)),
                    ("properties", list((s.properties or {}).items()))):
                cols[name].append(value)
        return _table(cols, SNAPSHOTS)

    def history(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The commit log newest first, as delta-rs' `history()`: one dict per retained
        snapshot (at most `limit`), reading only those snapshot files."""
        self._resolve(None, None)
        manager = SnapshotManager(self.file_io, self.table_path)
        ids = manager.snapshot_ids()[::-1]
        if limit is not None:
            ids = ids[:max(0, int(limit))]
        table = self._snapshot_table(_read_snapshots(manager, ids))
        out = []
        for row in table.to_pylist():
            row["properties"] = dict(row["properties"] or [])
            out.append({"version": row["snapshot_id"], "timestamp": row.pop("commit_time"),
                        **row})
        return out

    # -- files, partitions, buckets --------------------------------------------------------------
    def _entries(self, snapshot_id: int | None, tag: str | None
                 ) -> tuple[TableSchema, list[ManifestEntry]]:
        snap, schema = self._resolve(snapshot_id, tag)
        return schema, FileStoreScan(self.file_io, self.table_path, schema).live_entries(snap)

    @staticmethod
    def _core(entries: Sequence[ManifestEntry]) -> pa.Table:
        """What every per-file table shares, one column at a time."""
        files = [e.file for e in entries]
        return pa.table({
            "bucket": pa.array([e.bucket for e in entries], pa.int32()),
            "total_buckets": pa.array([e.total_buckets for e in entries], pa.int32()),
            "level": pa.array([f.level for f in files], pa.int32()),
            "record_count": pa.array([f.row_count for f in files], pa.int64()),
            "file_size_in_bytes": pa.array([f.file_size for f in files], pa.int64()),
            "creation_time": _column([f.creation_time for f in files], LOCAL_MS),
        })

    def files(self, snapshot_id: int | None = None, tag: str | None = None) -> pa.Table:
        """Live data files of a snapshot (latest by default, or a tag's), Paimon's `$files`:
        `partition` (its path text) and the typed partition columns, then one column per
        file attribute; sorted by partition, bucket, level and file name."""
        schema, entries = self._entries(snapshot_id, tag)
        parts = _Partitions(schema, [e.partition for e in entries])
        core = self._core(entries)
        files = [e.file for e in entries]
        names = pa.array([f.file_name for f in files], pa.string())
        key_types = [f.type for f in schema.key_fields()]
        paths = PathFactory(self.file_io, self.table_path, schema)
        dirs = [paths.partition_dir(v) for v in parts.values]
        codes = parts.codes.to_numpy(zero_copy_only=False)
        path_list = [f.external_path or self.file_io.join(
            dirs[c], bucket_dir_name(e.bucket), f.file_name)
            for c, e, f in zip(codes.tolist(), entries, files, strict=True)]
        sources = {int(s): s.name for s in FileSource}
        body = {
            "bucket": core["bucket"], "total_buckets": core["total_buckets"],
            "file_name": names, "file_path": pa.array(path_list, pa.string()),
            "file_format": pc.if_else(pc.match_substring(names, "."),
                                      pc.replace_substring_regex(names, r"^.*\.", ""), None),
            "schema_id": pa.array([f.schema_id for f in files], pa.int64()),
            "level": core["level"], "record_count": core["record_count"],
            "file_size_in_bytes": core["file_size_in_bytes"],
            "min_key": pa.array([_row_text(f.min_key, key_types) for f in files], pa.string()),
            "max_key": pa.array([_row_text(f.max_key, key_types) for f in files], pa.string()),
            "min_sequence_number": pa.array([f.min_sequence_number for f in files], pa.int64()),
            "max_sequence_number": pa.array([f.max_sequence_number for f in files], pa.int64()),
            "creation_time": core["creation_time"],
            "delete_row_count": pa.array([f.delete_row_count for f in files], pa.int64()),
            "file_source": pa.array([sources.get(f.file_source)  # type: ignore[arg-type]
                                     for f in files], pa.string()),
        }
        table = _table(body, pa.schema(FILES))
        return _with_partitions(parts, parts.codes, table, ["bucket", "level", "file_name"])

    def partitions(self, snapshot_id: int | None = None, tag: str | None = None) -> pa.Table:
        """One row per partition with live files (Paimon's `$partitions`): `record_count`
        sums the files' records (before merging: updates and retracts count), `bucket_count`
        the buckets holding files, `last_update_time` the newest file's creation time."""
        schema, entries = self._entries(snapshot_id, tag)
        parts = _Partitions(schema, [e.partition for e in entries])
        core = self._core(entries).append_column("code", parts.codes)
        grouped = core.group_by("code").aggregate([
            ("record_count", "sum"), ("file_size_in_bytes", "sum"),
            ("file_size_in_bytes", "count"), ("bucket", "count_distinct"),
            ("creation_time", "max")])
        body = pa.table([grouped[f"{src}_{agg}"].cast(t) for (_, t), (src, agg) in zip(
            PARTITIONS, [("record_count", "sum"), ("file_size_in_bytes", "sum"),
                         ("file_size_in_bytes", "count"), ("bucket", "count_distinct"),
                         ("creation_time", "max")], strict=True)],
            names=[n for n, _ in PARTITIONS])
        return _with_partitions(parts, grouped["code"], body)

    def buckets(self, snapshot_id: int | None = None, tag: str | None = None) -> pa.Table:
        """One row per (partition, bucket) with live files — the LSM shape compaction works
        on: `sorted_runs` counts each level-0 file and each non-empty higher level."""
        schema, entries = self._entries(snapshot_id, tag)
        parts = _Partitions(schema, [e.partition for e in entries])
        core = self._core(entries)
        level = core["level"].combine_chunks()
        ones = pa.array(np.ones(core.num_rows, dtype=np.int64))
        run = pc.if_else(pc.equal(level, 0),
                         pa.array(-np.arange(1, core.num_rows + 1, dtype=np.int64)),
                         pc.cast(level, pa.int64()))
        core = core.append_column("code", parts.codes).append_column("run", run) \
            .append_column("level0", pc.if_else(pc.equal(level, 0), ones, 0))
        aggs = [("total_buckets", "max"), ("level", "count"), ("run", "count_distinct"),
                ("level0", "sum"), ("level", "max"), ("record_count", "sum"),
                ("file_size_in_bytes", "sum"), ("creation_time", "max")]
        grouped = core.group_by(["code", "bucket"]).aggregate(aggs)
        body = pa.table([grouped["bucket"].cast(pa.int32())]
                        + [grouped[f"{src}_{agg}"].cast(t)
                           for (_, t), (src, agg) in zip(BUCKETS[1:], aggs, strict=True)],
                        names=[n for n, _ in BUCKETS])
        return _with_partitions(parts, grouped["code"], body, ["bucket"])

    # -- manifests, schemas, tags ----------------------------------------------------------------
    def manifests(self, snapshot_id: int | None = None, tag: str | None = None) -> pa.Table:
        """The data manifests of a snapshot (Paimon's `$manifests`): those of its base list,
        then its delta list (`manifest_list` says which), with their partition ranges."""
        snap, schema = self._resolve(snapshot_id, tag)
        if snap is None:
            return MANIFESTS.empty_table()
        scan = FileStoreScan(self.file_io, self.table_path, schema)
        listed: list[tuple[str, ManifestFileMeta]] = []
        for which, name in (("base", snap.base_manifest_list),
                            ("delta", snap.delta_manifest_list)):
            listed += [(which, m) for m in scan.read_list(name)]
        types = [f.type for f in schema.partition_fields()]
        cols: dict[str, list[Any]] = {f.name: [] for f in MANIFESTS}
        for which, m in listed:
            stats = m.partition_stats
            for name, value in (
                    ("file_name", m.file_name), ("file_size", m.file_size),
                    ("num_added_files", m.num_added_files),
                    ("num_deleted_files", m.num_deleted_files), ("schema_id", m.schema_id),
                    ("min_partition_stats", _row_text(stats.min_values, types)),
                    ("max_partition_stats", _row_text(stats.max_values, types)),
                    ("min_bucket", m.min_bucket), ("max_bucket", m.max_bucket),
                    ("min_level", m.min_level), ("max_level", m.max_level),
                    ("min_row_id", m.min_row_id), ("max_row_id", m.max_row_id),
                    ("manifest_list", which)):
                cols[name].append(value)
        return _table(cols, MANIFESTS)

    def schemas(self) -> pa.Table:
        """Every schema version still on storage (Paimon's `$schemas`): `fields` and `options`
        as the JSON the schema file holds, the keys as lists."""
        self._resolve(None, None)
        found = SchemaManager(self.file_io, self.table_path).list_all()
        cols: dict[str, list[Any]] = {f.name: [] for f in SCHEMAS}
        for s in found:
            for name, value in (
                    ("schema_id", s.id),
                    ("fields", json.dumps([f.to_json() for f in s.fields], ensure_ascii=False)),
                    ("partition_keys", list(s.partition_keys)),
                    ("primary_keys", list(s.primary_keys)),
                    ("options", json.dumps(dict(s.options), ensure_ascii=False)),
                    ("comment", s.comment), ("update_time", s.time_millis)):
                cols[name].append(value)
        return _table(cols, SCHEMAS)

    def tags(self) -> pa.Table:
        """Every tag, by tagged snapshot id then name (Paimon's `$tags`): `record_count` is the
        tagged snapshot's total record count, `time_retained` null for a tag kept forever."""
        self._resolve(None, None)
        found = TagManager(self.file_io, self.table_path).tags()
        cols: dict[str, list[Any]] = {f.name: [] for f in TAGS}
        for t in found:
            for name, value in (
                    ("tag_name", t.name), ("snapshot_id", t.snapshot_id),
                    ("schema_id", t.snapshot.schema_id), ("commit_time", t.snapshot.time_millis),
                    ("record_count", t.snapshot.total_record_count),
                    ("create_time", t.create_time), ("time_retained", t.time_retained)):
                cols[name].append(value)
        # datetimes and timedeltas (Java keeps nanoseconds): truncated to milliseconds
        cols["create_time"] = pa.array(cols["create_time"], pa.timestamp("us")).cast(
            LOCAL_MS, safe=False)
        cols["time_retained"] = pa.array(cols["time_retained"], pa.duration("us")).cast(
            pa.duration("ms"), safe=False)
        return _table(cols, TAGS)
