"""DuckDB and Polars as peers of lakeformat's merge: the queries shared by the bench scripts.

Neither is a dependency of lakeformat: they come with the `bench` extra
(`pip install -e '.[bench]'`, which `make bench` does). A script that cannot import one of them
says so and runs without it.

The merge is the one lakeformat does for a primary-key table whose data files hold
`_KEY_<pk>`, `_SEQUENCE_NUMBER`, `_VALUE_KIND` and the table's columns:

* deduplicate: per key, the row with the greatest `_SEQUENCE_NUMBER`;
* partial-update: per key and column, the non-null value with the greatest
  `_SEQUENCE_NUMBER` (null when the column is null in every record of the key).

The bench data holds inserts only (`_VALUE_KIND` 0), so the peers leave `_VALUE_KIND` out;
their results are checked against lakeformat's rows, which would catch a difference.
Both engines run with their default thread pools (one thread per core).
"""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType
from typing import Any

# lakeformat writes zstd at `file.compression.zstd-level` = 1 (its default and Paimon's); the
# peers are given the same codec and level, which is also pyarrow's default zstd level.
ZSTD_LEVEL = 1


def import_peer(name: str) -> tuple[ModuleType | None, str]:
    """(module, '') or (None, why it is missing)."""
    try:
        module = __import__(name)
    except ImportError as exc:
        return None, f"not installed ({exc}); pip install -e '.[bench]'"
    return module, ""


def duckdb_label(duckdb: ModuleType, con: Any) -> str:
    threads = con.execute("SELECT current_setting('threads')").fetchall()[0][0]
    return f"DuckDB {duckdb.__version__} ({threads} threads, default)"


def polars_label(pl: ModuleType) -> str:
    return f"Polars {pl.__version__} ({pl.thread_pool_size()} threads, default)"


def sql_str(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def sql_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def duckdb_merge_sql(paths: Sequence[str], key: str, values: Sequence[str], engine: str,
                     order: bool = True) -> str:
    """SELECT of the merged rows of `paths` (the table's columns: key, then `values`)."""
    if engine == "deduplicate":
        # arg_max would skip null values; arg_max_null takes the winning row's value as is
        aggs = [f"arg_max_null({sql_ident(c)}, _SEQUENCE_NUMBER) AS {sql_ident(c)}"
                for c in values]
    elif engine == "partial-update":
        aggs = [f"arg_max({sql_ident(c)}, _SEQUENCE_NUMBER) FILTER (WHERE {sql_ident(c)} IS "
                f"NOT NULL) AS {sql_ident(c)}" for c in values]
    else:
        raise ValueError(f"no peer query for merge engine {engine!r}")
    files = "[" + ", ".join(sql_str(p) for p in paths) + "]"
    sql = (f"SELECT {sql_ident(key)}, {', '.join(aggs)} FROM read_parquet({files}) "
           f"GROUP BY {sql_ident(key)}")
    return sql + (f" ORDER BY {sql_ident(key)}" if order else "")


def duckdb_copy_sql(select: str, out: str) -> str:
    return (f"COPY ({select}) TO {sql_str(out)} "
            f"(FORMAT parquet, COMPRESSION zstd, COMPRESSION_LEVEL {ZSTD_LEVEL})")


def polars_merge(pl: ModuleType, paths: Sequence[str], key: str, values: Sequence[str],
                 engine: str, order: bool = True) -> Any:
    """LazyFrame of the merged rows of `paths`: sort by (key, sequence number), then per key
    the last value (deduplicate) or the last non-null value (partial-update) of each column."""
    if engine == "deduplicate":
        aggs = [pl.col(c).last() for c in values]
    elif engine == "partial-update":
        aggs = [pl.col(c).drop_nulls().last() for c in values]
    else:
        raise ValueError(f"no peer query for merge engine {engine!r}")
    lazy = (pl.scan_parquet(list(paths))
            .select([key, "_SEQUENCE_NUMBER", *values])
            .sort([key, "_SEQUENCE_NUMBER"])
            .group_by(key, maintain_order=True)
            .agg(aggs))
    return lazy.sort(key) if order else lazy


def duckdb_to_arrow(con: Any, sql: str) -> Any:
    """Run `sql` and fetch its result as one Arrow table (`to_arrow_table()` of a relation in
    DuckDB 2, `arrow()` before it; a DB-API cursor's Arrow fetch copies the rows once more)."""
    rel = con.sql(sql)
    fetch = getattr(rel, "to_arrow_table", None) or rel.arrow
    return fetch()
