"""Avro data files (``file.format=avro``): the schema Java writes, codecs, container facts.

What Java Paimon writes and so what we write [JAVA AvroSchemaConverter, FieldWriterFactory,
AvroFileFormat]: one record ``org.apache.paimon.avro.generated.record`` of the file's columns, a
nested ROW named ``<parent record>_<field>`` (array items and map values keep the parent's name),
a nullable type as ``["null", T]`` with ``"default": null``, no field ids (fields are read by
name). TINYINT / SMALLINT are ints; DATE, TIME(p <= 3), TIMESTAMP(p <= 6), DECIMAL carry Avro
logical types (the LTZ timestamps the ``local-`` ones; a decimal is its unscaled value in the
shortest big-endian two's complement); a MAP with a non-string key is an array of
``{key, value}`` records tagged ``"logicalType": "map"``. TIMESTAMP(p > 6) and TIME(p > 3) are
refused, as Java refuses them. Blocks close once they hold 64000 bytes (Java's sync interval).

The encoder and writer are in ``avro_encode``, the readers in ``avro_decode``; this module holds
what both sides share: the Avro type of a Paimon type (and back), the codecs, the container's
magic bytes and varints of single numbers.
"""

from __future__ import annotations

import bz2
import json
import lzma
import zlib
from collections.abc import Sequence
from typing import Any

import cramjam

from lakeformat.errors import CorruptFileError, UnsupportedError
from lakeformat.schema.types import STRING_ROOTS, DataField, DataType, parse_atomic

__all__ = ["CODECS", "MAGIC", "SYNC_INTERVAL", "avro_codec", "avro_schema", "avro_type",
           "compress", "decompress", "paimon_type", "same_shape", "varint",
           "writer_schema_json"]

RECORD_NAME = "record"
NAMESPACE = "org.apache.paimon.avro.generated"
MAGIC = b"Obj\x01"
#: Java's DataFileWriter default sync interval: a block closes once it holds this many bytes.
SYNC_INTERVAL = 64000
CODECS = ("null", "deflate", "snappy", "zstandard", "bzip2", "xz")
#: Avro's own default levels when a codec is named without one [Avro CodecFactory]
_DEFAULT_LEVEL = {"deflate": -1, "zstandard": 3, "xz": 6, "bzip2": 9}


# -- Paimon type -> Avro type ---------------------------------------------------------------------

_PRIMITIVE = {"BOOLEAN": "boolean", "TINYINT": "int", "SMALLINT": "int", "INT": "int",
              "BIGINT": "long", "FLOAT": "float", "DOUBLE": "double", "CHAR": "string",
              "VARCHAR": "string", "BINARY": "bytes", "VARBINARY": "bytes",
              "DATE": {"type": "int", "logicalType": "date"}}


def avro_type(dt: DataType, record: str) -> Any:
    """Java's ``AvroSchemaConverter.convertToSchema`` of one type (``record``: the name a ROW
    here gets)."""
    r = dt.root
    t: Any = _PRIMITIVE.get(r)
    if t is not None:
        pass
    elif r in ("TIMESTAMP", "TIMESTAMP_LTZ", "TIME"):
        p = dt.precision if dt.precision is not None else (6 if r != "TIME" else 0)
        if p > (3 if r == "TIME" else 6):
            raise UnsupportedError(f"Avro data files cannot hold {dt}: Paimon writes {r} to "
                                   f"Avro only up to precision {3 if r == 'TIME' else 6}")
        local = "local-" if r == "TIMESTAMP_LTZ" else ""
        t = {"type": "int", "logicalType": "time-millis"} if r == "TIME" else {
            "type": "long", "logicalType": f"{local}timestamp-{'millis' if p <= 3 else 'micros'}"}
    elif r == "DECIMAL":
        t = {"type": "bytes", "logicalType": "decimal", "precision": dt.precision,
             "scale": dt.scale}
    elif r == "ROW":
        t = {"type": "record", "name": record,
             "fields": [_avro_field(f.name, f.type, f"{record}_{f.name}") for f in dt.fields]}
    elif r == "MAP" and dt.key.root in STRING_ROOTS:  # type: ignore[union-attr]
        t = {"type": "map", "values": avro_type(dt.value, record)}  # type: ignore[arg-type]
    elif r == "MAP":
        entry = {"type": "record", "name": record, "fields": [
            _avro_field("key", dt.key, f"{record}_key"),  # type: ignore[arg-type]
            _avro_field("value", dt.value, f"{record}_value")]}  # type: ignore[arg-type]
        t = {"type": "array", "items": entry, "logicalType": "map"}
    elif r == "ARRAY":
        t = {"type": "array", "items": avro_type(dt.element, record)}  # type: ignore[arg-type]
    else:
        raise UnsupportedError(f"type {dt} cannot be written to an Avro data file by lakeformat")
    return ["null", t] if dt.nullable else t


def _avro_field(name: str, dt: DataType, record: str) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "type": avro_type(dt, record)}
    if dt.nullable:
        out["default"] = None
    return out


def avro_schema(fields: Sequence[DataField]) -> dict[str, Any]:
    """The writer schema of a file with these columns, keys in the order Java prints them."""
    return {"type": "record", "name": RECORD_NAME, "namespace": NAMESPACE,
            "fields": [_avro_field(f.name, f.type, f"{RECORD_NAME}_{f.name}") for f in fields]}


def writer_schema_json(fields: Sequence[DataField]) -> str:
    return json.dumps(avro_schema(fields), separators=(",", ":"))


# -- Avro type -> Paimon type (reading) -----------------------------------------------------------

def non_null_branch(union: list[Any]) -> Any:
    """``T`` of the union ``["null", T]`` (or ``[T, "null"]``, or ``[T]``)."""
    branches = [b for b in union if b != "null"]
    if len(branches) != 1:
        raise UnsupportedError(f"Avro union {union} is not supported (only [null, T])")
    return branches[0]


def _shape(t: Any) -> Any:
    """An Avro type without names, defaults and null branches: what must match."""
    if isinstance(t, list):
        return _shape(non_null_branch(t))
    if isinstance(t, str):
        return t
    kind = t["type"]
    if isinstance(kind, (dict, list)):
        return _shape(kind)
    if kind == "record":
        return ("record", {f["name"]: _shape(f["type"]) for f in t["fields"]})
    if kind == "array":
        return ("array", _shape(t["items"]), t.get("logicalType"))
    if kind == "map":
        return ("map", _shape(t["values"]))
    logical = t.get("logicalType")
    return kind if logical is None else (kind, logical, t.get("precision"), t.get("scale"))


def _same(found: Any, expected: Any) -> bool:
    """Shapes match; records only in the fields both have (Java reads fields by name,
    skipping the file's others and reading null for its missing ones)."""
    if isinstance(found, tuple) and isinstance(expected, tuple) and found[0] == expected[0]:
        if found[0] == "record":
            common = found[1].keys() & expected[1].keys()
            return all(_same(found[1][k], expected[1][k]) for k in common)
        if found[0] in ("array", "map"):
            return all(_same(a, b) for a, b in zip(found[1:], expected[1:], strict=True))
    return found == expected


def same_shape(found: Any, dt: DataType) -> bool:
    """Whether the Avro type ``found`` (a file's) holds values of the Paimon type ``dt``."""
    return _same(_shape(found), _shape(avro_type(dt, "r")))


_SIMPLE = {"boolean": "BOOLEAN", "int": "INT", "long": "BIGINT", "float": "FLOAT",
           "double": "DOUBLE", "string": "STRING", "bytes": "BYTES"}


def paimon_type(t: Any) -> DataType:
    """A Paimon type for an Avro type, for files read without their table schema."""
    if isinstance(t, list):
        return paimon_type(non_null_branch(t)).copy(True)
    if isinstance(t, dict) and not isinstance(t["type"], str):
        return paimon_type(t["type"])
    kind, logical = (t, None) if isinstance(t, str) else (t["type"], t.get("logicalType"))
    if kind in _SIMPLE and logical is None:
        return parse_atomic(_SIMPLE[kind]).copy(False)
    if logical in ("date", "time-millis") or (logical or "").endswith(("millis", "micros")):
        text = {"date": "DATE", "time-millis": "TIME(3)"}.get(logical) or "TIMESTAMP({}){}".format(
            3 if logical.endswith("millis") else 6,
            " WITH LOCAL TIME ZONE" if logical.startswith("local") else "")
        return parse_atomic(text).copy(False)
    if logical == "decimal":
        return DataType("DECIMAL", False, precision=t["precision"], scale=t.get("scale", 0))
    if kind == "record":
        return DataType("ROW", False, fields=tuple(
            DataField(i, f["name"], paimon_type(f["type"])) for i, f in enumerate(t["fields"])))
    if kind == "map":
        return DataType("MAP", False, key=parse_atomic("STRING").copy(False),
                        value=paimon_type(t["values"]))
    if kind == "array" and logical == "map":
        entry = {f["name"]: f["type"] for f in t["items"]["fields"]}
        return DataType("MAP", False, key=paimon_type(entry["key"]),
                        value=paimon_type(entry["value"]))
    if kind == "array":
        return DataType("ARRAY", False, element=paimon_type(t["items"]))
    raise UnsupportedError(f"Avro type {t} is not supported by lakeformat")


# -- codecs and framing ---------------------------------------------------------------------------

def avro_codec(compression: str, zstd_level: int, avro_codec_option: str | None = None
               ) -> tuple[str, int]:
    """(Avro codec name, level) as Java's ``AvroFileFormat`` picks it."""
    if avro_codec_option:
        name = str(avro_codec_option).strip()
        if name not in CODECS:
            raise UnsupportedError(f"avro.codec {name!r} is not an Avro codec lakeformat writes "
                                   f"(supported: {', '.join(CODECS)})")
        return name, _DEFAULT_LEVEL.get(name, 0)
    name = compression.strip()
    if name.lower() == "zstd":
        return "zstandard", zstd_level
    if name not in CODECS:
        raise UnsupportedError(
            f"file.compression {compression!r} is not an Avro codec, so Paimon cannot write it "
            f"to Avro data files (supported: zstd, {', '.join(CODECS)})")
    return name, _DEFAULT_LEVEL.get(name, 0)


def compress(codec: str, level: int, data: memoryview) -> bytes:
    """One block's bytes compressed as the Avro codec ``codec`` stores them."""
    if codec == "null":
        return bytes(data)
    if codec == "zstandard":
        return bytes(cramjam.zstd.compress(data, level=level))
    if codec == "deflate":
        c = zlib.compressobj(level, zlib.DEFLATED, -15)
        return c.compress(data) + c.flush()
    if codec == "snappy":  # raw snappy, then the CRC32 of the input, big-endian
        return bytes(cramjam.snappy.compress_raw(data)) + zlib.crc32(data).to_bytes(4, "big")
    if codec == "bzip2":
        return bz2.compress(data, level)
    return lzma.compress(data, format=lzma.FORMAT_XZ, preset=level)


def decompress(codec: str, data: bytes, path: str) -> bytes:
    """One block's bytes as they were before ``compress`` (``path`` names the file in errors)."""
    try:
        if codec == "null":
            return data
        if codec == "zstandard":
            return bytes(cramjam.zstd.decompress(data))
        if codec == "deflate":
            return zlib.decompress(data, -15)
        if codec == "snappy":
            out = bytes(cramjam.snappy.decompress_raw(data[:-4]))
            if zlib.crc32(out).to_bytes(4, "big") != data[-4:]:
                raise ValueError("checksum mismatch")
            return out
        if codec == "bzip2":
            return bz2.decompress(data)
        return lzma.decompress(data)
    except Exception as e:
        raise CorruptFileError(f"data file {path}: an Avro block does not decompress as "
                               f"{codec}: {type(e).__name__}: {e}") from e


def varint(value: int) -> bytes:
    """Zigzag varint of one number (headers and block framing, never rows)."""
    z = (value << 1) ^ (value >> 63)
    out = bytearray()
    while z > 0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)
