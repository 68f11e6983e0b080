"""The schema side of a write: per-write options, and merge-schema's evolution of the table.

A merge-schema write (`write.merge-schema`) first publishes the table's next schema version —
the latest schema widened to accept the incoming columns — and then writes the rows under it.
That happens on the driver in the write job's plan step, as Paimon's Spark writer merges the
schema before it writes. A schema version is validated here before it is published (create,
alter and merge-schema alike).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from lakeformat.errors import InvalidOptionError
from lakeformat.merge import merge_engine
from lakeformat.operation.write.conform_input import conform_merged, data_fields
from lakeformat.options import CoreOptions, parse_bool
from lakeformat.schema.merging import (
    EXPLICIT_CAST,
    MERGE_SCHEMA,
    TYPE_WIDENING,
    MergeSchemaOptions,
    merge_schemas,
)
from lakeformat.schema.schema_manager import SchemaManager
from lakeformat.schema.table_schema import TableSchema

#: the options a single write may set over the table's (everything else goes through alter)
WRITE_OPTIONS = (MERGE_SCHEMA, TYPE_WIDENING, EXPLICIT_CAST)


def validate_table_schema(schema: TableSchema) -> None:
    """The checks a new schema version passes before it is published (create and alter)."""
    _ = schema.trimmed_primary_keys  # raises when the key is only partition columns
    _ = schema.bucket_keys  # raises when bucket-key names a missing column
    opts = CoreOptions(schema.options)
    opts.validate()
    _validate_bucket(schema, opts)
    if schema.primary_keys:
        merge_engine(schema)  # building the engine checks its options


def _validate_bucket(schema: TableSchema, opts: CoreOptions) -> None:
    """Paimon's bucket rules (SchemaValidation.validateBucket): no `bucket-key` with
    bucket = -1, and a bucketed append table needs one (rows have no key to hash)."""
    if opts.bucket == -1 and schema.options.get("bucket-key") is not None:
        raise InvalidOptionError("Cannot define 'bucket-key' with bucket = -1: remove the "
                                 "'bucket-key' setting or give a bucket number")
    if not schema.primary_keys and opts.changelog_producer != "none":
        raise InvalidOptionError(f"Can not set changelog-producer={opts.changelog_producer} "
                                 "on a table without primary keys")
    if opts.bucket > 0 and not schema.primary_keys and not schema.bucket_keys:
        raise InvalidOptionError(f"append table with bucket={opts.bucket}: define a "
                                 "'bucket-key' for bucketed append mode (or bucket=-1)")


def write_options(schema: TableSchema, options: dict[str, Any] | None) -> dict[str, str]:
    """The table's options overlaid with a write's own (`write.merge-schema*` only)."""
    per_write = {str(k): str(v).lower() if isinstance(v, bool) else str(v)
                 for k, v in (options or {}).items()}
    unknown = sorted(set(per_write) - set(WRITE_OPTIONS))
    if unknown:
        raise InvalidOptionError(f"unknown per-write options {unknown}; supported: "
                                 f"{list(WRITE_OPTIONS)} (table options go through alter)")
    return {**schema.options, **per_write}


def wants_merge_schema(options: dict[str, str], merge_schema: bool | None) -> bool:
    return parse_bool(options, MERGE_SCHEMA, False) if merge_schema is None else merge_schema


def evolve_for_write(schemas: SchemaManager, data: pa.Table, options: dict[str, str]
                     ) -> tuple[TableSchema, pa.Table]:
    """Publish the schema that accepts `data` (unless the latest already does) and return it
    with the rows conformed to it. The rows are checked against the new schema before it is
    published: data the merge refuses leaves the table as it was."""
    merge_opts = MergeSchemaOptions.of(options)
    fields = data_fields(data.schema)
    conformed: dict[str, pa.Table] = {}

    def make_next(latest: TableSchema) -> TableSchema:
        merged = merge_schemas(latest, fields, merge_opts)
        if merged is not latest:
            validate_table_schema(merged)
        conformed["rows"] = conform_merged(data, merged, merge_opts)
        return merged

    schema = schemas.commit_next(make_next)
    return schema, conformed["rows"]
