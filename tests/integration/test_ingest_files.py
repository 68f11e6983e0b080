"""File ingest keeps the table's types: CSV and JSON values are parsed into the table's column
types (never guessed, then cast), a bad value names file, line and column and writes nothing.
Files are read from local disk and from the moto S3 server: every value of the CSV and JSON
files, and a bad value's message naming the S3 path, on both. Parsing happens in memory once a
file's bytes are read, so the other bad values, JSON arrays and column checks (`@local_disk`,
and the tests on `local_catalog`) run on local disk only.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lakeformat as lf
from lakeformat.errors import InputFileError
from lakeformat.ingest import read_file, read_files

COLUMNS = [("code", pa.string()), ("id", pa.int64()), ("n", pa.int32()), ("x", pa.float64()),
           ("price", pa.decimal128(10, 2)), ("day", pa.date32()), ("at", pa.timestamp("us")),
           ("ok", pa.bool_()), ("dt", pa.string())]
SCHEMA = pa.schema(COLUMNS)

CSV = ("code,id,n,x,price,day,at,ok,dt\n"
       "01234,1,7,1.5,1.50,2024-01-02,2024-01-02 10:00:00,true,2024-01-02\n"
       "1.50,2,-3,0.10,0.10,2024-02-29,2024-02-29T23:59:59.123456,false,2024-01-02\n"
       "2024-01-02,3,,,,,,,2024-01-03\n"
       '"",4,0,1e3,100,2024-12-31,2024-12-31 00:00:00,1,2024-01-03\n'
       ",5,1,2,3,2024-01-01,2024-01-01 00:00:00,0,2024-01-03\n")
JSON = ('{"code": "01234", "id": 1, "n": 7, "x": 1.5, "price": 1.50, "day": "2024-01-02", '
        '"at": "2024-01-02 10:00:00", "ok": true, "dt": "2024-01-02"}\n'
        '{"code": "1.50", "id": 2, "n": -3, "x": 0.10, "price": "0.10", "day": "2024-02-29", '
        '"at": "2024-02-29T23:59:59.123456", "ok": false, "dt": "2024-01-02"}\n'
        '\n'
        '{"code": "2024-01-02", "id": 3, "n": null, "dt": "2024-01-03"}\n'
        '{"code": "", "id": 4, "n": 0, "x": 1e3, "price": 100, "day": "2024-12-31", '
        '"at": "2024-12-31 00:00:00", "ok": true, "dt": "2024-01-03"}\n'
        '{"code": null, "id": 5, "n": 1, "x": 2, "price": 3, "day": "2024-01-01", '
        '"at": "2024-01-01 00:00:00", "ok": false, "dt": "2024-01-03"}\n')
EXPECTED = [
    {"code": "01234", "id": 1, "n": 7, "x": 1.5, "price": Decimal("1.50"),
     "day": dt.date(2024, 1, 2), "at": dt.datetime(2024, 1, 2, 10), "ok": True,
     "dt": "2024-01-02"},
    {"code": "1.50", "id": 2, "n": -3, "x": 0.1, "price": Decimal("0.10"),
     "day": dt.date(2024, 2, 29), "at": dt.datetime(2024, 2, 29, 23, 59, 59, 123456),
     "ok": False, "dt": "2024-01-02"},
    {"code": "2024-01-02", "id": 3, "n": None, "x": None, "price": None, "day": None,
     "at": None, "ok": None, "dt": "2024-01-03"},
    {"code": "", "id": 4, "n": 0, "x": 1000.0, "price": Decimal("100.00"),
     "day": dt.date(2024, 12, 31), "at": dt.datetime(2024, 12, 31), "ok": True,
     "dt": "2024-01-03"},
    {"code": None, "id": 5, "n": 1, "x": 2.0, "price": Decimal("3.00"),
     "day": dt.date(2024, 1, 1), "at": dt.datetime(2024, 1, 1), "ok": False, "dt": "2024-01-03"},
]


#: a test of this module that never reaches store specifics: local disk only (module docstring)
local_disk = pytest.mark.parametrize("catalog", ["local"], indirect=True)


def make(catalog) -> lf.Table:
    return catalog.create_table("db.t", SCHEMA, primary_keys=["dt", "id"],
                                partition_keys=["dt"], options={"bucket": "2"})


def put(catalog, name: str, text: str | bytes) -> str:
    """Write an input file next to the warehouse (on S3 for the S3 catalog)."""
    path = catalog.file_io.join(catalog.warehouse, "..", "input", name) \
        if "://" not in catalog.warehouse else f"{catalog.warehouse}-input/{name}"
    catalog.file_io.write_bytes(path, text.encode() if isinstance(text, str) else text)
    return path


def rows(t: lf.Table) -> list[dict]:
    return sorted(t.read().to_pylist(), key=lambda r: r["id"])


@pytest.mark.parametrize("name,text", [("in.csv", CSV), ("in.json", JSON)])
def test_values_are_unchanged_after_write_and_read(catalog, name, text):
    t = make(catalog)
    data = read_file(put(catalog, name, text), schema=t, file_io=catalog.file_io)
    assert data.schema.names == [c for c, _ in COLUMNS]
    t.write(data)
    assert rows(t) == EXPECTED
    assert {f["partition"]["dt"] for f in t.files()} == {"2024-01-02", "2024-01-03"}


@local_disk
def test_json_top_level_array_is_read_as_rows(catalog):
    t = make(catalog)
    lines = [ln for ln in JSON.splitlines() if ln.strip()]
    text = "[\n  " + ",\n  ".join(ln.replace(", ", ",\n    ") for ln in lines) + "\n]\n"
    t.write(read_file(put(catalog, "arr.json", text), schema=t, file_io=catalog.file_io))
    assert rows(t) == EXPECTED
    bad = '[{"id": 1, "dt": "a"},\n {"id": "two", "dt": "a"}]'
    with pytest.raises(InputFileError, match=r"arr2.json: element 2, column 'id'"):
        read_file(put(catalog, "arr2.json", bad), schema=t, file_io=catalog.file_io)
    with pytest.raises(InputFileError, match="not closed"):
        read_file(put(catalog, "arr3.json", '[{"id": 1} {"id": 2}]'), schema=t,
                  file_io=catalog.file_io)


BAD_VALUES = [
    ("bad.csv", "code,id,dt\na,1,x\nb,2,x\nc,zwei,x\n", 4, "id"),
    ("bad2.csv", 'code,id,price,dt\n"multi\nline",1,1.5,x\nb,2,1.505,x\n', 4, "price"),
    ("bad3.csv", "code,id,day,dt\na,1,2024-02-30,x\n", 2, "day"),
    ("bad4.csv", "code,id,ok,dt\na,1,yes,x\n", 2, "ok"),
    ("bad5.csv", "code,id,n,dt\na,1,3000000000,x\n", 2, "n"),
    ("bad.json", '{"id": 1, "dt": "x"}\n\n{"id": 2, "dt": "x", "code": 1234}\n', 3, "code"),
    ("bad2.json", '{"id": 1, "dt": "x"}\n{"id": 2.5, "dt": "x"}\n', 2, "id"),
    ("bad3.json", '{"id": 1, "dt": "x", "day": "2024-13-01"}\n', 1, "day"),
    ("bad4.json", '{"id": 1, "dt": "x", "price": 1.505}\n', 1, "price"),
]


# every bad value on local disk; one CSV and one JSON file on S3 (the message names its S3 path)
@pytest.mark.parametrize("catalog,name,text,line,column", [
    *[("local", *case) for case in BAD_VALUES],
    *[("s3", *case) for case in BAD_VALUES if case[0] in ("bad.csv", "bad.json")],
], indirect=["catalog"])
def test_bad_value_names_file_line_and_column_and_writes_nothing(catalog, name, text, line,
                                                                  column):
    t = make(catalog)
    t.write(read_file(put(catalog, "ok.csv", CSV), schema=t, file_io=catalog.file_io))
    path = put(catalog, name, text)
    with pytest.raises(InputFileError) as e:
        t.write(read_file(path, schema=t, file_io=catalog.file_io))
    assert f"{name}: line {line}, column '{column}'" in str(e.value)
    assert path in str(e.value)
    assert [s.id for s in t.snapshots()] == [1] and rows(t) == EXPECTED


@local_disk
def test_columns_absent_from_the_file_stay_absent_and_extra_ones_are_named(catalog):
    t = make(catalog)
    got = read_file(put(catalog, "few.csv", "id,dt\n1,a\n"), schema=t, file_io=catalog.file_io)
    assert got.column_names == ["id", "dt"] and got.schema.field("id").type == pa.int64()
    got = read_file(put(catalog, "few.json", '{"dt": "a", "id": 1, "code": null}\n'),
                    schema=t, file_io=catalog.file_io)
    assert got.column_names == ["code", "id", "dt"]
    for name, text in (("extra.csv", "id,dt,colour,size\n1,a,red,3\n"),
                       ("extra.json", '{"id": 1, "dt": "a", "colour": "red", "size": 3}\n')):
        with pytest.raises(InputFileError, match=r"\['colour', 'size'\] are not in the table"):
            read_file(put(catalog, name, text), schema=t, file_io=catalog.file_io)
    got = read_file(put(catalog, "extra2.csv", "id,dt,colour\n1,a,red\n"), schema=t,
                    file_io=catalog.file_io, allow_extra=True)
    assert got.column_names == ["id", "dt", "colour"]


@pytest.mark.parametrize("name", ["junk.csv", "junk.json", "junk.parquet"])
def test_garbage_files_are_input_file_errors_naming_the_file(local_catalog, tmp_path, name):
    t = make(local_catalog)
    path = tmp_path / name
    path.write_bytes(bytes(range(256)) * 8)
    with pytest.raises(InputFileError, match=name):
        read_file(str(path), schema=t)


def test_parquet_is_cast_safely_to_the_table_types(local_catalog, tmp_path):
    t = make(local_catalog)
    path = tmp_path / "in.parquet"
    pq.write_table(pa.table({"id": pa.array([1, 2], pa.int32()), "dt": ["a", "b"],
                             "at": pa.array([0, 1000], pa.timestamp("ns"))}), path)
    got = read_file(str(path), schema=t)
    assert got.schema.field("id").type == pa.int64()
    assert got.schema.field("at").type == pa.timestamp("us")
    pq.write_table(pa.table({"id": [1], "n": pa.array([2**40], pa.int64())}), path)
    with pytest.raises(InputFileError, match="column 'n'"):
        read_file(str(path), schema=t)


def test_read_files_expands_globs_in_order(local_catalog, tmp_path):
    t = make(local_catalog)
    (tmp_path / "p1.csv").write_text("id,dt,code\n1,a,007\n")
    (tmp_path / "p2.csv").write_text("id,dt\n2,a\n")
    (tmp_path / "q.csv").write_text("id,dt\n3,a\n")
    got = read_files(str(tmp_path / "p*.csv"), schema=t)
    assert got.to_pylist() == [{"id": 1, "dt": "a", "code": "007"},
                               {"id": 2, "dt": "a", "code": None}]
    with pytest.raises(InputFileError, match="no input files match"):
        read_files(str(tmp_path / "none*.csv"), schema=t)


def test_types_json_cannot_carry_exactly_are_refused(local_catalog, tmp_path):
    t = local_catalog.create_table("db.b", pa.schema([("id", pa.int64()), ("raw", pa.binary())]),
                                   primary_keys=["id"], options={"bucket": "1"})
    (tmp_path / "b.json").write_text('{"id": 1, "raw": "aGk="}\n')
    with pytest.raises(lf.UnsupportedError, match="column 'raw'.*Parquet"):
        read_file(str(tmp_path / "b.json"), schema=t)
    (tmp_path / "b.json").write_text('{"id": 1}\n')  # absent: nothing to refuse
    assert read_file(str(tmp_path / "b.json"), schema=t).to_pylist() == [{"id": 1}]
