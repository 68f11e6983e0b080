"""A real S3 endpoint for tests: moto's server over HTTP on 127.0.0.1, on a free port.

Tests talk to it over the network exactly as to MinIO or AWS (no in-process mocking), which is
also the only way pyarrow's S3 file system and Spark workers could reach it.
"""

from __future__ import annotations

import logging
import uuid
from types import TracebackType
from typing import Any

from moto.server import ThreadedMotoServer

__all__ = [
    "MotoS3Server", "ACCESS_KEY", "SECRET_KEY", "REGION",
    "s3_options", "new_bucket", "boto3_client",
]

# moto accepts any credentials; fixed ones keep option dicts in test output readable.
ACCESS_KEY = "testing-access-key"
SECRET_KEY = "testing-secret-key"
REGION = "us-east-1"


class MotoS3Server:
    """Start/stop a ThreadedMotoServer; usable as a context manager."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self._host = host
        self._server: ThreadedMotoServer | None = None
        self.endpoint: str = ""

    def start(self) -> str:
        """Start on an ephemeral port (port 0) and return the endpoint URL."""
        if self._server is not None:
            return self.endpoint
        # werkzeug logs every request at INFO to stderr even with verbose=False; thousands of
        # lines per test drown real failures and cost time.
        logging.getLogger("werkzeug").setLevel(logging.WARNING)
        server = ThreadedMotoServer(ip_address=self._host, port=0, verbose=False)
        server.start()
        host, port = server.get_host_and_port()
        self._server = server
        self.endpoint = f"http://{host}:{port}"
        return self.endpoint

    def stop(self) -> None:
        """Shut the server down and join its thread; safe to call twice."""
        if self._server is not None:
            self._server.stop()
            self._server = None

    def __enter__(self) -> MotoS3Server:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def s3_options(endpoint: str) -> dict[str, str]:
    """Paimon-style catalog options pointing at ``endpoint``."""
    return {
        "s3.endpoint": endpoint,
        "s3.access-key": ACCESS_KEY,
        "s3.secret-key": SECRET_KEY,
        "s3.region": REGION,
        "s3.path-style-access": "true",
    }


def boto3_client(endpoint: str) -> Any:
    """A plain boto3 client for test setup and inspection, independent of lakeformat."""
    import boto3

    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
        region_name=REGION,
    )


def new_bucket(endpoint: str, prefix: str = "lf-test") -> str:
    """Create a uniquely named bucket (names must be 3-63 chars, lower case) and return it."""
    name = f"{prefix}-{uuid.uuid4().hex[:16]}"
    boto3_client(endpoint).create_bucket(Bucket=name)
    return name
