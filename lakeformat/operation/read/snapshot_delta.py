"""Which partitions one snapshot changed: the partitions its *delta* manifest list adds or
deletes data files in.

A snapshot's `deltaManifestList` holds only the changes of that commit (an APPEND's new files,
a COMPACT's replaced and replacing files, an OVERWRITE's dropped and written files), so the
partitions named by its entries are exactly the partitions the commit touched — what a
"wait for new data in partition dt=2024-01-01" check needs, without reading the table's whole
file list (`baseManifestList`).

Cost: one manifest-list read, then one read per delta manifest that may hold the partition
asked for. A manifest list records each manifest's partition range (min/max per partition
column, null counts); a manifest whose range excludes the asked value is not read. Entries are
never decoded per file beyond their partition bytes, and each distinct partition row is decoded
once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from lakeformat.errors import InvalidArgumentError
from lakeformat.meta.binary_row import from_avro_bytes
from lakeformat.meta.data_file_meta import ManifestFileMeta
from lakeformat.meta.manifest import partition_order_key
from lakeformat.meta.partition import typed_partition_value
from lakeformat.meta.snapshot import Snapshot
from lakeformat.operation.scan import FileStoreScan
from lakeformat.schema.table_schema import TableSchema
from lakeformat.storage import FileIO


def partition_spec(schema: TableSchema, spec: Mapping[str, Any] | None,
                   table: str = "table") -> dict[str, Any] | None:
    """`spec` (`{key: value}`, values as text or Python values) checked against the table's
    partition keys and converted to the columns' types, the way compaction's `partitions`
    argument is: `"2024-01-01"` becomes a `date` for a DATE column, `"7"` an int for an INT one.
    A key that is not a partition key is an error naming it. `None` or `{}` means no spec."""
    if not spec:
        return None
    if not isinstance(spec, Mapping):
        raise InvalidArgumentError(f"partition must be a {{key: value}} mapping, got {spec!r}")
    keys = list(schema.partition_keys)
    if not keys:
        raise InvalidArgumentError(f"partition {dict(spec)} given but {table} is not "
                                   "partitioned")
    unknown = [k for k in spec if k not in keys]
    if unknown:
        raise InvalidArgumentError(
            f"partition {dict(spec)} names {', '.join(map(repr, unknown))}, not a partition "
            f"key of {table}; its partition keys are {keys}")
    return {k: typed_partition_value(schema, k, v) for k, v in spec.items()}


def _manifest_may_hold(meta: ManifestFileMeta, spec: Mapping[str, Any],
                       keys: Sequence[str], types: Sequence[Any]) -> bool:
    """False only when the manifest's partition range proves no entry has the spec's values;
    unreadable or incomparable stats never skip a manifest."""
    stats = meta.partition_stats
    try:
        lo = from_avro_bytes(stats.min_values, list(types))
        hi = from_avro_bytes(stats.max_values, list(types))
    except Exception:  # noqa: BLE001 - stats are a hint: read the manifest instead
        return True
    nulls = stats.null_counts
    for key, value in spec.items():
        i = keys.index(key)
        if value is None:
            if nulls is not None and i < len(nulls) and nulls[i] == 0:
                return False
            continue
        if lo[i] is None and hi[i] is None:  # every entry's value is null
            return False
        try:
            if lo[i] is not None and partition_order_key(value) < partition_order_key(lo[i]):
                return False
            if hi[i] is not None and partition_order_key(value) > partition_order_key(hi[i]):
                return False
        except TypeError:
            continue
    return True


def delta_partitions(file_io: FileIO, table_path: str, schema: TableSchema,
                     snapshot: Snapshot, spec: Mapping[str, Any] | None = None
                     ) -> list[dict[str, Any]]:
    """The distinct partitions (`{key: value}`, in first-seen order) in which `snapshot`'s
    delta adds or deletes data files; with `spec` (typed, from `partition_spec`) only those
    whose values equal the spec's. An unpartitioned table's one partition is `{}`."""
    scan = FileStoreScan(file_io, table_path, schema)
    keys = list(schema.partition_keys)
    metas = scan.read_list(snapshot.delta_manifest_list)
    if spec and keys:
        metas = [m for m in metas if _manifest_may_hold(m, spec, keys, scan.partition_types)]
    seen: dict[bytes, None] = {}
    for entries in scan.read_manifests([m.file_name for m in metas]).values():
        for e in entries:
            seen.setdefault(e.partition, None)
    out = []
    for raw in seen:
        values = dict(zip(keys, from_avro_bytes(raw, scan.partition_types)))
        if spec and any(values.get(k) != v for k, v in spec.items()):
            continue
        out.append(values)
    return out
