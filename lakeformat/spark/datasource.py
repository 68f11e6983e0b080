"""`lakeformat` as a PySpark data source (the Python Data Source API of Spark 4).

    from lakeformat.spark import register
    register(spark)
    df = (spark.read.format("lakeformat").option("warehouse", "s3://bucket/wh")
          .option("s3.endpoint", "http://127.0.0.1:9000").load("db.orders"))

Options split in two (`open_table`): the data source's own (`warehouse`, the table as `path`
or `table`, the read options `snapshot-id`, `tag`, `memory-budget` and the write options
`merge-schema`, `commit-user`, `commit-identifier`, `result-path`), and everything else, which
is handed to `lakeformat.Catalog` as catalog options — where an unknown key is refused by name.
Spark hands a Python data source its options with lower-cased keys; every option name here is
lower case already.

The snapshot a DataFrame reads is resolved once, when Spark asks for the schema (at `load()`),
and kept with the data source: the rows and the schema are of one snapshot however late the
DataFrame runs.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql.datasource import DataSource
from pyspark.sql.types import StructType

from lakeformat.spark.options import (
    catalog_options,
    check_direction,
    open_table,
    resolve_snapshot,
)

__all__ = ["LakeformatDataSource", "register", "open_table"]


class LakeformatDataSource(DataSource):
    """Batch reads and writes of lakeformat (Paimon primary-key) tables."""

    def __init__(self, options: Any) -> None:
        super().__init__(options)
        #: (snapshot, table schema) resolved by `schema()`, pickled with this data source
        self._pinned: tuple[Any, Any] | None = None

    @classmethod
    def name(cls) -> str:
        return "lakeformat"

    def schema(self) -> StructType:
        from lakeformat.spark.types import spark_schema

        catalog, table, ds = open_table(self.options)
        try:
            snapshot, table_schema = resolve_snapshot(table, ds)
        finally:
            catalog.close()
        self._pinned = (snapshot, table_schema)
        return spark_schema(table_schema.fields)

    def reader(self, schema: StructType) -> Any:
        from lakeformat.options import parse_budget
        from lakeformat.spark.reader import LakeformatReader, ReadSource

        catalog, table, ds = open_table(self.options)  # a table dropped since load() fails
        try:
            check_direction(ds, "read")
            snapshot, table_schema = (self._pinned if self._pinned is not None
                                      else resolve_snapshot(table, ds))
        finally:
            catalog.close()
        warehouse, options = catalog_options(self.options)
        source = ReadSource(table.name, table.path, warehouse, options, snapshot, table_schema,
                            parse_budget(ds.get("memory-budget")))
        return LakeformatReader(source, schema)

    def writer(self, schema, overwrite):
        from lakeformat.spark.writer import LakeformatWriter
        return LakeformatWriter(self.options, schema, overwrite)


#: the runtime SQL setting without which Spark refuses a Python reader that has `pushFilters`
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


def register(spark: Any) -> None:
    """Register the `lakeformat` format on a session (classic or Spark Connect), and turn on
    filter pushdown into Python data sources for that session: the reader implements
    `pushFilters`, and Spark (off by default) refuses such a reader in a session without it,
    so a user's own `SparkSession.builder...getOrCreate()` could not read a table otherwise.
    It is a runtime SQL setting, so setting it on a running session (or through Connect)
    takes effect at once."""
    spark.dataSource.register(LakeformatDataSource)
    if str(spark.conf.get(PUSHDOWN_CONF, "false")).lower() != "true":
        spark.conf.set(PUSHDOWN_CONF, "true")
