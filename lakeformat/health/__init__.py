"""Table health and due maintenance, from metadata only.

What belongs here: everything that judges a table's state without changing it — the one pass
over its metadata (`view`), the per-bucket figures (`buckets`), the score and its components
(`score`, `assess`), the rules of what maintenance is due and why (`rules`), threshold
overrides (`thresholds`), ranking across tables within a budget (`rank`), the result objects
(`results`), and running one due action through the Table verb that does it (`perform`, in
`run`). Nothing here writes to a table except `perform`, which calls the table's own verbs.

This layer sits between `table` and `operation`: it reads through the front doors of
`operation/` (the compaction planner, expiry's and schema retention's dry runs) so a rule
proposes exactly what the maintenance verb would do. The DAGs, the CLI and the lake view all
ask these functions.

    report = table.maintenance_due({"num-sorted-run.compaction-trigger": 3})
    for action in report.actions:
        perform(table, action)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lakeformat.health.rank import order_within_table, rank_actions
    from lakeformat.health.results import (
        ACTION_KINDS,
        BucketHealth,
        DueAction,
        DueReport,
        TableHealth,
    )
    from lakeformat.health.run import (
        maintenance_due,
        maintenance_due_many,
        perform,
        table_health,
    )
    from lakeformat.health.score import FORMULAS, WEIGHTS
    from lakeformat.health.thresholds import (
        COMPACTION_OPTIONS,
        RULE_OPTIONS,
        check_thresholds,
    )

#: public name -> the module that defines it, imported on first use: the result classes and the
#: threshold check load nothing heavy (a DAG file checks thresholds at every parse), the rules
#: and the metadata pass bring numpy and pyarrow
_HOMES = {
    "ACTION_KINDS": "results", "BucketHealth": "results", "DueAction": "results",
    "DueReport": "results", "TableHealth": "results",
    "COMPACTION_OPTIONS": "thresholds", "RULE_OPTIONS": "thresholds",
    "check_thresholds": "thresholds",
    "FORMULAS": "score", "WEIGHTS": "score",
    "order_within_table": "rank", "rank_actions": "rank",
    "maintenance_due": "run", "maintenance_due_many": "run", "perform": "run",
    "table_health": "run",
}

__all__ = [
    "ACTION_KINDS",
    "BucketHealth",
    "COMPACTION_OPTIONS",
    "DueAction",
    "DueReport",
    "FORMULAS",
    "RULE_OPTIONS",
    "TableHealth",
    "WEIGHTS",
    "check_thresholds",
    "maintenance_due",
    "maintenance_due_many",
    "order_within_table",
    "perform",
    "rank_actions",
    "table_health",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))
