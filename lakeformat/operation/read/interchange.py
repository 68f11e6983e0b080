"""Handing rows to Polars when it is installed (it is not a dependency); pandas goes through
pyarrow, and DuckDB and Polars also take a `Table` as an Arrow stream
(`Table.__arrow_c_stream__`)."""

from __future__ import annotations

import importlib
from typing import Any

import pyarrow as pa


def to_polars(rows: pa.Table) -> Any:
    """`rows` as a `polars.DataFrame`; an ImportError saying how to get Polars without it."""
    try:
        polars = importlib.import_module("polars")
    except ImportError as missing:
        raise ImportError("Table.to_polars needs Polars, which lakeformat does not install: "
                          "pip install polars") from missing
    return polars.from_arrow(rows)

