"""Read filters: a pyarrow Expression, or DNF tuples like pyarrow.parquet's `filters`.

DNF tuples (`[("dt", "=", "2024-01-01")]`, or a list of such lists meaning OR) can also be
evaluated on partition values alone, which is what prunes partitions before any file is read.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakeformat.errors import InvalidFilterError
from lakeformat.schema.types import DataField, arrow_schema

Filter = pc.Expression | Sequence[Any] | None

_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq, "==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
    ">": operator.gt, ">=": operator.ge,
    "in": lambda a, b: a in b, "not in": lambda a, b: a not in b,
    "is null": lambda a, b: a is None, "is not null": lambda a, b: a is not None,
}
#: ops whose value is ignored (None by convention)
NULL_OPS = ("is null", "is not null")


def dnf_terms(filter: Sequence[Any]) -> list[list[tuple[str, str, Any]]]:
    if not filter:
        return []
    if isinstance(filter[0], tuple):
        conjunctions = [list(filter)]
    else:
        conjunctions = [list(c) for c in filter]
    for conj in conjunctions:
        for term in conj:
            if not (isinstance(term, tuple) and len(term) == 3 and str(term[1]).lower() in _OPS):
                raise InvalidFilterError(f"filter term {term!r} is not (column, op, value) with op "
                                         f"in {sorted(_OPS)}")
    return [[(c, str(op).lower(), v) for c, op, v in conj] for conj in conjunctions]


def to_expression(filter: Filter) -> pc.Expression | None:
    if filter is None:
        return None
    if isinstance(filter, pc.Expression):
        return filter
    dnf = dnf_terms(filter)
    if not dnf:
        return None
    out = None
    for conj in dnf:
        expr = None
        for col, op, value in conj:
            term = term_expression(col, op, value)
            expr = term if expr is None else expr & term
        if expr is None:  # an empty conjunction is true
            return None
        out = expr if out is None else out | expr
    return out


def term_expression(col: str, op: str, value: Any) -> pc.Expression:
    """One (column, op, value) term as an Expression, with SQL's null rule: a null column
    value matches only IS NULL (so `NOT IN` excludes nulls, as partition pruning does)."""
    field = pc.field(col)
    if op == "is null":
        return field.is_null()
    if op == "is not null":
        return field.is_valid()
    if op in ("in", "not in"):
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple, set,
                                                                       frozenset)):
            raise InvalidFilterError(f"filter ({col!r}, {op!r}, {value!r}): {op} takes a "
                                     "list of values")
        if not value:
            raise InvalidFilterError(f"filter ({col!r}, {op!r}, []): {op} needs at least one "
                                     "value")
        if any(v is None for v in value):
            raise InvalidFilterError(f"filter ({col!r}, {op!r}, {list(value)!r}): a null in an "
                                     f"{op.upper()} list matches nothing in SQL; use "
                                     f"({col!r}, 'is null', None) for nulls")
        values = pa.array(list(value))
        member = field.isin(values)
        return member if op == "in" else ~member & field.is_valid()
    return pq.filters_to_expression([[(col, op, value)]])


def filter_columns(filter: Filter, all_columns: Sequence[str]) -> set[str]:
    """Columns a filter reads, so a projection still lets the filter run.

    An Expression cannot be walked with pyarrow's public API, so it reads every column.
    """
    if filter is None:
        return set()
    if isinstance(filter, pc.Expression):
        return set(all_columns)
    return {c for conj in dnf_terms(filter) for c, _, _ in conj}


def partition_predicate(filter: Filter, partition_keys: Sequence[str]
                        ) -> Callable[[dict[str, Any]], bool] | None:
    """A predicate on partition values implied by a DNF filter (None when nothing prunes)."""
    if filter is None or isinstance(filter, pc.Expression) or not partition_keys:
        return None
    dnf = dnf_terms(filter)
    if not dnf:
        return None
    parts = [[t for t in conj if t[0] in partition_keys] for conj in dnf]
    if any(not p for p in parts):
        return None  # some disjunct does not constrain partitions: nothing can be pruned

    def pred(values: dict[str, Any]) -> bool:
        for conj in parts:
            ok = True
            for col, op, v in conj:
                actual = values.get(col)
                try:
                    if op in NULL_OPS:
                        if not _OPS[op](actual, v):
                            ok = False
                            break
                    elif actual is None or not _OPS[op](actual, v):
                        ok = False
                        break
                except TypeError:  # incomparable types: do not prune
                    break
            if ok:
                return True
        return False

    return pred


_UNKNOWN_FIELD = re.compile(r"No match for FieldRef\.Name\((.*?)\)")


def check_filter(filter: Filter, fields: Sequence[DataField], table: str) -> None:
    """Refuse a filter that names a column `fields` lacks, or compares a column with a value
    its type cannot take, with an error naming the column, before any file is read.

    The filter is bound against an empty table of the read schema, so an Expression is
    checked by pyarrow's own rules without walking it.
    """
    if filter is None:
        return
    names = [f.name for f in fields]
    empty = arrow_schema(list(fields), with_id=False).empty_table()
    if isinstance(filter, pc.Expression):
        try:
            empty.filter(filter)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
            unknown = _UNKNOWN_FIELD.search(str(e))
            if unknown:
                raise InvalidFilterError(f"filter on {table} names unknown column "
                                         f"{unknown.group(1)!r}; table columns are {names}"
                                         ) from None
            raise InvalidFilterError(f"filter {filter} cannot be applied to {table}: "
                                     f"{str(e).splitlines()[0]}") from None
        return
    if isinstance(filter, (str, bytes)):
        raise InvalidFilterError(f"filter {filter!r} on {table}: give a pyarrow Expression or "
                                 "DNF tuples such as [('id', '=', 1)]")
    types = {f.name: f.type for f in fields}
    for conj in dnf_terms(filter):
        for col, op, value in conj:
            if col not in types:
                raise InvalidFilterError(f"filter on {table} names unknown column {col!r}; "
                                         f"table columns are {names}")
            try:
                empty.filter(term_expression(col, op, value))
            except InvalidFilterError:
                raise
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError,
                    TypeError, ValueError) as e:
                raise InvalidFilterError(
                    f"filter ({col!r}, {op!r}, {value!r}) on {table}: the value does not fit "
                    f"column {col!r} of type {types[col]} ({str(e).splitlines()[0]})") from None
