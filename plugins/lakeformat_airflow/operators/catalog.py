"""`LakeformatListTablesOperator`: the tables of a warehouse matching a pattern, for dynamic
task mapping (`LakeformatExpireSnapshotsOperator.partial(...).expand(table=tables.output)`)."""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from typing import Any

from airflow.sdk import BaseOperator

from lakeformat.errors import InvalidArgumentError
from lakeformat_airflow import DEFAULT_CONN_ID
from lakeformat_airflow.operators.lineage import TableLineageMixin


def split_patterns(pattern: str) -> list[str]:
    """The comma-separated `db.table` patterns of `pattern`."""
    return [p.strip() for p in pattern.split(",") if p.strip()]


def matching_tables(catalog: Any, pattern: str) -> list[str]:
    """The sorted `db.table` names of `catalog` matching `pattern` (shell-style patterns,
    comma-separated); a database no pattern can match is not listed."""
    patterns = split_patterns(pattern)
    names = [f"{db}.{t}" for db in catalog.list_databases()
             if any(fnmatch.fnmatchcase(db, p.split(".", 1)[0]) for p in patterns)
             for t in catalog.list_tables(db)]
    return sorted(n for n in names if any(fnmatch.fnmatchcase(n, p) for p in patterns))


class LakeformatListTablesOperator(TableLineageMixin, BaseOperator):
    """Return the sorted `db.table` names matching `pattern` (shell-style, `*.*` for every
    table; several patterns comma-separated, e.g. `"shop.*,logs.events"`). Its lineage has
    the tables as inputs, without schema (listing reads none)."""

    template_fields: Sequence[str] = ("pattern",)
    ui_color = "#cfe8f3"
    lineage_role = "read"

    def __init__(self, *, pattern: str = "*.*", lakeformat_conn_id: str = DEFAULT_CONN_ID,
                 **kwargs: Any):
        super().__init__(**kwargs)
        if not isinstance(pattern, str) or not pattern.strip():
            raise InvalidArgumentError(f"pattern must be text such as 'db.*', got {pattern!r}")
        self.pattern = pattern
        self.lakeformat_conn_id = lakeformat_conn_id

    def execute(self, context: Any) -> list[str]:
        import time

        from lakeformat_airflow.hooks.lakeformat import LakeformatHook
        from lakeformat_airflow.operators import metrics
        from lakeformat_airflow.operators.base import library_errors

        started = time.monotonic()
        try:
            with library_errors():
                catalog = LakeformatHook(self.lakeformat_conn_id).get_catalog()
                found = matching_tables(catalog, self.pattern)
        except Exception:
            metrics.emit("list_tables", None, failed=True, logger=self.log)
            raise
        self.record_lineage(catalog.warehouse, [(name, None) for name in found])
        metrics.emit("list_tables", None, seconds=time.monotonic() - started, extra=[
            metrics.Measure("gauge", metrics.metric_name("list_tables", "tables"), len(found))],
            logger=self.log)
        self.log.info("%d table(s) of %s match %s: %s", len(found), catalog.warehouse,
                      self.pattern, ", ".join(found) or "none")
        return found
