"""The maintenance operators: snapshot expiry, schema-file retention, orphan-file removal,
partition expiry. Each takes `dry_run` (list exactly what would be deleted, change nothing);
the retention arguments default to the table's options (`snapshot.num-retained.min`,
`snapshot.time-retained`, `partition.expiration-time`, ...), as in Paimon. Every argument may
be a template (`retain_min="{{ params.keep }}"`), converted and checked once rendered."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from lakeformat.errors import InvalidArgumentError
from lakeformat_airflow.operators.base import (
    LakeformatBaseOperator,
    to_count,
    to_duration,
    to_flag,
)

if TYPE_CHECKING:
    from lakeformat import Table


class LakeformatExpireSnapshotsOperator(LakeformatBaseOperator):
    """Expire old snapshots and the files only they used (`Table.expire_snapshots`): keep at
    least `retain_min`, at most `retain_max`, expire those older than `older_than`, delete at
    most `max_deletes` snapshots per run."""

    arguments = {"retain_min": to_count, "retain_max": to_count, "older_than": to_duration,
                 "max_deletes": to_count, "dry_run": to_flag}
    template_fields: Sequence[str] = ("table", *arguments)

    def __init__(self, *, table: str, retain_min: int | None = None,
                 retain_max: int | None = None, older_than: Any = None,
                 max_deletes: int | None = None, dry_run: bool = False, **kwargs: Any):
        super().__init__(table=table, **kwargs)
        self.retain_min, self.retain_max = retain_min, retain_max
        self.older_than, self.max_deletes, self.dry_run = older_than, max_deletes, dry_run
        self.convert_arguments(rendered=False)

    def check_arguments(self) -> None:
        low, high = self.retain_min, self.retain_max
        if isinstance(low, int) and isinstance(high, int) and high < low:
            raise InvalidArgumentError(f"retain_max ({high}) must be >= retain_min ({low})")

    def run(self, table: Table, context: Any) -> Any:
        return table.expire_snapshots(retain_min=self.retain_min, retain_max=self.retain_max,
                                      older_than=self.older_than,
                                      max_deletes=self.max_deletes, dry_run=self.dry_run)


class LakeformatCleanSchemasOperator(LakeformatBaseOperator):
    """Schema-file retention (`Table.clean_schemas`): delete schema files no retained snapshot,
    tag or data file needs, keeping the newest `retain_min` and those younger than
    `older_than` (Paimon itself keeps every schema file forever).

    `compact_manifests=True` first commits Paimon's manifest compaction (a COMPACT snapshot of
    the same data whose manifests name only live files): after a full compaction the replaced
    files' DELETE entries keep their schemas referenced until then. Those schemas go once the
    snapshots before it expire — so in a maintenance cycle this runs between compaction and
    expiry, and a second `clean_schemas` after expiry deletes them (`lakeformat_maintenance`
    does that). The XCom's `kept` says why each schema stays.
    """

    arguments = {"retain_min": to_count, "older_than": to_duration, "dry_run": to_flag,
                 "compact_manifests": to_flag}
    template_fields: Sequence[str] = ("table", *arguments)

    def __init__(self, *, table: str, retain_min: int | None = None, older_than: Any = None,
                 dry_run: bool = False, compact_manifests: bool = False, **kwargs: Any):
        super().__init__(table=table, **kwargs)
        self.retain_min, self.older_than, self.dry_run = retain_min, older_than, dry_run
        self.compact_manifests = compact_manifests
        self.convert_arguments(rendered=False)

    def run(self, table: Table, context: Any) -> Any:
        return table.clean_schemas(retain_min=self.retain_min, older_than=self.older_than,
                                   dry_run=self.dry_run,
                                   compact_manifests=self.compact_manifests)


class LakeformatRemoveOrphanFilesOperator(LakeformatBaseOperator):
    """Delete files under the table nothing references, older than `older_than` (default
    1 day; less than 1 hour is refused unless `enforce_retention_duration=False`, for cleanup
    after a crash when no writer runs)."""

    arguments = {"older_than": to_duration, "dry_run": to_flag,
                 "enforce_retention_duration": to_flag}
    template_fields: Sequence[str] = ("table", *arguments)

    def __init__(self, *, table: str, older_than: Any = None, dry_run: bool = False,
                 enforce_retention_duration: bool = True, **kwargs: Any):
        super().__init__(table=table, **kwargs)
        self.older_than, self.dry_run = older_than, dry_run
        self.enforce_retention_duration = enforce_retention_duration
        self.convert_arguments(rendered=False)

    def run(self, table: Table, context: Any) -> Any:
        return table.remove_orphan_files(
            older_than=self.older_than, dry_run=self.dry_run,
            enforce_retention_duration=self.enforce_retention_duration)


class LakeformatExpirePartitionsOperator(LakeformatBaseOperator):
    """Drop partitions whose time (read from their values) is older than `expiration_time`
    (default the table's `partition.expiration-time`), as one OVERWRITE commit."""

    arguments = {"expiration_time": to_duration, "dry_run": to_flag}
    template_fields: Sequence[str] = ("table", *arguments)
    writes_table = True

    def __init__(self, *, table: str, expiration_time: Any = None, dry_run: bool = False,
                 **kwargs: Any):
        super().__init__(table=table, **kwargs)
        self.expiration_time, self.dry_run = expiration_time, dry_run
        self.convert_arguments(rendered=False)

    def changed(self, result: Any) -> bool:
        return not result.dry_run and bool(result.partitions_expired)

    def run(self, table: Table, context: Any) -> Any:
        return table.expire_partitions(expiration_time=self.expiration_time,
                                       dry_run=self.dry_run)
