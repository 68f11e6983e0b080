"""Paimon types as Spark sees them, and the library's Arrow data in the layout Spark accepts.

Two halves that must agree:

* `spark_schema(fields)` — the `StructType` a Paimon schema is read as (Paimon's own Spark
  connector's mapping: TIMESTAMP(p) is TIMESTAMP_NTZ, TIMESTAMP_LTZ is TIMESTAMP, CHAR/VARCHAR
  are STRING, BINARY/VARBINARY are BINARY), with nullability carried to every nested level.
* `to_spark_arrow(data, struct)` — merged rows from the library cast, column by column, to
  the Arrow schema PySpark checks a data source's record batches against. PySpark compares
  with `pyarrow.Schema.equals`, so types, nested field names and nullability must all match:
  timestamps are microseconds (TIMESTAMP with tz "UTC", TIMESTAMP_NTZ without), TIME is
  nanoseconds `time64`, lists name their item "element", maps "key"/"value".

A Paimon type Spark cannot hold is refused with `UnsupportedError` naming the column; a value
that would change on the way (a nanosecond timestamp) fails the read naming the column, never
arrives altered.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import types as T

from lakeformat.errors import UnsupportedError
from lakeformat.schema.types import BINARY_ROOTS, STRING_ROOTS, DataField, DataType

__all__ = ["spark_type", "spark_schema", "arrow_schema_for", "to_spark_arrow",
           "spark_batches"]

_ATOMIC: dict[str, Any] = {
    "BOOLEAN": T.BooleanType,
    "TINYINT": T.ByteType,
    "SMALLINT": T.ShortType,
    "INT": T.IntegerType,
    "BIGINT": T.LongType,
    "FLOAT": T.FloatType,
    "DOUBLE": T.DoubleType,
    "DATE": T.DateType,
    "TIMESTAMP": T.TimestampNTZType,
    "TIMESTAMP_LTZ": T.TimestampType,
}

#: Paimon types with no Spark counterpart this reader can hand over faithfully: Spark's
#: TimeType needs `spark.sql.timeType.enabled`, MULTISET/VARIANT/BLOB have no Arrow form here
_REFUSED = {
    "TIME": "Spark's TIME type is not enabled for Python data sources",
    "MULTISET": "Spark has no multiset type",
    "VARIANT": "lakeformat does not read VARIANT columns",
    "BLOB": "lakeformat does not read BLOB columns",
}


def spark_type(dt: DataType, column: str = "?") -> T.DataType:
    """Spark type of a Paimon type; `column` (a dotted path for nested fields) names the
    column in the error for a type Spark has no counterpart for."""
    r = dt.root
    if r in _ATOMIC:
        return _ATOMIC[r]()
    if r == "DECIMAL":
        return T.DecimalType(dt.precision or 10, dt.scale or 0)
    if r in STRING_ROOTS:
        return T.StringType()
    if r in BINARY_ROOTS:
        return T.BinaryType()
    if r == "ARRAY":
        elem = dt.element
        assert elem is not None
        return T.ArrayType(spark_type(elem, f"{column}.element"), containsNull=elem.nullable)
    if r == "MAP":
        key, value = dt.key, dt.value
        assert key is not None and value is not None
        return T.MapType(spark_type(key, f"{column}.key"), spark_type(value, f"{column}.value"),
                         valueContainsNull=value.nullable)
    if r == "ROW":
        return T.StructType([_spark_field(f, f"{column}.{f.name}") for f in dt.fields])
    reason = _REFUSED.get(r, "Spark has no type for it")
    raise UnsupportedError(f"column {column!r} has type {dt.full_sql()}, which cannot be read "
                           f"through Spark: {reason}")


def _spark_field(f: DataField, path: str) -> T.StructField:
    return T.StructField(f.name, spark_type(f.type, path), nullable=f.type.nullable)


def spark_schema(fields: Sequence[DataField]) -> T.StructType:
    """The Spark schema of Paimon fields (a table's columns), nullability included."""
    return T.StructType([_spark_field(f, f.name) for f in fields])


def arrow_schema_for(struct: T.StructType) -> pa.Schema:
    """The Arrow schema PySpark expects of a Python data source's batches for `struct`
    (PySpark builds it with session time zone "UTC" whatever the session's own zone)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(struct, timezone="UTC")


def to_spark_arrow(data: pa.RecordBatch, struct: T.StructType,
                   target: pa.Schema | None = None) -> pa.RecordBatch:
    """`data` (merged rows, columns named as in `struct`) as a record batch of exactly the
    Arrow schema Spark expects for `struct` (`target`, when the caller has it already).
    Casts are safe: a value Spark's type cannot hold (sub-microsecond digits of a
    TIMESTAMP(9), say) raises `UnsupportedError` naming the column, never arrives truncated."""
    target = target if target is not None else arrow_schema_for(struct)
    names = data.schema.names
    out = []
    for field in target:
        if field.name not in names:
            raise UnsupportedError(f"column {field.name!r} that Spark asked for is missing from "
                                   f"the rows read (got {names})")
        column = data.column(names.index(field.name))
        if not column.type.equals(field.type):
            try:
                column = column.cast(field.type, safe=True)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
                raise UnsupportedError(
                    f"column {field.name!r} ({column.type}) cannot be handed to Spark as "
                    f"{field.type}: {str(e).splitlines()[0]}") from None
        out.append(column)
    return pa.RecordBatch.from_arrays(out, schema=target)


def spark_batches(data: pa.Table | pa.RecordBatch, struct: T.StructType,
                  target: pa.Schema | None = None) -> Iterator[pa.RecordBatch]:
    """The non-empty record batches of `data` in Spark's layout (`to_spark_arrow` each)."""
    target = target if target is not None else arrow_schema_for(struct)
    batches = data.to_batches() if isinstance(data, pa.Table) else [data]
    for batch in batches:
        if batch.num_rows:
            yield to_spark_arrow(batch, struct, target)
