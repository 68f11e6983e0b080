"""lakeformat on Spark (PySpark 4.3, classic or Connect): the `lakeformat` data source and the
data jobs of the library with their execute step on executors.

    import lakeformat as lf, lakeformat.spark as lfs
    spark = lfs.local_session()                 # or any SparkSession; lfs.register(spark)
    df = spark.read.format("lakeformat").option("warehouse", uri).load("db.orders")
    lfs.write(df, table, merge_schema=True)     # -> CommitResult
    lfs.compact(spark, table, full=True)        # -> CompactResult
    lfs.ingest(spark, table, "landing/*.parquet")

This package is the only part of lakeformat that imports pyspark (`import lakeformat` does not).
"""

from __future__ import annotations

from lakeformat.spark.compaction import compact
from lakeformat.spark.datasource import LakeformatDataSource, register
from lakeformat.spark.ingest import ingest
from lakeformat.spark.runner import SparkRunner
from lakeformat.spark.session import local_session
from lakeformat.spark.write import write

__all__ = ["LakeformatDataSource", "SparkRunner", "compact", "ingest", "local_session",
           "register", "write"]
