"""`Table.read(filter=...)` and `Table.compact(where=...)` take where text: typed by the
schema of the snapshot read, pruning partitions like DNF tuples do."""

from __future__ import annotations

import pyarrow as pa
import pytest

import lakeformat as lf


def make(catalog: lf.Catalog) -> lf.Table:
    t = catalog.create_table(
        "db.w", pa.schema([("dt", pa.string()), ("id", pa.int64()), ("name", pa.string())]),
        primary_keys=["dt", "id"], partition_keys=["dt"], options={"bucket": "1"})
    t.write(pa.table({"dt": ["2024-01-01", "2024-01-01", "2024-01-02", "2024-01-03"],
                      "id": [1, 2, 3, 4], "name": ["a", None, "it's", "d"]}))
    return t


def ids(t: lf.Table, where: str, **kwargs) -> list[int]:
    return sorted(t.read(filter=where, **kwargs)["id"].to_pylist())


def test_read_takes_where_text(local_catalog):
    t = make(local_catalog)
    assert ids(t, "dt = '2024-01-01' AND name IS NULL") == [2]
    assert ids(t, "name = 'it''s' OR id IN (1, 4)") == [1, 3, 4]
    assert ids(t, "dt BETWEEN 2024-01-02 AND 2024-01-03 AND id <> 4") == [3]
    batches = t.read_batches(filter="id >= 3").read_all()
    assert sorted(batches["id"].to_pylist()) == [3, 4]
    with pytest.raises(lf.InvalidFilterError, match="'zz'"):
        t.read(filter="zz = 1")


def test_where_text_on_partitions_prunes_the_other_partitions(local_catalog):
    t = make(local_catalog)
    other = [f["path"] for f in t.files() if f["partition"]["dt"] != "2024-01-01"]
    for path in other:  # a read that opened these files would fail
        t.file_io.write_bytes(path, b"not parquet")
    assert ids(t, "dt = '2024-01-01'") == [1, 2]
    assert ids(t, "dt IN ('2024-01-01') AND (id = 2 OR name IS NOT NULL)") == [1, 2]
    with pytest.raises(Exception):  # noqa: B017 - any read error: the file was opened
        t.read(filter="dt IS NOT NULL")


def test_compact_takes_where_text_on_partition_columns_only(local_catalog):
    t = make(local_catalog)
    t.write(pa.table({"dt": ["2024-01-01"], "id": [5], "name": ["e"]}))
    result = t.compact(where="dt = '2024-01-01'")
    assert list(result.partitions) == ["dt=2024-01-01"]
    with pytest.raises(lf.InvalidArgumentError, match="partition columns"):
        t.compact(where="id = 1")
