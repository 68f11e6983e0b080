"""Airflow Assets for tables: `paimon://<warehouse>/<db>/<table>`.

The warehouse part is the warehouse URI without its scheme: `s3://bucket/wh` gives
`paimon://bucket/wh/db/t`, a local `/data/wh` gives `paimon:///data/wh/db/t`. DAGs scheduled on
table updates use the same function: `schedule=[table_asset("s3://bucket/wh", "db.orders")]`.

Operators that commit declare the connection's `AssetAlias` (`lakeformat:<conn_id>`) as their
outlet when the DAG file is parsed — no connection is read then — and, in the task, attach an
event for the table's Asset (built from the connection's real warehouse) to it. A DAG
scheduled on `table_asset(warehouse, "db.t")` runs after each commit to that table.
"""

from __future__ import annotations

SCHEME = "paimon"


def table_uri(warehouse: str, table: str) -> str:
    """`paimon://...` URI of table `db.t` in `warehouse`."""
    location = warehouse.rstrip("/")
    for prefix in ("s3://", "s3a://", "file://"):
        if location.startswith(prefix):
            location = location[len(prefix):]
            break
    db, _, name = table.partition(".")
    return f"{SCHEME}://{location}/{db}/{name}"


def table_asset(warehouse: str, table: str):  # noqa: ANN201 - airflow.sdk.Asset
    """The Airflow Asset of table `db.t` in `warehouse`."""
    from airflow.sdk import Asset

    return Asset(table_uri(warehouse, table))


def connection_alias(conn_id: str):  # noqa: ANN201 - airflow.sdk.AssetAlias
    """The AssetAlias the committing operators of connection `conn_id` attach events to."""
    from airflow.sdk import AssetAlias

    return AssetAlias(f"lakeformat:{conn_id}")
