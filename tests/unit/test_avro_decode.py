"""The vectorized Avro decoder against fastavro, on the same bytes.

``avro_columns`` reads runs of decompressed blocks of records whose fields are all primitives
(maybe ``["null", T]``); fastavro, an independent implementation, encodes the records here and
decodes lakeformat's own files, and both must give the same values: nulls, empty strings,
negative and 64-bit numbers, unicode, lengths of several varint bytes, blocks of no rows.
"""

from __future__ import annotations

import io
import math
import struct

import fastavro
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakeformat.data import avro_decode
from lakeformat.data.avro_decode import avro_columns, iter_avro, primitive_plan
from lakeformat.data.avro_encode import AvroFileWriter
from lakeformat.errors import CorruptFileError
from lakeformat.schema.types import (
    DataField,
    bigint,
    date,
    decimal,
    double,
    float_,
    int_,
    string,
    timestamp,
    tinyint,
)

_VALUES = {
    "boolean": st.booleans(),
    "int": st.integers(-(1 << 31), (1 << 31) - 1),
    "long": st.integers(-(1 << 63), (1 << 63) - 1),
    "float": st.floats(width=32, allow_nan=False),
    "double": st.floats(allow_nan=False),
    "string": st.text(max_size=80),
    "bytes": st.binary(max_size=150),
}


def _schema(columns: list[tuple[str, bool]]) -> dict:
    return {"type": "record", "name": "r", "fields": [
        {"name": f"c{i}", "type": ["null", kind] if nullable else kind}
        for i, (kind, nullable) in enumerate(columns)]}


@st.composite
def _cases(draw):
    columns = draw(st.lists(st.tuples(st.sampled_from(sorted(_VALUES)), st.booleans()),
                            min_size=1, max_size=6))
    value = st.fixed_dictionaries({
        f"c{i}": (st.none() | _VALUES[k]) if nullable else _VALUES[k]
        for i, (k, nullable) in enumerate(columns)})
    records = draw(st.lists(value, max_size=60))
    cuts = sorted(draw(st.lists(st.integers(0, len(records)), max_size=8)))
    return columns, records, [0, *cuts, len(records)]


def _blocks(schema: dict, records: list[dict], bounds: list[int]) -> tuple[list[bytes],
                                                                             list[int]]:
    """The records encoded by fastavro, cut into blocks at ``bounds``."""
    parsed = fastavro.parse_schema(schema)
    blocks, counts = [], []
    for lo, hi in zip(bounds, bounds[1:], strict=False):
        out = io.BytesIO()
        for r in records[lo:hi]:
            fastavro.schemaless_writer(out, parsed, r)
        blocks.append(out.getvalue())
        counts.append(hi - lo)
    return blocks, counts


def _same(got: list, want: list) -> bool:
    return all(g == w or (isinstance(g, float) and math.isnan(g) and math.isnan(w))
               for g, w in zip(got, want, strict=True))


@settings(max_examples=300, deadline=None)
@given(_cases())
def test_columns_equal_fastavros_records(case):
    columns, records, bounds = case
    schema = _schema(columns)
    blocks, counts = _blocks(schema, records, bounds)
    plan = primitive_plan(schema)
    got = avro_columns(blocks, counts, plan, {f"c{i}" for i in range(len(columns))})
    for i, (kind, _) in enumerate(columns):
        arr = got[f"c{i}"]
        assert arr.type == {"float": pa.float32(), "double": pa.float64()}.get(kind, arr.type)
        arr.validate(full=True)
        assert _same(arr.to_pylist(), [r[f"c{i}"] for r in records])


def test_edge_values_and_long_lengths():
    columns = [("long", True), ("string", True), ("bytes", False), ("int", False),
               ("double", True), ("boolean", True)]
    longs = [0, -1, 1, 63, -64, 64, -65, (1 << 63) - 1, -(1 << 63), None, 1 << 35, -(1 << 35)]
    n = len(longs)
    records = [{"c0": v, "c1": ["", None, "é" * 70, "𝄞", "x" * 9000, "a\x00b"][i % 6],
                "c2": bytes(range(256)) * (i % 3) + b"\xff" * (20000 if i == 5 else 0),
                "c3": [-(1 << 31), (1 << 31) - 1, 0, -1][i % 4],
                "c4": [None, -0.0, math.inf, -math.inf, 1e308, 5e-324][i % 6],
                "c5": [None, True, False][i % 3]} for i, v in enumerate(longs)]
    schema = _schema(columns)
    for bounds in ([0, n], [0, 1, 5, 5, 11, n], list(range(n + 1))):
        blocks, counts = _blocks(schema, records, bounds)
        got = avro_columns(blocks, counts, primitive_plan(schema), {f"c{i}" for i in range(6)})
        for i in range(6):
            assert got[f"c{i}"].to_pylist() == [r[f"c{i}"] for r in records]
    assert struct.pack("<d", got["c4"][1].as_py()) == struct.pack("<d", -0.0)


def test_only_wanted_columns_are_built_and_no_rows_read_as_empty():
    schema = _schema([("string", True), ("long", False)])
    blocks, counts = _blocks(schema, [{"c0": "a", "c1": 5}, {"c0": None, "c1": -5}], [0, 2])
    assert list(avro_columns(blocks, counts, primitive_plan(schema), {"c1"})) == ["c1"]
    empty = avro_columns([b"", b""], [0, 0], primitive_plan(schema), {"c0", "c1"})
    assert empty["c0"].type == pa.string() and len(empty["c0"]) == len(empty["c1"]) == 0


def test_plan_covers_primitives_and_leaves_the_rest_to_fastavro():
    assert primitive_plan(_schema([("long", True), ("bytes", False)])) == [
        ("c0", "long", True), ("c1", "bytes", False)]
    logical = {"type": "record", "name": "r", "fields": [
        {"name": "d", "type": ["null", {"type": "int", "logicalType": "date"}]},
        {"name": "p", "type": {"type": "bytes", "logicalType": "decimal", "precision": 5}}]}
    assert primitive_plan(logical) == [("d", "int", True), ("p", "bytes", False)]
    for t in ({"type": "array", "items": "int"}, {"type": "map", "values": "long"},
              ["int", "null"], ["null", "int", "string"], {"type": "fixed", "size": 4, "name": "f"},
              {"type": "record", "name": "x", "fields": []}):
        assert primitive_plan({"type": "record", "name": "r",
                               "fields": [{"name": "c", "type": t}]}) is None


@pytest.mark.parametrize("damage", ["short", "long", "tag", "utf8", "negative", "count"])
def test_damaged_blocks_are_refused(damage):
    schema = _schema([("string", True), ("long", False)])
    records = [{"c0": "abc", "c1": 7}] * 3
    blocks, counts = _blocks(schema, records, [0, 3])
    data = blocks[0]
    if damage == "short":
        blocks[0] = data[:-1]
    elif damage == "long":
        blocks[0] = data + b"\x00"
    elif damage == "tag":
        blocks[0] = b"\x04" + data[1:]
    elif damage == "utf8":
        blocks[0] = data[:2] + b"\xff" + data[3:]
    elif damage == "negative":
        blocks[0] = data[:1] + b"\x05" + data[2:]
    else:
        counts = [4]
    with pytest.raises(ValueError):
        avro_columns(blocks, counts, primitive_plan(schema), {"c0", "c1"})


def _file(fields, table, codec="zstandard") -> bytes:
    sink = pa.BufferOutputStream()
    w = AvroFileWriter(sink, fields, codec, 1)
    w.write_table(table)
    w.close()
    return sink.getvalue().to_pybytes()


@pytest.mark.parametrize("codec", ["null", "zstandard", "snappy", "deflate"])
def test_lakeformats_files_read_as_fastavro_reads_them(codec, monkeypatch):
    monkeypatch.setattr(avro_decode, "_MIN_LANES", 2)  # runs of few blocks decoded too
    n = 12000
    rng = np.random.default_rng(7)
    fields = [DataField(0, "_KEY_k", bigint(False)), DataField(1, "_VALUE_KIND", tinyint(False)),
              DataField(2, "i", int_()), DataField(3, "l", bigint()), DataField(4, "s", string()),
              DataField(5, "f", float_()), DataField(6, "d", double(False)),
              DataField(7, "day", date()), DataField(8, "ts", timestamp(6)),
              DataField(9, "p", decimal(22, 3))]
    gone = rng.random(n) < 0.2
    table = pa.table({
        "_KEY_k": rng.integers(-(1 << 63), (1 << 63) - 1, n, dtype=np.int64),
        "_VALUE_KIND": pa.array(rng.integers(0, 4, n).astype(np.int8)),
        "i": pa.array(rng.integers(-(1 << 31), 1 << 31, n).astype(np.int32), mask=gone),
        "l": pa.array(rng.integers(-1000, 1000, n), mask=~gone),
        "s": pa.array([("ü" * (j % 90)) if j % 7 else "" for j in range(n)], mask=gone),
        "f": pa.array(rng.normal(size=n).astype(np.float32)),
        "d": rng.normal(size=n) * 1e300,
        "day": pa.array(rng.integers(-5000, 50000, n).astype(np.int32), pa.int32()).cast(
            pa.date32()),
        "ts": pa.array(rng.integers(0, 1 << 50, n), pa.int64()).cast(pa.timestamp("us")),
        "p": pa.array(rng.integers(-(1 << 62), 1 << 62, n), pa.int64(), mask=gone).cast(
            pa.decimal128(22, 3)),
    })
    data = _file(fields, table, codec)
    types = {f.name: f.type for f in fields}
    runs = []
    monkeypatch.setattr(avro_decode, "avro_columns",
                        lambda *a, f=avro_columns: runs.append(len(a[0])) or f(*a))
    got = {vec: pa.concat_tables(iter_avro(pa.BufferReader(data), "f.avro", lambda c: c, types,
                                           vectorized=vec)) for vec in (True, False)}
    assert got[True].equals(got[False]) and got[True].equals(table.cast(got[True].schema))
    plain = list(fastavro.reader(io.BytesIO(data)))
    assert got[True].column("s").to_pylist() == [r["s"] for r in plain]
    assert got[True].column("_KEY_k").to_pylist() == [r["_KEY_k"] for r in plain]
    assert runs and min(runs) >= 2  # the vectorized decoder read it all
    picked = pa.concat_tables(iter_avro(pa.BufferReader(data), "f.avro", lambda c: ["s", "l"],
                                        types, batch_bytes=1 << 20))
    assert picked.equals(table.select(["s", "l"]))


def test_damaged_file_names_itself(monkeypatch):
    monkeypatch.setattr(avro_decode, "_MIN_LANES", 2)
    fields = [DataField(0, "k", bigint(False)), DataField(1, "s", string())]
    table = pa.table({"k": np.arange(20000), "s": [f"v{j}" for j in range(20000)]})
    data = bytearray(_file(fields, table, "null"))
    data[len(data) // 2] ^= 0x80  # a varint (or string byte) in a middle block
    with pytest.raises(CorruptFileError, match="bad.avro"):
        pa.concat_tables(iter_avro(pa.BufferReader(bytes(data)), "bad.avro", lambda c: c,
                                   {f.name: f.type for f in fields}))


def test_a_run_of_few_blocks_goes_to_fastavro(monkeypatch):
    fields = [DataField(0, "k", bigint(False)), DataField(1, "s", string())]
    table = pa.table({"k": np.arange(3000), "s": [f"v{j}" * (j % 9) for j in range(3000)]})
    data = _file(fields, table)
    monkeypatch.setattr(avro_decode, "avro_columns", None)  # never called
    got = pa.concat_tables(iter_avro(pa.BufferReader(data), "f.avro", lambda c: c,
                                     {f.name: f.type for f in fields}))
    assert got.equals(table)


@pytest.mark.parametrize("codec", ["deflate", "bzip2", "xz", "snappy", "zstandard"])
def test_files_fastavro_writes_read_without_a_table_schema(codec, monkeypatch):
    monkeypatch.setattr(avro_decode, "_MIN_LANES", 2)
    columns = [("long", False), ("string", True), ("double", True), ("boolean", False),
               ("bytes", True), ("int", True), ("float", False)]
    rng = np.random.default_rng(3)
    records = [{"c0": int(rng.integers(-(1 << 63), (1 << 63) - 1)),
                "c1": None if j % 4 == 0 else "ß" * (j % 50), "c2": j / 3 if j % 5 else None,
                "c3": bool(j % 2), "c4": bytes(j % 300) if j % 6 else None,
                "c5": None if j % 7 == 0 else j - 2000, "c6": float(j % 100) / 8}
               for j in range(5000)]
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(_schema(columns)), records, codec=codec,
                    sync_interval=4000)
    got = pa.concat_tables(iter_avro(pa.BufferReader(out.getvalue()), "f.avro", lambda c: c,
                                     None))
    assert got.to_pylist() == records


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_damaged_bytes_are_refused_or_read_as_fastavro_reads_them(data):
    columns = [("long", True), ("string", True), ("double", True), ("int", False),
               ("bytes", False), ("boolean", True), ("long", True), ("long", True)]
    schema = _schema(columns)
    records = [{"c0": j * 1000003 - 7, "c1": "ab" * j if j % 3 else None,
                "c2": j / 7 if j % 2 else None, "c3": -j, "c4": bytes([j]) * (j % 4),
                "c5": j % 3 == 0 if j % 5 else None, "c6": None if j % 2 else 1 << 40,
                "c7": -(1 << 62) if j % 3 else None} for j in range(40)]
    blocks, counts = _blocks(schema, records, [0, 13, 40])
    raw = bytearray(blocks[1])
    for _ in range(data.draw(st.integers(1, 4))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    blocks[1] = bytes(raw)
    names = {f"c{i}" for i in range(len(columns))}
    try:
        got = avro_columns(blocks, counts, primitive_plan(schema), names)
    except ValueError:
        return
    parsed = fastavro.parse_schema(schema)
    stream = io.BytesIO(blocks[0] + blocks[1])
    want = [fastavro.schemaless_reader(stream, parsed, None) for _ in range(sum(counts))]
    assert stream.read() == b""
    for name in names:
        assert _same(got[name].to_pylist(), [r[name] for r in want])
