"""The Avro writer schema and codec of data files, pinned to what Java Paimon produces.

Facts from Java's sources (paimon-format, org.apache.paimon.format.avro):
* AvroSchemaConverter.convertToSchema names the top record
  "org.apache.paimon.avro.generated.record" and a nested ROW "<parent name>_<field>"; array
  items and map values are converted with the parent's name unchanged; a MAP whose key is not
  CHAR/VARCHAR is an array of records "<name>" {key: convert(key, "<name>_key"), value:
  convert(value, "<name>_value")} with LogicalMap's logical type "map"; a nullable type is the
  union [null, T] and its record field gets default null (non-null fields have no default).
* TINYINT, SMALLINT, INT -> int; DATE -> int/date; TIME -> int/time-millis (precision > 3
  refused); TIMESTAMP p <= 3 -> long/timestamp-millis, p <= 6 -> timestamp-micros, p > 6
  refused; TIMESTAMP WITH LOCAL TIME ZONE -> local-timestamp-millis / -micros; DECIMAL ->
  bytes/decimal(precision, scale); CHAR/VARCHAR -> string; BINARY/VARBINARY -> bytes.
* Avro's Schema.toString prints a record as type, name, namespace, fields; a nested record in
  the same namespace without it; a field as name, type, default; a logical type after its
  base type.
* AvroFileFormat.createCodecFactory: option "avro.codec" wins; file.compression "zstd" (any
  case) -> zstandard at file.compression.zstd-level; anything else goes to
  CodecFactory.fromString, which knows null, deflate, snappy, bzip2, xz, zstandard.
"""

from __future__ import annotations

import io
import json

import fastavro
import pyarrow as pa
import pytest

from lakeformat.data.avro_encode import AvroFileWriter
from lakeformat.data.avro_schema import avro_codec, writer_schema_json
from lakeformat.errors import UnsupportedError
from lakeformat.schema.types import (
    DataField,
    DataType,
    bigint,
    date,
    decimal,
    int_,
    smallint,
    string,
    time,
    timestamp,
    timestamp_ltz,
    tinyint,
)


def test_primitive_columns_as_java_prints_them():
    fields = [DataField(0, "_SEQUENCE_NUMBER", bigint(False)),
              DataField(1, "_VALUE_KIND", tinyint(False)),
              DataField(2, "s", smallint()), DataField(3, "d", date()),
              DataField(4, "t", time(3, False)), DataField(5, "ts", timestamp(3)),
              DataField(6, "tu", timestamp(6, False)), DataField(7, "l", timestamp_ltz(3)),
              DataField(8, "p", decimal(10, 2)), DataField(9, "name", string(False))]
    assert writer_schema_json(fields) == (
        '{"type":"record","name":"record","namespace":"org.apache.paimon.avro.generated",'
        '"fields":[{"name":"_SEQUENCE_NUMBER","type":"long"},'
        '{"name":"_VALUE_KIND","type":"int"},'
        '{"name":"s","type":["null","int"],"default":null},'
        '{"name":"d","type":["null",{"type":"int","logicalType":"date"}],"default":null},'
        '{"name":"t","type":{"type":"int","logicalType":"time-millis"}},'
        '{"name":"ts","type":["null",{"type":"long","logicalType":"timestamp-millis"}],'
        '"default":null},'
        '{"name":"tu","type":{"type":"long","logicalType":"timestamp-micros"}},'
        '{"name":"l","type":["null",{"type":"long","logicalType":"local-timestamp-millis"}],'
        '"default":null},'
        '{"name":"p","type":["null",{"type":"bytes","logicalType":"decimal","precision":10,'
        '"scale":2}],"default":null},'
        '{"name":"name","type":"string"}]}')


def test_nested_types_and_record_names():
    row = DataType("ROW", True, fields=(DataField(11, "x", int_(False)),
                                        DataField(12, "y", string())))
    fields = [
        DataField(0, "r", row),
        DataField(1, "a", DataType("ARRAY", False, element=row)),
        DataField(2, "m", DataType("MAP", True, key=string(False), value=bigint())),
        DataField(3, "mi", DataType("MAP", True, key=int_(False), value=row)),
    ]
    schema = json.loads(writer_schema_json(fields))
    r, a, m, mi = (f["type"] for f in schema["fields"])
    inner = [{"name": "x", "type": "int"}, {"name": "y", "type": ["null", "string"],
                                           "default": None}]
    assert r == ["null", {"type": "record", "name": "record_r", "fields": inner}]
    assert a == {"type": "array", "items": ["null", {"type": "record", "name": "record_a",
                                                     "fields": inner}]}
    assert m == ["null", {"type": "map", "values": ["null", "long"]}]
    assert mi == ["null", {"type": "array", "logicalType": "map", "items": {
        "type": "record", "name": "record_mi", "fields": [
            {"name": "key", "type": "int"},
            {"name": "value", "type": ["null", {"type": "record", "name": "record_mi_value",
                                               "fields": inner}], "default": None}]}}]
    fastavro.parse_schema(schema)  # a valid Avro schema (unique names)


@pytest.mark.parametrize("dt", [timestamp(9), timestamp_ltz(7), time(6)])
def test_precisions_java_refuses_are_refused(dt):
    with pytest.raises(UnsupportedError, match="precision"):
        writer_schema_json([DataField(0, "c", dt)])


def test_codec_choice_follows_java():
    assert avro_codec("zstd", 1) == ("zstandard", 1)
    assert avro_codec("ZSTD", 5) == ("zstandard", 5)
    assert avro_codec("snappy", 1) == ("snappy", 0)
    assert avro_codec("deflate", 1) == ("deflate", -1)
    assert avro_codec("zstandard", 9) == ("zstandard", 3)  # fromString: Avro's default level
    assert avro_codec("zstd", 1, "xz") == ("xz", 6)
    for bad in ("none", "lz4", "gzip"):
        with pytest.raises(UnsupportedError, match=repr(bad)):
            avro_codec(bad, 1)


def test_encoded_values_decode_with_an_independent_reader():
    """Edge values of the vectorized encoder: varint widths, negatives, decimal signs."""
    fields = [DataField(0, "l", bigint()), DataField(1, "p", decimal(38, 0, False)),
              DataField(2, "s", string())]
    big = [0, -1, 63, -64, 64, 2 ** 63 - 1, -2 ** 63, None, 300, -300]
    decs = [0, -1, 127, 128, -128, -129, 255, 10 ** 37, -10 ** 37, 1]
    table = pa.table({"l": pa.array(big, pa.int64()),
                      "p": pa.array(decs, pa.decimal128(38, 0)),
                      "s": ["", None, "é" * 70, "x", "y" * 200, "", "a", None, "b", "c"]})
    sink = pa.BufferOutputStream()
    w = AvroFileWriter(sink, fields, "null", 0)
    w.write_table(table)
    w.close()
    got = list(fastavro.reader(io.BytesIO(sink.getvalue().to_pybytes())))
    assert [r["l"] for r in got] == big
    assert [int(r["p"]) for r in got] == decs
    assert [r["s"] for r in got] == table.column("s").to_pylist()
