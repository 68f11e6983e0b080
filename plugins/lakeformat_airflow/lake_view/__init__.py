"""The Lake view: a page of the Airflow UI listing the tables of the `lakeformat` connections
with their health, due maintenance, snapshot history and last maintenance runs, and a JSON API
beside it.

`app` is a FastAPI application the provider's `AirflowPlugin` registers (`fastapi_apps`,
mounted by Airflow's API server under `PREFIX`) together with a nav entry "Lake"
(`external_views`: the UI shows the page in a frame at `/plugin/lake`). Every Airflow process
imports the plugin, task processes included, so this package imports nothing at module level:
`app` (and FastAPI with it) loads when the API server first asks the plugin for its apps, and
lakeformat, Airflow's security code and the metadata DB when a handler first runs.

    {PREFIX}/                              the table list (HTML)
    {PREFIX}/tables/{db}/{table}?conn=     one table (HTML)
    {PREFIX}/api/tables                    [{connection, table, report, error}]
    {PREFIX}/api/tables/{db}/{table}?conn= {health: TableHealth.to_dict(), due: DueReport.to_dict()}
    {PREFIX}/api/tables/{db}/{table}/snapshots?conn=&limit=
    {PREFIX}/static/...                    the page's script, style and icon (no CDN)

Only users Airflow's auth manager lets see the custom view "Lake" get the pages and the API
(`access`). The static files are the exception: served without login, as Airflow's own UI
assets are, they are the page's script, style sheet and icon and hold no data (`application`).
Which tables are shown is configured in `[lakeformat]` (`config`); health is cached per table
(`cache`).
"""

from __future__ import annotations

from typing import Any

__all__ = ["NAV_ENTRY", "PREFIX", "app", "create_app"]

#: where Airflow's API server mounts the app (the plugin's `url_prefix`)
PREFIX = "/lakeformat"
#: the `external_views` entry of the UI's nav bar (values must be JSON: the UI reads them)
NAV_ENTRY = {"name": "Lake", "href": f"{PREFIX}/", "url_route": "lake", "destination": "nav",
             "nav_top_level": True, "icon": f"{PREFIX}/static/lake.svg",
             "icon_dark_mode": f"{PREFIX}/static/lake.svg"}


def __getattr__(name: str) -> Any:
    if name in ("app", "create_app"):
        from lakeformat_airflow.lake_view import application

        return getattr(application, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
