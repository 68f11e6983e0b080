"""The Lake view's FastAPI app: the JSON API, the pages and the static files (script, style,
icon: shipped in the package, never fetched from elsewhere).

The API and the pages need a user the auth manager lets in (`access`). The static files do
not: `static/` holds only the page's own script, style sheet and the nav icon — code and
style, no table, connection or setting — served to anyone, as Airflow serves its UI's own
assets (the UI's nav bar loads the icon).

A `[lakeformat]` setting the view cannot use (`config.SettingsError`) is answered 500 with the
message naming it — JSON `{"detail": ...}` under `api/`, a small page elsewhere — and logged
as an error.
"""

from __future__ import annotations

import logging
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles

from lakeformat_airflow.lake_view.access import LoginRequired, login_redirect
from lakeformat_airflow.lake_view.api import router as api_router
from lakeformat_airflow.lake_view.config import SettingsError
from lakeformat_airflow.lake_view.page import router as page_router

STATIC = Path(__file__).with_name("static")
log = logging.getLogger(__name__)


async def settings_error(request: Request, exc: Exception) -> Response:
    """A setting the view cannot use: 500 naming it (the view never serves a default in its
    place)."""
    from lakeformat_airflow.lake_view import render, urls

    message = f"The Lake view's configuration is invalid: {exc}"
    log.error("lake view: %s", message)
    if request.url.path.startswith(urls.app_root(request) + "api/"):
        return JSONResponse({"detail": message}, status_code=500)
    return HTMLResponse(render.message_page(request, "Configuration error", message),
                        status_code=500, headers={"Cache-Control": "no-store"})


def create_app() -> FastAPI:
    """A new instance of the Lake view's app (the plugin mounts `app`, built once)."""
    sub = FastAPI(title="lakeformat lake view", docs_url=None, redoc_url=None,
                  openapi_url=None)
    sub.include_router(api_router)
    sub.include_router(page_router)
    sub.mount("/static", StaticFiles(directory=STATIC), name="static")  # public: see above
    sub.add_exception_handler(LoginRequired, login_redirect)
    sub.add_exception_handler(SettingsError, settings_error)
    return sub


app = create_app()
