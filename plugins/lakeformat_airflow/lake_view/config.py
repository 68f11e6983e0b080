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

Fail closed: a value the view cannot use — a number option that is not a number (or below its
minimum, or not whole for `lake_view_workers`), options that are not a JSON object of
scalar values — raises `SettingsError` naming the option, when a request reads the settings;
the pages and the API answer it 500 with that message (`application`), never a default in
its place. An error about `lake_view_catalog_options` never quotes its text (it may hold
keys).
"""

from __future__ import annotations

import fnmatch
import json
import math
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


class SettingsError(ValueError):
    """A `[lakeformat]` option of the Lake view that it cannot use (the message names it)."""


def _number(key: str, low: float, *, whole: bool = False) -> float:
    text = _get(key)
    kind = "a whole number" if whole else "a number of seconds"
    try:
        value = float(text)
    except ValueError:
        raise SettingsError(f"[{SECTION}] {key} must be {kind}, not {text!r}") from None
    if not math.isfinite(value) or value < low or (whole and not value.is_integer()):
        raise SettingsError(f"[{SECTION}] {key} must be {kind} from {low:g}, not {text!r}")
    return value


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
    key = "lake_view_catalog_options"
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:  # the position only: the text may hold secrets
        raise SettingsError(f"[{SECTION}] {key} is not valid JSON (line {e.lineno}, "
                            f"column {e.colno})") from None
    if not isinstance(value, dict):
        raise SettingsError(f"[{SECTION}] {key} must be a JSON object of catalog options, "
                            f"not a {type(value).__name__}")
    bad = sorted(str(k) for k, v in value.items()
                 if not isinstance(v, (str, int, float)) or isinstance(v, bool))
    if bad:
        raise SettingsError(f"[{SECTION}] {key}: the value of {', '.join(bad)} must be a "
                            "string or a number")
    return {str(k): str(v) for k, v in value.items()}


def settings() -> Settings:
    """The settings as configured now; `SettingsError` naming the first bad option."""
    connections = tuple(c.strip() for c in _get("lake_view_connections").split(",")
                        if c.strip())
    return Settings(connections=connections, patterns=_patterns(_get("lake_view_tables")),
                    ttl=_number("lake_view_ttl", 0.0), max_age=_number("lake_view_max_age", 0.0),
                    workers=int(_number("lake_view_workers", 1, whole=True)),
                    catalog_options=_options(_get("lake_view_catalog_options")))
