"""`merge-engine=aggregation`: every value column folded by its field aggregator.

Per column (Java AggregateMergeFunction.getAggFuncName): a `sequence.field` column uses
last_value, a primary-key column keeps the record's key, any other column uses
`fields.<c>.aggregate-function`, else `fields.default-aggregate-function`, else
last_non_null_value. An add record (+I/+U) aggregates, a retract (-U/-D) retracts, or is
skipped for a column with `fields.<c>.ignore-retract=true`.

With `aggregation.remove-record-on-delete=true` a -D replaces the whole accumulated row by the
delete record's values; later records of the key keep aggregating onto it, and the key is
deleted only if the -D is its last record. The result is INSERT otherwise, with the sequence
number of the key's last record.

A key with a single record: Java wraps every merge function, this one included, in
ReducerMergeFunctionWrapper on the read, write-buffer and compaction paths, which returns a lone
record unchanged (its kind too) without running the functions. `AGGREGATE_LONE_RECORDS`
switches to running them on lone records as well.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.errors import InvalidOptionError, SchemaMismatchError, UnsupportedError
from lakeformat.merge.aggregation.base import choose
from lakeformat.merge.aggregation.registry import (
    AGGREGATE_FUNCTIONS,
    UNSUPPORTED_FUNCTIONS,
    FieldAggregator,
    create_aggregator,
)
from lakeformat.merge.engine import MergeEngine, describe_retracts
from lakeformat.merge.sort import DELETE, INSERT, UPDATE_BEFORE, KeyGroups, is_retract
from lakeformat.options import parse_bool
from lakeformat.schema.table_schema import SEQUENCE_NUMBER, VALUE_KIND, TableSchema
from lakeformat.schema.types import DataField

# Java master returns a key's lone record unchanged (ReducerMergeFunctionWrapper); set True to
# run the aggregate functions on it instead.
AGGREGATE_LONE_RECORDS = False

REMOVE_RECORD_ON_DELETE = "aggregation.remove-record-on-delete"
DEFAULT_FUNCTION = "fields.default-aggregate-function"


def function_name(field: str, options: Mapping[str, str], primary_keys: tuple[str, ...] | list,
                  sequence_fields: list[str]) -> str:
    """The aggregate function Java picks for column `field`."""
    if field in sequence_fields:
        return "last_value"
    if field in primary_keys:
        return "primary-key"
    name = options.get(f"fields.{field}.aggregate-function")
    if name is None:
        name = options.get(DEFAULT_FUNCTION)
    return "last_non_null_value" if name is None else name


def _sequence_fields(options: Mapping[str, str]) -> list[str]:
    raw = options.get("sequence.field") or ""
    return [f.strip() for f in raw.split(",") if f.strip()]


@dataclass(frozen=True)
class _Plan:
    aggregators: dict[str, FieldAggregator]
    remove_on_delete: bool


class AggregateEngine(MergeEngine):
    """Java's AggregateMergeFunction: every value column folded by its field aggregator."""

    name = "aggregation"

    def validate(self) -> None:
        """Check the engine's options, then create every column's aggregate function."""
        schema = self.schema
        validate(schema)
        options = schema.options
        seq = _sequence_fields(options)
        aggs = {f.name: create_aggregator(function_name(f.name, options, schema.primary_keys,
                                                        seq), f, options)
                for f in schema.fields}
        self.plan = _Plan(aggs, parse_bool(options, REMOVE_RECORD_ON_DELETE, False))

    def required_columns(self, requested: Sequence[str]) -> list[str]:
        """Columns fold one by one; a function that cannot retract fails on a retract record,
        so its column is read (the read fails as a full read would), as are NOT NULL ones."""
        strict = [name for name, agg in self.plan.aggregators.items()
                  if agg.name != "primary-key" and not agg.supports_retract]
        return self._with_order_columns(requested, *strict, *self._not_null_columns())

    def merge_groups(self, table: pa.Table, groups: KeyGroups) -> pa.Table:
        """One aggregated row per key group (see the module docs)."""
        plan = self.plan
        n_groups = len(groups)
        lone = groups.sizes == 1
        if not AGGREGATE_LONE_RECORDS and lone.all():
            return table
        kinds = np.asarray(pc.fill_null(table[VALUE_KIND], 0).to_numpy(), dtype=np.int8)
        retract = is_retract(kinds)
        reset = (kinds == DELETE) if plan.remove_on_delete else np.zeros(len(kinds), dtype=bool)
        base_ops = np.where(retract, 3, 1).astype(np.int8)
        base_ops[reset] = 4
        keep_lone = lone.any() and not AGGREGATE_LONE_RECORDS
        lone_rows = groups.starts[lone] if keep_lone else np.zeros(0, dtype=np.int64)
        if keep_lone:
            # a lone record is returned as it is. Its fold result is discarded, so a plain add may
            # run (cheaper than cutting it out); a retract or reset could raise, so it is skipped
            special = lone_rows[base_ops[lone_rows] != 1]
            if len(special):
                base_ops[special] = 0
                reset[special] = False
        if reset.any():
            _check_reset_rows(table, reset, self.schema)
        ends_idx = pa.array(groups.ends)
        columns = []
        for name in table.column_names:
            col = table[name]
            if name == SEQUENCE_NUMBER:
                columns.append(col.take(ends_idx))
                continue
            if name == VALUE_KIND:
                deleted = reset[groups.ends] if n_groups else np.zeros(0, dtype=bool)
                out = pa.array(np.where(deleted, DELETE, INSERT).astype(np.int8))
            else:
                agg = plan.aggregators[name]
                if agg.name == "primary-key":
                    columns.append(col.take(ends_idx))
                    continue
                ops = base_ops
                if keep_lone and agg.may_raise_on_agg:
                    ops = base_ops.copy()
                    ops[lone_rows] = 0
                out = agg.reduce(col, groups.starts, groups.ends, ops)
            if keep_lone:
                out = choose(lone, col.take(ends_idx), out)
            columns.append(out)
        return pa.table(columns, schema=table.schema)

    def refuse_retracts(self, rows: pa.Table, kinds: np.ndarray, table: str) -> None:
        """Write-time form of the functions' retract refusals: every column's function must
        retract (or ignore retracts); with remove-record-on-delete a -D replaces the row
        instead and retracts nothing."""
        plan = self.plan
        if plan.remove_on_delete and not (kinds == UPDATE_BEFORE).any():
            return
        stuck = [(name, agg.name) for name, agg in plan.aggregators.items()
                 if agg.name != "primary-key" and not agg.supports_retract]
        if not stuck:
            return
        cols = ", ".join(f"{c!r} ({fn})" for c, fn in stuck)
        keys = ", ".join(f"'fields.{c}.ignore-retract'='true'" for c, _ in stuck)
        hint = "" if plan.remove_on_delete or (kinds == UPDATE_BEFORE).any() else (
            f", or create the table with '{REMOVE_RECORD_ON_DELETE}'='true' (a -D then removes "
            "the row)")
        raise SchemaMismatchError(
            f"{table}: refused {describe_retracts(kinds)}: the aggregate functions of column(s) "
            f"{cols} cannot retract; set {keys} to ignore retracts in them, or 'ignore-delete'="
            f"'true' to drop retract records{hint}")


def _check_reset_rows(table: pa.Table, reset: np.ndarray, schema: TableSchema) -> None:
    """Java's initRow: a -D that replaces the row must not carry null in a NOT NULL column."""
    mask = pa.array(reset)
    for f in schema.fields:
        if f.type.nullable or f.name not in table.column_names:
            continue
        if table[f.name].filter(mask).null_count:
            raise SchemaMismatchError(
                f"a -D record with {REMOVE_RECORD_ON_DELETE}=true has null in NOT NULL "
                f"column {f.name!r} (Paimon: 'Field can not be null')")


# --------------------------------------------------------------------------------------------
# validation: what Java checks for this engine when a table is created or its merge function
# is built (SchemaValidation, AggregateMergeFunction.Factory, FieldAggregatorFactory)
# --------------------------------------------------------------------------------------------

def validate(schema: TableSchema) -> None:
    """Raise InvalidOptionError / UnsupportedError for options the engine cannot honour."""
    options = schema.options
    names = schema.field_names
    by_name = {f.name: f for f in schema.fields}
    _validate_fields_prefix(options, by_name)
    seq = _sequence_fields(options)
    for s in seq:
        if s not in names:
            raise InvalidOptionError(
                f"option 'sequence.field': column {s!r} can not be found in the table schema")
        if options.get(f"fields.{s}.aggregate-function") is not None:
            raise InvalidOptionError(
                f"option 'fields.{s}.aggregate-function': should not define aggregation on "
                f"sequence field {s!r}")
        if seq.count(s) > 1:
            raise InvalidOptionError(f"option 'sequence.field': {s!r} is defined repeatedly")
    remove_on_delete = parse_bool(options, REMOVE_RECORD_ON_DELETE, False)
    default = options.get(DEFAULT_FUNCTION)
    if default is not None:
        _check_known(default, DEFAULT_FUNCTION)
    for f in schema.fields:
        configured = options.get(f"fields.{f.name}.aggregate-function")
        if configured is not None:
            _check_known(configured, f"fields.{f.name}.aggregate-function")
        ignore_retract = parse_bool(options, f"fields.{f.name}.ignore-retract", False)
        if remove_on_delete and ignore_retract:
            raise InvalidOptionError(
                f"options {REMOVE_RECORD_ON_DELETE!r} and 'fields.{f.name}.ignore-retract' have "
                "conflicting behavior so should not be enabled at the same time")
        name = function_name(f.name, options, schema.primary_keys, seq)
        create_aggregator(name, f, options)


def _check_known(name: str, key: str) -> None:
    if name in UNSUPPORTED_FUNCTIONS:
        raise UnsupportedError(
            f"option {key!r}={name!r}: aggregate function {name} is not supported by lakeformat")
    if name not in AGGREGATE_FUNCTIONS:
        raise UnsupportedError(
            f"option {key!r}={name!r}: unknown aggregate function (Paimon: 'Could not find any "
            f"factory for identifier'); known: {', '.join(AGGREGATE_FUNCTIONS)}")


def _validate_fields_prefix(options: Mapping[str, str], by_name: dict[str, DataField]) -> None:
    for key in options:
        if not key.startswith("fields."):
            continue
        segments = key.split(".")
        columns = segments[1].split(",")
        for c in columns:
            if c != "default-aggregate-function" and c not in by_name:
                raise InvalidOptionError(
                    f"option {key!r}: field {c!r} can not be found in the table schema")
        if len(segments) > 3 and len(columns) == 1 and columns[0] in by_name \
                and by_name[columns[0]].type.root == "ROW":
            raise InvalidOptionError(
                f"option {key!r}: nested-field path is not supported on ROW field "
                f"{columns[0]!r}")
