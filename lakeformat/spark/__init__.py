"""lakeformat on Spark (PySpark 4.3, classic or Connect): the `lakeformat` data source and the
data jobs of the library with their execute step on executors.

    import lakeformat as lf, lakeformat.spark as lfs
    spark = lfs.local_session()                 # or any SparkSession, then lfs.register(spark)
    df = spark.read.format("lakeformat").option("warehouse", uri).load("db.orders")
    lfs.write(df, table, merge_schema=True)     # -> CommitResult
    lfs.compact(spark, table, full=True)        # -> CompactResult
    lfs.ingest(spark, table, "landing/*.parquet")

This package is the only part of lakeformat that imports pyspark (`import lakeformat` does not);
its names load on first use, so importing one job does not load the others.
"""

from __future__ import annotations

import importlib
from typing import Any

_NAMES = {
    "LakeformatDataSource": "lakeformat.spark.datasource",
    "register": "lakeformat.spark.datasource",
    "SparkRunner": "lakeformat.spark.runner",
    "compact": "lakeformat.spark.compaction",
    "ingest": "lakeformat.spark.file_ingest",
    "local_session": "lakeformat.spark.session",
    "session_for": "lakeformat.spark.session",
    "write": "lakeformat.spark.write_job",
}

__all__ = sorted(_NAMES)


def __getattr__(name: str) -> Any:
    module = _NAMES.get(name)
    if module is None:
        raise AttributeError(f"module 'lakeformat.spark' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return __all__
