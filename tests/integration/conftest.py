"""Shared S3 fixtures: one moto server per test session, one fresh bucket per test.

Usage in any integration test::

    def test_x(s3_warehouse):
        uri, options = s3_warehouse          # "s3://<bucket>/wh", {"s3.endpoint": ...}
        io = get_file_io(uri, options)
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:  # lets s3server import under any pytest import mode
    sys.path.insert(0, _HERE)

from s3server import MotoS3Server, new_bucket, s3_options  # noqa: E402


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
