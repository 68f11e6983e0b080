"""Writing rows: the write job (`job`), the per-bucket file writers (`table_write`), input
conformed to the table (`conform_input`), schema evolution on write (`merge_schema`) and the value
checks an ALTER needs (`alter_check`), bucket assignment for dynamic and cross-partition tables
(`dynamic_bucket`, `cross_partition`) and delete-by-predicate (`delete_where`)."""

from __future__ import annotations

from lakeformat.operation.write.alter_check import (
    check_stored_values,
)
from lakeformat.operation.write.conform_input import (
    as_table,
    conform,
    conform_merged,
)
from lakeformat.operation.write.delete_where import (
    DeleteWhere,
)
from lakeformat.operation.write.job import (
    RENUMBER_GAP,
    WriteJob,
    delete_rows,
    write_table,
)
from lakeformat.operation.write.merge_schema import (
    evolve_for_write,
    validate_table_schema,
    wants_merge_schema,
    write_options,
)
from lakeformat.operation.write.table_write import (
    TableWrite,
    WriteUnit,
    check_bucket_count,
)

__all__ = [
    "DeleteWhere",
    "RENUMBER_GAP",
    "TableWrite",
    "WriteJob",
    "WriteUnit",
    "as_table",
    "check_bucket_count",
    "check_stored_values",
    "conform",
    "conform_merged",
    "delete_rows",
    "evolve_for_write",
    "validate_table_schema",
    "wants_merge_schema",
    "write_options",
    "write_table",
]
