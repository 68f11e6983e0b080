"""Maintenance that removes what a table no longer needs, and the verbs on snapshots and tags:
snapshot expiry (`expire`), partition expiry (`partition_expire`), schema-file retention
(`schema_retention`), orphan-file removal (`orphan_files`), tags (`tags`) and rollback
(`rollback`). What every one of them must keep is computed once in `references`; deleting with
the safety margin (`OlderThan`) is `cleanup`.

A new maintenance verb is a module here, exported below and offered by a thin verb on
`Table`."""

from __future__ import annotations

from lakeformat.operation.maintain.cleanup import (
    OlderThan,
)
from lakeformat.operation.maintain.expire import (
    expire_snapshots,
)
from lakeformat.operation.maintain.orphan_files import (
    remove_orphan_files,
)
from lakeformat.operation.maintain.partition_expire import (
    PartitionExpiry,
    expire_partitions,
    expired_partitions,
)
from lakeformat.operation.maintain.references import (
    TableReferences,
)
from lakeformat.operation.maintain.rollback import (
    rollback_to,
)
from lakeformat.operation.maintain.schema_retention import (
    clean_schemas,
)
from lakeformat.operation.maintain.tags import (
    create_tag,
    delete_tag,
    list_tags,
)

__all__ = [
    "OlderThan",
    "PartitionExpiry",
    "TableReferences",
    "clean_schemas",
    "create_tag",
    "delete_tag",
    "expire_partitions",
    "expired_partitions",
    "expire_snapshots",
    "list_tags",
    "remove_orphan_files",
    "rollback_to",
]
