"""Java Paimon's ``BinaryRow`` byte layout: the form of partitions, keys and stats in manifests.

Layout (all little-endian inside the row): one header byte (RowKind, 0 here), a null bit set of
``W = ((arity + 63 + 8) // 64) * 8`` bytes (field ``i`` is bit ``i + 8``), one 8-byte slot per
field, then a variable part whose chunks are zero-padded to 8 bytes.  Partitions and bucket
hashes compare these bytes, so every byte must equal what Java's ``BinaryRowWriter`` writes —
including Java's quirk of reserving variable-part bytes for a *null* non-compact DECIMAL
(precision > 18) or TIMESTAMP (precision > 3), which pypaimon 2.1 does not do.

Python values follow pyarrow's ``.as_py()`` for ``to_arrow(type)``: bool, int, float,
``Decimal``, str, bytes, ``date``, ``time``, naive ``datetime`` (TIMESTAMP), tz-aware UTC
``datetime`` (TIMESTAMP_LTZ; naive is taken as UTC).  Anything with a ``nanosecond`` attribute
(``pandas.Timestamp``) keeps its nanoseconds.

Checked byte for byte against Paimon's own ``RowHelper``/``BinaryRowWriter`` (compiled from the
apache/paimon sources) on thousands of random rows; see ``JAVA_ROWS`` in the unit tests.
"""

from __future__ import annotations

import datetime as _dt
import operator
import struct
from collections.abc import Sequence
from decimal import ROUND_HALF_UP, Context, Decimal
from typing import Any

from lakeformat.errors import CorruptFileError, UnsupportedError
from lakeformat.schema.types import DataType

HEADER_BITS = 8
MAX_INLINE = 7  # strings/binaries up to 7 bytes live inside their slot
COMPACT_DECIMAL_PRECISION = 18
COMPACT_TIMESTAMP_PRECISION = 3
STRING_ROOTS = ("CHAR", "VARCHAR")
BINARY_ROOTS = ("BINARY", "VARBINARY", "BLOB")
INT_FORMATS = {"TINYINT": "<b", "SMALLINT": "<h", "INT": "<i", "BIGINT": "<q", "DATE": "<i",
               "TIME": "<i"}

_EPOCH_ORDINAL = _dt.date(1970, 1, 1).toordinal()
_EPOCH = _dt.datetime(1970, 1, 1)
_DEC_CTX = Context(prec=100, rounding=ROUND_HALF_UP)
_ARITY = struct.Struct(">i")
_I64 = struct.Struct("<q")


def null_bits_width(arity: int) -> int:
    """Bytes of header + null bit set (Java ``BinaryRow.calculateBitSetWidthInBytes``)."""
    return ((arity + 63 + HEADER_BITS) // 64) * 8


def round_to_word(n: int) -> int:
    return (n + 7) & ~7


def var_reserve(dt: DataType) -> int:
    """Variable-part bytes of non-compact DECIMAL (16) / TIMESTAMP (8), reserved even for null."""
    if dt.root == "DECIMAL" and (dt.precision or 10) > COMPACT_DECIMAL_PRECISION:
        return 16
    if dt.root in ("TIMESTAMP", "TIMESTAMP_LTZ") and (
            dt.precision if dt.precision is not None else 6) > COMPACT_TIMESTAMP_PRECISION:
        return 8
    return 0


# -- value conversions shared with bucket.py and partition.py --------------------------------

def decimal_unscaled(value: Any, dt: DataType) -> int:
    """Unscaled integer of ``value`` at the type's scale (HALF_UP, like Java); overflow raises."""
    scale = dt.scale or 0
    precision = dt.precision or 10
    d = value if isinstance(value, Decimal) else Decimal(str(value))
    if not d.is_finite():
        raise ValueError(f"cannot store {value!r} in {dt}")
    rounded = d.quantize(Decimal(1).scaleb(-scale), context=_DEC_CTX)
    unscaled = int(rounded.scaleb(scale, context=_DEC_CTX))
    if len(str(abs(unscaled))) > precision and unscaled != 0:
        raise ValueError(f"decimal {value!r} does not fit {dt}")
    return unscaled


def unscaled_to_decimal(unscaled: int, scale: int) -> Decimal:
    """Exact Decimal with exponent ``-scale`` (what pyarrow returns), no context rounding."""
    digits = tuple(int(c) for c in str(abs(unscaled)))
    return Decimal((1 if unscaled < 0 else 0, digits, -scale))


def java_unscaled_bytes(unscaled: int) -> bytes:
    """``BigInteger.toByteArray()``: minimal big-endian two's complement, at least one byte."""
    bit_length = (~unscaled if unscaled < 0 else unscaled).bit_length()
    return unscaled.to_bytes(bit_length // 8 + 1, "big", signed=True)


def timestamp_parts(value: Any, dt: DataType) -> tuple[int, int]:
    """(epoch millis, nano of millisecond) as Java's ``Timestamp`` holds them.

    TIMESTAMP takes the wall clock as if it were UTC; TIMESTAMP_LTZ converts aware values to UTC
    (naive ones are taken as UTC already).  No truncation to the declared precision happens here.
    """
    if not isinstance(value, _dt.datetime):
        raise TypeError(f"expected datetime for {dt}, got {type(value).__name__}")
    if value.tzinfo is not None:
        if dt.root != "TIMESTAMP_LTZ":
            raise ValueError(f"tz-aware datetime {value!r} given for {dt}; pass a naive one")
        value = value.astimezone(_dt.UTC)
    days = value.toordinal() - _EPOCH_ORDINAL
    micros = ((days * 86400 + value.hour * 3600 + value.minute * 60 + value.second) * 1_000_000
              + value.microsecond)
    nanos = micros * 1000 + int(getattr(value, "nanosecond", 0) or 0)
    millis, nano_of_milli = divmod(nanos, 1_000_000)
    return millis, nano_of_milli


def timestamp_from_parts(millis: int, nano_of_milli: int, dt: DataType) -> _dt.datetime:
    """Inverse of :func:`timestamp_parts`; sub-microsecond digits are dropped (datetime limit)."""
    value = _EPOCH + _dt.timedelta(microseconds=millis * 1000 + nano_of_milli // 1000)
    if dt.root == "TIMESTAMP_LTZ":
        return value.replace(tzinfo=_dt.UTC)
    return value


def date_days(value: Any) -> int:
    if isinstance(value, _dt.datetime):
        raise TypeError(f"expected date, got datetime {value!r}")
    if isinstance(value, _dt.date):
        return value.toordinal() - _EPOCH_ORDINAL
    return operator.index(value)


def time_millis(value: Any) -> int:
    """Java keeps TIME as int milliseconds of the day, whatever the precision."""
    if isinstance(value, _dt.time):
        return ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 \
            + value.microsecond // 1000
    return operator.index(value)


def text_bytes(value: Any) -> bytes:
    # Java's String.getBytes(UTF_8) turns lone surrogates into '?', as 'replace' does.
    return value.encode("utf-8", "replace") if isinstance(value, str) else bytes(value)


def variant_bytes(value: Any) -> bytes:
    """VARIANT payload: int32 LE value length, value bytes, metadata bytes."""
    if isinstance(value, dict):
        val, meta = bytes(value["value"]), bytes(value["metadata"])
    elif isinstance(value, tuple):
        val, meta = bytes(value[0]), bytes(value[1])
    else:
        val, meta = bytes(value.value()), bytes(value.metadata())
    return struct.pack("<i", len(val)) + val + meta


# -- serialize -------------------------------------------------------------------------------

def serialize(values: Sequence[Any], types: Sequence[DataType]) -> bytes:
    """Row bytes of ``values`` (RowKind +I), byte-exact with Java's ``BinaryRowWriter``."""
    if len(values) != len(types):
        raise ValueError(f"{len(values)} values for {len(types)} types")
    arity = len(types)
    width = null_bits_width(arity)
    fixed = bytearray(width + 8 * arity)
    var = bytearray()
    base = len(fixed)
    for i, (value, dt) in enumerate(zip(values, types, strict=True)):
        slot = width + 8 * i
        root = dt.root
        if value is None:
            fixed[(i + HEADER_BITS) >> 3] |= 1 << ((i + HEADER_BITS) & 7)
            reserve = var_reserve(dt)
            if reserve:  # Java keeps (offset << 32) and zeroed bytes "for future update"
                _I64.pack_into(fixed, slot, (base + len(var)) << 32)
                var += bytes(reserve)
            continue
        try:
            _write_value(fixed, var, base, slot, value, dt, root)
        except UnsupportedError:
            raise
        except (TypeError, ValueError, ArithmeticError, struct.error, AttributeError) as e:
            raise ValueError(f"cannot write {value!r} as {dt} (field {i}): {e}") from e
    return bytes(fixed) + bytes(var)


def _write_value(fixed: bytearray, var: bytearray, base: int, slot: int, value: Any,
                 dt: DataType, root: str) -> None:
    if root == "BOOLEAN":
        fixed[slot] = 1 if value else 0
    elif root in INT_FORMATS:
        if root == "DATE":
            value = date_days(value)
        elif root == "TIME":
            value = time_millis(value)
        else:
            value = operator.index(value)  # ints and numpy ints; floats are refused
        struct.pack_into(INT_FORMATS[root], fixed, slot, value)
    elif root == "FLOAT":
        struct.pack_into("<f", fixed, slot, value)
    elif root == "DOUBLE":
        struct.pack_into("<d", fixed, slot, value)
    elif root == "DECIMAL":
        unscaled = decimal_unscaled(value, dt)
        if (dt.precision or 10) <= COMPACT_DECIMAL_PRECISION:
            _I64.pack_into(fixed, slot, unscaled)
        else:
            raw = java_unscaled_bytes(unscaled)
            _I64.pack_into(fixed, slot, ((base + len(var)) << 32) | len(raw))
            var += raw + bytes(16 - len(raw))
    elif root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        millis, nano_of_milli = timestamp_parts(value, dt)
        if not var_reserve(dt):
            _I64.pack_into(fixed, slot, millis)
        else:
            _I64.pack_into(fixed, slot, ((base + len(var)) << 32) | nano_of_milli)
            var += _I64.pack(millis)
    elif root in STRING_ROOTS or root in BINARY_ROOTS:
        if root in STRING_ROOTS and not isinstance(value, str):
            raise TypeError(f"expected str, got {type(value).__name__}")
        if root in BINARY_ROOTS and not isinstance(value, (bytes, bytearray, memoryview)):
            raise TypeError(f"expected bytes, got {type(value).__name__}")
        _write_bytes(fixed, var, base, slot, text_bytes(value))
    elif root == "VARIANT":
        raw = variant_bytes(value)
        _I64.pack_into(fixed, slot, ((base + len(var)) << 32) | len(raw))
        var += raw + bytes(round_to_word(len(raw)) - len(raw))
    else:
        raise UnsupportedError(f"writing a non-null {dt} value into a BinaryRow is not supported")


def _write_bytes(fixed: bytearray, var: bytearray, base: int, slot: int, raw: bytes) -> None:
    n = len(raw)
    if n <= MAX_INLINE:
        fixed[slot:slot + n] = raw
        fixed[slot + 7] = 0x80 | n
    else:
        _I64.pack_into(fixed, slot, ((base + len(var)) << 32) | n)
        var += raw + bytes(round_to_word(n) - n)


def to_avro_bytes(values: Sequence[Any], types: Sequence[DataType]) -> bytes:
    """The form stored in Avro ``bytes`` fields: big-endian int32 arity, then the row bytes."""
    return _ARITY.pack(len(types)) + serialize(values, types)


EMPTY_ROW: bytes = to_avro_bytes([], [])


# -- deserialize -----------------------------------------------------------------------------

def from_avro_bytes(data: bytes, types: Sequence[DataType]) -> list[Any]:
    """Inverse of :func:`to_avro_bytes`; the arity prefix must match ``types``.

    TIMESTAMP values with precision > 6 come back truncated to microseconds (``datetime``).
    """
    if len(data) < 4:
        raise CorruptFileError(f"BinaryRow of {len(data)} bytes has no arity prefix")
    (arity,) = _ARITY.unpack_from(data, 0)
    if arity != len(types):
        raise CorruptFileError(f"BinaryRow arity {arity} but {len(types)} fields expected")
    return deserialize(memoryview(data)[4:], types)


def deserialize(row: bytes | memoryview, types: Sequence[DataType]) -> list[Any]:
    """Values of row bytes (no arity prefix) written for ``types``."""
    row = bytes(row)
    arity = len(types)
    width = null_bits_width(arity)
    if len(row) < width + 8 * arity:
        raise CorruptFileError(
            f"BinaryRow of {len(row)} bytes is shorter than its fixed part for {arity} fields")
    out: list[Any] = []
    for i, dt in enumerate(types):
        idx = i + HEADER_BITS
        if row[idx >> 3] & (1 << (idx & 7)):
            out.append(None)
            continue
        try:
            out.append(_read_value(row, width + 8 * i, dt))
        except (struct.error, ValueError, IndexError, ArithmeticError) as e:
            raise CorruptFileError(f"BinaryRow field {i} ({dt}) cannot be decoded: {e}") from e
    return out


def _var_slice(row: bytes, offset: int, size: int) -> bytes:
    if offset + size > len(row) or offset < 0:
        raise CorruptFileError(
            f"BinaryRow variable part [{offset}, {offset + size}) beyond {len(row)} bytes")
    return row[offset:offset + size]


def _read_value(row: bytes, slot: int, dt: DataType) -> Any:
    root = dt.root
    if root == "BOOLEAN":
        return row[slot] != 0
    if root == "DATE":
        days = struct.unpack_from("<i", row, slot)[0]
        return _dt.date.fromordinal(days + _EPOCH_ORDINAL)
    if root == "TIME":
        ms = struct.unpack_from("<i", row, slot)[0] % 86_400_000
        s, ms = divmod(ms, 1000)
        return _dt.time(s // 3600, s // 60 % 60, s % 60, ms * 1000)
    if root in INT_FORMATS:
        return struct.unpack_from(INT_FORMATS[root], row, slot)[0]
    if root == "FLOAT":
        return struct.unpack_from("<f", row, slot)[0]
    if root == "DOUBLE":
        return struct.unpack_from("<d", row, slot)[0]
    (word,) = _I64.unpack_from(row, slot)
    offset, size = (word >> 32) & 0xFFFFFFFF, word & 0xFFFFFFFF
    if root == "DECIMAL":
        if (dt.precision or 10) <= COMPACT_DECIMAL_PRECISION:
            return unscaled_to_decimal(word, dt.scale or 0)
        if not 1 <= size <= 16:
            raise CorruptFileError(f"DECIMAL of {size} bytes in BinaryRow")
        unscaled = int.from_bytes(_var_slice(row, offset, size), "big", signed=True)
        return unscaled_to_decimal(unscaled, dt.scale or 0)
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        if not var_reserve(dt):
            return timestamp_from_parts(word, 0, dt)
        (millis,) = _I64.unpack(_var_slice(row, offset, 8))
        return timestamp_from_parts(millis, size, dt)
    if root in STRING_ROOTS or root in BINARY_ROOTS:
        if row[slot + 7] & 0x80:
            raw = row[slot:slot + (row[slot + 7] & 0x7F)]
        else:
            raw = _var_slice(row, offset, size)
        return raw.decode("utf-8", "replace") if root in STRING_ROOTS else raw
    if root == "VARIANT":
        raw = _var_slice(row, offset, size)
        (n,) = struct.unpack_from("<i", raw, 0)
        if not 0 <= n <= len(raw) - 4:
            raise CorruptFileError(f"VARIANT value length {n} in {len(raw)} bytes")
        return {"value": raw[4:4 + n], "metadata": raw[4 + n:]}
    raise UnsupportedError(f"reading a non-null {dt} value from a BinaryRow is not supported")
