"""Handing rows to other dataframe libraries: pandas through pyarrow, Polars when installed
(it is not a dependency), and anything that speaks the Arrow PyCapsule stream protocol
(DuckDB, Polars, pyarrow itself) through `Table.__arrow_c_stream__`."""

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


def arrow_c_stream(reader: pa.RecordBatchReader, requested_schema: object | None = None
                   ) -> object:
    """The PyCapsule of a stream of record batches (the Arrow C stream interface)."""
    return reader.__arrow_c_stream__(requested_schema)
