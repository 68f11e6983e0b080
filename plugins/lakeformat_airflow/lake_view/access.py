"""Who may see the Lake view: the users Airflow's auth manager lets see the custom view "Lake"
(`is_authorized_custom_view`; Airflow's simple auth manager lets every role in, viewer and up).

The user comes from Airflow's own `get_user` (a Bearer token, or the UI's `_token` cookie that
the API server's JWT middleware refreshes), so the view accepts exactly the credentials Airflow's
API does. A JSON route answers an anonymous request 401 as Airflow's API does; a page answers it
307 to Airflow's login, which comes back to the page (`LoginRequired`). Airflow's security
module is imported on the first request, never when the plugin is loaded.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from fastapi import HTTPException, Request
from starlette.responses import RedirectResponse

from lakeformat_airflow.lake_view.urls import airflow_root

#: the resource name the auth manager is asked about (`is_authorized_custom_view`)
RESOURCE = "Lake"


class LoginRequired(Exception):
    """An anonymous (or expired) request for a page: the handler sends it to the login."""


async def authenticated_user(request: Request) -> Any:
    """Airflow's user of the request, authorized for the view; else 401 (no or expired token)
    or 403 (a bad token, or a user the auth manager refuses)."""
    from airflow.api_fastapi.app import get_auth_manager
    from airflow.api_fastapi.core_api.security import bearer_scheme, get_user

    credentials = await bearer_scheme(request)
    user = await get_user(request=request, _oauth_token=None, bearer_credentials=credentials)
    if not get_auth_manager().is_authorized_custom_view(method="GET", resource_name=RESOURCE,
                                                        user=user):
        raise HTTPException(status_code=403, detail="Forbidden")
    return user


async def api_user(request: Request) -> Any:
    """Dependency of the JSON routes."""
    return await authenticated_user(request)


async def page_user(request: Request) -> Any:
    """Dependency of the pages: an anonymous request goes to the login page."""
    try:
        return await authenticated_user(request)
    except HTTPException as e:
        if e.status_code == 401 or (e.status_code == 403 and e.detail != "Forbidden"):
            raise LoginRequired() from None
        raise


def login_url(request: Request) -> str:
    """Airflow's login (through `api/v2/auth/login`, which knows the auth manager's login
    page), coming back to `request`'s URL."""
    back = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return f"{airflow_root(request)}api/v2/auth/login?" + urlencode({"next": back})


async def login_redirect(request: Request, exc: Exception) -> RedirectResponse:
    return RedirectResponse(login_url(request), status_code=307)
