"""Fixtures of the Spark suite: one local-mode session for the whole run, a Spark Connect
service in that session's JVM, and the moto S3 server.

Spark's start-up costs ~10 s, so every test shares `spark` (local[2]); tests keep their tables
in their own temporary warehouses and never change the session's configuration.

Spark Connect: the session runs Spark's own Connect plugin (`SparkConnectPlugin`, what
`SparkSession.builder.remote("local")` starts too), so the Connect server is served by the
same JVM on a port of 127.0.0.1 instead of a second `spark-submit` that would cost another
~20 s of start-up. `spark_connect` is a Spark Connect client session to it: a session of its
own on the server (its own SQL settings and registered data sources), no SparkContext and no
RDD on the client side, every job sent over gRPC — what a user's `remote("sc://...")` gets.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyspark  # noqa: F401 - the spark extra: `make test` installs it (a missing engine fails)
import pytest

from tests.support.catalogs import (  # noqa: F401 - fixtures shared with the integration suite
    catalog,
    local_catalog,
    s3_bucket,
    s3_server,
    s3_warehouse,
)

#: settings of the suite's session beyond `local_session()`'s: a quicker JIT and GC for a
#: short-lived JVM, small shuffles for small tables, and the Connect plugin on a free port
SESSION_CONF = {
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "2",
    "spark.plugins": "org.apache.spark.sql.connect.SparkConnectPlugin",
    "spark.connect.grpc.binding.address": "127.0.0.1",
    "spark.connect.grpc.binding.port": "0",  # a free port, read back below
}


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from lakeformat.spark.session import local_session

    session = local_session("local[2]", "lakeformat-tests", conf=SESSION_CONF)
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="session")
def connect_url(spark: Any) -> str:
    """`sc://127.0.0.1:<port>` of the Connect plugin of `spark`'s JVM (it bound a free port)."""
    service = spark._jvm.java.lang.Class.forName(
        "org.apache.spark.sql.connect.service.SparkConnectService$").getField("MODULE$").get(None)
    port = int(service.localPort())
    assert port > 0, "the Spark Connect plugin of the suite's session is not serving"
    return f"sc://127.0.0.1:{port}"


def connect_session(url: str) -> Any:
    """A new Spark Connect client session: a fresh session on the server, nothing registered."""
    # Connect's own builder: pyspark.sql.SparkSession.builder.remote() refuses to start while
    # the classic `spark` session of this process runs (SESSION_ALREADY_EXIST)
    from pyspark.sql.connect.session import SparkSession as RemoteSparkSession

    return RemoteSparkSession.builder.remote(url).create()


@pytest.fixture(scope="session")
def spark_connect(connect_url: str) -> Iterator[Any]:
    """A Spark Connect session with lakeformat registered, against the suite's JVM."""
    from lakeformat.spark import register

    session = connect_session(connect_url)
    try:
        register(session)
        yield session
    finally:
        session.stop()


@pytest.fixture()
def new_connect_session(connect_url: str) -> Iterator[Any]:
    """A Spark Connect session of its own (nothing registered), stopped after the test."""
    session = connect_session(connect_url)
    try:
        yield session
    finally:
        session.stop()
