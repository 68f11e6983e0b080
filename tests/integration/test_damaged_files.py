"""A data file that does not match its manifest entry (short, long, swapped, missing) fails
closed: CorruptFileError naming the file on read and on every compaction path, and a failed
compaction leaves the table's files as they were.

Every kind of damage fails reads and compactions on local disk and on the moto S3 server (a
missing object, sizes from S3's answers), and an undamaged upgrade works on both. The upgrade of
a lone damaged file (`@local_disk`) goes through the same size and read checks on local disk
only; the messages and the row-count check use `local_catalog`.
"""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lakeformat as lf

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


#: a test of this module that never reaches store specifics: local disk only (module docstring)
local_disk = pytest.mark.parametrize("catalog", ["local"], indirect=True)


def make(catalog, name: str, writes: int, **options: str) -> lf.Table:
    t = catalog.create_table(f"db.{name}", SCHEMA, primary_keys=["id"],
                             options={"bucket": "1", **options})
    for w in range(writes):
        ids = list(range(w * 3, w * 3 + 10 + w))  # overlapping keys, different row counts
        t.write(pa.table({"id": ids, "v": [f"{w}-{i}" for i in ids]}, schema=SCHEMA))
    return t


def rewrite(t: lf.Table, path: str, change) -> None:
    table = pq.read_table(io.BytesIO(t.file_io.read_bytes(path)))
    sink = io.BytesIO()
    pq.write_table(change(table), sink)
    t.file_io.write_bytes(path, sink.getvalue())


def damage(t: lf.Table, how: str, other: str | None = None) -> str:
    """Damage the newest data file (swapped: the oldest, or `other`, copied over it); returns
    its path."""
    files = sorted(t.files(), key=lambda f: f["max_sequence_number"])
    victim, other = files[-1]["path"], other or files[0]["path"]
    if how == "short":
        rewrite(t, victim, lambda tb: tb.slice(0, tb.num_rows - 2))
    elif how == "long":
        rewrite(t, victim, lambda tb: pa.concat_tables([tb, tb.slice(0, 1)]))
    elif how == "swapped":
        t.file_io.write_bytes(victim, t.file_io.read_bytes(other))
    else:
        t.file_io.delete(victim)
    return victim


def snapshot_of_storage(t: lf.Table) -> tuple:
    return ([s.id for s in t.snapshots()],
            sorted(s.path for s in t.file_io.list_recursive(t.path + "/bucket-0")))


HOWS = ["short", "long", "swapped", "missing"]


@pytest.mark.parametrize("how", HOWS)
def test_damaged_file_fails_read_and_compaction(catalog, how):
    t = make(catalog, "t", writes=2, **{"num-sorted-run.compaction-trigger": "2"})
    path = damage(t, how)
    name = path.rsplit("/", 1)[-1]
    before = snapshot_of_storage(t)
    with pytest.raises(lf.CorruptFileError, match=name):
        t.read()
    for full in (False, True):  # minor (two level-0 runs pass the trigger) and full
        with pytest.raises(lf.CorruptFileError, match=name):
            t.compact(full=full)
        assert snapshot_of_storage(t) == before


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("producer", ["none", "full-compaction"])
@local_disk
def test_damaged_file_is_not_moved_up_unread(catalog, how, producer):
    """A lone level-0 file goes to the top level without a rewrite (Paimon's upgrade), and
    with changelog-producer=full-compaction it also yields a changelog."""
    t = make(catalog, "up", writes=1, **{"changelog-producer": producer})
    sibling = make(catalog, "sibling", writes=2)  # a data file of the same layout
    path = damage(t, how, other=sibling.files()[-1]["path"])
    before = snapshot_of_storage(t)
    with pytest.raises(lf.CorruptFileError, match=path.rsplit("/", 1)[-1]):
        t.compact(full=True)
    assert snapshot_of_storage(t) == before


def test_messages_give_both_sizes(local_catalog):
    t = make(local_catalog, "msg", writes=1)
    size = t.files()[0]["file_size"]
    path = damage(t, "short")
    real = t.file_io.status(path).size
    assert real != size
    with pytest.raises(lf.CorruptFileError,
                       match=f"is {real} bytes but its manifest entry says {size}"):
        t.read()


def test_undamaged_upgrade_still_works(catalog):
    t = make(catalog, "ok", writes=1)
    assert t.compact(full=True).snapshot_ids
    assert t.files()[0]["level"] == 5
    assert t.read().num_rows == 10


def test_row_count_is_checked_when_the_size_agrees(local_catalog):
    """The footer's row count is compared even when the size matches (the manifest entry's
    count is off here, the file itself intact)."""
    import dataclasses

    from lakeformat.data.kv_read import read_kv_file, verify_data_file
    from lakeformat.operation.scan import FileStoreScan

    t = make(local_catalog, "rows", writes=1)
    entry = FileStoreScan(t.file_io, t.path, t.table_schema).live_entries(t.latest_snapshot())[0]
    wrong = dataclasses.replace(entry.file, row_count=entry.file.row_count + 1)
    path = t.files()[0]["path"]
    with pytest.raises(lf.CorruptFileError, match="holds 10 rows but its manifest entry says 11"):
        verify_data_file(t.file_io, path, "parquet", wrong)
    with pytest.raises(lf.CorruptFileError, match="holds 10 rows but its manifest entry says 11"):
        read_kv_file(t.file_io, path, "parquet", expect=wrong)
    verify_data_file(t.file_io, path, "parquet", entry.file)  # the real entry passes
