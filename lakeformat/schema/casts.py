"""Which type changes Paimon allows (its `DataTypeCasts` rules), and casting column values.

`supports_cast(src, dst, allow_explicit)` answers the rule question exactly as Java Paimon does:
implicit casts never lose information (INT -> BIGINT, FLOAT -> DOUBLE, CHAR -> VARCHAR, ...),
explicit casts are what `CAST(x AS t)` accepts. `cast_values` converts whole Arrow columns; it
covers the pairs whose results match Java's and refuses the others, so a schema change is
never committed that lakeformat could not read back.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.errors import UnsupportedError
from lakeformat.schema.checked_casts import checked_cast, leaf_pairs
from lakeformat.schema.types import MAX_LENGTH, DataType, to_arrow

INTEGERS = ("TINYINT", "SMALLINT", "INT", "BIGINT")
APPROXIMATE = ("FLOAT", "DOUBLE")
NUMERIC = ("DECIMAL", *INTEGERS, *APPROXIMATE)
CHARACTER_STRING = ("CHAR", "VARCHAR")
BINARY_STRING = ("BINARY", "VARBINARY")
TIMESTAMPS = ("TIMESTAMP", "TIMESTAMP_LTZ")
DATETIME = ("DATE", "TIME", *TIMESTAMPS)
CONSTRUCTED = ("ARRAY", "MULTISET", "MAP", "ROW")
PREDEFINED = ("BOOLEAN", *NUMERIC, *CHARACTER_STRING, *BINARY_STRING, *DATETIME, "VARIANT",
              "BLOB")

_IMPLICIT: dict[str, set[str]] = {}
_EXPLICIT: dict[str, set[str]] = {}


def _rule(target: str, implicit: tuple[str, ...] = (), explicit: tuple[str, ...] = ()) -> None:
    _IMPLICIT.setdefault(target, {target}).update(implicit)
    _EXPLICIT.setdefault(target, set()).update(explicit)


_rule("CHAR", ("CHAR",), PREDEFINED + CONSTRUCTED)
_rule("VARCHAR", CHARACTER_STRING, PREDEFINED + CONSTRUCTED)
_rule("BOOLEAN", (), CHARACTER_STRING + INTEGERS)
_rule("BINARY", (), CHARACTER_STRING + ("VARBINARY",))
_rule("VARBINARY", BINARY_STRING, CHARACTER_STRING + ("BINARY",))
_rule("DECIMAL", NUMERIC, CHARACTER_STRING + ("BOOLEAN", *TIMESTAMPS))
for _i, _root in enumerate(INTEGERS):
    _rule(_root, INTEGERS[: _i + 1], NUMERIC + CHARACTER_STRING + ("BOOLEAN", *TIMESTAMPS))
_rule("FLOAT", (*INTEGERS, "FLOAT", "DECIMAL"), NUMERIC + CHARACTER_STRING + ("BOOLEAN",
                                                                             *TIMESTAMPS))
_rule("DOUBLE", NUMERIC, CHARACTER_STRING + ("BOOLEAN", *TIMESTAMPS))
_rule("DATE", ("DATE", "TIMESTAMP"), TIMESTAMPS + CHARACTER_STRING)
_rule("TIME", ("TIME", "TIMESTAMP"), ("TIME", *TIMESTAMPS, *CHARACTER_STRING))
_rule("TIMESTAMP", TIMESTAMPS, DATETIME + CHARACTER_STRING + NUMERIC)
_rule("TIMESTAMP_LTZ", TIMESTAMPS, DATETIME + CHARACTER_STRING + NUMERIC)


def supports_cast(src: DataType, dst: DataType, allow_explicit: bool) -> bool:
    """Paimon's `DataTypeCasts.supportsCast` on the type roots (nullability rule included)."""
    if src.nullable and not dst.nullable and not allow_explicit:
        return False
    if src.copy(True) == dst.copy(True):
        return True
    if dst.root in _IMPLICIT and src.root in _IMPLICIT[dst.root]:
        return True
    return allow_explicit and src.root in _EXPLICIT.get(dst.root, set())


def merged_leaf(base: DataType, update: DataType, allow_explicit: bool) -> DataType:
    """Java's SchemaMergingUtils rule for two leaf types (nullability of `base` kept).

    Raises UnsupportedError naming both types when they cannot merge.
    """
    b, u = base.copy(True), update.copy(True)
    if b == u:
        return base
    if b.root == "DECIMAL" and u.root == "DECIMAL":
        if b.scale != u.scale:
            raise UnsupportedError(f"cannot merge decimal types with different scales: {b} and "
                                   f"{u}")
        return DataType("DECIMAL", base.nullable, precision=max(b.precision or 0,
                                                                u.precision or 0),
                        scale=b.scale)
    if not supports_cast(b, u, allow_explicit):
        raise UnsupportedError(f"cannot merge data types {b} and {u}"
                               + ("" if allow_explicit else " without an explicit cast "
                                  "(write.merge-schema.explicit-cast)"))
    if b.length is not None and u.length is not None:
        if not allow_explicit and b.length > u.length:
            raise UnsupportedError(f"cannot merge {b} into the shorter type {u}")
    elif b.precision is not None and u.precision is not None and b.root != "DECIMAL":
        if not allow_explicit and b.precision > u.precision:
            raise UnsupportedError(f"cannot merge {b} into the lower precision type {u}")
    return u.copy(base.nullable)


# -- casting values ---------------------------------------------------------------------------

def _pair_supported(src: DataType, dst: DataType) -> bool:
    s, d = src.root, dst.root
    if s == d and s not in CONSTRUCTED:
        if s == "DECIMAL":  # a smaller scale or precision would round differently than Java
            return (dst.scale or 0) >= (src.scale or 0) and (
                (dst.precision or 0) - (dst.scale or 0) >= (src.precision or 0) - (src.scale or 0))
        return True
    if s in NUMERIC + ("BOOLEAN",) and d in NUMERIC + ("BOOLEAN",):
        return not (s in APPROXIMATE and d == "DECIMAL") and not (s == "DECIMAL"
                                                                   and d == "BOOLEAN")
    if s in CHARACTER_STRING and d in CHARACTER_STRING + BINARY_STRING:
        return True
    if s in BINARY_STRING and d in BINARY_STRING:
        return True
    if s in INTEGERS + ("DECIMAL", "BOOLEAN", "DATE") and d in CHARACTER_STRING:
        return True
    if s in CHARACTER_STRING and d in NUMERIC + ("BOOLEAN", "DATE"):
        return d != "DECIMAL"
    if s in TIMESTAMPS and d in TIMESTAMPS + ("DATE",):
        return True
    return s == "DATE" and d in TIMESTAMPS


def check_value_cast(src: DataType, dst: DataType, column: str) -> None:
    """Raise unless lakeformat can convert stored `src` values to `dst` as Java would."""
    if not _can_cast(src, dst):
        raise UnsupportedError(f"column {column!r}: converting stored {src} values to {dst} is "
                               "not supported by lakeformat")


def _can_cast(src: DataType, dst: DataType) -> bool:
    return all(_pair_supported(a, b) for a, b in leaf_pairs(src, dst))


def cast_values(col: pa.Array | pa.ChunkedArray, src: DataType, dst: DataType
                ) -> pa.Array | pa.ChunkedArray:
    """Convert a column of leaf type `src` (Arrow form of `to_arrow(src)`) to `dst`."""
    target = to_arrow(dst)
    s, d = src.root, dst.root
    checked = checked_cast(col, src, dst)  # pairs whose values may not convert
    if checked is not None:
        return checked
    if d in CHARACTER_STRING and s in CHARACTER_STRING + ("BOOLEAN", "DATE", "DECIMAL",
                                                          *INTEGERS):
        return _fit_length(col.cast(pa.string()), dst, pad=" " if d == "CHAR" else None)
    if d in BINARY_STRING and s in BINARY_STRING + CHARACTER_STRING:
        return _fit_length(col.cast(pa.binary()), dst, pad=b"\x00" if d == "BINARY" else None)
    if s in NUMERIC and d in INTEGERS + APPROXIMATE:
        # Java narrows integers by wrapping and floats to integers by truncation
        return col.cast(target, safe=False)
    if s in TIMESTAMPS and d in TIMESTAMPS + ("DATE",):
        if pa.types.is_timestamp(col.type) and col.type.tz and d != "TIMESTAMP_LTZ":
            col = col.cast(pa.timestamp(col.type.unit))
        return col.cast(target, safe=False)
    return col.cast(target, safe=True)


def _fit_length(col: pa.Array | pa.ChunkedArray, dst: DataType, pad: str | bytes | None
                ) -> pa.Array | pa.ChunkedArray:
    """Java's cast to a sized string/binary type: cut to the length; CHAR pads with spaces and
    BINARY with zero bytes up to it (BinaryStringUtils.toCharacterString / toBinaryString)."""
    n = dst.length
    if n is None or n == MAX_LENGTH:
        return col
    text = isinstance(pad, str) or (pad is None and dst.root in CHARACTER_STRING)
    if text:
        col = pc.utf8_slice_codeunits(col, 0, n)
        return pc.utf8_rpad(col, width=n, padding=pad) if pad else col
    col = pc.binary_slice(col, 0, n)
    if not pad:
        return col
    missing = pc.subtract(pa.scalar(n, pa.int32()), pc.binary_length(col))
    filler = pc.binary_repeat(pa.scalar(pad, pa.binary()), missing)
    return pc.binary_join_element_wise(col, filler, pa.scalar(b"", pa.binary()))
