"""Deletion-vector tables as Java's writers leave them, for the tests.

lakeformat's writers mark only rows their lookup compaction replaces, so this helper plays the
part of a Java DELETE with the
library's parts: `mark_deleted` commits deletion vectors for rows of live files (what a Spark
DELETE on an append table does).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from lakeformat.meta.deletion_vector import read_deleted, serialize_vector, write_index_file
from lakeformat.meta.index_manifest import IndexManifestFile
from lakeformat.operation.commit import FileStoreCommit
from lakeformat.operation.scan import FileStoreScan


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
