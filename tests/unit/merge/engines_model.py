"""Reference model of Paimon's merge engines, one record at a time (test oracle only).

Each class below is a plain transcription of the *behaviour* of one Java class of Apache Paimon
(paimon-core, package org.apache.paimon.mergetree.compact and .aggregate), written from reading
that class: same state, same per-record control flow, same field-by-field mutation order, so a
reader can hold the two side by side. Nothing here is vectorized or clever on purpose.

Values use the Python form pyarrow's `to_pylist()` gives: ints, floats, `decimal.Decimal`,
str, bytes, bool, dates, lists (ARRAY), lists of `(key, value)` tuples (MAP), dicts (ROW).

Entry point: `model_merge(records, schema)`; see its docstring.
"""

from __future__ import annotations

import functools
import math
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal, localcontext
from fractions import Fraction
from typing import Any

import numpy as np

from lakeformat.schema.table_schema import TableSchema
from lakeformat.schema.types import DataType

SEQUENCE_NUMBER = "_SEQUENCE_NUMBER"
VALUE_KIND = "_VALUE_KIND"

# RowKind bytes
INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE = 0, 1, 2, 3


def is_retract(kind: int) -> bool:
    """RowKind.isRetract: -U and -D."""
    return kind in (UPDATE_BEFORE, DELETE)


# =============================================================================================
# Errors. A key's merge "raises" one of these; the model stores the instance as that key's result.
# =============================================================================================

class ModelError(Exception):
    """Base of everything the model raises."""


class ModelConfigError(ModelError):
    """The options are refused when Java builds the merge function (factory / SchemaValidation)."""


class RetractRefused(ModelError):
    """A -U/-D the engine or a field aggregator cannot take (Java IllegalArgumentException /
    UnsupportedOperationException)."""


class NullInNotNullColumn(ModelError):
    """Java: 'Field i can not be null' (PartialUpdate/Aggregate initRow, updateNonNullFields)."""


class ArithmeticFailure(ModelError):
    """Java ArithmeticException: integer overflow, division by zero, non-terminating decimal."""


class NestedKeyNull(ModelError):
    """nested-key-null-strategy=error met a nested key with a null (IllegalArgumentException)."""


# =============================================================================================
# Options, read the way CoreOptions reads them
# =============================================================================================

def _parse_bool(key: str, raw: str) -> bool:
    text = str(raw).strip().lower()
    if text == "true":
        return True
    if text == "false":
        return False
    raise ModelConfigError(f"option {key}={raw!r} is not a boolean")


class Options:
    """Just enough of CoreOptions: fallback keys, booleans, per-field `fields.<f>.<x>` keys."""

    # CoreOptions.IGNORE_DELETE: primary key first, then its fallback keys in declaration order.
    IGNORE_DELETE_KEYS = ("ignore-delete", "first-row.ignore-delete",
                          "deduplicate.ignore-delete", "partial-update.ignore-delete")

    def __init__(self, raw: Mapping[str, str]):
        self.raw = dict(raw)

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.raw.get(key, default)

    def boolean(self, key: str, default: bool = False) -> bool:
        return _parse_bool(key, self.raw[key]) if key in self.raw else default

    @property
    def merge_engine(self) -> str:
        return str(self.raw.get("merge-engine", "deduplicate")).strip().lower()

    @property
    def ignore_delete(self) -> bool:
        for key in self.IGNORE_DELETE_KEYS:
            if key in self.raw:
                return _parse_bool(key, self.raw[key])
        return False

    @property
    def sequence_field(self) -> list[str]:
        """CoreOptions.sequenceField: split on ',' and trimmed."""
        raw = self.raw.get("sequence.field")
        return [] if raw is None else [s.strip() for s in raw.split(",")]

    @property
    def sequence_ascending(self) -> bool:
        order = str(self.raw.get("sequence.field.sort-order", "ascending")).strip().upper()
        if order not in ("ASCENDING", "DESCENDING"):
            raise ModelConfigError(f"sequence.field.sort-order={order!r}")
        return order == "ASCENDING"

    def field_agg_func(self, name: str) -> str | None:
        return self.raw.get(f"fields.{name}.aggregate-function")

    @property
    def fields_default_func(self) -> str | None:
        return self.raw.get("fields.default-aggregate-function")

    def field_ignore_retract(self, name: str) -> bool:
        return self.boolean(f"fields.{name}.ignore-retract")

    def field_distinct(self, name: str) -> bool:
        return self.boolean(f"fields.{name}.distinct")

    def field_list_agg_delimiter(self, name: str) -> str:
        return self.raw.get(f"fields.{name}.list-agg-delimiter", ",")

    def _field_list(self, name: str, what: str) -> list[str]:
        raw = self.raw.get(f"fields.{name}.{what}")
        return [] if raw is None else [s.strip() for s in raw.split(",")]

    def field_nested_key(self, name: str) -> list[str]:
        return self._field_list(name, "nested-key")

    def field_nested_sequence_field(self, name: str) -> list[str]:
        return self._field_list(name, "nested-sequence-field")

    def field_nested_key_null_strategy(self, name: str) -> str:
        raw = str(self.raw.get(f"fields.{name}.nested-key-null-strategy", "merge")).upper()
        if raw not in ("MERGE", "IGNORE", "ERROR"):
            raise ModelConfigError(f"nested-key-null-strategy {raw!r}")
        return raw

    def field_count_limit(self, name: str) -> int:
        return int(self.raw.get(f"fields.{name}.count-limit", 2**31 - 1))

    @property
    def aggregation_remove_record_on_delete(self) -> bool:
        return self.boolean("aggregation.remove-record-on-delete")

    @property
    def partial_update_remove_record_on_delete(self) -> bool:
        return self.boolean("partial-update.remove-record-on-delete")

    @property
    def partial_update_remove_record_on_sequence_group(self) -> str | None:
        return self.raw.get("partial-update.remove-record-on-sequence-group")


# =============================================================================================
# Comparing values the way Java does (InternalRowUtils.compare / codegen RecordComparator)
# =============================================================================================

_INT_RANGES = {"TINYINT": (-(2**7), 2**7 - 1), "SMALLINT": (-(2**15), 2**15 - 1),
               "INT": (-(2**31), 2**31 - 1), "BIGINT": (-(2**63), 2**63 - 1)}


def _float_key(x: float) -> tuple:
    """Float.compare / Double.compare: -0.0 < 0.0, NaN above everything and equal to itself."""
    if math.isnan(x):
        return (2, 0.0)
    if x == 0.0:
        return (1, 0.0, 0 if math.copysign(1.0, x) < 0 else 1)
    return (1, x, 0)


def java_compare(a: Any, b: Any, dt: DataType) -> int:
    """Compare two non-null values of an atomic type as InternalRowUtils.compare does."""
    if dt.root in ("FLOAT", "DOUBLE"):
        ka, kb = _float_key(a), _float_key(b)
    elif dt.root in ("CHAR", "VARCHAR"):
        # BinaryString.compareTo: unsigned bytes of UTF-8 (= code-point order)
        ka, kb = a.encode("utf-8"), b.encode("utf-8")
    else:  # ints, BOOLEAN (false < true), DECIMAL, DATE, TIMESTAMP, BINARY (unsigned bytes)
        ka, kb = a, b
    return (ka > kb) - (ka < kb)


def compare_fields_nulls_first(row_a: Mapping[str, Any], row_b: Mapping[str, Any],
                               names: list[str], types: Mapping[str, DataType],
                               ascending: bool) -> int:
    """The generated RecordComparator (CodeGeneratorImpl.getSortSpec: nullIsLast=false).

    A null is smaller than any value in BOTH orders: GenerateUtils.generateRowCompare returns the
    null result before the '-' for descending order is applied to the value comparison.
    """
    for n in names:
        a, b = row_a[n], row_b[n]
        if a is None and b is None:
            continue
        if a is None:
            return -1
        if b is None:
            return 1
        c = java_compare(a, b, types[n])
        if c != 0:
            return c if ascending else -c
    return 0


# =============================================================================================
# Java's notion of blank (StringUtils.isBlank -> Character.isWhitespace)
# =============================================================================================

_JAVA_EXTRA_WS = set("\t\n\u000b\f\r\u001c\u001d\u001e\u001f")
_NON_BREAKING = set("\u00a0\u2007\u202f")


def java_is_whitespace(ch: str) -> bool:
    if ch in _JAVA_EXTRA_WS:
        return True
    return unicodedata.category(ch) in ("Zs", "Zl", "Zp") and ch not in _NON_BREAKING


def java_is_blank(s: str | None) -> bool:
    return s is None or all(java_is_whitespace(c) for c in s)


def split_preserve_all_tokens(s: str, delimiter: str) -> list[str]:
    """BinaryStringUtils.splitByWholeSeparatorPreserveAllTokens."""
    if s == "":
        return []
    if delimiter == "":
        delimiter = " "
    return s.split(delimiter)


# =============================================================================================
# Numeric helpers for sum / product (FieldSumAgg, FieldProductAgg, DecimalUtils, Decimal)
# =============================================================================================

def _check_int(value: int, dt: DataType, what: str) -> int:
    lo, hi = _INT_RANGES[dt.root]
    if not lo <= value <= hi:
        raise ArithmeticFailure(f"{dt.root.lower()} overflow: {what}")
    return value


def _java_int_div(a: int, b: int) -> int:
    """Java integer division: truncates toward zero; '/ by zero' throws."""
    if b == 0:
        raise ArithmeticFailure("/ by zero")
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _f32(x: float) -> float:
    return float(np.float32(x))


def _float_op(dt: DataType, a: float, b: float, op: str) -> float:
    """Java float/double arithmetic (float32 for FLOAT), IEEE results on overflow / x/0."""
    with np.errstate(all="ignore"):
        if dt.root == "FLOAT":
            x, y = np.float32(a), np.float32(b)
        else:
            x, y = np.float64(a), np.float64(b)
        if op == "+":
            r = x + y
        elif op == "-":
            r = x - y
        elif op == "*":
            r = x * y
        else:
            r = x / y  # IEEE: x/0 is +-Infinity, 0/0 NaN, as in Java
        return float(np.float32(r) if dt.root == "FLOAT" else r)


def _unscaled_digits(d: Decimal, scale: int) -> int:
    unscaled = int(d.scaleb(scale))
    return max(1, len(str(abs(unscaled))))


def decimal_from_big_decimal(d: Decimal | Fraction, precision: int, scale: int) -> Decimal | None:
    """Decimal.fromBigDecimal: setScale(scale, HALF_UP); null when the precision overflows."""
    with localcontext() as ctx:
        ctx.prec = 200
        if isinstance(d, Fraction):
            d = Decimal(d.numerator) / Decimal(d.denominator)  # exact: caller checked it ends
        q = d.quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP)
    if _unscaled_digits(q, scale) > precision:
        return None
    return q


def _decimal_exact(op: str, a: Decimal, b: Decimal) -> Decimal | Fraction:
    with localcontext() as ctx:
        ctx.prec = 200
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
    # BigDecimal.divide(BigDecimal): exact quotient or ArithmeticException
    if b == 0:
        raise ArithmeticFailure("Division by zero")
    q = Fraction(a) / Fraction(b)
    den = q.denominator
    for p in (2, 5):
        while den % p == 0:
            den //= p
    if den != 1:
        raise ArithmeticFailure("Non-terminating decimal expansion; no exact representable "
                                "decimal result.")
    return q


def _decimal_add_sub(op: str, a: Decimal, b: Decimal, dt: DataType) -> Decimal | None:
    """DecimalUtils.add / subtract: compact (precision <= 18) values add as unscaled longs with
    no precision check; otherwise (or on long overflow) via fromBigDecimal (null on overflow)."""
    p, s = dt.precision, dt.scale
    if p <= 18:
        ua, ub = int(a.scaleb(s)), int(b.scaleb(s))
        r = ua + ub if op == "+" else ua - ub
        if -(2**63) <= r <= 2**63 - 1:
            return Decimal(r).scaleb(-s)
    return decimal_from_big_decimal(_decimal_exact(op, a, b), p, s)


# =============================================================================================
# Field aggregators (org.apache.paimon.mergetree.compact.aggregate.Field*Agg)
# =============================================================================================

class FieldAggregator:
    """FieldAggregator: agg, aggReversed (= agg(input, acc) unless overridden), reset, retract."""

    def __init__(self, name: str, dt: DataType):
        self.name = name
        self.dt = dt

    def agg(self, acc: Any, value: Any) -> Any:
        raise NotImplementedError

    def agg_reversed(self, acc: Any, value: Any) -> Any:
        return self.agg(value, acc)

    def reset(self) -> None:
        pass

    def retract(self, acc: Any, value: Any) -> Any:
        raise RetractRefused(
            f"Aggregate function '{self.name}' does not support retraction; configure "
            f"'fields.<field>.ignore-retract'='true' to ignore retract messages")


class SumAgg(FieldAggregator):
    """FieldSumAgg: null-skipping addition, exact for integers; retract subtracts."""

    def agg(self, acc, value):
        if acc is None or value is None:
            return value if acc is None else acc
        return self._plus(acc, value, "+")

    def retract(self, acc, value):
        if acc is None or value is None:
            return self._negative(value) if acc is None else acc
        return self._plus(acc, value, "-")

    def _plus(self, a, b, op):
        dt = self.dt
        if dt.root == "DECIMAL":
            return _decimal_add_sub(op, a, b, dt)
        if dt.root in _INT_RANGES:
            return _check_int(a + b if op == "+" else a - b, dt, f"{a} {op} {b}")
        return _float_op(dt, a, b, op)

    def _negative(self, value):
        if value is None:
            return None
        dt = self.dt
        if dt.root == "DECIMAL":
            return decimal_from_big_decimal(-value, dt.precision, dt.scale)
        if dt.root in _INT_RANGES:
            return _check_int(-value, dt, f"-{value}")
        return -value  # float negation is exact


class ProductAgg(FieldAggregator):
    """FieldProductAgg: null-skipping multiplication; retract divides (null operand keeps acc)."""

    def agg(self, acc, value):
        if acc is None or value is None:
            return value if acc is None else acc
        dt = self.dt
        if dt.root == "DECIMAL":
            return decimal_from_big_decimal(_decimal_exact("*", acc, value), dt.precision,
                                            dt.scale)
        if dt.root in _INT_RANGES:
            return _check_int(acc * value, dt, f"{acc} * {value}")
        return _float_op(dt, acc, value, "*")

    def retract(self, acc, value):
        if acc is None or value is None:
            return acc
        dt = self.dt
        if dt.root == "DECIMAL":
            return decimal_from_big_decimal(_decimal_exact("/", acc, value), dt.precision,
                                            dt.scale)
        if dt.root in _INT_RANGES:
            return _check_int(_java_int_div(acc, value), dt, f"{acc} / {value}")
        return _float_op(dt, acc, value, "/")


class MaxAgg(FieldAggregator):
    """FieldMaxAgg: keeps acc unless acc < input (InternalRowUtils.compare)."""

    def agg(self, acc, value):
        if acc is None or value is None:
            return value if acc is None else acc
        return value if java_compare(acc, value, self.dt) < 0 else acc


class MinAgg(FieldAggregator):
    """FieldMinAgg: keeps acc if acc < input, else input (ties take the input)."""

    def agg(self, acc, value):
        if acc is None or value is None:
            return value if acc is None else acc
        return acc if java_compare(acc, value, self.dt) < 0 else value


class LastValueAgg(FieldAggregator):
    """FieldLastValueAgg: the input, even null; retract gives null."""

    def agg(self, acc, value):
        return value

    def retract(self, acc, value):
        return None


class LastNonNullValueAgg(FieldAggregator):
    """FieldLastNonNullValueAgg: non-null input wins; a non-null retract clears."""

    def agg(self, acc, value):
        return acc if value is None else value

    def retract(self, acc, value):
        return None if value is not None else acc


class FirstValueAgg(FieldAggregator):
    """FieldFirstValueAgg: the first agg() call's input (even null) wins; state reset per key."""

    def __init__(self, name, dt):
        super().__init__(name, dt)
        self.initialized = False

    def agg(self, acc, value):
        if not self.initialized:
            self.initialized = True
            return value
        return acc

    def reset(self):
        self.initialized = False


class FirstNonNullValueAgg(FieldAggregator):
    """FieldFirstNonNullValueAgg: the first non-null input wins; state reset per key."""

    def __init__(self, name, dt):
        super().__init__(name, dt)
        self.initialized = False

    def agg(self, acc, value):
        if not self.initialized and value is not None:
            self.initialized = True
            return value
        return acc

    def reset(self):
        self.initialized = False


class BoolAndAgg(FieldAggregator):
    def agg(self, acc, value):
        if acc is None or value is None:
            return value if acc is None else acc
        return bool(acc) and bool(value)


class BoolOrAgg(FieldAggregator):
    def agg(self, acc, value):
        if acc is None or value is None:
            return value if acc is None else acc
        return bool(acc) or bool(value)


class ListaggAgg(FieldAggregator):
    """FieldListaggAgg: joins with the delimiter; blank inputs ignored; `distinct` drops input
    tokens already present in acc (acc's own tokens are never de-duplicated)."""

    def __init__(self, name, dt, delimiter: str, distinct: bool):
        super().__init__(name, dt)
        self.delimiter = delimiter
        self.distinct = distinct

    def agg(self, acc, value):
        if value is None or java_is_blank(value):
            return acc
        if acc is None or java_is_blank(acc):
            return value
        if self.distinct:
            existing = set(split_preserve_all_tokens(acc, self.delimiter))
            parts = [acc]
            for token in split_preserve_all_tokens(value, self.delimiter):
                if java_is_blank(token) or token in existing:
                    continue
                existing.add(token)
                parts.append(self.delimiter)
                parts.append(token)
            return parts[0] if len(parts) == 1 else "".join(parts)
        return acc + self.delimiter + value


def _needs_equaliser(element: DataType) -> bool:
    """FieldCollectAgg.needsEqualiser: CONSTRUCTED or BINARY_STRING element types."""
    return element.root in ("ARRAY", "MULTISET", "MAP", "ROW", "BINARY", "VARBINARY")


class CollectAgg(FieldAggregator):
    """FieldCollectAgg: concatenates arrays; `distinct` keeps one of each element. With hashable
    element types Java collects into a HashSet, so element ORDER of a distinct result is not
    defined (see `unordered_columns`); the model keeps first-seen order."""

    def __init__(self, name, dt, distinct: bool):
        super().__init__(name, dt)
        self.distinct = distinct
        self.use_equaliser = distinct and _needs_equaliser(dt.element)

    def agg_reversed(self, acc, value):
        # overridden in Java: no reversal needed (the result is a set or a concatenation)
        return self.agg(acc, value)

    def agg(self, acc, value):
        if acc is None and value is None:
            return None
        if (acc is None or value is None) and not self.distinct:
            return value if acc is None else acc
        if self.use_equaliser:
            out = list(acc or [])  # acc is assumed distinct already; not re-checked
            for e in value or []:
                if e not in out:
                    out.append(e)
            return out
        if self.distinct:
            seen: dict = {}
            for e in list(acc or []) + list(value or []):
                seen.setdefault(_hashable(e), e)
            return list(seen.values())
        return list(acc or []) + list(value or [])

    def retract(self, acc, value):
        if acc is None:
            return None
        if value is None or len(value) == 0:
            return acc
        remaining = list(value)
        out = []
        for candidate in acc:
            for i, r in enumerate(remaining):
                if r == candidate:  # null matches null only
                    del remaining[i]
                    break
            else:
                out.append(candidate)
        return out


class MergeMapAgg(FieldAggregator):
    """FieldMergeMapAgg: union, input keys overwrite; retract removes the retracted keys. Java
    builds a HashMap: entry order of a merged map is not defined."""

    def agg(self, acc, value):
        if acc is None or value is None:
            return value if acc is None else acc
        merged: dict = {}
        for k, v in list(acc) + list(value):
            merged[_hashable(k)] = (k, v)
        return list(merged.values())

    def retract(self, acc, value):
        if acc is None:
            return None
        if value is None or len(value) == 0:
            return acc
        gone = {_hashable(k) for k, _ in value}
        kept: dict = {}
        for k, v in acc:
            if _hashable(k) not in gone:
                kept[_hashable(k)] = (k, v)
        return list(kept.values())


class MergeMapWithKeyTimeAgg(FieldAggregator):
    """FieldMergeMapWithKeyTimeAgg: MAP<K, ROW<..>>; per key the row whose time field (read as
    a string, compared with String.compareTo) is larger wins, ties keep the accumulator's row;
    a null row in the input deletes its key; an input row with a null time is ignored; an
    accumulator row with a null time loses to any input row. HashMap result: order undefined.
    No retract."""

    def __init__(self, name, dt, ts_field: str):
        super().__init__(name, dt)
        self.ts_field = ts_field

    def agg(self, acc, value):
        if acc is None:
            return value
        if value is None:
            return acc
        result: dict = {}
        for k, v in acc:
            result[_hashable(k)] = (k, v)
        for k, row in value:
            hk = _hashable(k)
            if row is None:
                result.pop(hk, None)
                continue
            if row[self.ts_field] is None:
                continue
            existing = result.get(hk, (k, None))[1]
            if existing is None or existing[self.ts_field] is None:
                result[hk] = (k, row)
            elif _utf16(row[self.ts_field]) > _utf16(existing[self.ts_field]):
                result[hk] = (k, row)
        return list(result.values())


def _utf16(s: str) -> bytes:
    """java.lang.String.compareTo order: UTF-16 code units."""
    return s.encode("utf-16-be")


def _hashable(v: Any) -> Any:
    if isinstance(v, list):
        return ("L",) + tuple(_hashable(x) for x in v)
    if isinstance(v, dict):
        return ("D",) + tuple((k, _hashable(x)) for k, x in v.items())
    if isinstance(v, tuple):
        return ("T",) + tuple(_hashable(x) for x in v)
    if isinstance(v, float) and v == 0.0:
        return ("F0", math.copysign(1.0, v))  # Float.equals tells -0.0 from 0.0
    return v


class _NestedKeyed:
    """Shared by the two nested aggregators: project a nested key, apply the null strategy."""

    def __init__(self, field_name: str, keys: list[str], null_strategy: str):
        self.field_name = field_name
        self.keys = keys
        self.null_strategy = null_strategy

    def key_of(self, row: dict) -> tuple:
        return tuple(row.get(k) for k in self.keys)

    def accept(self, key: tuple) -> bool:
        """applyNestedKeyNullStrategy."""
        if all(v is not None for v in key):
            return True
        if self.null_strategy == "MERGE":
            return True
        if self.null_strategy == "IGNORE":
            return False
        raise NestedKeyNull(f"Nested key of {self.field_name} contains null values")


class NestedUpdateAgg(FieldAggregator):
    """FieldNestedUpdateAgg: without nested-key appends rows (count-limit); with nested-key
    upserts rows by key (a nested-sequence-field decides between two rows of one key); null
    elements are dropped. Keyed results come from a HashMap: row order not defined."""

    def __init__(self, name, dt, field_name: str, nested_key: list[str], null_strategy: str,
                 nested_sequence: list[str], count_limit: int):
        super().__init__(name, dt)
        self.row_type = dt.element
        self.keyed = _NestedKeyed(field_name, nested_key, null_strategy) if nested_key else None
        self.sequence = nested_sequence
        self.count_limit = count_limit

    @staticmethod
    def _non_null(rows, limit=None):
        out = []
        for r in rows:
            if limit is not None and len(out) >= limit:
                break
            if r is not None:
                out.append(r)
        return out

    def _compare_sequence(self, new: dict, old: dict) -> int:
        types = {f.name: f.type for f in self.row_type.fields}
        return compare_fields_nulls_first(new, old, self.sequence, types, True)

    def _add_nested_rows(self, rows, target: dict, limit_new_keys: bool):
        for r in rows:
            if r is None:
                continue
            key = self.keyed.key_of(r)
            if not self.keyed.accept(key):
                continue
            existing = target.get(key)
            if existing is not None:
                if not self.sequence or self._compare_sequence(r, existing) >= 0:
                    target[key] = r
            elif not limit_new_keys or len(target) < self.count_limit:
                target[key] = r

    def agg(self, acc, value):
        if value is None:
            return acc
        if self.keyed is None:
            if acc is None:
                return self._non_null(value, self.count_limit)
            if len(acc) >= self.count_limit:
                return acc
            remain = self.count_limit - len(acc)
            return self._non_null(acc) + self._non_null(value, remain)
        target: dict = {}
        if acc is not None:
            self._add_nested_rows(acc, target, False)
        self._add_nested_rows(value, target, True)
        return list(target.values())

    def retract(self, acc, value):
        if acc is None or value is None:
            return acc
        if self.keyed is None:
            rows = self._non_null(acc)
            for r in value:
                if r is None:
                    continue
                rows = [x for x in rows if x != r]
            return rows
        target: dict = {}
        for r in acc:
            if r is None:
                continue
            key = self.keyed.key_of(r)
            if not self.keyed.accept(key):
                continue
            target[key] = r
        for r in value:
            if r is None:
                continue
            key = self.keyed.key_of(r)
            if not self.keyed.accept(key):
                continue
            target.pop(key, None)
        return list(target.values())


class NestedPartialUpdateAgg(FieldAggregator):
    """FieldNestedPartialUpdateAgg: rows of acc then input, merged per nested key by non-null
    field overwrite. HashMap result: row order not defined. No retract."""

    def __init__(self, name, dt, field_name: str, nested_key: list[str], null_strategy: str):
        super().__init__(name, dt)
        self.names = [f.name for f in dt.element.fields]
        self.keyed = _NestedKeyed(field_name, nested_key, null_strategy)

    def agg(self, acc, value):
        if value is None:
            return acc
        rows = [r for r in (acc or []) if r is not None] + [r for r in value if r is not None]
        target: dict = {}
        for r in rows:
            key = self.keyed.key_of(r)
            if not self.keyed.accept(key):
                continue
            merged = target.setdefault(key, {n: None for n in self.names})
            for n in self.names:
                if r.get(n) is not None:
                    merged[n] = r[n]
        return list(target.values())


class PrimaryKeyAgg(FieldAggregator):
    """FieldPrimaryKeyAgg: the input, for agg and retract."""

    def agg(self, acc, value):
        return value

    def retract(self, acc, value):
        return value


class IgnoreRetractAgg(FieldAggregator):
    """FieldIgnoreRetractAgg: delegates agg/reset, retract keeps acc. It does NOT forward
    aggReversed: the base class's agg(input, acc) runs, i.e. the inner agg with swapped
    arguments even when the inner aggregator overrides aggReversed (collect)."""

    def __init__(self, inner: FieldAggregator):
        super().__init__(inner.name, inner.dt)
        self.inner = inner

    def agg(self, acc, value):
        return self.inner.agg(acc, value)

    def reset(self):
        self.inner.reset()

    def retract(self, acc, value):
        return acc


_NUMERIC = ("TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL")
_COMPARABLE_EXCLUDED = ("MAP", "MULTISET", "ROW", "ARRAY", "VARIANT", "BLOB")
UNSUPPORTED_FUNCTIONS = ("hll_sketch", "theta_sketch", "rbm32", "rbm64")


def create_field_aggregator(dt: DataType, field_name: str, func: str,
                            options: Options) -> FieldAggregator:
    """FieldAggregatorFactory.create + the per-function factories' type checks."""
    func = func.strip()
    remove_on_delete = options.aggregation_remove_record_on_delete
    ignore_retract = options.field_ignore_retract(field_name)
    if remove_on_delete and ignore_retract:
        raise ModelConfigError(
            f"aggregation.remove-record-on-delete and fields.{field_name}.ignore-retract "
            "have conflicting behavior")

    def need(ok: bool, what: str) -> None:
        if not ok:
            raise ModelConfigError(f"{func} on {field_name}: {what}, got {dt}")

    agg: FieldAggregator
    if func == "sum":
        need(dt.root in _NUMERIC, "needs a numeric type")
        agg = SumAgg(func, dt)
    elif func == "product":
        need(dt.root in _NUMERIC, "needs a numeric type")
        agg = ProductAgg(func, dt)
    elif func in ("max", "min"):
        need(dt.root not in _COMPARABLE_EXCLUDED, "needs a comparable type")
        agg = MaxAgg(func, dt) if func == "max" else MinAgg(func, dt)
    elif func == "last_value":
        agg = LastValueAgg(func, dt)
    elif func == "last_non_null_value":
        agg = LastNonNullValueAgg(func, dt)
    elif func == "first_value":
        agg = FirstValueAgg(func, dt)
    elif func in ("first_non_null_value", "first_not_null_value"):
        agg = FirstNonNullValueAgg(func, dt)
    elif func in ("bool_and", "bool_or"):
        need(dt.root == "BOOLEAN", "needs BOOLEAN")
        agg = BoolAndAgg(func, dt) if func == "bool_and" else BoolOrAgg(func, dt)
    elif func == "listagg":
        need(dt.root == "VARCHAR" and dt.length == 2147483647, "needs STRING")
        agg = ListaggAgg(func, dt, options.field_list_agg_delimiter(field_name),
                         options.field_distinct(field_name))
    elif func == "collect":
        need(dt.root == "ARRAY", "needs ARRAY")
        agg = CollectAgg(func, dt, options.field_distinct(field_name))
    elif func == "merge_map":
        need(dt.root == "MAP", "needs MAP")
        agg = MergeMapAgg(func, dt)
    elif func == "merge_map_with_keytime":
        need(dt.root == "MAP", "needs MAP")
        need(dt.value.root == "ROW", "needs MAP<K, ROW>")
        need(len(dt.value.fields) >= 2, "needs a ROW of at least 2 fields")
        row_names = [f.name for f in dt.value.fields]
        ts = options.get(f"fields.{field_name}.ts-field")
        if ts is None:
            ts = row_names[-1]
        need(ts in row_names, f"time field {ts!r} must be a field of the ROW")
        agg = MergeMapWithKeyTimeAgg(func, dt, ts)
    elif func == "nested_update":
        need(dt.root == "ARRAY" and dt.element.root == "ROW", "needs ARRAY<ROW>")
        keys = options.field_nested_key(field_name)
        strategy_set = f"fields.{field_name}.nested-key-null-strategy" in options.raw
        seq = options.field_nested_sequence_field(field_name)
        need(not strategy_set or bool(keys), "nested-key-null-strategy needs nested-key")
        need(not seq or bool(keys), "nested-sequence-field needs nested-key")
        agg = NestedUpdateAgg(func, dt, field_name, keys,
                              options.field_nested_key_null_strategy(field_name), seq,
                              options.field_count_limit(field_name))
    elif func == "nested_partial_update":
        keys = options.field_nested_key(field_name)
        need(bool(keys), "needs nested-key")
        need(dt.root == "ARRAY" and dt.element.root == "ROW", "needs ARRAY<ROW>")
        agg = NestedPartialUpdateAgg(func, dt, field_name, keys,
                                     options.field_nested_key_null_strategy(field_name))
    elif func == "primary-key":
        agg = PrimaryKeyAgg(func, dt)
    else:
        raise ModelConfigError(f"unsupported aggregation {func!r} (model covers no sketches)")
    return IgnoreRetractAgg(agg) if ignore_retract else agg


# =============================================================================================
# Merge functions
# =============================================================================================

Row = dict[str, Any]


class MergeFunction:
    """MergeFunction: reset(), add(kv), get_result() -> record dict or None."""

    def reset(self) -> None:
        raise NotImplementedError

    def add(self, kv: Row) -> None:
        raise NotImplementedError

    def get_result(self) -> Row | None:
        raise NotImplementedError


class DeduplicateMergeFunction(MergeFunction):
    """DeduplicateMergeFunction: the latest record; with ignore-delete, retracts are skipped."""

    def __init__(self, ignore_delete: bool):
        self.ignore_delete = ignore_delete

    def reset(self):
        self.latest = None

    def add(self, kv):
        if self.ignore_delete and is_retract(kv[VALUE_KIND]):
            return
        self.latest = kv

    def get_result(self):
        return self.latest


class FirstRowMergeFunction(MergeFunction):
    """FirstRowMergeFunction: the first add; a retract is skipped (ignore-delete) or refused."""

    def __init__(self, ignore_delete: bool):
        self.ignore_delete = ignore_delete

    def reset(self):
        self.first = None

    def add(self, kv):
        if is_retract(kv[VALUE_KIND]):
            if self.ignore_delete:
                return
            raise RetractRefused("By default, First row merge engine can not accept "
                                 "DELETE/UPDATE_BEFORE records; configure 'ignore-delete'")
        if self.first is None:
            self.first = kv

    def get_result(self):
        return self.first


@dataclass
class SequenceGroup:
    """One `fields.<o1>,<o2>.sequence-group = <p1>,<p2>` option."""

    ordering: list[str]  # compareFields, in option-key order
    protected: list[str]


@dataclass
class PartialUpdateConfig:
    names: list[str]
    types: dict[str, DataType]
    ignore_delete: bool
    remove_record_on_delete: bool
    groups: list[SequenceGroup]
    group_of: dict[str, SequenceGroup]  # fieldSeqComparators: protected AND ordering fields
    agg_funcs: dict[str, str]  # fieldAggregators (name -> function), incl. primary-key
    partial_delete: set[str]  # sequenceGroupPartialDelete (ordering field names)
    options: Options = field(repr=False, default=None)  # type: ignore[assignment]


def partial_update_config(schema: TableSchema, options: Options) -> PartialUpdateConfig:
    """PartialUpdateMergeFunction.Factory: parse sequence groups, aggregators, preconditions."""
    names = [f.name for f in schema.fields]
    types = {f.name: f.type for f in schema.fields}
    pks = list(schema.primary_keys)
    ignore_delete = options.ignore_delete
    remove_on_delete = options.partial_update_remove_record_on_delete
    remove_on_group = options.partial_update_remove_record_on_sequence_group

    def require(name: str) -> str:
        if name not in names:
            raise ModelConfigError(f"Field {name} can not be found in table schema")
        return name

    groups: list[SequenceGroup] = []
    group_of: dict[str, SequenceGroup] = {}
    protected_by_group: set[str] = set()
    ordering_fields: list[str] = []
    for key, value in options.raw.items():
        if not (key.startswith("fields") and key.endswith("sequence-group")):
            continue
        if not (key.startswith("fields.") and key.endswith(".sequence-group")):
            raise ModelConfigError(f"Invalid sequence-group option: {key}")
        ordering = [require(n) for n in key[len("fields."):-len(".sequence-group")].split(",")]
        protected = [require(n) for n in value.split(",")]
        group = SequenceGroup(ordering, protected)
        for p in protected:
            if p in pks:
                raise ModelConfigError(f"sequence-group {key} contains primary key field {p}")
            if p in group_of:
                raise ModelConfigError(f"Field {p} is defined repeatedly by multiple groups")
            group_of[p] = group
            protected_by_group.add(p)
        for o in ordering:
            if o in pks:
                raise ModelConfigError(f"sequence-group {key} contains primary key field {o}")
            if o in group_of and group_of[o] is not group:
                # Java overwrites or refuses depending on HashMap order of the options: refuse.
                raise ModelConfigError(f"Field {o} is in two sequence groups (ambiguous in Java)")
            ordering_fields.append(o)
            group_of[o] = group
        groups.append(group)

    agg_funcs: dict[str, str] = {}
    for n in names:
        # PartialUpdateMergeFunction.getAggFuncName
        if n in ordering_fields:
            continue
        if n in pks:
            agg_funcs[n] = "primary-key"
            continue
        func = options.field_agg_func(n) or options.fields_default_func
        if func is not None:
            if func != "last_non_null_value" and n not in protected_by_group:
                raise ModelConfigError(
                    f"Must use sequence group for aggregation functions but not found for "
                    f"field {n}.")
            agg_funcs[n] = func
    for n, func in agg_funcs.items():  # build once to run the factory checks
        create_field_aggregator(types[n], n, func, options)

    if remove_on_delete and ignore_delete:
        raise ModelConfigError("ignore-delete and partial-update.remove-record-on-delete conflict")
    if remove_on_group is not None and ignore_delete:
        raise ModelConfigError(
            "ignore-delete and partial-update.remove-record-on-sequence-group conflict")
    if remove_on_delete and groups:
        raise ModelConfigError(
            "sequence-group and partial-update.remove-record-on-delete conflict")
    partial_delete: set[str] = set()
    if remove_on_group is not None:
        wanted = remove_on_group.split(",")
        if not set(wanted) <= set(ordering_fields):
            raise ModelConfigError(
                f"field '{remove_on_group}' defined in "
                "'partial-update.remove-record-on-sequence-group' must be part of sequence groups")
        partial_delete = set(wanted)
    return PartialUpdateConfig(names, types, ignore_delete, remove_on_delete, groups, group_of,
                               agg_funcs, partial_delete, options)


class PartialUpdateMergeFunction(MergeFunction):
    """PartialUpdateMergeFunction, field by field in schema order like Java's loops."""

    def __init__(self, cfg: PartialUpdateConfig, schema: TableSchema):
        self.cfg = cfg
        self.names = cfg.names
        self.nullable = {f.name: f.type.nullable for f in schema.fields}
        self.aggs = {n: create_field_aggregator(cfg.types[n], n, f, cfg.options)
                     for n, f in cfg.agg_funcs.items()}
        self.field_sequence_enabled = bool(cfg.groups)
        self.current_delete_row = False

    # -- MergeFunction -----------------------------------------------------------------------
    def reset(self):
        self.current_key = None
        self.meet_insert = False
        self.not_null_column_filled = False
        self.row = {n: None for n in self.names}
        self.latest_sequence_number = 0
        for a in self.aggs.values():
            a.reset()

    def add(self, kv):
        self.current_key = kv
        self.current_delete_row = False
        if is_retract(kv[VALUE_KIND]):
            # the first record of a key initialises the row, even when it will be ignored
            if not self.not_null_column_filled:
                self._init_row(kv)
                self.not_null_column_filled = True
            if self.cfg.ignore_delete:
                return  # note: latest_sequence_number is NOT taken from an ignored retract
            self.latest_sequence_number = kv[SEQUENCE_NUMBER]
            if self.field_sequence_enabled:
                self._retract_with_sequence_group(kv)
                return
            if self.cfg.remove_record_on_delete:
                if kv[VALUE_KIND] == DELETE:
                    self.current_delete_row = True
                    self.row = {n: None for n in self.names}
                    self._init_row(kv)
                return  # -U is dropped
            raise RetractRefused(
                "By default, Partial update can not accept delete records; configure "
                "'ignore-delete', 'partial-update.remove-record-on-delete', or sequence groups")
        self.latest_sequence_number = kv[SEQUENCE_NUMBER]
        if not self.cfg.groups:
            self._update_non_null_fields(kv)
        else:
            self._update_with_sequence_group(kv)
        self.meet_insert = True
        self.not_null_column_filled = True

    def get_result(self):
        kind = DELETE if self.current_delete_row or not self.meet_insert else INSERT
        out = dict(self.row)
        out[SEQUENCE_NUMBER] = self.latest_sequence_number
        out[VALUE_KIND] = kind
        return out

    # -- helpers ------------------------------------------------------------------------------
    def _init_row(self, kv):
        """initRow: copy every field of the record, refusing nulls in NOT NULL columns."""
        for i, n in enumerate(self.names):
            v = kv[n]
            if not self.nullable[n] and v is None:
                raise NullInNotNullColumn(f"Field {i} ({n}) can not be null")
            self.row[n] = v

    def _update_non_null_fields(self, kv):
        for i, n in enumerate(self.names):
            v = kv[n]
            if v is not None:
                self.row[n] = v
            elif not self.nullable[n]:
                raise NullInNotNullColumn(f"Field {i} ({n}) can not be null")

    def _group_newer_or_equal(self, kv, group: SequenceGroup) -> bool:
        """seqComparator.compare(kv.value(), row) >= 0 (ascending, nulls first)."""
        return compare_fields_nulls_first(kv, self.row, group.ordering, self.cfg.types,
                                          True) >= 0

    def _is_empty_sequence_group(self, kv, group: SequenceGroup, processed: set[str]) -> bool:
        if any(kv[o] is not None for o in group.ordering):
            return False
        processed.update(group.ordering)
        return True

    def _update_with_sequence_group(self, kv):
        processed: set[str] = set()  # isProcessedSequenceField
        for n in self.names:
            group = self.cfg.group_of.get(n)
            aggregator = self.aggs.get(n)
            acc = self.row[n]
            if group is not None:
                if n in processed:
                    continue
                if self._is_empty_sequence_group(kv, group, processed):
                    continue
                v = kv[n]
                if self._group_newer_or_equal(kv, group):
                    if n in group.ordering:
                        # all ordering fields of the group are copied at once
                        for o in group.ordering:
                            self.row[o] = kv[o]
                            processed.add(o)
                        continue
                    self.row[n] = v if aggregator is None else aggregator.agg(acc, v)
                elif aggregator is not None:
                    self.row[n] = aggregator.agg_reversed(acc, v)
            else:
                v = kv[n]
                if aggregator is not None:
                    self.row[n] = aggregator.agg(acc, v)
                elif v is not None:
                    self.row[n] = v

    def _retract_with_sequence_group(self, kv):
        updated_sequence_fields: set[str] = set()
        processed: set[str] = set()
        for n in self.names:
            group = self.cfg.group_of.get(n)
            aggregator = self.aggs.get(n)
            if group is None:
                continue  # columns outside every group are left alone by a retract
            if n in processed:
                continue
            if self._is_empty_sequence_group(kv, group, processed):
                continue
            if self._group_newer_or_equal(kv, group):
                if n in group.ordering:
                    for o in group.ordering:
                        if o not in updated_sequence_fields:
                            if kv[VALUE_KIND] == DELETE and o in self.cfg.partial_delete:
                                self.current_delete_row = True
                                self.row = {x: None for x in self.names}
                                self._init_row(kv)
                                return
                            self.row[o] = kv[o]
                            updated_sequence_fields.add(o)
                        processed.add(o)
                elif aggregator is None:
                    self.row[n] = None
                else:
                    self.row[n] = aggregator.retract(self.row[n], kv[n])
            elif aggregator is not None:
                self.row[n] = aggregator.retract(self.row[n], kv[n])


def aggregate_func_name(name: str, options: Options, pks: list[str],
                        sequence_fields: list[str]) -> str:
    """AggregateMergeFunction.getAggFuncName."""
    if name in sequence_fields:
        return "last_value"
    if name in pks:
        return "primary-key"
    return options.field_agg_func(name) or options.fields_default_func or "last_non_null_value"


class AggregateMergeFunction(MergeFunction):
    """AggregateMergeFunction: every field folds through its aggregator; a -D with
    aggregation.remove-record-on-delete replaces the row and makes the result DELETE."""

    def __init__(self, schema: TableSchema, options: Options):
        self.names = [f.name for f in schema.fields]
        self.nullable = {f.name: f.type.nullable for f in schema.fields}
        pks = list(schema.primary_keys)
        seq = options.sequence_field
        self.remove_record_on_delete = options.aggregation_remove_record_on_delete
        self.aggs = {f.name: create_field_aggregator(
            f.type, f.name, aggregate_func_name(f.name, options, pks, seq), options)
            for f in schema.fields}

    def reset(self):
        self.latest = None
        self.row = {n: None for n in self.names}
        for a in self.aggs.values():
            a.reset()
        self.current_delete_row = False

    def add(self, kv):
        self.latest = kv
        self.current_delete_row = self.remove_record_on_delete and kv[VALUE_KIND] == DELETE
        if self.current_delete_row:
            self.row = {n: None for n in self.names}
            for i, n in enumerate(self.names):  # initRow
                if not self.nullable[n] and kv[n] is None:
                    raise NullInNotNullColumn(f"Field {i} ({n}) can not be null")
                self.row[n] = kv[n]
            return
        retract = is_retract(kv[VALUE_KIND])
        for n in self.names:
            a = self.aggs[n]
            self.row[n] = a.retract(self.row[n], kv[n]) if retract else a.agg(self.row[n], kv[n])

    def get_result(self):
        assert self.latest is not None
        out = dict(self.row)
        out[SEQUENCE_NUMBER] = self.latest[SEQUENCE_NUMBER]
        out[VALUE_KIND] = DELETE if self.current_delete_row else INSERT
        return out


# =============================================================================================
# Factory, record order, reducer wrapper, entry point
# =============================================================================================

@dataclass
class EngineSetup:
    engine: str
    options: Options
    key_names: list[str]
    sequence_fields: list[str]
    sequence_ascending: bool
    types: dict[str, DataType]
    make: Callable[[], MergeFunction]


def engine_setup(schema: TableSchema) -> EngineSetup:
    """PrimaryKeyTableUtils.createMergeFunctionFactory + SchemaValidation.validateSequenceField."""
    options = Options(schema.options)
    engine = options.merge_engine
    names = [f.name for f in schema.fields]
    types = {f.name: f.type for f in schema.fields}
    seq_fields = options.sequence_field
    for s in seq_fields:
        if s not in names:
            raise ModelConfigError(f"Sequence field: '{s}' can not be found in table schema.")
        if options.field_agg_func(s) is not None:
            raise ModelConfigError(f"Should not define aggregation on sequence field: '{s}'.")
        if seq_fields.count(s) > 1:
            raise ModelConfigError(f"Sequence field '{s}' is defined repeatedly.")
    if seq_fields and engine == "first-row":
        raise ModelConfigError("Do not support use sequence field on FIRST_ROW merge engine.")
    ascending = options.sequence_ascending
    partitions = set(schema.partition_keys)
    key_names = [k for k in schema.primary_keys if k not in partitions] or list(
        schema.primary_keys)

    if engine == "deduplicate":
        ignore = options.ignore_delete
        make: Callable[[], MergeFunction] = lambda: DeduplicateMergeFunction(ignore)  # noqa: E731
    elif engine == "first-row":
        ignore = options.ignore_delete
        make = lambda: FirstRowMergeFunction(ignore)  # noqa: E731
    elif engine == "partial-update":
        cfg = partial_update_config(schema, options)
        make = lambda: PartialUpdateMergeFunction(cfg, schema)  # noqa: E731
    elif engine == "aggregation":
        AggregateMergeFunction(schema, options)  # run the factory checks now
        make = lambda: AggregateMergeFunction(schema, options)  # noqa: E731
    else:
        raise ModelConfigError(f"Unsupported merge engine: {engine}")
    return EngineSetup(engine, options, key_names, seq_fields, ascending, types, make)


def merge_order(records: list[Row], setup: EngineSetup) -> list[Row]:
    """SortMergeReaderWithMinHeap's comparator for one key: sequence.field (nulls first in both
    orders), then _SEQUENCE_NUMBER, then retract before add (Boolean.compare(isAdd))."""

    def cmp(a: Row, b: Row) -> int:
        c = compare_fields_nulls_first(a, b, setup.sequence_fields, setup.types,
                                       setup.sequence_ascending)
        if c:
            return c
        c = (a[SEQUENCE_NUMBER] > b[SEQUENCE_NUMBER]) - (a[SEQUENCE_NUMBER] < b[SEQUENCE_NUMBER])
        if c:
            return c
        add_a, add_b = not is_retract(a[VALUE_KIND]), not is_retract(b[VALUE_KIND])
        return (add_a > add_b) - (add_a < add_b)

    return sorted(records, key=functools.cmp_to_key(cmp))


def reduce_key(records: list[Row], setup: EngineSetup,
               aggregation_merges_lone_records: bool = False) -> Row | None:
    """ReducerMergeFunctionWrapper: a lone record comes back unchanged, without running the
    merge function; otherwise reset + add every record + getResult (None = no row).

    Java (master, 2026) applies this to EVERY engine, aggregation included;
    `aggregation_merges_lone_records=True` models the lakeformat contract's variant instead,
    where aggregation runs its functions on a lone record too (as pypaimon does)."""
    if len(records) == 1 and not (aggregation_merges_lone_records
                                  and setup.engine == "aggregation"):
        return dict(records[0])
    mf = setup.make()
    mf.reset()
    for r in records:
        mf.add(r)
    result = mf.get_result()
    return None if result is None else dict(result)


def model_merge(records: list[dict], schema: TableSchema, *,
                aggregation_merges_lone_records: bool = False
                ) -> dict[tuple, dict | Exception | None]:
    """Merge records of one bucket as Paimon does, key by key.

    `records`: dicts with `_SEQUENCE_NUMBER`, `_VALUE_KIND` and every column, in any order.
    Returns {key tuple (trimmed primary key, schema order): result}, where result is
      * a dict: the merged record (every column, `_VALUE_KIND`, `_SEQUENCE_NUMBER`);
      * None: the merge function gave no record at all (deduplicate / first-row that skipped
        every record of a key with ignore-delete) - the key has no row;
      * an Exception instance (a ModelError subclass): the key's merge throws in Java.
    Options Java refuses raise ModelConfigError from this call.
    """
    setup = engine_setup(schema)
    by_key: dict[tuple, list[Row]] = {}
    for r in records:
        by_key.setdefault(tuple(r[k] for k in setup.key_names), []).append(r)
    out: dict[tuple, dict | Exception | None] = {}
    for key, recs in by_key.items():
        try:
            out[key] = reduce_key(merge_order(recs, setup), setup,
                                  aggregation_merges_lone_records)
        except ModelError as e:
            out[key] = e
    return out


def unordered_columns(schema: TableSchema) -> dict[str, str]:
    """Columns whose merged values Java builds in hash containers, so element order is not part
    of the semantics: {column: 'elements' (set-like array) | 'map' | 'rows' (keyed ARRAY<ROW>)}."""
    options = Options(schema.options)
    engine = options.merge_engine
    if engine not in ("partial-update", "aggregation"):
        return {}
    out: dict[str, str] = {}
    for f in schema.fields:
        func = options.field_agg_func(f.name) or options.fields_default_func
        if func == "collect" and options.field_distinct(f.name) and f.type.root == "ARRAY" \
                and not _needs_equaliser(f.type.element):
            out[f.name] = "elements"
        elif func in ("merge_map", "merge_map_with_keytime"):
            out[f.name] = "map"
        elif func == "nested_partial_update" or (
                func == "nested_update" and options.field_nested_key(f.name)):
            out[f.name] = "rows"
    return out
