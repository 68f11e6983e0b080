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

#: settings of a local session (a caller's `conf` wins)
LOCAL_DEFAULTS = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.python.filterPushdown.enabled": "true",
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
