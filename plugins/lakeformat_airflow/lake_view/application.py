"""The Lake view's FastAPI app: the JSON API, the pages and the static files (script, style,
icon: shipped in the package, never fetched from elsewhere)."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from lakeformat_airflow.lake_view.access import LoginRequired, login_redirect
from lakeformat_airflow.lake_view.api import router as api_router
from lakeformat_airflow.lake_view.page import router as page_router

STATIC = Path(__file__).with_name("static")


def create_app() -> FastAPI:
    """A new instance of the Lake view's app (the plugin mounts `app`, built once)."""
    sub = FastAPI(title="lakeformat lake view", docs_url=None, redoc_url=None,
                  openapi_url=None)
    sub.include_router(api_router)
    sub.include_router(page_router)
    sub.mount("/static", StaticFiles(directory=STATIC), name="static")
    sub.add_exception_handler(LoginRequired, login_redirect)
    return sub


app = create_app()
