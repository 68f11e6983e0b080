"""Avro data files (`file.format=avro`) between lakeformat and pypaimon 2.1.0, both ways:
primary-key and append tables one library writes, the other reads; lakeformat compacts what
pypaimon wrote and pypaimon reads the result."""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

import pytest

pytest.importorskip("pypaimon")  # collected only in the interop venv

import pyarrow as pa  # noqa: E402

from tests.support.pypaimon_helpers import (  # noqa: E402
    create_paimon_table,
    paimon_read,
    paimon_write,
)

AVRO = {"file.format": "avro"}
# the types both writers put in Avro (pypaimon's Avro writer has no MAP)
ROWS = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("name", pa.string()),
                  ("qty", pa.int32()), ("small", pa.int16()), ("score", pa.float64()),
                  ("ratio", pa.float32()), ("ok", pa.bool_()), ("price", pa.decimal128(10, 2)),
                  ("day", pa.date32()), ("at", pa.timestamp("us")),
                  ("at_ms", pa.timestamp("ms")), ("raw", pa.binary()),
                  ("tags", pa.list_(pa.string())),
                  ("point", pa.struct([("x", pa.int32()), ("label", pa.string())]))])


def batch(start: int, n: int, tag: str = "") -> pa.Table:
    ids = range(start, start + n)
    return pa.Table.from_pylist([{
        "dt": "2024-01-0" + str(1 + i % 2), "id": i, "name": f"n{i}{tag}" if i % 7 else None,
        "qty": i % 5 - 2, "small": i % 300, "score": i / 8 if i % 3 else None,
        "ratio": 0.5 * (i % 4), "ok": i % 2 == 0,
        "price": decimal.Decimal(i * 37 - 500) / 100, "day": dt.date(2024, 1, 1 + i % 28),
        "at": dt.datetime(2024, 1, 1, 0, 0, 0, i % 1000 * 1000 + 7),
        "at_ms": dt.datetime(1969, 12, 31, 23, 59, 59, 1000 * (i % 1000)),
        "raw": bytes([i % 256, 255]) if i % 4 else None,
        "tags": [f"t{i}", "z"] if i % 3 else None,  # pypaimon: no null items
        "point": {"x": i, "label": tag or None} if i % 6 else None} for i in ids], schema=ROWS)


def ordered(t: pa.Table) -> list[dict]:
    return sorted(t.to_pylist(), key=lambda r: (r["dt"], r["id"]))


def same_rows(lake_table: Any, paimon: Any, name: str) -> int:
    mine = lake_table.read()
    theirs = paimon_read(paimon.get_table(name))
    assert ordered(theirs) == ordered(mine)
    return mine.num_rows


def avro_files(table: Any) -> list[str]:
    names = [f["file_name"] for f in table.files()]
    assert names and all(n.endswith(".avro") for n in names)
    return names


@pytest.mark.parametrize("keys", [["dt", "id"], []], ids=["pk", "append"])
def test_lakeformat_reads_and_compacts_what_pypaimon_writes(paimon, lake, keys):
    options = {"bucket": "2", **AVRO} if keys else {"bucket": "2", "bucket-key": "id", **AVRO}
    pt = create_paimon_table(paimon, "db.t", ROWS, keys, ["dt"], options)
    paimon_write(pt, batch(0, 300))
    paimon_write(pt, batch(200, 200, "b"))
    t = lake.get_table("db.t")
    avro_files(t)
    expected = ordered(paimon_read(pt))
    assert ordered(t.read()) == expected
    assert t.read().num_rows == (400 if keys else 500)
    t.compact(full=True)
    avro_files(t)
    assert ordered(t.read()) == expected
    assert same_rows(t, paimon, "db.t") == len(expected)
    paimon_write(paimon.get_table("db.t"), batch(450, 20, "c"))  # pypaimon writes on top
    assert same_rows(lake.get_table("db.t"), paimon, "db.t") == len(expected) + 20


@pytest.mark.parametrize("keys", [["dt", "id"], []], ids=["pk", "append"])
@pytest.mark.parametrize("codec", ["zstd", "snappy", "deflate", "null"])
def test_pypaimon_reads_what_lakeformat_writes(paimon, lake, keys, codec):
    options = {"bucket": "2", "file.compression": codec, **AVRO}
    if not keys:
        options["bucket-key"] = "id"
    t = lake.create_table("db.t", ROWS, primary_keys=keys, partition_keys=["dt"],
                          options=options)
    t.write(batch(0, 3000))
    t.write(batch(2900, 200, "b"))
    avro_files(t)
    n = same_rows(t, paimon, "db.t")
    assert n == (3100 if keys else 3200)
    t.compact(full=True)
    assert same_rows(t, paimon, "db.t") == n


def test_pypaimon_reads_lakeformat_updates_and_deletes(paimon, lake):
    t = lake.create_table("db.t", ROWS, primary_keys=["dt", "id"], partition_keys=["dt"],
                          options={"bucket": "1", **AVRO})
    t.write(batch(0, 100))
    t.write(batch(50, 10, "u"))
    t.delete(where="id < 10")
    assert same_rows(t, paimon, "db.t") == t.read().num_rows
