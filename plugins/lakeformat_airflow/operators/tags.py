"""Tags and rollback: `LakeformatCreateTagOperator`, `LakeformatExpireTagsOperator`,
`LakeformatRollbackOperator`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from lakeformat_airflow.operators.base import (
    LakeformatBaseOperator,
    bad_argument,
    to_count,
    to_duration,
    to_flag,
    to_name,
)

if TYPE_CHECKING:
    from lakeformat import Table


def to_snapshot_or_tag(name: str, value: Any) -> int | str:
    """A snapshot id (>= 1; digits as a template renders them) or a tag name."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, int) and not isinstance(value, bool):
        if value >= 1:
            return value
    elif isinstance(value, str) and value.strip():
        return value.strip()
    raise bad_argument(name, value, "a snapshot id (>= 1) or a tag name")


class LakeformatCreateTagOperator(LakeformatBaseOperator):
    """Tag a snapshot (default the latest) so expiry keeps its files, e.g. a tag per day:
    `tag="daily-{{ ds }}"`, `time_retained="30 d"`. A re-run finds its tag: with
    `exist_ok=True` (default) an existing tag of that name is reported, not an error."""

    arguments = {"tag": to_name, "snapshot_id": to_count, "time_retained": to_duration,
                 "exist_ok": to_flag}
    template_fields: Sequence[str] = ("table", *arguments)

    def __init__(self, *, table: str, tag: str, snapshot_id: int | None = None,
                 time_retained: Any = None, exist_ok: bool = True, **kwargs: Any):
        super().__init__(table=table, **kwargs)
        self.tag, self.snapshot_id = tag, snapshot_id
        self.time_retained, self.exist_ok = time_retained, exist_ok
        self.convert_arguments(rendered=False)

    def run(self, table: Table, context: Any) -> Any:
        import lakeformat as lf

        snapshot_id = self.snapshot_id
        try:
            return table.create_tag(self.tag, snapshot_id=snapshot_id,
                                    time_retained=self.time_retained)
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


class LakeformatExpireTagsOperator(LakeformatBaseOperator):
    """Expire tags as Paimon's `expire_tags` procedure does (`Table.expire_tags`): every tag
    past its `time_retained` goes, with the files only it held; with `older_than` (an age such
    as "30 d", or a datetime cut-off) every tag created before it too. Tags without retention
    are otherwise kept. `dry_run` lists what would be deleted and changes nothing."""

    arguments = {"older_than": to_duration, "dry_run": to_flag}
    template_fields: Sequence[str] = ("table", *arguments)

    def __init__(self, *, table: str, older_than: Any = None, dry_run: bool = False,
                 **kwargs: Any):
        super().__init__(table=table, **kwargs)
        self.older_than, self.dry_run = older_than, dry_run
        self.convert_arguments(rendered=False)

    def run(self, table: Table, context: Any) -> Any:
        return table.expire_tags(older_than=self.older_than, dry_run=self.dry_run)


class LakeformatRollbackOperator(LakeformatBaseOperator):
    """Make a snapshot id (an int, or digits once rendered) or a tag (text) the table's latest
    state (`Table.rollback_to`): later snapshots and tags are deleted. `dry_run` lists them and
    changes nothing."""

    arguments = {"to": to_snapshot_or_tag, "dry_run": to_flag}
    template_fields: Sequence[str] = ("table", *arguments)
    writes_table = True

    def __init__(self, *, table: str, to: int | str, dry_run: bool = False, **kwargs: Any):
        super().__init__(table=table, **kwargs)
        self.to, self.dry_run = to, dry_run
        self.convert_arguments(rendered=False)

    def changed(self, result: Any) -> bool:
        return not result.dry_run and bool(result.deleted)

    def run(self, table: Table, context: Any) -> Any:
        return table.rollback_to(self.to, dry_run=self.dry_run)
