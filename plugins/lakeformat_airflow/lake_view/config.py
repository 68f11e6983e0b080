"""The Lake view's settings, section `[lakeformat]` of Airflow's configuration (or the
`AIRFLOW__LAKEFORMAT__<OPTION>` environment variables), read on each request:

* `lake_view_connections` — comma-separated connection ids whose warehouses the view lists.
  Default: `lakeformat_default` plus every connection of type `lakeformat` (in Airflow's
  metadata DB or an `AIRFLOW_CONN_*` variable). Only these connections are ever opened: a
  `conn=` naming another one is answered 404.
* `lake_view_tables` — comma-separated `db.table` patterns (fnmatch, e.g. `sales.*,ops.audit`),
  each optionally prefixed by `<conn_id>:` to apply to that connection only. Default `*.*`.
  A table outside them is neither listed nor served.
* `lake_view_ttl` — seconds a table's health is served from the cache without a store read
  (default 10); also how long the list of connections and tables is kept.
* `lake_view_max_age` — seconds after which a table's health is computed again even when its
  snapshots did not change (default 300: schema-file cleanup and option changes make no
  snapshot).
* `lake_view_workers` — tables revalidated at once when the list is served (default 8).
* `lake_view_catalog_options` — a JSON object of catalog options laid over an S3 connection's
  for the view's reads. Default `{"s3.attempts.maximum": "3", "s3.retry.timeout": "3 s"}`:
  a store that does not answer costs the page seconds, not the minutes a job's retries
  would wait.
"""

from __future__ import annotations

import fnmatch
import json
from dataclasses import dataclass, field

SECTION = "lakeformat"
DEFAULTS = {"lake_view_connections": "", "lake_view_tables": "*.*", "lake_view_ttl": "10",
            "lake_view_max_age": "300", "lake_view_workers": "8",
            "lake_view_catalog_options": json.dumps({"s3.attempts.maximum": "3",
                                                     "s3.retry.timeout": "3 s"})}


@dataclass(frozen=True)
class Settings:
    connections: tuple[str, ...]  # () = discover
    patterns: tuple[tuple[str | None, str], ...]  # (conn_id or None, db.table pattern)
    ttl: float
    max_age: float
    workers: int
    catalog_options: dict[str, str] = field(default_factory=dict)

    def wants(self, conn_id: str, table: str) -> bool:
        """Whether the patterns name `table` ("db.t") of connection `conn_id`."""
        return any((conn is None or conn == conn_id) and fnmatch.fnmatchcase(table, pattern)
                   for conn, pattern in self.patterns)


def _get(key: str) -> str:
    from airflow.configuration import conf

    return str(conf.get(SECTION, key, fallback=DEFAULTS[key]) or DEFAULTS[key]).strip()


def _number(key: str, low: float) -> float:
    text = _get(key)
    try:
        value = float(text)
    except ValueError:
        value = float(DEFAULTS[key])
    return max(low, value)


def _patterns(text: str) -> tuple[tuple[str | None, str], ...]:
    out: list[tuple[str | None, str]] = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        conn, _, pattern = item.rpartition(":")
        out.append((conn.strip() or None, pattern.strip()))
    return tuple(out) or ((None, "*.*"),)


def _options(text: str) -> dict[str, str]:
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        value = json.loads(DEFAULTS["lake_view_catalog_options"])
    return {str(k): str(v) for k, v in value.items()}


def settings() -> Settings:
    connections = tuple(c.strip() for c in _get("lake_view_connections").split(",")
                        if c.strip())
    return Settings(connections=connections, patterns=_patterns(_get("lake_view_tables")),
                    ttl=_number("lake_view_ttl", 0.0), max_age=_number("lake_view_max_age", 0.0),
                    workers=int(_number("lake_view_workers", 1)),
                    catalog_options=_options(_get("lake_view_catalog_options")))
