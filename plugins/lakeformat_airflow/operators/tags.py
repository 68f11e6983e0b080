"""Tags and rollback: `LakeformatCreateTagOperator`, `LakeformatRollbackOperator`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lakeformat.errors import InvalidArgumentError
from lakeformat_airflow.operators.base import (
    LakeformatBaseOperator,
    check_count,
    check_duration,
    templated,
)
from lakeformat_airflow.operators.maintenance import DryRunMixin


class LakeformatCreateTagOperator(LakeformatBaseOperator):
    """Tag a snapshot (default the latest) so expiry keeps its files, e.g. a tag per day:
    `tag="daily-{{ ds }}"`, `time_retained="30 d"`. A re-run finds its tag: with
    `exist_ok=True` (default) an existing tag of that name is reported, not an error."""

    template_fields: Sequence[str] = ("table", "tag", "snapshot_id", "time_retained")

    def __init__(self, *, table: str, tag: str, snapshot_id: int | None = None,
                 time_retained: Any = None, exist_ok: bool = True, **kwargs: Any):
        super().__init__(table=table, **kwargs)
        if not templated(tag) and (not isinstance(tag, str) or not tag.strip()):
            raise InvalidArgumentError(f"tag must be a non-empty name, got {tag!r}")
        check_count("snapshot_id", snapshot_id)
        check_duration("time_retained", time_retained)
        self.tag, self.snapshot_id = tag, snapshot_id
        self.time_retained, self.exist_ok = time_retained, exist_ok

    def run(self, table: Any, context: Any) -> Any:
        import lakeformat as lf

        snapshot_id = int(self.snapshot_id) if self.snapshot_id not in (None, "") else None
        try:
            return table.create_tag(self.tag, snapshot_id=snapshot_id,
                                    time_retained=self.time_retained or None)
        except lf.TagAlreadyExistsError:
            if not self.exist_ok:
                raise
            existing = next(t for t in table.list_tags() if t.name == self.tag)
            if snapshot_id is not None and existing.snapshot_id != snapshot_id:
                raise lf.TagAlreadyExistsError(
                    f"tag {self.tag!r} of {table.name} already exists on snapshot "
                    f"{existing.snapshot_id}, not {snapshot_id}") from None
            self.log.info("tag %s already exists", self.tag)
            return existing


class LakeformatRollbackOperator(DryRunMixin, LakeformatBaseOperator):
    """Make a snapshot id (int) or a tag (str) the table's latest state (`Table.rollback_to`):
    later snapshots and tags are deleted. `dry_run` lists them and changes nothing."""

    template_fields: Sequence[str] = ("table", "to")
    writes_table = True

    def __init__(self, *, table: str, to: int | str, dry_run: bool = False, **kwargs: Any):
        super().__init__(table=table, **kwargs)
        if not templated(to) and (isinstance(to, bool) or not isinstance(to, (int, str))
                                  or to == "" or (isinstance(to, int) and to < 1)):
            raise InvalidArgumentError(f"to must be a snapshot id (>= 1) or a tag name, got {to!r}")
        self._check_dry_run(dry_run)
        self.to, self.dry_run = to, dry_run

    def changed(self, result: Any) -> bool:
        return not result.dry_run and bool(result.deleted)

    def run(self, table: Any, context: Any) -> Any:
        target = self.to
        if isinstance(target, str) and target.strip().isdigit():
            target = int(target)
        return table.rollback_to(target, dry_run=self.dry_run)
