"""`LakeformatListTablesOperator`: the tables of a warehouse matching a pattern, for dynamic
task mapping (`LakeformatExpireSnapshotsOperator.partial(...).expand(table=tables.output)`)."""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from typing import Any

from airflow.sdk import BaseOperator

from lakeformat.errors import InvalidArgumentError
from lakeformat_airflow import DEFAULT_CONN_ID


class LakeformatListTablesOperator(BaseOperator):
    """Return the sorted `db.table` names matching `pattern` (shell-style, `*.*` for every
    table; several patterns comma-separated, e.g. `"shop.*,logs.events"`)."""

    template_fields: Sequence[str] = ("pattern",)
    ui_color = "#cfe8f3"

    def __init__(self, *, pattern: str = "*.*", lakeformat_conn_id: str = DEFAULT_CONN_ID,
                 **kwargs: Any):
        super().__init__(**kwargs)
        if not isinstance(pattern, str) or not pattern.strip():
            raise InvalidArgumentError(f"pattern must be text such as 'db.*', got {pattern!r}")
        self.pattern = pattern
        self.lakeformat_conn_id = lakeformat_conn_id

    def execute(self, context: Any) -> list[str]:
        from lakeformat_airflow.hooks.lakeformat import LakeformatHook
        from lakeformat_airflow.operators.base import library_errors

        patterns = [p.strip() for p in self.pattern.split(",") if p.strip()]
        with library_errors():
            catalog = LakeformatHook(self.lakeformat_conn_id).get_catalog()
            names = [f"{db}.{t}" for db in catalog.list_databases()
                     if any(fnmatch.fnmatchcase(db, p.split(".", 1)[0]) for p in patterns)
                     for t in catalog.list_tables(db)]
        found = sorted(n for n in names if any(fnmatch.fnmatchcase(n, p) for p in patterns))
        self.log.info("%d table(s) of %s match %s: %s", len(found), catalog.warehouse,
                      self.pattern, ", ".join(found) or "none")
        return found
