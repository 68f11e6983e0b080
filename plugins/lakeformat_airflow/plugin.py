"""The `lakeformat` Airflow plugin: macros for templates.

    {{ macros.lakeformat.table_uri("db.orders") }}          paimon://bucket/wh/db/orders
    {{ macros.lakeformat.warehouse() }}                     s3://bucket/wh
    {{ macros.lakeformat.latest_snapshot_id("db.orders") }} 42 (None for an empty table)

Each takes `conn_id` (default `lakeformat_default`). They read the connection when the
template renders (in the task), never when a DAG file is parsed.
"""

from __future__ import annotations

import logging

from airflow.plugins_manager import AirflowPlugin

from lakeformat_airflow import DEFAULT_CONN_ID

log = logging.getLogger(__name__)


def warehouse(conn_id: str = DEFAULT_CONN_ID) -> str:
    """The warehouse URI of a `lakeformat` connection."""
    from lakeformat_airflow.hooks.lakeformat import LakeformatHook

    return LakeformatHook(conn_id).warehouse()


def table_uri(table: str, conn_id: str = DEFAULT_CONN_ID) -> str:
    """The `paimon://` asset URI of table `db.t` of a `lakeformat` connection."""
    from lakeformat_airflow.assets import table_uri as uri

    return uri(warehouse(conn_id), table)


def latest_snapshot_id(table: str, conn_id: str = DEFAULT_CONN_ID) -> int | None:
    """The id of the table's latest snapshot (None when it has none)."""
    from lakeformat_airflow.hooks.lakeformat import LakeformatHook

    snap = LakeformatHook(conn_id).get_table(table).latest_snapshot()
    return snap.id if snap is not None else None


class LakeformatPlugin(AirflowPlugin):
    name = "lakeformat"
    macros = [warehouse, table_uri, latest_snapshot_id]

    @classmethod
    def on_load(cls, *args, **kwargs) -> None:
        log.debug("lakeformat plugin loaded")
