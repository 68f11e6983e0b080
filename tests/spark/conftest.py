"""Fixtures of the Spark suite: one local-mode session for the whole run, a Spark Connect
server on 127.0.0.1 started on first use and stopped at the end, and the moto S3 server.

Spark's start-up costs ~10 s, so every test shares `spark` (local[2]); tests keep their tables
in their own temporary warehouses and never change the session's configuration.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pyspark  # the spark extra: `make test` installs it (no skip: a missing engine fails)
import pytest

from tests.support.catalogs import (  # noqa: F401 - fixtures shared with the integration suite
    catalog,
    local_catalog,
    s3_bucket,
    s3_server,
    s3_warehouse,
)
from tests.support.serving import wait_until_serving


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    from lakeformat.spark.session import local_session

    session = local_session("local[2]", "lakeformat-tests", conf={
        "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
        "spark.sql.shuffle.partitions": "4",
        "spark.default.parallelism": "2",
    })
    try:
        yield session
    finally:
        session.stop()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def spark_connect(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A Spark Connect session against a server this fixture runs (local[2], 127.0.0.1)."""
    home = Path(pyspark.__file__).parent
    port = _free_port()
    logs = tmp_path_factory.mktemp("spark-connect")
    cmd = [str(home / "bin" / "spark-submit"),
           "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
           "--master", "local[2]", "--driver-memory", "2g",
           "--conf", f"spark.connect.grpc.binding.port={port}",
           "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
           "--conf", "spark.ui.enabled=false",
           "--conf", "spark.sql.python.filterPushdown.enabled=true",
           "--conf", "spark.sql.shuffle.partitions=4",
           "--conf", "spark.sql.session.timeZone=UTC",
           "--conf", f"spark.pyspark.python={sys.executable}",
           "--conf", "spark.driver.extraJavaOptions=-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
           "spark-internal"]
    env = dict(os.environ, SPARK_HOME=str(home), PYSPARK_PYTHON=sys.executable)
    with open(logs / "server.log", "wb") as log:
        server = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                  start_new_session=True)
    try:
        wait_until_serving(port, server, logs / "server.log", 120, "the Spark Connect server")
        # Connect's own builder: pyspark.sql.SparkSession.builder.remote() refuses to start
        # while the classic `spark` session of this process runs (SESSION_ALREADY_EXIST)
        from pyspark.sql.connect.session import SparkSession as RemoteSparkSession

        from lakeformat.spark import register

        session = RemoteSparkSession.builder.remote(f"sc://127.0.0.1:{port}").getOrCreate()
        register(session)
        yield session
        session.stop()
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait()
