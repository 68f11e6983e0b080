"""Reading a table and its metadata: the read of a snapshot's rows (`table_read`), the
metadata tables (`inspect`), what a snapshot changed (`snapshot_delta`), the watch over new
snapshots that sensors and triggers poll (`snapshot_watch`) and hand-offs to other dataframe
libraries (`interchange`).

Nothing here writes to the table."""

from __future__ import annotations

from lakeformat.operation.read.inspect import (
    TableInspect,
)
from lakeformat.operation.read.interchange import (
    to_polars,
)
from lakeformat.operation.read.snapshot_delta import (
    delta_partitions,
    partition_spec,
)
from lakeformat.operation.read.snapshot_watch import (
    SnapshotWatch,
    snapshot_info,
)
from lakeformat.operation.read.table_read import (
    ReadPlan,
    TableRead,
)

__all__ = [
    "ReadPlan",
    "SnapshotWatch",
    "TableInspect",
    "TableRead",
    "delta_partitions",
    "partition_spec",
    "snapshot_info",
    "to_polars",
]
