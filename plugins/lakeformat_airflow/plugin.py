"""The `lakeformat` Airflow plugin: macros for templates, and the Lake view.

    {{ macros.lakeformat.table_uri("db.orders") }}          paimon://bucket/wh/db/orders
    {{ macros.lakeformat.warehouse() }}                     s3://bucket/wh
    {{ macros.lakeformat.latest_snapshot_id("db.orders") }} 42 (None for an empty table)

Each takes `conn_id` (default `lakeformat_default`). They read the connection when the
template renders (in the task), never when a DAG file is parsed.

The Lake view (`lakeformat_airflow.lake_view`) is a FastAPI app the API server mounts at
`/lakeformat` and a nav entry "Lake" that shows it in the UI (`/plugin/lake`). Every Airflow
process imports this module, task processes included, so the app (and FastAPI) is built only
when the API server asks for `fastapi_apps`; lakeformat and Airflow's security code load on
the view's first request.
"""

from __future__ import annotations

import logging

from airflow.plugins_manager import AirflowPlugin

from lakeformat_airflow import DEFAULT_CONN_ID
from lakeformat_airflow.lake_view import NAV_ENTRY, PREFIX

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


class _LakeViewApps:
    """`fastapi_apps`, built on first access (only the API server and `airflow plugins` read
    it), so a task process never imports FastAPI for the plugin."""

    _apps: list[dict] | None = None

    def __get__(self, obj: object, owner: type | None = None) -> list[dict]:
        if self._apps is None:
            from lakeformat_airflow.lake_view import app

            self._apps = [{"app": app, "url_prefix": PREFIX, "name": "lakeformat lake view"}]
        return self._apps


class LakeformatPlugin(AirflowPlugin):
    name = "lakeformat"
    macros = [warehouse, table_uri, latest_snapshot_id]
    fastapi_apps = _LakeViewApps()
    external_views = [NAV_ENTRY]

    @classmethod
    def on_load(cls, *args, **kwargs) -> None:
        log.debug("lakeformat plugin loaded")
