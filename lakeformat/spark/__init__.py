"""PySpark integration: the `lakeformat` data source and the distributed jobs.

The only place in lakeformat that imports PySpark; importing this package does not (the
data source module loads on first use).
"""

from __future__ import annotations

from typing import Any

__all__ = ["register"]


def register(spark: Any) -> None:
    """Register the `lakeformat` data source on a session (classic or Spark Connect)."""
    from lakeformat.spark.datasource import register as _register

    _register(spark)
