"""Deletion-vector tables as Java's writers leave them, for the tests.

lakeformat's own writers do not produce deletion vectors (a primary-key table with
`deletion-vectors.enabled` refuses writes), so these helpers play Java's part with the
library's parts: `mark_deleted` commits deletion vectors for rows of live files (what a Spark
DELETE on an append table does), `lookup_compact` moves a bucket's level-0 files up and marks
the older rows of their keys deleted (what Java's lookup compaction leaves for a deduplicate
table).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow.compute as pc

from lakeformat.meta.binary_row import from_avro_bytes
from lakeformat.meta.deletion_vector import read_deleted, serialize_vector, write_index_file
from lakeformat.meta.index_manifest import IndexManifestFile
from lakeformat.operation.commit import CommitMessage, FileStoreCommit
from lakeformat.operation.data_file_read import read_data_file
from lakeformat.operation.paths import PathFactory
from lakeformat.operation.scan import FileStoreScan
from lakeformat.schema.schema_manager import SchemaManager


def live_entries(table) -> list:
    return FileStoreScan(table.file_io, table.path, table.table_schema).live_entries(
        table.snapshot_manager.latest_snapshot())


def _index_entries(table, marks: Mapping[str, Sequence[int]]) -> list:
    """One DELETION_VECTORS index file per bucket holding the bucket's vectors, old ones
    (of files not in `marks`) carried over and merged with the new positions."""
    scan = FileStoreScan(table.file_io, table.path, table.table_schema)
    latest = table.snapshot_manager.latest_snapshot()
    current = scan.deletion_files(latest)
    where = {e.file.file_name: (e.partition, e.bucket) for e in scan.live_entries(latest)}

    per_bucket: dict[tuple[bytes, int], dict[str, bytes]] = {}
    for key, files in current.items():
        for name, deletion in files.items():
            per_bucket.setdefault(key, {})[name] = serialize_vector(
                read_deleted(table.file_io, deletion))
    for name, positions in marks.items():
        key = where[name]
        old = current.get(key, {}).get(name)
        merged = np.asarray(positions, dtype=np.int64)
        if old is not None:
            merged = np.union1d(merged, read_deleted(table.file_io, old))
        per_bucket.setdefault(key, {})[name] = serialize_vector(merged)
    index_file = IndexManifestFile(table.file_io, table.path, table.table_schema.options)
    return [write_index_file(index_file, p, b, frames)
            for (p, b), frames in sorted(per_bucket.items()) if (p, b) in
            {where[n] for n in marks}]


def mark_deleted(table, marks: Mapping[str, Sequence[int]]):
    """Commit deletion vectors marking row positions of live data files deleted (file name ->
    positions), as an OVERWRITE snapshot changing only the index, as Java's DELETE does."""
    entries = _index_entries(table, marks)
    committer = FileStoreCommit(table.file_io, table.path, table.table_schema)
    return committer.commit([], kind="OVERWRITE", index_added=entries,
                            index_base=table.snapshot_manager.latest_snapshot().index_manifest)


def lookup_compact(table, level: int = 4):
    """Java's lookup compaction of a deduplicate table, in small: every level-0 file moves up to
    `level` and the rows its keys had in higher levels get deletion vectors. The level-0
    files of one bucket must not overlap each other (one write per bucket)."""
    schema = table.table_schema
    keys = list(schema.primary_keys)
    entries = live_entries(table)
    scan = FileStoreScan(table.file_io, table.path, schema)
    current = scan.deletion_files(table.snapshot_manager.latest_snapshot())
    manager = SchemaManager(table.file_io, table.path)
    marks: dict[str, np.ndarray] = {}
    messages = []
    for e in entries:
        if e.file.level != 0:
            continue
        new_keys = _read(table, e, keys, manager).select(keys)
        for old in entries:
            if old.file.level == 0 or (old.partition, old.bucket) != (e.partition, e.bucket):
                continue
            rows = _read(table, old, keys, manager).select(keys)
            hit = pc.is_in(rows[keys[0]], value_set=new_keys[keys[0]])
            for k in keys[1:]:  # exact enough for the tests' keys (one column in practice)
                hit = pc.and_(hit, pc.is_in(rows[k], value_set=new_keys[k]))
            positions = np.flatnonzero(hit.to_numpy(zero_copy_only=False))
            dv = current.get((old.partition, old.bucket), {}).get(old.file.file_name)
            if dv is not None:
                positions = np.setdiff1d(positions, read_deleted(table.file_io, dv))
            if len(positions):
                marks[old.file.file_name] = np.union1d(
                    marks.get(old.file.file_name, np.zeros(0, np.int64)), positions)
        messages.append(CommitMessage(e.partition, e.bucket, e.total_buckets,
                                      new_files=[e.file.upgrade(level)],
                                      deleted_files=[e.file]))
    index = _index_entries(table, marks) if marks else []
    committer = FileStoreCommit(table.file_io, table.path, schema)
    return committer.commit(messages, kind="COMPACT", index_added=index,
                            index_base=table.snapshot_manager.latest_snapshot().index_manifest)


def _read(table, entry, columns, manager):
    """Every row of one data file, deleted or not (positions are file positions)."""
    schema = table.table_schema
    values = tuple(from_avro_bytes(entry.partition, [f.type for f in schema.partition_fields()]))
    path = PathFactory(table.file_io, table.path, schema).data_file(values, entry.bucket,
                                                                   entry.file)
    return read_data_file(table.file_io, path, entry.file, schema, manager, columns,
                          schema.options.get("file.format", "parquet"))
