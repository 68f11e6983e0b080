"""Type changes whose stored values may not convert (STRING -> INT, INT -> DECIMAL(3, 0), ...).

Paimon allows `ALTER ... TYPE INT` on a STRING column, and Java then fails the read that meets
a value like 'abc'. lakeformat checks the stored values before it publishes such a change
(`operation/write/alter_check.py`) and converts them here, row-wise vectorized, with Java's results
for the values Java converts (`BinaryStringUtils`, `CastExecutors`):

* STRING -> TINYINT/SMALLINT/INT/BIGINT: `[+-]digits[.digits]`, no whitespace, the fraction
  truncated ('1.9' -> 1, '.5' -> 0, '+7' -> 7); anything else, or out of range, fails.
* STRING -> FLOAT/DOUBLE: Java's `Double.parseDouble` forms (surrounding whitespace and control
  characters, NaN, Infinity, exponents, a trailing f/F/d/D); hexadecimal floats are refused.
* STRING -> BOOLEAN: t/true/y/yes/1 and f/false/n/no/0, any case, no whitespace.
* STRING -> DATE: 'yyyy-MM-dd' calendar dates only (Java also takes partial, timestamped and
  day-number forms, which lakeformat refuses rather than guess).
* integer/BOOLEAN -> DECIMAL(p, s): values that need more than p - s integer digits fail
  (Java reads them as null; lakeformat refuses instead of losing them).

A value that does not convert raises `ValueCastError`, naming value and cast; callers add the
column and the file.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.errors import SchemaMismatchError
from lakeformat.schema.types import DataType, to_arrow

_INTEGERS = ("TINYINT", "SMALLINT", "INT", "BIGINT")
_STRINGS = ("CHAR", "VARCHAR")
_INT_BOUNDS = {"TINYINT": 1 << 7, "SMALLINT": 1 << 15, "INT": 1 << 31, "BIGINT": 1 << 63}
_JAVA_INT = r"^[+-]?[0-9]*(\.[0-9]*)?$"
_WS = r"[\x00-\x20]*"  # what Java's String.trim() (used by parseDouble) strips
_JAVA_FLOAT = (rf"^{_WS}[+-]?(NaN|Infinity|(([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?)"
               rf"[fFdD]?){_WS}$")
_TRUE = ["t", "true", "y", "yes", "1"]
_FALSE = ["f", "false", "n", "no", "0"]


class ValueCastError(SchemaMismatchError):
    """A stored value that does not convert to a column's type; the message names them."""

    def __init__(self, value: object, src: DataType, dst: DataType, column: str | None = None,
                 file: str | None = None):
        self.value, self.src, self.dst, self.column, self.file = value, src, dst, column, file
        where = f"column {column!r}: " if column else ""
        at = f" (in data file {file})" if file else ""
        super().__init__(f"{where}stored value {value!r} cannot be converted from {src} to "
                         f"{dst}{at}")

    def within(self, column: str | None = None, file: str | None = None) -> ValueCastError:
        """The same error with the column and/or file filled in."""
        return ValueCastError(self.value, self.src, self.dst, column or self.column,
                              file or self.file)


def leaf_pairs(src: DataType, dst: DataType) -> Iterator[tuple[DataType, DataType]]:
    """The (stored, read) leaf type pairs a change from `src` to `dst` converts: inside
    ARRAY/MULTISET/MAP by position, inside ROW by field id; equal types convert nothing."""
    if src.copy(True) == dst.copy(True):
        return
    if src.root in ("ARRAY", "MULTISET") and dst.root == src.root:
        yield from leaf_pairs(src.element, dst.element)  # type: ignore[arg-type]
    elif src.root == "MAP" and dst.root == "MAP":
        yield from leaf_pairs(src.key, dst.key)  # type: ignore[arg-type]
        yield from leaf_pairs(src.value, dst.value)  # type: ignore[arg-type]
    elif src.root == "ROW" and dst.root == "ROW":
        by_id = {f.id: f for f in src.fields}
        for f in dst.fields:
            if f.id in by_id:
                yield from leaf_pairs(by_id[f.id].type, f.type)
    else:
        yield src, dst


def can_fail(src: DataType, dst: DataType) -> bool:
    """Whether converting stored `src` values to `dst` can fail on some value."""
    return any(_leaf_can_fail(a, b) for a, b in leaf_pairs(src, dst))


#: decimal digits of the largest value of each source type
_DIGITS = {"BOOLEAN": 1, "TINYINT": 3, "SMALLINT": 5, "INT": 10, "BIGINT": 19}


def _leaf_can_fail(src: DataType, dst: DataType) -> bool:
    s, d = src.root, dst.root
    if s in _STRINGS:
        return d in (*_INTEGERS, "FLOAT", "DOUBLE", "BOOLEAN", "DATE")
    if d == "DECIMAL" and s in _DIGITS:
        # only a decimal with fewer integer digits than the source's largest value can overflow
        return (dst.precision or 10) - (dst.scale or 0) < _DIGITS[s]
    return False


def checked_cast(col: pa.Array | pa.ChunkedArray, src: DataType, dst: DataType
                 ) -> pa.Array | pa.ChunkedArray | None:
    """`col` converted for a leaf pair of `can_fail`, else None (not such a pair). Raises
    ValueCastError naming the first value that does not convert."""
    if not _leaf_can_fail(src, dst):
        return None
    out, bad = convert_leaf(col, src, dst)
    if bad is not None and bad.any():
        value = col[int(np.flatnonzero(bad)[0])].as_py()
        raise ValueCastError(value, src, dst)
    return out


def convert_leaf(col: pa.Array | pa.ChunkedArray, src: DataType, dst: DataType
                 ) -> tuple[pa.Array | pa.ChunkedArray, np.ndarray | None]:
    """(converted column with failures null, mask of the failures) for a `can_fail` leaf pair."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    d = dst.root
    if src.root in _STRINGS:
        text = col.cast(pa.string())
        if d in _INTEGERS:
            return _string_to_integer(text, d, to_arrow(dst))
        if d in ("FLOAT", "DOUBLE"):
            return _string_to_float(text, to_arrow(dst))
        if d == "BOOLEAN":
            return _string_to_boolean(text)
        return _string_to_date(text)
    return _to_decimal(col, dst)


def _fails(valid: pa.Array, col: pa.Array) -> np.ndarray:
    """Rows holding a value (not null) that `valid` rejects."""
    bad = pc.and_(pc.is_valid(col), pc.invert(pc.fill_null(valid, False)))
    return np.asarray(bad.to_numpy(zero_copy_only=False), dtype=bool)


def _string_to_integer(text: pa.Array, root: str, target: pa.DataType
                       ) -> tuple[pa.Array, np.ndarray]:
    shape = pc.and_(pc.match_substring_regex(text, _JAVA_INT),
                    pc.invert(pc.is_in(text, value_set=pa.array(["", "+", "-"]))))
    integral = pc.replace_substring_regex(text, r"\..*$", "")
    sign = pc.if_else(pc.starts_with(integral, "-"), "-", "")
    digits = pc.replace_substring_regex(integral, r"^[+-]?0*", "")
    fits = pc.less_equal(pc.utf8_length(digits), 19)
    ok = pc.and_(shape, fits)
    digits = pc.if_else(pc.and_(ok, pc.greater(pc.utf8_length(digits), 0)), digits, "0")
    number = pc.binary_join_element_wise(sign, digits, "").cast(pa.decimal128(19, 0))
    bound = _INT_BOUNDS[root]
    ok = pc.and_(ok, pc.and_(
        pc.greater_equal(number, pa.scalar(-bound, pa.decimal128(19, 0))),
        pc.less_equal(number, pa.scalar(bound - 1, pa.decimal128(19, 0)))))
    values = pc.if_else(ok, number, pa.scalar(0, pa.decimal128(19, 0))).cast(target)
    return pc.if_else(ok, values, pa.nulls(len(text), target)), _fails(ok, text)


def _string_to_float(text: pa.Array, target: pa.DataType) -> tuple[pa.Array, np.ndarray]:
    ok = pc.match_substring_regex(text, _JAVA_FLOAT)
    t = pc.replace_substring_regex(text, rf"^{_WS}|{_WS}$", "")
    t = pc.replace_substring_regex(t, r"[fFdD]$", "")
    t = pc.replace_substring_regex(t, "Infinity$", "inf")
    t = pc.replace_substring_regex(t, "NaN$", "nan")
    t = pc.if_else(ok, t, "0")
    values = t.cast(target)
    return pc.if_else(ok, values, pa.nulls(len(text), target)), _fails(ok, text)


def _string_to_boolean(text: pa.Array) -> tuple[pa.Array, np.ndarray]:
    lower = pc.utf8_lower(text)
    yes = pc.is_in(lower, value_set=pa.array(_TRUE))
    no = pc.is_in(lower, value_set=pa.array(_FALSE))
    ok = pc.or_(yes, no)
    return pc.if_else(ok, yes, pa.nulls(len(text), pa.bool_())), _fails(ok, text)


def _string_to_date(text: pa.Array) -> tuple[pa.Array, np.ndarray]:
    shaped = pc.match_substring_regex(text, r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")
    stamp = pc.strptime(pc.if_else(shaped, text, "1970-01-01"), "%Y-%m-%d", "s",
                        error_is_null=True)
    # strptime rolls 2024-02-30 over to March: a calendar date must format back unchanged
    ok = pc.and_(shaped, pc.equal(pc.strftime(stamp, "%Y-%m-%d"), text))
    dates = pc.fill_null(stamp, 0).cast(pa.timestamp("s")).cast(pa.date32())
    return pc.if_else(ok, dates, pa.nulls(len(text), pa.date32())), _fails(ok, text)


def _to_decimal(col: pa.Array, dst: DataType) -> tuple[pa.Array, np.ndarray]:
    target = to_arrow(dst)
    wide = (col.cast(pa.int8()) if pa.types.is_boolean(col.type) else col).cast(
        pa.decimal128(38, 0))
    limit = pa.scalar(10 ** ((dst.precision or 10) - (dst.scale or 0)), pa.decimal128(38, 0))
    ok = pc.less(pc.abs(wide), limit)
    safe = pc.if_else(ok, wide, pa.scalar(0, pa.decimal128(38, 0)))
    return pc.if_else(ok, safe.cast(target), pa.nulls(len(col), target)), _fails(ok, col)
