"""Before a column type change is published: do the stored values convert?

Paimon's cast rules allow changes such as STRING -> INT whose values may not convert; Java
accepts the change and then fails every read that meets 'abc'. lakeformat reads, for each such
column, only that column of the live files of the latest snapshot (vectorized, files in a
thread pool) and refuses the change naming column, value, cast and file. A writer that commits
old-schema files after this check is caught on read instead (`read._projected`).
"""

from __future__ import annotations

import os

from lakeformat.data.file_read import read_data_file
from lakeformat.errors import SchemaMismatchError
from lakeformat.meta.binary_row import from_avro_bytes
from lakeformat.meta.data_file_meta import ManifestEntry
from lakeformat.meta.snapshot import Snapshot
from lakeformat.operation.paths import PathFactory
from lakeformat.operation.scan import FileStoreScan
from lakeformat.options import CoreOptions
from lakeformat.schema.checked_casts import ValueCastError, can_fail
from lakeformat.schema.schema_manager import SchemaManager
from lakeformat.schema.table_schema import TableSchema
from lakeformat.storage import FileIO
from lakeformat.storage.parallel import parallel_map


def check_stored_values(file_io: FileIO, table_path: str, table_name: str, old: TableSchema,
                        new: TableSchema, schema_manager: SchemaManager,
                        snapshot: Snapshot | None) -> None:
    """Raise SchemaMismatchError if a stored value of a column whose type `new` changes does
    not convert to its new type (see `schema.checked_casts` for what converts)."""
    before = {f.id: f for f in old.fields}
    changed = [f for f in new.fields
               if f.id in before and can_fail(before[f.id].type, f.type)]
    if not changed or snapshot is None:
        return
    scan = FileStoreScan(file_io, table_path, old)
    paths = PathFactory(file_io, table_path, old)
    part_types = [f.type for f in old.partition_fields()]
    default_format = CoreOptions(old.options).file_format

    def check(entry: ManifestEntry) -> None:
        meta = entry.file
        file_schema = old if meta.schema_id == old.id else schema_manager.schema(meta.schema_id)
        stored = {f.id: f.type for f in file_schema.fields}
        columns = [f.name for f in changed if f.id in stored and can_fail(stored[f.id], f.type)]
        if not columns:
            return
        path = paths.data_file(from_avro_bytes(entry.partition, part_types), entry.bucket, meta)
        try:  # reading the file under the new schema converts its values as every read will
            read_data_file(file_io, path, meta, new, schema_manager, columns, default_format)
        except ValueCastError as e:
            raise SchemaMismatchError(f"{table_name}: schema change refused: {e}; fix or "
                                      "delete the rows holding it first") from None

    # reading data files is CPU work: one check per CPU at a time
    parallel_map(check, list(scan.live_entries(snapshot)), os.cpu_count() or 2)
