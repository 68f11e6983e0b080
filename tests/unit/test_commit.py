"""Commit protocol: a publish that landed despite an error, failures leaving no trace, conflicts."""

from __future__ import annotations

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.operation.commit import CommitMessage, FileStoreCommit
from lakeformat.storage import LocalFileIO


class FlakyFileIO(LocalFileIO):
    """Local storage whose snapshot publish fails after (or before) the bytes land."""

    def __init__(self, land: bool):
        super().__init__()
        self.land = land
        self.armed = False

    def write_if_absent(self, path: str, data: bytes) -> bool:
        if self.armed and "/snapshot/snapshot-" in path:
            self.armed = False
            if self.land:
                super().write_if_absent(path, data)
            raise ConnectionError("connection reset while publishing")
        return super().write_if_absent(path, data)


def make(tmp_path, land: bool):
    io = FlakyFileIO(land)
    cat = lf.Catalog(str(tmp_path / "wh"), file_io=io)
    cat.create_database("db")
    t = cat.create_table("db.t", pa.schema([("id", pa.int64()), ("v", pa.string())]),
                         primary_keys=["id"], options={"bucket": "1"})
    return io, t


def test_publish_that_landed_despite_error_counts_as_committed(tmp_path):
    io, t = make(tmp_path, land=True)
    io.armed = True
    res = t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    assert res.snapshot_id == 1
    assert [s.id for s in t.snapshots()] == [1]
    assert t.read().num_rows == 2


def test_publish_with_unknown_outcome_fails_and_leaves_no_files(tmp_path):
    io, t = make(tmp_path, land=False)
    io.armed = True
    before = {s.path for s in io.list_recursive(t.path)}
    with pytest.raises(lf.CommitFailedError, match="snapshot-1"):
        t.write(pa.table({"id": [1], "v": ["a"]}))
    assert {s.path for s in io.list_recursive(t.path)} == before
    assert t.snapshots() == []


def test_deleting_a_file_that_is_no_longer_live_is_a_conflict(tmp_path):
    _, t = make(tmp_path, land=True)
    t.write(pa.table({"id": [1], "v": ["a"]}))
    old = t.files()[0]
    t.write(pa.table({"id": [2], "v": ["b"]}), overwrite=True)  # removes the first file
    commit = FileStoreCommit(t.file_io, t.path, t.table_schema)
    from lakeformat.operation.scan import FileStoreScan
    entry = FileStoreScan(t.file_io, t.path, t.table_schema).live_entries(
        t.snapshot_manager.snapshot(1))[0]
    assert entry.file.file_name == old["file_name"]
    msg = CommitMessage(entry.partition, entry.bucket, entry.total_buckets,
                        deleted_files=[entry.file])
    with pytest.raises(lf.CommitConflictError, match=old["file_name"]):
        commit.commit([msg], kind="COMPACT")
    assert [s.id for s in t.snapshots()] == [1, 2]
