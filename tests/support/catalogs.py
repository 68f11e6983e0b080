"""Fixtures the integration and Spark suites share (each conftest imports them): one moto S3
server per test session, one fresh bucket per test, and catalogs (`catalog` runs a test on
local disk and on S3; `local_catalog` on local disk), each with database "db".

Usage in a test::

    def test_x(s3_warehouse):
        uri, options = s3_warehouse          # "s3://<bucket>/wh", {"s3.endpoint": ...}
        io = get_file_io(uri, options)
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import lakeformat as lf
from tests.support.s3server import MotoS3Server, new_bucket, s3_options


@pytest.fixture(scope="session")
def s3_server() -> Iterator[str]:
    """Endpoint URL ("http://127.0.0.1:<port>") of a moto S3 server living for the session."""
    server = MotoS3Server()
    endpoint = server.start()
    try:
        yield endpoint
    finally:
        server.stop()


@pytest.fixture()
def s3_bucket(s3_server: str) -> str:
    """Name of a fresh, empty bucket on the session server."""
    return new_bucket(s3_server)


@pytest.fixture()
def s3_warehouse(s3_server: str, s3_bucket: str) -> tuple[str, dict[str, str]]:
    """(warehouse URI "s3://<fresh bucket>/wh", Paimon-style S3 options for it)."""
    return f"s3://{s3_bucket}/wh", s3_options(s3_server)


@pytest.fixture(params=["local", "s3"])
def catalog(request, tmp_path) -> lf.Catalog:
    """A catalog with database "db", on local disk and on the moto S3 server."""
    if request.param == "local":
        cat = lf.Catalog(str(tmp_path / "wh"))
    else:
        uri, options = request.getfixturevalue("s3_warehouse")
        cat = lf.Catalog(uri, options=options)
    cat.create_database("db")
    return cat


@pytest.fixture()
def local_catalog(tmp_path) -> lf.Catalog:
    cat = lf.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    return cat
