"""The entry points: health of one table, what is due on one table or on every table of a
catalog matching a pattern, and running one due action through its Table verb."""

from __future__ import annotations

import fnmatch
import time
from collections.abc import Mapping
from typing import Any

from lakeformat.errors import InvalidArgumentError
from lakeformat.health.assess import build_health
from lakeformat.health.rank import rank_key
from lakeformat.health.results import ACTION_KINDS, DueAction, DueReport, TableHealth
from lakeformat.health.rules import due_actions
from lakeformat.health.thresholds import COMPACTION_OPTIONS, check_thresholds
from lakeformat.health.view import read_view
from lakeformat.operation.maintain import PARTITION_EXPIRY_OPTIONS
from lakeformat.options import CoreOptions
from lakeformat.schema.table_schema import TableSchema
from lakeformat.storage import FileIO
from lakeformat.storage.parallel import parallel_map

#: tables whose due actions `maintenance_due_many` computes at once
TABLE_WORKERS = 8

#: threshold override -> the keyword argument of the verb that takes it, per action kind (so
#: an action does under overrides exactly what its rule saw)
_VERB_ARGUMENTS: dict[str, dict[str, str]] = {
    "expire-snapshots": {"snapshot.num-retained.min": "retain_min",
                         "snapshot.num-retained.max": "retain_max",
                         "snapshot.time-retained": "older_than",
                         "snapshot.expire.limit": "max_deletes"},
    "clean-schemas": {"schema.num-retained.min": "retain_min",
                      "schema.time-retained": "older_than"},
    "expire-partitions": {"partition.expiration-time": "expiration_time"},
}
_INT_ARGUMENTS = {"retain_min", "retain_max", "max_deletes"}
#: action kind -> the overrides its verb takes as per-run `options` (the verb's own overlay)
_VERB_OPTIONS: dict[str, frozenset[str]] = {
    "compact": COMPACTION_OPTIONS,
    "full-compact": COMPACTION_OPTIONS,
    "expire-partitions": PARTITION_EXPIRY_OPTIONS - {"partition.expiration-time"},
}


def _effective(schema: TableSchema, thresholds: Mapping[str, Any] | None
               ) -> tuple[dict[str, str], CoreOptions]:
    overrides = check_thresholds(thresholds)
    return overrides, CoreOptions({**schema.options, **overrides})


def table_health(file_io: FileIO, table_path: str, schema: TableSchema, table_name: str, *,
                 orphans: bool = False, thresholds: Mapping[str, Any] | None = None
                 ) -> TableHealth:
    """`Table.health()`: figures and score from the table's metadata (no data file read)."""
    started = time.monotonic()
    _, opts = _effective(schema, thresholds)
    view = read_view(file_io, table_path, schema, table_name, opts, orphans)
    return build_health(view, started)


def maintenance_due(file_io: FileIO, table_path: str, schema: TableSchema, table_name: str,
                    thresholds: Mapping[str, Any] | None = None, *, orphans: bool = False
                    ) -> DueReport:
    """`Table.maintenance_due()`: the actions due now, ranked, and why the other rules found
    nothing. `thresholds` override the table's options by name (checked first)."""
    started = time.monotonic()
    overrides, opts = _effective(schema, thresholds)
    view = read_view(file_io, table_path, schema, table_name, opts, orphans)
    actions, not_due = due_actions(view)
    for a in actions:
        _carry_overrides(a, overrides)
    health = build_health(view, started)
    return DueReport(table=table_name, snapshot_id=health.snapshot_id,
                     actions=sorted(actions, key=rank_key), not_due=not_due,
                     score=health.score, health=health, errors=list(health.errors))


def _carry_overrides(action: DueAction, overrides: dict[str, str]) -> None:
    """Put the overrides the action's verb takes into its arguments: every override its rule
    read reaches the verb, as a keyword argument or in its per-run `options`."""
    options = {k: v for k, v in overrides.items() if k in _VERB_OPTIONS.get(action.kind, ())}
    if options:
        action.arguments["options"] = options
    for option, arg in _VERB_ARGUMENTS.get(action.kind, {}).items():
        if option in overrides:
            value: Any = overrides[option]
            action.arguments[arg] = int(value) if arg in _INT_ARGUMENTS else value


def maintenance_due_many(catalog: Any, pattern: str = "*.*",
                         thresholds: Mapping[str, Any] | None = None, *,
                         orphans: bool = False) -> list[DueReport]:
    """A `DueReport` for every table of `catalog` whose "db.table" name matches `pattern`
    (fnmatch), sorted by name. A table that cannot be read gets a report with `errors` and no
    actions; the others are reported as usual. Bad `thresholds` raise before any read."""
    check_thresholds(thresholds)
    names = sorted(f"{db}.{t}" for db in catalog.list_databases()
                   for t in catalog.list_tables(db)
                   if fnmatch.fnmatchcase(f"{db}.{t}", pattern))

    def one(name: str) -> DueReport:
        try:
            return catalog.get_table(name).maintenance_due(thresholds, orphans=orphans)
        except Exception as e:  # this table's failure is its report, never the warehouse's
            return DueReport(table=name, snapshot_id=None, actions=[], not_due={},
                             score=None, health=None, errors=[f"{type(e).__name__}: {e}"])

    return parallel_map(one, names, TABLE_WORKERS)


def perform(table: Any, action: DueAction | Mapping[str, Any], engine: Any = None) -> Any:
    """Run one due action through the Table verb that does it and return the verb's result.

    `engine`: None, "local" or "auto" run in this process; a `Runner` (such as
    `lakeformat.spark.runner.SparkRunner(spark)`) runs a compaction's execute step on it."""
    if isinstance(action, Mapping):
        action = DueAction.from_dict(dict(action))
    runner = None
    if engine is not None and not isinstance(engine, str):
        if not callable(getattr(engine, "map", None)):
            raise InvalidArgumentError(f"engine must be None, 'local', 'auto' or a Runner, got "
                                       f"{engine!r}")
        runner = engine
    elif engine not in (None, "local", "auto"):
        raise InvalidArgumentError(f"engine {engine!r}: pass None, 'local', 'auto' or a Runner "
                                   "(for Spark: lakeformat.spark.runner.SparkRunner(spark))")
    args = dict(action.arguments)
    kind = action.kind
    if kind in ("compact", "full-compact"):
        return table.compact(full=kind == "full-compact",
                             partitions=args.get("partitions") or None,
                             options=args.get("options"), runner=runner)
    if kind == "expire-snapshots":
        return table.expire_snapshots(**args)
    if kind == "compact-manifests":  # manifests only: schema files go by clean-schemas
        args.pop("compact_manifests", None)  # as actions listed before the verb split carry it
        return table.compact_manifests(**args)
    if kind == "clean-schemas":
        return table.clean_schemas(**args)
    if kind == "expire-partitions":
        return table.expire_partitions(**args)
    if kind == "remove-orphans":
        return table.remove_orphan_files(**args)
    if kind == "expire-tags":
        return table.expire_tags(**args)
    raise InvalidArgumentError(f"unknown action kind {kind!r} (one of {', '.join(ACTION_KINDS)})")
