"""The maintenance operators: snapshot expiry, schema-file retention, orphan-file removal,
partition expiry. Each takes `dry_run` (list exactly what would be deleted, change nothing);
the retention arguments default to the table's options (`snapshot.num-retained.min`,
`snapshot.time-retained`, `partition.expiration-time`, ...), as in Paimon."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lakeformat.errors import InvalidArgumentError
from lakeformat_airflow.operators.base import (
    LakeformatBaseOperator,
    check_count,
    check_duration,
)


class DryRunMixin:
    def _check_dry_run(self, dry_run: Any) -> None:
        if not isinstance(dry_run, bool):
            raise InvalidArgumentError(f"dry_run must be True or False, got {dry_run!r}")


class LakeformatExpireSnapshotsOperator(DryRunMixin, LakeformatBaseOperator):
    """Expire old snapshots and the files only they used (`Table.expire_snapshots`): keep at
    least `retain_min`, at most `retain_max`, expire those older than `older_than`, delete at
    most `max_deletes` snapshots per run."""

    template_fields: Sequence[str] = ("table", "older_than")

    def __init__(self, *, table: str, retain_min: int | None = None,
                 retain_max: int | None = None, older_than: Any = None,
                 max_deletes: int | None = None, dry_run: bool = False, **kwargs: Any):
        super().__init__(table=table, **kwargs)
        check_count("retain_min", retain_min)
        check_count("retain_max", retain_max)
        check_count("max_deletes", max_deletes)
        if retain_min is not None and retain_max is not None and retain_max < retain_min:
            raise InvalidArgumentError(f"retain_max ({retain_max}) must be >= retain_min "
                                       f"({retain_min})")
        check_duration("older_than", older_than)
        self._check_dry_run(dry_run)
        self.retain_min, self.retain_max = retain_min, retain_max
        self.older_than, self.max_deletes, self.dry_run = older_than, max_deletes, dry_run

    def check_rendered(self) -> None:
        check_duration("older_than", self.older_than or None)

    def run(self, table: Any, context: Any) -> Any:
        return table.expire_snapshots(retain_min=self.retain_min, retain_max=self.retain_max,
                                      older_than=self.older_than or None,
                                      max_deletes=self.max_deletes, dry_run=self.dry_run)


class LakeformatCleanSchemasOperator(DryRunMixin, LakeformatBaseOperator):
    """Schema-file retention (`Table.clean_schemas`): delete schema files no retained snapshot,
    tag or data file needs, keeping the newest `retain_min` and those younger than
    `older_than` (Paimon itself keeps every schema file forever). `compact_manifests=True`
    first commits Paimon's manifest compaction, so schemas only deleted files still name can
    go once the older snapshots expire (the XCom's `kept` says why each schema stays)."""

    template_fields: Sequence[str] = ("table", "older_than")

    def __init__(self, *, table: str, retain_min: int | None = None, older_than: Any = None,
                 dry_run: bool = False, compact_manifests: bool = False, **kwargs: Any):
        super().__init__(table=table, **kwargs)
        check_count("retain_min", retain_min)
        check_duration("older_than", older_than)
        self._check_dry_run(dry_run)
        if not isinstance(compact_manifests, bool):
            raise InvalidArgumentError(f"compact_manifests must be True or False, got "
                                       f"{compact_manifests!r}")
        self.retain_min, self.older_than, self.dry_run = retain_min, older_than, dry_run
        self.compact_manifests = compact_manifests

    def check_rendered(self) -> None:
        check_duration("older_than", self.older_than or None)

    def run(self, table: Any, context: Any) -> Any:
        return table.clean_schemas(retain_min=self.retain_min,
                                   older_than=self.older_than or None, dry_run=self.dry_run,
                                   compact_manifests=self.compact_manifests)


class LakeformatRemoveOrphanFilesOperator(DryRunMixin, LakeformatBaseOperator):
    """Delete files under the table nothing references, older than `older_than` (default
    1 day; less than 1 hour is refused unless `enforce_retention_duration=False`, for cleanup
    after a crash when no writer runs)."""

    template_fields: Sequence[str] = ("table", "older_than")

    def __init__(self, *, table: str, older_than: Any = None, dry_run: bool = False,
                 enforce_retention_duration: bool = True, **kwargs: Any):
        super().__init__(table=table, **kwargs)
        check_duration("older_than", older_than)
        self._check_dry_run(dry_run)
        self.older_than, self.dry_run = older_than, dry_run
        self.enforce_retention_duration = enforce_retention_duration

    def check_rendered(self) -> None:
        check_duration("older_than", self.older_than or None)

    def run(self, table: Any, context: Any) -> Any:
        return table.remove_orphan_files(
            older_than=self.older_than or None, dry_run=self.dry_run,
            enforce_retention_duration=self.enforce_retention_duration)


class LakeformatExpirePartitionsOperator(DryRunMixin, LakeformatBaseOperator):
    """Drop partitions whose time (read from their values) is older than `expiration_time`
    (default the table's `partition.expiration-time`), as one OVERWRITE commit."""

    template_fields: Sequence[str] = ("table", "expiration_time")
    writes_table = True

    def __init__(self, *, table: str, expiration_time: Any = None, dry_run: bool = False,
                 **kwargs: Any):
        super().__init__(table=table, **kwargs)
        check_duration("expiration_time", expiration_time)
        self._check_dry_run(dry_run)
        self.expiration_time, self.dry_run = expiration_time, dry_run

    def check_rendered(self) -> None:
        check_duration("expiration_time", self.expiration_time or None)

    def changed(self, result: Any) -> bool:
        return not result.dry_run and bool(result.partitions_expired)

    def run(self, table: Any, context: Any) -> Any:
        return table.expire_partitions(expiration_time=self.expiration_time or None,
                                       dry_run=self.dry_run)
