"""`Table.read_batches`: the rows of `Table.read` as a stream of record batches, and a read
that opens only the columns the merge engine needs."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lakeformat as lf
from lakeformat.errors import ColumnNotFoundError, CorruptFileError

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("name", pa.string()),
                    ("qty", pa.int64())])


def _rows(dt: str, ids, qty: int) -> pa.Table:
    ids = list(ids)
    return pa.table({"dt": [dt] * len(ids), "id": ids, "name": [f"n{i}" for i in ids],
                     "qty": [qty] * len(ids)}, schema=SCHEMA)


def _sorted(t: pa.Table) -> list[dict]:
    return sorted(t.to_pylist(), key=lambda r: tuple(str(v) for v in r.values()))


def _streamed(t: lf.Table, **kwargs) -> pa.Table:
    reader = t.read_batches(**kwargs)
    assert isinstance(reader, pa.RecordBatchReader)
    return reader.read_all()


def test_read_batches_gives_the_rows_of_read_across_snapshots_tags_filters_and_schema_changes(
        catalog):
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                             options={"bucket": "2"})
    t.write(_rows("d1", range(0, 40), 1))
    t.write(_rows("d2", range(0, 40), 2))
    t.create_tag("first-two")
    t.write(_rows("d1", range(20, 60), 3))
    t.delete(_rows("d1", range(0, 5), 0))
    t.alter([lf.SchemaChange.rename_column("qty", "amount"),
             lf.SchemaChange.add_column("note", pa.string())])
    t.write(pa.table({"dt": ["d2"] * 3, "id": [1, 2, 100], "name": ["x", "y", "z"],
                      "amount": [9, 9, 9], "note": ["a", None, "c"]}))
    cases = [
        {},
        {"columns": ["amount", "id"]},
        {"columns": ["note"]},
        {"filter": [("dt", "=", "d1")]},
        {"filter": [("amount", ">", 1)], "columns": ["id", "name"]},
        {"filter": pc.field("id") < 10},
        {"snapshot_id": 1},
        {"snapshot_id": 3, "columns": ["qty"]},
        {"tag": "first-two", "filter": [("dt", "=", "d2")]},
    ]
    for kwargs in cases:
        expected = t.read(**kwargs)
        got = _streamed(t, **kwargs)
        assert got.schema == expected.schema, kwargs
        assert got.num_rows == expected.num_rows, kwargs
        assert _sorted(got) == _sorted(expected), kwargs
    latest = {(r["dt"], r["id"]): r for r in t.read_batches().read_all().to_pylist()}
    assert ("d1", 3) not in latest and latest[("d1", 30)]["amount"] == 3
    assert latest[("d2", 100)]["note"] == "c" and latest[("d2", 5)]["note"] is None


def test_read_batches_of_an_empty_table_and_unknown_columns(local_catalog):
    t = local_catalog.create_table("db.t", SCHEMA, primary_keys=["dt", "id"],
                                   options={"bucket": "2"})
    empty = t.read_batches(columns=["id", "name"]).read_all()
    assert empty.num_rows == 0 and empty.schema.names == ["id", "name"]
    with pytest.raises(ColumnNotFoundError, match="nope"):
        t.read_batches(columns=["nope"])


def test_a_big_bucket_is_streamed_in_many_batches(local_catalog):
    schema = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.int64())])
    t = local_catalog.create_table("db.t", schema, primary_keys=["id"],
                                   options={"bucket": "1"})
    rng = np.random.default_rng(3)
    for c in range(3):
        ids = rng.permutation(150_000)[:100_000]
        t.write(pa.table({"id": ids, "v": np.full(len(ids), c)}, schema=schema))
    batches = list(t.read_batches(memory_budget="256 kb"))
    assert len(batches) > 10
    streamed = pa.Table.from_batches(batches)
    whole = t.read()
    assert streamed.num_rows == whole.num_rows == len(set(streamed["id"].to_pylist()))
    assert _sorted(streamed) == _sorted(whole)
    # every batch is merged: within the stream no key appears twice
    assert pc.count_distinct(streamed["id"]).as_py() == streamed.num_rows


def test_stopping_early_and_damaged_files_in_a_stream(local_catalog):
    t = local_catalog.create_table("db.t", SCHEMA, primary_keys=["dt", "id"],
                                   options={"bucket": "4"})
    for q in range(3):
        t.write(_rows("d1", range(q * 500, q * 500 + 2000), q))
    reader = t.read_batches(memory_budget="64 kb")
    first = reader.read_next_batch()
    assert first.num_rows > 0
    reader.close()  # the merging threads stop; nothing hangs
    files = sorted(t.files(), key=lambda f: f["max_sequence_number"])
    victim = files[-1]["path"]
    t.file_io.write_bytes(victim, t.file_io.read_bytes(files[0]["path"]))  # another file's bytes
    with pytest.raises(CorruptFileError, match=victim.rsplit("/", 1)[-1]):
        for _ in t.read_batches():
            pass


class _CountingIO:
    """Wraps a table's FileIO: bytes read from data files through `open_input`."""

    def __init__(self, inner):
        self.inner = inner
        self.read = 0

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def open_input(self, path):
        source = self.inner.open_input(path)
        if "/bucket-" not in path:
            return source
        outer = self

        class Counted:
            closed = False

            def read(self, n=-1):
                data = source.read(n) if n is not None and n >= 0 else source.read()
                outer.read += len(data)
                return data

            def seek(self, pos, whence=0):
                return source.seek(pos, whence)

            def tell(self):
                return source.tell()

            def size(self):
                return source.size()

            def seekable(self):
                return True

            def readable(self):
                return True

            def close(self):
                self.closed = True
                source.close()

        return Counted()


def _wide_partial_update(catalog, options: dict[str, str]) -> lf.Table:
    fields = [pa.field("id", pa.int64(), False)] + [(f"c{i}", pa.string()) for i in range(12)]
    t = catalog.create_table("db.wide", pa.schema(fields), primary_keys=["id"],
                             options={"bucket": "1", "merge-engine": "partial-update",
                                      **options})
    rng = np.random.default_rng(5)
    for half in range(2):
        n = 20_000
        cols = {"id": np.arange(n)}
        for i in range(12):
            text = rng.integers(0, 1 << 62, n).astype(str)
            cols[f"c{i}"] = pa.array(text) if i % 2 == half else pa.nulls(n, pa.string())
        t.write(pa.table(cols, schema=pa.schema(fields)))
    return t


def _bytes_read(t: lf.Table, **kwargs) -> tuple[int, pa.Table]:
    counting = _CountingIO(t.file_io)
    t.file_io = counting
    try:
        result = t.read(**kwargs)
    finally:
        t.file_io = counting.inner
    return counting.read, result


def test_reading_one_column_of_a_wide_partial_update_table_reads_only_the_columns_needed(
        local_catalog):
    t = _wide_partial_update(local_catalog, {})
    all_bytes, full = _bytes_read(t)
    one_bytes, one = _bytes_read(t, columns=["c3"])
    assert one.column_names == ["c3"]
    assert one["c3"].to_pylist() == full["c3"].to_pylist()
    assert one["c3"].null_count == 0  # merged: c3 came from the second write only
    # 1 of 12 value columns (plus key, sequence number, kind, footers): far below a full read
    assert one_bytes < all_bytes / 4, (one_bytes, all_bytes)


def test_sequence_group_columns_are_read_with_the_columns_they_order(local_catalog):
    t = _wide_partial_update(local_catalog, {"fields.c0.sequence-group": "c2,c4"})
    all_bytes, full = _bytes_read(t)
    one_bytes, one = _bytes_read(t, columns=["c2"])
    assert one["c2"].to_pylist() == full["c2"].to_pylist()
    assert one_bytes < all_bytes / 2, (one_bytes, all_bytes)
