"""Threshold overrides: a caller (a DAG, the CLI) may replace any option the rules read, by its
Paimon name. Checked before anything is read: an unknown name or a value the option's own
parser refuses raises `InvalidArgumentError` naming it."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from lakeformat.errors import InvalidArgumentError, LakeformatError
from lakeformat.options import CoreOptions, parse_duration

#: option name -> the `CoreOptions` accessor that parses it (None: parsed here)
_ACCESSORS: dict[str, str | None] = {
    "num-sorted-run.compaction-trigger": "num_sorted_run_compaction_trigger",
    "num-sorted-run.stop-trigger": "num_sorted_run_stop_trigger",
    "num-levels": "num_levels",
    "compaction.max-size-amplification-percent": "compaction_max_size_amplification_percent",
    "compaction.size-ratio": "compaction_size_ratio",
    "compaction.min.file-num": "compaction_min_file_num",
    "compaction.small-file-ratio": "compaction_small_file_ratio",
    "compaction.delete-ratio-threshold": "compaction_delete_ratio_threshold",
    "compaction.optimization-interval": "compaction_optimization_interval",
    "target-file-size": "target_file_size",
    "full-compaction.delta-commits": "full_compaction_delta_commits",
    "snapshot.num-retained.min": "snapshot_num_retained_min",
    "snapshot.num-retained.max": "snapshot_num_retained_max",
    "snapshot.time-retained": "snapshot_time_retained",
    "snapshot.expire.limit": "snapshot_expire_limit",
    "partition.expiration-time": "partition_expiration_time",
    "partition.expiration-max-num": "partition_expiration_max_num",
    "partition.expiration-strategy": "partition_expiration_strategy",
    "partition.timestamp-formatter": None,
    "partition.timestamp-pattern": None,
    "manifest.merge-min-count": "manifest_merge_min_count",
    "manifest.target-file-size": "manifest_target_file_size",
    "manifest.full-compaction-threshold-size": "manifest_full_compaction_threshold",
    "schema.num-retained.min": None,
    "schema.time-retained": None,
    "lakeformat.compaction.spark-threshold": "compaction_spark_threshold",
}

_AT_LEAST_ONE = frozenset({"snapshot.num-retained.min", "snapshot.num-retained.max",
                           "snapshot.expire.limit", "manifest.merge-min-count",
                           "schema.num-retained.min"})

#: every option a threshold override may name
RULE_OPTIONS = frozenset(_ACCESSORS)

#: overrides the compaction verb takes as per-run options (`Table.compact(options=...)`)
COMPACTION_OPTIONS = frozenset({
    "num-sorted-run.compaction-trigger", "num-sorted-run.stop-trigger", "num-levels",
    "compaction.max-size-amplification-percent", "compaction.size-ratio",
    "compaction.min.file-num", "compaction.small-file-ratio", "compaction.optimization-interval",
    "target-file-size"})


def check_thresholds(thresholds: Mapping[str, Any] | None) -> dict[str, str]:
    """The overrides as option text, each name known and each value parsed by the option's
    own accessor; `InvalidArgumentError` naming the first bad one."""
    if thresholds is None:
        return {}
    if not isinstance(thresholds, Mapping):
        raise InvalidArgumentError(f"thresholds must be a mapping of option name to value, got "
                                   f"{type(thresholds).__name__}")
    out: dict[str, str] = {}
    for name, value in thresholds.items():
        if name not in RULE_OPTIONS:
            close = difflib.get_close_matches(str(name), sorted(RULE_OPTIONS), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise InvalidArgumentError(
                f"unknown maintenance threshold {name!r}{hint}; known: "
                f"{', '.join(sorted(RULE_OPTIONS))}")
        if value is None or isinstance(value, (list, dict, set, tuple)):
            raise InvalidArgumentError(f"maintenance threshold {name!r}: bad value {value!r}")
        text = str(value).lower() if isinstance(value, bool) else str(value)
        accessor = _ACCESSORS[name]
        try:
            if accessor is not None:
                getattr(CoreOptions({name: text}), accessor)
            elif name == "schema.time-retained":
                parse_duration(text, name)
            elif name == "partition.timestamp-formatter":
                # on use only: a DAG file checks thresholds at parse time, and the maintain
                # package brings pyarrow and numpy
                from lakeformat.operation.maintain import compile_formatter

                compile_formatter(text)
            if name in _AT_LEAST_ONE and int(text.strip()) < 1:
                raise ValueError("must be at least 1")
        except (LakeformatError, ValueError) as e:
            raise InvalidArgumentError(f"maintenance threshold {name!r}: bad value {value!r} "
                                       f"({e})") from None
        out[name] = text
    return out
