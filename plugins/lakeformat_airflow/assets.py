"""Airflow Assets for tables: `paimon://<warehouse>/<db>/<table>`.

The warehouse part is the warehouse URI without its scheme: `s3://bucket/wh` gives
`paimon://bucket/wh/db/t`, a local `/data/wh` gives `paimon:///data/wh/db/t`. DAGs scheduled on
table updates use the same function: `schedule=[table_asset("s3://bucket/wh", "db.orders")]`.

Operators declare their outlets when the DAG file is parsed, without reading connections from
Airflow's database: the warehouse comes from the operator's `warehouse` argument, or from the
connection when it is defined in the environment (`AIRFLOW_CONN_<ID>`), or else the asset
names the connection id instead (`paimon://lakeformat_default/db/t`).
"""

from __future__ import annotations

import json
import os
from urllib.parse import unquote, urlsplit

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


def env_warehouse(conn_id: str) -> str | None:
    """The warehouse of connection `conn_id` when the environment defines it (JSON or URI form
    of `AIRFLOW_CONN_<ID>`), without touching Airflow's database; None otherwise."""
    raw = os.environ.get(f"AIRFLOW_CONN_{conn_id.upper()}")
    if not raw:
        return None
    raw = raw.strip()
    if raw.startswith("{"):
        try:
            conn = json.loads(raw)
        except ValueError:
            return None
        extra = conn.get("extra") or {}
        if isinstance(extra, str):
            try:
                extra = json.loads(extra)
            except ValueError:
                extra = {}
        return (extra.get("warehouse") if isinstance(extra, dict) else None) or conn.get("host")
    parts = urlsplit(raw)  # lakeformat://key:secret@host/path?warehouse=...
    for item in parts.query.split("&"):
        key, _, value = item.partition("=")
        if key == "warehouse" and value:
            return unquote(value)
    host = unquote(parts.hostname or "")
    return host + unquote(parts.path) if host or parts.path else None
