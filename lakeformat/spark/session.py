"""The embedded default engine: a local-mode Spark session set up the way lakeformat needs.

`local_session()` is what the jobs use when no session is given, what the demo and the Airflow
operators start for `engine="spark"` without a connection, and what the tests share. It sets
the few things the Python data source and the Arrow UDFs need on a fresh machine: the Python of
this process for the workers, filter pushdown into Python data sources, no web UI, and
`lakeformat` registered as a data source.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

from lakeformat.errors import InvalidArgumentError

#: settings of a local session (a caller's `conf` wins)
LOCAL_DEFAULTS = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
}


def local_session(master: str = "local[2]", app_name: str = "lakeformat",
                  conf: Mapping[str, Any] | None = None) -> Any:
    """A local-mode `SparkSession` (`master` "local[N]") with lakeformat registered; reuses
    the active session of this process when there is one (Spark allows one per JVM)."""
    from pyspark.sql import SparkSession

    from lakeformat.spark.datasource import register

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in {**LOCAL_DEFAULTS, **dict(conf or {})}.items():
        builder = builder.config(key, str(value))
    spark = builder.getOrCreate()
    register(spark)
    return spark


def is_connect(spark: Any) -> bool:
    """Whether `spark` is a Spark Connect session (no SparkContext, no JVM in this process)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def session_for(master: str, app_name: str = "lakeformat",
                conf: Mapping[str, Any] | None = None) -> Any:
    """A session for a Spark URL, as an Airflow `spark` connection names one: `local[N]` (a
    local session, as `local_session`), `spark://host:port` (a standalone cluster) or
    `sc://host:port` (Spark Connect). lakeformat is registered as a data source in each."""
    from pyspark.sql import SparkSession

    from lakeformat.spark.datasource import register

    if master.startswith("local"):
        return local_session(master, app_name, conf)
    if master.startswith("sc://"):
        builder = SparkSession.builder.remote(master)
    elif master.startswith("spark://"):
        builder = SparkSession.builder.master(master).appName(app_name)
    else:
        raise InvalidArgumentError(f"Spark master {master!r} is not one lakeformat runs on: give "
                         "local[N], spark://host:port or sc://host:port")
    for key, value in dict(conf or {}).items():
        builder = builder.config(key, str(value))
    spark = builder.getOrCreate()
    register(spark)
    return spark
