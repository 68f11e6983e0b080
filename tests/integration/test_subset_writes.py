"""Each stream writes only its own columns: omitted nullable columns are written null, and each
merge engine treats those nulls its own way (README, `write`).

What is asserted is how each merge engine reads the nulls of omitted columns: merge
rules over Arrow columns, the same whichever store holds the files. Local disk only
(`local_only`): the files these writes publish are published on S3 by the S3 runs of
`test_table`, `test_concurrent_writers` and `test_delete_where`.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

import lakeformat as lf
from tests.support.two_streams import COLUMNS, STEPS, TWO_STREAMS

pytestmark = pytest.mark.local_only  # see the module docstring


def by_id(t: lf.Table) -> dict[int, tuple]:
    rows = t.read().to_pylist()
    return {r["id"]: tuple(r[c] for c in COLUMNS[1:]) for r in rows}


def two_stream_table(catalog, name: str = "db.two") -> lf.Table:
    return catalog.create_table(name, TWO_STREAMS, primary_keys=["id"], options={
        "bucket": "1", "merge-engine": "partial-update",
        "fields.a_ts.sequence-group": "a,b", "fields.c_ts.sequence-group": "c,d",
        "num-sorted-run.compaction-trigger": "2"})


def test_two_streams_write_their_own_columns(catalog):
    t = two_stream_table(catalog)
    for n, (stream, rows, expected) in enumerate(STEPS):
        t.write(stream(rows))
        assert by_id(t) == expected, f"after write {n + 1}"
        if n == 1:  # a compaction between the streams' writes changes nothing
            assert t.compact(full=True).snapshot_ids
            assert by_id(t) == expected
    final = STEPS[-1][2]
    # minor: the top-level run and two level-0 runs pass num-sorted-run.compaction-trigger
    assert t.compact(full=False).snapshot_ids
    assert by_id(t) == final
    t.compact(full=True)
    assert by_id(t) == final
    assert {f["level"] for f in t.files()} == {2}  # num-levels = trigger + 1


def test_omitted_columns_per_engine(catalog):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("a", pa.string()),
                        ("b", pa.int64())])
    full = pa.table({"id": [1], "a": ["x"], "b": [7]}, schema=schema)
    only_a = pa.table({"id": pa.array([1], pa.int64()), "a": ["y"]})
    expected = {
        "deduplicate": {"id": 1, "a": "y", "b": None},  # the newer row replaces the whole row
        "first-row": {"id": 1, "a": "x", "b": 7},  # the first row stays
        "partial-update": {"id": 1, "a": "y", "b": 7},  # null = no change
    }
    for engine, want in expected.items():
        t = catalog.create_table(f"db.{engine.replace('-', '_')}", schema, primary_keys=["id"],
                                 options={"bucket": "1", "merge-engine": engine})
        t.write(full)
        t.write(only_a)
        assert t.read().to_pylist() == [want], engine
        t.compact(full=True)
        assert t.read().to_pylist() == [want], engine


def test_omitted_columns_under_aggregation(catalog):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("s", pa.int64()),
                        ("lv", pa.int64()), ("ln", pa.int64()), ("mx", pa.int64())])
    t = catalog.create_table("db.agg", schema, primary_keys=["id"], options={
        "bucket": "1", "merge-engine": "aggregation", "fields.s.aggregate-function": "sum",
        "fields.lv.aggregate-function": "last_value", "fields.mx.aggregate-function": "max"})
    t.write(pa.table({"id": [1], "s": [5], "lv": [1], "ln": [2], "mx": [9]}, schema=schema))
    t.write(pa.table({"id": pa.array([1], pa.int64()), "s": pa.array([3], pa.int64())}))
    # sum and max ignore a null input, last_value takes it, last_non_null_value keeps its value
    want = [{"id": 1, "s": 8, "lv": None, "ln": 2, "mx": 9}]
    assert t.read().to_pylist() == want
    t.compact(full=True)
    assert t.read().to_pylist() == want


def listing(t: lf.Table) -> tuple:
    return [s.id for s in t.snapshots()], sorted(f["file_name"] for f in t.files())


@pytest.mark.parametrize("data,match", [
    ({"id": [1], "a": ["x"], "typo": [1]}, r"unexpected \['typo'\]"),
    ({"a": ["x"], "n": [1], "dt": ["d"]}, r"missing primary-key column\(s\) \['id'\]"),
    ({"id": [1], "a": ["x"], "n": [1]}, r"missing partition column\(s\) \['dt'\]"),
    ({"id": [1], "a": ["x"], "dt": ["d"]},
     r"missing NOT NULL column\(s\) \['n \(BIGINT NOT NULL\)'\]"),
])
def test_omitting_required_columns_is_refused(catalog, data, match):
    schema = pa.schema([pa.field("dt", pa.string(), nullable=False),
                        pa.field("id", pa.int64(), nullable=False), ("a", pa.string()),
                        pa.field("n", pa.int64(), nullable=False), ("b", pa.string())])
    t = catalog.create_table("db.req", schema, primary_keys=["dt", "id"], partition_keys=["dt"],
                             options={"bucket": "1"})
    t.write(pa.table({"dt": ["d"], "id": [1], "a": ["x"], "n": [1], "b": ["y"]}, schema=schema))
    before = listing(t)
    with pytest.raises(lf.SchemaMismatchError, match=match):
        t.write(pa.table(data))
    assert listing(t) == before
    # the nullable columns may be left out
    t.write(pa.table({"dt": ["d"], "id": [2], "n": [5]}))
    assert sorted(t.read().to_pylist(), key=lambda r: r["id"])[1] == {
        "dt": "d", "id": 2, "a": None, "n": 5, "b": None}


def test_omitted_rowkind_column_writes_inserts(catalog):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()),
                        ("rk", pa.string())])
    t = catalog.create_table("db.rk", schema, primary_keys=["id"],
                             options={"bucket": "1", "rowkind.field": "rk"})
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"], "rk": ["+I", "+I"]}))
    t.write(pa.table({"id": pa.array([2, 3], pa.int64()), "v": ["B", "c"]}))
    assert sorted(t.read().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "v": "a", "rk": "+I"}, {"id": 2, "v": "B", "rk": None},
        {"id": 3, "v": "c", "rk": None}]
    t.delete(pa.table({"id": pa.array([1], pa.int64())}))
    assert sorted(r["id"] for r in t.read().to_pylist()) == [2, 3]
