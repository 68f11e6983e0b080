"""The Spark session of an Airflow `spark` connection (the Apache Spark provider's type).

host `local[N]` (a local session in the task's process), `spark://host` (a standalone master;
the port field is appended) or `sc://host` (Spark Connect, port 15002 unless given); extra
`conf` holds Spark settings (`{"conf": {"spark.executor.memory": "4g"}}`). The Spark provider
itself is not needed, and not installed: its `pyspark-client` would replace the `pyspark`
package lakeformat's `spark` extra installs.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import BaseHook

from lakeformat.errors import InvalidArgumentError


def spark_url(conn: Any) -> str:
    """The master / remote URL a `spark` connection names."""
    host = (conn.host or "").strip()
    if not host:
        raise InvalidArgumentError(f"spark connection {conn.conn_id!r} has no host: give local[N], "
                                   "spark://host or sc://host")
    if conn.port and host.startswith(("spark://", "sc://")) and host.count(":") == 1:
        host = f"{host}:{conn.port}"
    return host


def spark_session(spark_conn_id: str, app_name: str) -> Any:
    """A SparkSession for the connection (an active local one of this process is reused)."""
    from lakeformat.spark.session import session_for

    conn = BaseHook.get_connection(spark_conn_id)
    conf = (conn.extra_dejson or {}).get("conf") or {}
    if not isinstance(conf, dict):
        raise InvalidArgumentError(f"spark connection {spark_conn_id!r}: extra 'conf' must be an "
                                   f"object of Spark settings, got {conf!r}")
    return session_for(spark_url(conn), app_name=app_name, conf=conf)
