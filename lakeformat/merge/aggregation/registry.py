"""Aggregate functions by name: `create_aggregator("sum", field, options)` and the rest.

`FUNCTIONS` maps every name Paimon's `fields.<c>.aggregate-function` accepts to a factory that
checks the column's type and builds the function's `FieldAggregator` (the classes live in one
module per family: value, compare, numeric, text, nested, nested_rows, keytime). Both the
aggregation engine and partial-update's sequence groups create their functions here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from lakeformat.errors import InvalidOptionError, UnsupportedError
from lakeformat.merge.aggregation import compare, keytime, nested, nested_rows, numeric, text, value
from lakeformat.merge.aggregation.base import FieldAggregator
from lakeformat.options import parse_bool
from lakeformat.schema.types import DataField, DataType

__all__ = ["FieldAggregator", "create_aggregator", "AGGREGATE_FUNCTIONS", "UNSUPPORTED_FUNCTIONS"]

NUMERIC_ROOTS = ("TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL")
# Types Java's TypeCheckUtils.isComparable rejects (max/min): the nested and opaque ones.
_INCOMPARABLE_ROOTS = ("ARRAY", "MULTISET", "MAP", "ROW", "VARIANT", "BLOB")

UNSUPPORTED_FUNCTIONS = ("hll_sketch", "theta_sketch", "rbm32", "rbm64")


def _require(ok: bool, field: DataField, name: str, what: str) -> None:
    if not ok:
        raise InvalidOptionError(
            f"option 'fields.{field.name}.aggregate-function'={name!r}: column {field.name!r} "
            f"has type {field.type}, but {name} needs {what}")


def _is_nested_rows(dt: DataType) -> bool:
    return dt.root == "ARRAY" and dt.element is not None and dt.element.root == "ROW"


def _numeric(cls: type[FieldAggregator]) -> Factory:
    def build(name: str, field: DataField, options: Mapping[str, str]) -> FieldAggregator:
        _require(field.type.root in NUMERIC_ROOTS, field, name, "a numeric type "
                 "(TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, DECIMAL)")
        return cls(name, field, options)
    return build


def _comparable(cls: type[FieldAggregator]) -> Factory:
    def build(name: str, field: DataField, options: Mapping[str, str]) -> FieldAggregator:
        _require(field.type.root not in _INCOMPARABLE_ROOTS, field, name, "a comparable type")
        return cls(name, field, options)
    return build


def _boolean(cls: type[FieldAggregator]) -> Factory:
    def build(name: str, field: DataField, options: Mapping[str, str]) -> FieldAggregator:
        _require(field.type.root == "BOOLEAN", field, name, "BOOLEAN")
        return cls(name, field, options)
    return build


def _listagg(name: str, field: DataField, options: Mapping[str, str]) -> FieldAggregator:
    dt = field.type
    _require(dt.root == "VARCHAR", field, name, "STRING")
    _require(dt.length == 2147483647, field, name,
             f"STRING (unbounded VARCHAR), not VARCHAR({dt.length})")
    return text.ListaggAgg(name, field, options)


def _of_root(root: str, what: str, cls: type[FieldAggregator]) -> Factory:
    def build(name: str, field: DataField, options: Mapping[str, str]) -> FieldAggregator:
        _require(field.type.root == root, field, name, what)
        return cls(name, field, options)
    return build


def _nested_rows(cls: type[FieldAggregator]) -> Factory:
    def build(name: str, field: DataField, options: Mapping[str, str]) -> FieldAggregator:
        nested_rows.check_nested_options(name, field, options)
        _require(_is_nested_rows(field.type), field, name, "ARRAY<ROW<...>>")
        return cls(name, field, options)
    return build


Factory = Callable[[str, DataField, Mapping[str, str]], FieldAggregator]

FUNCTIONS: dict[str, Factory] = {
    "sum": _numeric(numeric.SumAgg),
    "product": _numeric(numeric.ProductAgg),
    "max": _comparable(compare.MaxAgg),
    "min": _comparable(compare.MinAgg),
    "last_value": value.LastValueAgg,
    "last_non_null_value": value.LastNonNullValueAgg,
    "first_value": value.FirstValueAgg,
    "first_non_null_value": value.FirstNonNullValueAgg,
    "first_not_null_value": value.FirstNonNullValueAgg,
    "bool_and": _boolean(compare.BoolAndAgg),
    "bool_or": _boolean(compare.BoolOrAgg),
    "listagg": _listagg,
    "collect": _of_root("ARRAY", "an ARRAY type", nested.CollectAgg),
    "merge_map": _of_root("MAP", "a MAP type", nested.MergeMapAgg),
    "merge_map_with_keytime": keytime.MergeMapWithKeyTimeAgg.create,
    "nested_update": _nested_rows(nested_rows.NestedUpdateAgg),
    "nested_partial_update": _nested_rows(nested_rows.NestedPartialUpdateAgg),
    "primary-key": value.PrimaryKeyAgg,
}
AGGREGATE_FUNCTIONS = tuple(FUNCTIONS)


def _build(name: str, field: DataField, options: Mapping[str, str]) -> FieldAggregator:
    factory = FUNCTIONS.get(name)
    if factory is not None:
        return factory(name, field, options)
    if name in UNSUPPORTED_FUNCTIONS:
        raise UnsupportedError(
            f"aggregate function {name!r} (option 'fields.{field.name}.aggregate-function') "
            "is not supported by lakeformat: it needs Java's sketch/bitmap serialisation")
    raise UnsupportedError(
        f"unknown aggregate function {name!r} for column {field.name!r} (Paimon: 'Use "
        f"unsupported aggregation or spell aggregate function incorrectly'); known functions: "
        f"{', '.join(AGGREGATE_FUNCTIONS)}")


def create_aggregator(name: str, field: DataField,
                      options: Mapping[str, str]) -> FieldAggregator:
    """The aggregator `name` for column `field` under table options `options`.

    Raises UnsupportedError for sketch/bitmap functions and unknown names, InvalidOptionError
    when the function does not accept the column's type or an option value is malformed.
    `fields.<c>.ignore-retract=true` makes retract (op 3) a no-op, as Java's wrapper does.
    """
    if not isinstance(name, str):
        raise UnsupportedError(f"aggregate function name must be a string, got {name!r}")
    agg = _build(name, field, options)
    if parse_bool(options, f"fields.{field.name}.ignore-retract", False):
        agg.ignore_retract = True
        agg.supports_retract = True
    return agg
