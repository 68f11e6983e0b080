"""The page's URLs, built from the request so the view works under any `[api] base_url` path:
the sub-app's own root (`root_path`, e.g. "/lakeformat") and Airflow's root (the mount's
parent, where `api/v2/...` and the UI's routes live)."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import quote, urlencode

from lakeformat_airflow.lake_view import PREFIX

if TYPE_CHECKING:
    from starlette.requests import Request


def app_root(request: Request) -> str:
    """The sub-app's root path with a trailing slash ("/lakeformat/")."""
    return request.scope.get("root_path", "").rstrip("/") + "/"


def airflow_root(request: Request) -> str:
    """Airflow's root path with a trailing slash ("/" unless `base_url` has a path)."""
    scope = request.scope
    if "app_root_path" in scope:
        return str(scope["app_root_path"]).rstrip("/") + "/"
    root = scope.get("root_path", "").rstrip("/")
    return (root[: -len(PREFIX)] if root.endswith(PREFIX) else root) + "/"


def table_page(request: Request, connection: str, table: str) -> str:
    db, name = table.split(".", 1)
    return (f"{app_root(request)}tables/{quote(db, safe='')}/{quote(name, safe='')}?"
            + urlencode({"conn": connection}))


def task_run(request: Request, dag_id: str, run_id: str, task_id: str, map_index: int) -> str:
    """The UI's page of one task instance (a mapped one's own page when map_index >= 0)."""
    path = (f"dags/{quote(dag_id, safe='')}/runs/{quote(run_id, safe='')}/tasks/"
            f"{quote(task_id, safe='')}")
    if map_index >= 0:
        path += f"/mapped/{map_index}"
    return airflow_root(request) + path


def dag_run(request: Request, dag_id: str, run_id: str) -> str:
    return f"{airflow_root(request)}dags/{quote(dag_id, safe='')}/runs/{quote(run_id, safe='')}"
