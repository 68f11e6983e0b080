"""Maintenance that removes what a table no longer needs, and the verbs on snapshots and tags:
snapshot expiry (`expire`), changelog expiry (`changelog_expire`), partition expiry
(`partition_expire`), schema-file retention (`schema_retention`), orphan-file removal
(`orphan_files`), tags (`tags`) and rollback (`rollback`). What every one of them must keep is
computed once in `references`; deleting with the safety margin (`OlderThan`) is `cleanup`.

A new maintenance verb is a module here, exported below and offered by a thin verb on
`Table`."""

from __future__ import annotations

from lakeformat.operation.maintain.changelog_expire import (
    expire_changelogs,
)
from lakeformat.operation.maintain.cleanup import (
    OlderThan,
    past_cutoff_millis,
)
from lakeformat.operation.maintain.expire import (
    ExpirePlan,
    ExpireRange,
    expire_range,
    expire_snapshots,
    first_snapshot,
    plan_expire,
    read_snapshots,
)
from lakeformat.operation.maintain.orphan_files import (
    remove_orphan_files,
)
from lakeformat.operation.maintain.partition_expire import (
    EXPIRY_OPTIONS as PARTITION_EXPIRY_OPTIONS,
)
from lakeformat.operation.maintain.partition_expire import (
    PartitionExpiry,
    TimeParseError,
    compile_formatter,
    expire_partitions,
    expired_partitions,
    extract_time,
    partition_update_times,
)
from lakeformat.operation.maintain.partition_expire import (
    expiry_options as partition_expiry_options,
)
from lakeformat.operation.maintain.partition_expire import (
    max_per_run as partitions_per_run,
)
from lakeformat.operation.maintain.references import (
    ReferenceScan,
    TableReferences,
)
from lakeformat.operation.maintain.rollback import (
    rollback_to,
)
from lakeformat.operation.maintain.schema_retention import (
    clean_schemas,
    compact_manifests,
)
from lakeformat.operation.maintain.schema_retention import (
    explain as explain_kept_schemas,
)
from lakeformat.operation.maintain.schema_retention import (
    plan as plan_schema_retention,
)
from lakeformat.operation.maintain.schema_retention import (
    retention as schema_retention_settings,
)
from lakeformat.operation.maintain.tag_auto import (
    AutoTagResult,
    check_auto_tags,
    check_manual_tag,
    create_auto_tags,
)
from lakeformat.operation.maintain.tag_auto import (
    after_commit as auto_tags_after_commit,
)
from lakeformat.operation.maintain.tag_expire import (
    expire_tags,
    expired_tags,
    past_retention,
)
from lakeformat.operation.maintain.tag_period import (
    TagAutoOptions,
    tag_auto_options,
)
from lakeformat.operation.maintain.tags import (
    create_tag,
    delete_tag,
    list_tags,
)

__all__ = [
    "AutoTagResult",
    "TagAutoOptions",
    "auto_tags_after_commit",
    "check_auto_tags",
    "check_manual_tag",
    "create_auto_tags",
    "expire_tags",
    "expired_tags",
    "past_retention",
    "tag_auto_options",
    "PARTITION_EXPIRY_OPTIONS",
    "ExpirePlan",
    "ExpireRange",
    "OlderThan",
    "PartitionExpiry",
    "ReferenceScan",
    "TableReferences",
    "TimeParseError",
    "clean_schemas",
    "compact_manifests",
    "compile_formatter",
    "create_tag",
    "delete_tag",
    "expire_changelogs",
    "expire_partitions",
    "expired_partitions",
    "expire_range",
    "expire_snapshots",
    "first_snapshot",
    "explain_kept_schemas",
    "extract_time",
    "list_tags",
    "partition_expiry_options",
    "partition_update_times",
    "partitions_per_run",
    "past_cutoff_millis",
    "plan_expire",
    "plan_schema_retention",
    "read_snapshots",
    "remove_orphan_files",
    "rollback_to",
    "schema_retention_settings",
]
