"""Paimon data types: parsing and writing their JSON form, and the one Paimon <-> Arrow mapping.

Atomic types are JSON strings holding SQL text (``"DECIMAL(10, 2) NOT NULL"``); ARRAY, MAP,
MULTISET and ROW are JSON objects. Everything that converts between Paimon and Arrow types lives
here so readers and writers never disagree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

import pyarrow as pa

from lakeformat.errors import UnsupportedError

MAX_LENGTH = 2147483647

STRING_ROOTS = ("CHAR", "VARCHAR")
BINARY_ROOTS = ("BINARY", "VARBINARY")
NESTED_ROOTS = ("ARRAY", "MULTISET", "MAP", "ROW")


@dataclass(frozen=True)
class DataField:
    """A column (or nested ROW field) with its permanent field id."""

    id: int
    name: str
    type: DataType
    description: str | None = None
    default_value: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "name": self.name, "type": self.type.to_json()}
        if self.description is not None:
            out["description"] = self.description
        if self.default_value is not None:
            out["defaultValue"] = self.default_value
        return out

    @staticmethod
    def from_json(obj: dict[str, Any]) -> DataField:
        return DataField(
            id=int(obj["id"]),
            name=obj["name"],
            type=DataType.from_json(obj["type"]),
            description=obj.get("description"),
            default_value=obj.get("defaultValue"),
        )


@dataclass(frozen=True)
class DataType:
    """One Paimon logical type. ``root`` is the type family in Paimon's SQL spelling."""

    root: str
    nullable: bool = True
    precision: int | None = None  # DECIMAL precision; TIME / TIMESTAMP fractional digits
    scale: int | None = None  # DECIMAL scale
    length: int | None = None  # CHAR / VARCHAR / BINARY / VARBINARY length
    element: DataType | None = None  # ARRAY / MULTISET
    key: DataType | None = None  # MAP
    value: DataType | None = None  # MAP
    fields: tuple[DataField, ...] = field(default=())  # ROW

    # -- predicates --------------------------------------------------------------------------
    @property
    def is_nested(self) -> bool:
        return self.root in NESTED_ROOTS

    def copy(self, nullable: bool) -> DataType:
        return replace(self, nullable=nullable)

    # -- SQL text ----------------------------------------------------------------------------
    def sql(self) -> str:
        """The type text Java Paimon writes (``asSQLString``), without ``NOT NULL``."""
        r = self.root
        if r in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
            if r == "VARCHAR" and self.length == MAX_LENGTH:
                return "STRING"
            if r == "VARBINARY" and self.length == MAX_LENGTH:
                return "BYTES"
            return f"{r}({self.length})"
        if r == "DECIMAL":
            return f"DECIMAL({self.precision}, {self.scale})"
        if r in ("TIME", "TIMESTAMP"):
            return f"{r}({self.precision})"
        if r == "TIMESTAMP_LTZ":
            return f"TIMESTAMP({self.precision}) WITH LOCAL TIME ZONE"
        if r in ("ARRAY", "MULTISET"):
            return f"{r}<{self.element.full_sql()}>"  # type: ignore[union-attr]
        if r == "MAP":
            return f"MAP<{self.key.full_sql()}, {self.value.full_sql()}>"  # type: ignore[union-attr]
        if r == "ROW":
            inner = ", ".join(f"`{f.name}` {f.type.full_sql()}" for f in self.fields)
            return f"ROW<{inner}>"
        return r

    def full_sql(self) -> str:
        return self.sql() + ("" if self.nullable else " NOT NULL")

    def __str__(self) -> str:
        return self.full_sql()

    # -- JSON ----------------------------------------------------------------------------------
    def to_json(self) -> Any:
        suffix = "" if self.nullable else " NOT NULL"
        if self.root in ("ARRAY", "MULTISET"):
            return {"type": self.root + suffix, "element": self.element.to_json()}  # type: ignore[union-attr]
        if self.root == "MAP":
            return {"type": "MAP" + suffix, "key": self.key.to_json(),  # type: ignore[union-attr]
                    "value": self.value.to_json()}  # type: ignore[union-attr]
        if self.root == "ROW":
            return {"type": "ROW" + suffix, "fields": [f.to_json() for f in self.fields]}
        return self.sql() + suffix

    @staticmethod
    def from_json(obj: Any) -> DataType:
        if isinstance(obj, str):
            return parse_atomic(obj)
        if not isinstance(obj, dict) or "type" not in obj:
            raise UnsupportedError(f"cannot parse data type JSON {obj!r}")
        text = str(obj["type"]).strip()
        upper = text.upper()
        nullable = "NOT NULL" not in upper
        if upper.startswith("ARRAY") or upper.startswith("MULTISET"):
            root = "ARRAY" if upper.startswith("ARRAY") else "MULTISET"
            return DataType(root, nullable, element=DataType.from_json(obj["element"]))
        if upper.startswith("MAP"):
            return DataType("MAP", nullable, key=DataType.from_json(obj["key"]),
                            value=DataType.from_json(obj["value"]))
        if upper.startswith("ROW"):
            return DataType("ROW", nullable,
                            fields=tuple(DataField.from_json(f) for f in obj["fields"]))
        raise UnsupportedError(f"unsupported nested data type {text!r}")


# -- constructors used by code and tests -------------------------------------------------------

def boolean(nullable: bool = True) -> DataType:
    return DataType("BOOLEAN", nullable)


def tinyint(nullable: bool = True) -> DataType:
    return DataType("TINYINT", nullable)


def smallint(nullable: bool = True) -> DataType:
    return DataType("SMALLINT", nullable)


def int_(nullable: bool = True) -> DataType:
    return DataType("INT", nullable)


def bigint(nullable: bool = True) -> DataType:
    return DataType("BIGINT", nullable)


def float_(nullable: bool = True) -> DataType:
    return DataType("FLOAT", nullable)


def double(nullable: bool = True) -> DataType:
    return DataType("DOUBLE", nullable)


def decimal(precision: int, scale: int, nullable: bool = True) -> DataType:
    return DataType("DECIMAL", nullable, precision=precision, scale=scale)


def string(nullable: bool = True) -> DataType:
    return DataType("VARCHAR", nullable, length=MAX_LENGTH)


def varchar(length: int, nullable: bool = True) -> DataType:
    return DataType("VARCHAR", nullable, length=length)


def char(length: int, nullable: bool = True) -> DataType:
    return DataType("CHAR", nullable, length=length)


def bytes_(nullable: bool = True) -> DataType:
    return DataType("VARBINARY", nullable, length=MAX_LENGTH)


def binary(length: int, nullable: bool = True) -> DataType:
    return DataType("BINARY", nullable, length=length)


def date(nullable: bool = True) -> DataType:
    return DataType("DATE", nullable)


def time(precision: int = 0, nullable: bool = True) -> DataType:
    return DataType("TIME", nullable, precision=precision)


def timestamp(precision: int = 6, nullable: bool = True) -> DataType:
    return DataType("TIMESTAMP", nullable, precision=precision)


def timestamp_ltz(precision: int = 6, nullable: bool = True) -> DataType:
    return DataType("TIMESTAMP_LTZ", nullable, precision=precision)


# -- parsing SQL text of atomic types ----------------------------------------------------------

_ARGS = re.compile(r"^([A-Z_]+(?: [A-Z_]+)*)\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?\s*(.*)$")


def parse_atomic(text: str) -> DataType:
    """Parse an atomic type string as Java and pypaimon write it (case-insensitive)."""
    raw = text
    upper = " ".join(text.strip().upper().split())
    nullable = True
    if upper.endswith(" NOT NULL"):
        nullable = False
        upper = upper[: -len(" NOT NULL")].strip()
    elif upper.endswith(" NULL"):
        upper = upper[: -len(" NULL")].strip()
    ltz = False
    if upper.endswith("WITH LOCAL TIME ZONE"):
        ltz = True
        upper = upper[: -len("WITH LOCAL TIME ZONE")].strip()
    m = _ARGS.match(upper)
    if not m or m.group(4):
        raise UnsupportedError(f"unsupported data type {raw!r}")
    name, a1, a2 = m.group(1).strip(), m.group(2), m.group(3)
    p = int(a1) if a1 is not None else None
    s = int(a2) if a2 is not None else None

    def no_args() -> None:
        if p is not None:
            raise UnsupportedError(f"unsupported data type {raw!r}")

    simple = {"BOOLEAN": "BOOLEAN", "TINYINT": "TINYINT", "SMALLINT": "SMALLINT", "INT": "INT",
              "INTEGER": "INT", "BIGINT": "BIGINT", "FLOAT": "FLOAT", "DOUBLE": "DOUBLE",
              "DOUBLE PRECISION": "DOUBLE", "DATE": "DATE", "VARIANT": "VARIANT", "BLOB": "BLOB"}
    if name in simple and not ltz:
        no_args()
        return DataType(simple[name], nullable)
    if name in ("DECIMAL", "NUMERIC", "DEC") and not ltz:
        precision = 10 if p is None else p
        scale = 0 if s is None else s
        if not 1 <= precision <= 38 or not 0 <= scale <= precision:
            raise UnsupportedError(f"invalid decimal type {raw!r}")
        return decimal(precision, scale, nullable)
    if name == "STRING" and not ltz:
        no_args()
        return string(nullable)
    if name == "BYTES" and not ltz:
        no_args()
        return bytes_(nullable)
    if name in ("CHAR", "VARCHAR", "BINARY", "VARBINARY") and not ltz and s is None:
        return DataType(name, nullable, length=1 if p is None else p)
    if name == "TIME" and not ltz and s is None:
        return time(0 if p is None else p, nullable)
    if name == "TIMESTAMP" and s is None:
        prec = 6 if p is None else p
        return timestamp_ltz(prec, nullable) if ltz else timestamp(prec, nullable)
    if name == "TIMESTAMP_LTZ" and not ltz and s is None:
        return timestamp_ltz(6 if p is None else p, nullable)
    raise UnsupportedError(f"unsupported data type {raw!r}")


# -- Arrow mapping -------------------------------------------------------------------------

FIELD_ID_KEY = b"PARQUET:field_id"


def _ts_unit(precision: int) -> str:
    if precision <= 3:
        return "ms"
    if precision <= 6:
        return "us"
    return "ns"


def to_arrow(dt: DataType) -> pa.DataType:
    """Arrow type used in memory and in data files for a Paimon type."""
    r = dt.root
    if r == "BOOLEAN":
        return pa.bool_()
    if r == "TINYINT":
        return pa.int8()
    if r == "SMALLINT":
        return pa.int16()
    if r == "INT":
        return pa.int32()
    if r == "BIGINT":
        return pa.int64()
    if r == "FLOAT":
        return pa.float32()
    if r == "DOUBLE":
        return pa.float64()
    if r == "DECIMAL":
        return pa.decimal128(dt.precision, dt.scale)
    if r in STRING_ROOTS:
        return pa.string()
    if r in BINARY_ROOTS:
        return pa.binary()
    if r == "DATE":
        return pa.date32()
    if r == "TIME":
        return pa.time32("ms")
    if r == "TIMESTAMP":
        return pa.timestamp(_ts_unit(dt.precision or 0))
    if r == "TIMESTAMP_LTZ":
        return pa.timestamp(_ts_unit(dt.precision or 0), tz="UTC")
    if r == "ARRAY":
        return pa.list_(pa.field("element", to_arrow(dt.element), dt.element.nullable))  # type: ignore[union-attr,arg-type]
    if r == "MAP":
        return pa.map_(pa.field("key", to_arrow(dt.key), False),  # type: ignore[arg-type]
                       pa.field("value", to_arrow(dt.value), dt.value.nullable))  # type: ignore[union-attr,arg-type]
    if r == "ROW":
        return pa.struct([arrow_field(f) for f in dt.fields])
    raise UnsupportedError(f"data type {dt} has no Arrow mapping in lakeformat")


def arrow_field(f: DataField, with_id: bool = True) -> pa.Field:
    """Arrow field for a Paimon field; carries the Parquet field id as Java Paimon writes it."""
    meta = {FIELD_ID_KEY: str(f.id).encode()} if with_id else None
    return pa.field(f.name, to_arrow(f.type), f.type.nullable, metadata=meta)


def arrow_schema(fields: list[DataField] | tuple[DataField, ...],
                 with_id: bool = True) -> pa.Schema:
    return pa.schema([arrow_field(f, with_id) for f in fields])


def from_arrow(t: pa.DataType, nullable: bool = True) -> DataType:
    """Paimon type for an Arrow type given by a user (create_table, merge-schema)."""
    if pa.types.is_boolean(t):
        return boolean(nullable)
    if pa.types.is_int8(t):
        return tinyint(nullable)
    if pa.types.is_int16(t):
        return smallint(nullable)
    if pa.types.is_int32(t):
        return int_(nullable)
    if pa.types.is_int64(t):
        return bigint(nullable)
    if pa.types.is_float32(t):
        return float_(nullable)
    if pa.types.is_float64(t):
        return double(nullable)
    if pa.types.is_decimal(t):
        if t.precision > 38:
            raise UnsupportedError(f"Arrow type {t} exceeds Paimon's DECIMAL precision 38")
        return decimal(t.precision, t.scale, nullable)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or _is_string_view(t):
        return string(nullable)
    if pa.types.is_fixed_size_binary(t):
        return binary(t.byte_width, nullable)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return bytes_(nullable)
    if pa.types.is_date32(t) or pa.types.is_date64(t):
        return date(nullable)
    if pa.types.is_time(t):
        return time({"s": 0, "ms": 3, "us": 6, "ns": 9}[t.unit], nullable)
    if pa.types.is_timestamp(t):
        prec = {"s": 0, "ms": 3, "us": 6, "ns": 9}[t.unit]
        return timestamp_ltz(prec, nullable) if t.tz else timestamp(prec, nullable)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        vf = t.value_field
        return DataType("ARRAY", nullable, element=from_arrow(vf.type, vf.nullable))
    if pa.types.is_map(t):
        return DataType("MAP", nullable, key=from_arrow(t.key_type, False),
                        value=from_arrow(t.item_type, t.item_field.nullable))
    if pa.types.is_struct(t):
        # ids are placeholders; assign_field_ids gives the real ones
        return DataType("ROW", nullable, fields=tuple(
            DataField(-1, t.field(i).name, from_arrow(t.field(i).type, t.field(i).nullable))
            for i in range(t.num_fields)))
    if pa.types.is_dictionary(t):
        return from_arrow(t.value_type, nullable)
    raise UnsupportedError(f"Arrow type {t} has no Paimon equivalent")


def _is_string_view(t: pa.DataType) -> bool:
    check = getattr(pa.types, "is_string_view", None)
    return bool(check and check(t))


def assign_field_ids(fields: list[DataField], start: int = 0) -> tuple[list[DataField], int]:
    """Give fields (and nested ROW fields) ids from a running counter, depth-first.

    Returns the new fields and the highest id assigned (``start - 1`` when there are none).
    Top-level columns take consecutive ids first, then nested fields continue the counter, which
    is what pypaimon writes for new tables.
    """
    counter = start + len(fields)
    out: list[DataField] = []
    for i, f in enumerate(fields):
        new_type, highest = reassign_field_ids(f.type, counter - 1)
        counter = highest + 1
        out.append(replace(f, id=start + i, type=new_type))
    return out, counter - 1


def reassign_field_ids(dt: DataType, highest: int) -> tuple[DataType, int]:
    """Fresh ids above `highest` for the ROW fields inside `dt` (Paimon's ReassignFieldId:
    depth-first, a field's id before its own nested fields). Returns the type and new highest."""
    if dt.root == "ROW":
        out = []
        for f in dt.fields:
            highest += 1
            fid = highest
            sub, highest = reassign_field_ids(f.type, highest)
            out.append(replace(f, id=fid, type=sub))
        return replace(dt, fields=tuple(out)), highest
    if dt.root in ("ARRAY", "MULTISET"):
        sub, highest = reassign_field_ids(dt.element, highest)  # type: ignore[arg-type]
        return replace(dt, element=sub), highest
    if dt.root == "MAP":
        k, highest = reassign_field_ids(dt.key, highest)  # type: ignore[arg-type]
        v, highest = reassign_field_ids(dt.value, highest)  # type: ignore[arg-type]
        return replace(dt, key=k, value=v), highest
    return dt, highest


def max_field_id(fields: list[DataField] | tuple[DataField, ...]) -> int:
    """Highest field id including nested ROW fields (-1 when empty)."""
    best = -1
    for f in fields:
        best = max(best, f.id, _max_nested(f.type))
    return best


def _max_nested(dt: DataType) -> int:
    if dt.root == "ROW":
        return max_field_id(dt.fields)
    if dt.root in ("ARRAY", "MULTISET"):
        return _max_nested(dt.element)  # type: ignore[arg-type]
    if dt.root == "MAP":
        return max(_max_nested(dt.key), _max_nested(dt.value))  # type: ignore[arg-type]
    return -1
