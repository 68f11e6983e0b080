"""Avro data files (`file.format=avro`): primary-key and append tables live their whole life in
Avro (write, read, update, delete, compact, expire), a table moves from Parquet to Avro, every
type lakeformat supports round-trips, stats are Java's, and refusals leave the table as it was.

The format is encoded and decoded in memory; the store only carries the bytes. So the primary-key
table's whole life (write, update, delete, compact, expire: data files written, read and
deleted) and a damaged file named by its path run on local disk and on the moto S3 server, and
the rest (`@local_disk`: types, codecs, stats, schema moves, refusals before writing) on local
disk only.
"""

from __future__ import annotations

import datetime as dt
import io
from decimal import Decimal

import fastavro
import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.meta.binary_row import from_avro_bytes
from lakeformat.operation.scan import FileStoreScan

AVRO = {"file.format": "avro"}
SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("name", pa.string()),
                    ("price", pa.decimal128(10, 2)), ("qty", pa.int32())])
NOW = dt.timedelta(0)


#: a test of this module that never reaches store specifics: local disk only (module docstring)
local_disk = pytest.mark.parametrize("catalog", ["local"], indirect=True)


def rows(ids, dt_="a", tag="") -> pa.Table:
    return pa.table({"dt": [dt_] * len(ids), "id": list(ids),
                     "name": [f"n{i}{tag}" if i % 5 else None for i in ids],
                     "price": [Decimal(i) / 4 - 3 for i in ids],
                     "qty": [i % 7 for i in ids]}, schema=SCHEMA)


def by_key(t: lf.Table) -> dict:
    return {(r["dt"], r["id"]): r for r in t.read().to_pylist()}


def names(t: lf.Table) -> set[str]:
    return {f["file_name"].rsplit(".", 1)[-1] for f in t.files()}


def live(t: lf.Table) -> list:
    return FileStoreScan(t.file_io, t.path, t.table_schema).live_entries(
        t.snapshot_manager.latest_snapshot())


def test_primary_key_table_lives_in_avro(catalog):
    t = catalog.create_table("db.pk", SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                             options={"bucket": "2", **AVRO})
    t.write(rows(range(100)))
    t.write(rows(range(50, 60), tag="u"))  # update
    t.write(rows(range(0, 5), dt_="b"))
    t.delete(where="id < 10")
    expected = {(r["dt"], r["id"]): r for r in rows(range(10, 100)).to_pylist()}
    expected.update({(r["dt"], r["id"]): r for r in rows(range(50, 60), tag="u").to_pylist()})
    assert by_key(t) == expected and names(t) == {"avro"}
    before = t.latest_snapshot().id
    t.compact(full=True)
    assert t.latest_snapshot().id == before + 1
    assert by_key(t) == expected and names(t) == {"avro"}
    assert {f["level"] for f in t.files()} == {5}
    for f in t.files():  # every file decodes with an independent Avro reader
        reader = fastavro.reader(io.BytesIO(t.file_io.read_bytes(f["path"])))
        assert reader.codec == "zstandard"
        assert sum(1 for _ in reader) == f["row_count"]
    t.expire_snapshots(retain_max=1, retain_min=1, older_than=NOW)
    assert [s.id for s in t.snapshots()] == [before + 1]
    assert by_key(t) == expected
    t.write(rows(range(200, 203)))
    assert len(by_key(t)) == len(expected) + 3


@local_disk
def test_append_table_lives_in_avro(catalog):
    t = catalog.create_table("db.logs", SCHEMA, partition_keys=["dt"],
                             options={"bucket": "-1", **AVRO})
    for i in range(4):
        t.write(rows(range(i * 10, i * 10 + 10)))
    expected = sorted(pa.concat_tables([rows(range(i * 10, i * 10 + 10)) for i in range(4)])
                      .to_pylist(), key=lambda r: r["id"])
    assert sorted(t.read().to_pylist(), key=lambda r: r["id"]) == expected
    assert names(t) == {"avro"} and len(t.files()) == 4
    t.compact(full=True)
    assert len(t.files()) == 1 and names(t) == {"avro"}
    assert sorted(t.read().to_pylist(), key=lambda r: r["id"]) == expected
    t.expire_snapshots(retain_max=1, retain_min=1, older_than=NOW)
    assert len(t.snapshots()) == 1
    assert sorted(t.read().to_pylist(), key=lambda r: r["id"]) == expected


@local_disk
def test_table_moving_from_parquet_to_avro_reads_both(catalog):
    t = catalog.create_table("db.mix", SCHEMA, primary_keys=["dt", "id"],
                             partition_keys=["dt"], options={"bucket": "1"})
    t.write(rows(range(20)))
    t.alter([lf.SchemaChange.set_option("file.format", "avro"),
             lf.SchemaChange.rename_column("name", "label"),
             lf.SchemaChange.add_column("extra", pa.int64())])
    t = catalog.get_table("db.mix")
    t.write(pa.table({"dt": ["a"] * 5, "id": range(15, 20), "label": ["new"] * 5,
                      "price": [Decimal(1)] * 5, "qty": [1] * 5, "extra": [7] * 5},
                     schema=t.schema))
    assert names(t) == {"parquet", "avro"}
    got = by_key(t)
    assert got[("a", 3)]["label"] == "n3" and got[("a", 3)]["extra"] is None
    assert got[("a", 16)]["label"] == "new" and got[("a", 16)]["extra"] == 7
    t.compact(full=True)
    assert names(t) == {"avro"} and by_key(t) == got
    # and the old renamed column reads through an Avro file written under the old schema
    t.alter([lf.SchemaChange.rename_column("label", "title")])
    assert catalog.get_table("db.mix").read().column("title").to_pylist().count("new") == 5


ALL_TYPES = pa.schema([
    pa.field("id", pa.int64(), False),
    ("b", pa.bool_()), ("i8", pa.int8()), ("i16", pa.int16()), ("i32", pa.int32()),
    pa.field("i64", pa.int64(), False), ("f32", pa.float32()), ("f64", pa.float64()),
    ("d_small", pa.decimal128(9, 3)), ("d_mid", pa.decimal128(18, 0)),
    ("d_big", pa.decimal128(38, 10)), ("s", pa.string()), ("bin", pa.binary()),
    ("fixed", pa.binary(3)), ("day", pa.date32()), ("tod", pa.time32("ms")),
    ("ts3", pa.timestamp("ms")), ("ts6", pa.timestamp("us")),
    ("ltz3", pa.timestamp("ms", tz="UTC")), ("ltz6", pa.timestamp("us", tz="UTC")),
    ("arr", pa.list_(pa.int32())), ("arr_s", pa.list_(pa.field("e", pa.string(), False))),
    ("m", pa.map_(pa.string(), pa.float64())), ("m_int", pa.map_(pa.int32(), pa.string())),
    ("m_dec", pa.map_(pa.decimal128(5, 2), pa.list_(pa.date32()))),
    ("row", pa.struct([("x", pa.int32()), pa.field("y", pa.string(), False),
                       ("inner", pa.struct([("ts", pa.timestamp("us")),
                                            ("d", pa.decimal128(20, 4))]))])),
    ("rows", pa.list_(pa.struct([("k", pa.int16()), ("v", pa.binary())]))),
])


def all_types_rows(n: int) -> pa.Table:
    base = dt.datetime(2024, 2, 29, 13, 14, 15, 123456)
    out = []
    for i in range(n):
        neg = -1 if i % 2 else 1
        null = i % 4 == 3
        out.append({
            "id": i, "b": None if null else i % 3 == 0, "i8": None if null else neg * (i % 128),
            "i16": -32768 if i == 1 else i * 7, "i32": neg * i * 100003, "i64": neg * (i << 40),
            "f32": None if null else 1.5 * neg * i, "f64": float("inf") if i == 2 else i / 3,
            "d_small": Decimal(neg * i * 1001) / 1000, "d_mid": Decimal(neg * 10 ** 17 + i),
            "d_big": None if null else Decimal(f"{neg * (10 ** 27 + i)}.{i:010d}"),
            "s": None if null else f"ü{i}" * (i % 4), "bin": bytes(range(i % 256))[:i % 9],
            "fixed": bytes([i % 256, 0, 255]), "day": dt.date(1900 + i % 200, 1, 1),
            "tod": dt.time(i % 24, i % 60, 0, 1000 * (i % 1000)),
            "ts3": base.replace(microsecond=0) + dt.timedelta(milliseconds=neg * i * 1e7),
            "ts6": None if null else base - dt.timedelta(days=40000, microseconds=i),
            "ltz3": dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
            + dt.timedelta(milliseconds=neg * i),
            "ltz6": dt.datetime(2100, 1, 1, 0, 0, 0, i % 1000000, tzinfo=dt.UTC),
            "arr": None if null else ([] if i % 4 == 1 else [i, None, -i]),
            "arr_s": ["a" * (i % 3), "b"],
            "m": None if null else {"k": 0.5, f"k{i}": None},
            "m_int": {} if i % 5 == 0 else {i: "x", -i - 1: None},
            "m_dec": {Decimal("1.25"): [dt.date(2000, 1, 1), None], Decimal(-i): None},
            "row": None if null else {"x": None if i % 2 else i, "y": "why",
                                      "inner": {"ts": base, "d": Decimal("-0.0001")}
                                      if i % 3 else None},
            "rows": [{"k": i % 100, "v": None}, {"k": -1, "v": b"\x80"}] if i % 2 else [],
        })
    return pa.Table.from_pylist(out, schema=ALL_TYPES)


@pytest.mark.parametrize("keys", [["id"], []], ids=["pk", "append"])
@local_disk
def test_every_type_round_trips(catalog, keys):
    t = catalog.create_table("db.types", ALL_TYPES, primary_keys=keys,
                             options={"bucket": "2" if keys else "-1", **AVRO,
                                      "file.compression": "deflate"})
    data = all_types_rows(200)
    t.write(data)
    t.write(data.slice(150))
    back = t.read().sort_by("id")
    expected = data if keys else pa.concat_tables([data, data.slice(150)]).sort_by("id")
    assert back.schema.equals(t.schema) and back.to_pylist() == expected.to_pylist()
    t.compact(full=True)
    assert t.read().sort_by("id").to_pylist() == expected.to_pylist()


@local_disk
def test_stats_are_collected_from_the_rows_with_javas_avro_modes(catalog):
    """Java collects Avro stats row by row; in key-value files the `_KEY_` columns get the
    table's stats mode (truncate(16) by default), not the truncate(128) of Parquet/ORC."""
    schema = pa.schema([pa.field("k", pa.string(), False), ("v", pa.int32()),
                        ("tags", pa.list_(pa.int32()))])
    key = "k" * 40
    t = catalog.create_table("db.st", schema, primary_keys=["k"],
                             options={"bucket": "1", **AVRO})
    t.write(pa.table({"k": [key, "a"], "v": [None, 3], "tags": [[1], None]}, schema=schema))
    (entry,) = live(t)
    meta = entry.file
    fields = t.table_schema.fields
    assert from_avro_bytes(meta.key_stats.min_values, [fields[0].type]) == ["a"]
    assert from_avro_bytes(meta.key_stats.max_values, [fields[0].type]) == ["k" * 15 + "l"]
    types = [f.type for f in fields]
    assert from_avro_bytes(meta.value_stats.min_values, types) == ["a", 3, None]
    assert list(meta.value_stats.null_counts) == [0, 1, 1]


@pytest.mark.parametrize("options,match", [
    ({"file.compression": "lz4"}, "file.compression 'lz4'"),
    ({"file.compression": "none"}, "file.compression 'none'"),
    ({"avro.codec": "brotli"}, "avro.codec 'brotli'"),
])
@local_disk
def test_unwritable_codec_fails_clearly_and_leaves_table_unchanged(catalog, options, match):
    t = catalog.create_table("db.bad", SCHEMA, primary_keys=["dt", "id"],
                             options={"bucket": "1", **AVRO})
    t.write(rows(range(3)))
    files = {f["file_name"] for f in t.files()}
    t.alter([lf.SchemaChange.set_option(k, v) for k, v in options.items()])
    t = catalog.get_table("db.bad")
    with pytest.raises(lf.UnsupportedError, match=match):
        t.write(rows(range(3, 6)))
    assert {f["file_name"] for f in t.files()} == files and len(t.snapshots()) == 1
    assert len(t.read()) == 3


@pytest.mark.parametrize("codec", ["snappy", "bzip2", "xz", "zstandard", "null"])
@local_disk
def test_every_avro_codec_round_trips(catalog, codec):
    t = catalog.create_table("db.c", SCHEMA, primary_keys=["dt", "id"],
                             options={"bucket": "1", **AVRO, "file.compression": codec})
    t.write(rows(range(2000)))
    data = t.file_io.read_bytes(t.files()[0]["path"])
    assert fastavro.reader(io.BytesIO(data)).codec == codec
    assert by_key(t) == {(r["dt"], r["id"]): r for r in rows(range(2000)).to_pylist()}


@local_disk
def test_types_avro_cannot_hold_are_refused_before_anything_is_written(catalog):
    schema = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("ns"))])
    t = catalog.create_table("db.ns", schema, primary_keys=["id"],
                             options={"bucket": "1", **AVRO})
    with pytest.raises(lf.UnsupportedError, match=r"TIMESTAMP\(9\).*precision 6"):
        t.write(pa.table({"id": [1], "ts": [dt.datetime(2024, 1, 1)]}, schema=schema))
    assert t.snapshots() == [] and t.files() == []


def test_damaged_avro_file_names_itself(catalog):
    t = catalog.create_table("db.dmg", SCHEMA, primary_keys=["dt", "id"],
                             options={"bucket": "1", **AVRO})
    t.write(rows(range(10)))
    (f,) = t.files()
    data = t.file_io.read_bytes(f["path"])
    t.file_io.write_bytes(f["path"], data[:-30] + bytes(30))  # same size, broken last block
    with pytest.raises(lf.CorruptFileError, match=f["file_name"]):
        t.read()
