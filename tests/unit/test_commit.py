"""Commit protocol: a publish that landed despite an error, failures leaving no trace, conflicts."""

from __future__ import annotations

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.operation.commit import CommitMessage, FileStoreCommit
from lakeformat.storage import LocalFileIO


class FlakyFileIO(LocalFileIO):
    """Local storage whose snapshot publish fails after (or before) the bytes land, and whose
    reads of snapshot files then fail `read_failures` times."""

    def __init__(self, land: bool, read_failures: int = 0):
        super().__init__()
        self.land = land
        self.armed = False
        self.read_failures = read_failures
        self.failing_reads = 0
        self.meanwhile = None  # run after a failed publish (another writer committing)

    def write_if_absent(self, path: str, data: bytes) -> bool:
        if self.armed and "/snapshot/snapshot-" in path:
            self.armed = False
            self.failing_reads = self.read_failures
            if self.land:
                super().write_if_absent(path, data)
            if self.meanwhile is not None:
                self.meanwhile()
            raise ConnectionError("connection reset while publishing")
        return super().write_if_absent(path, data)

    def read_bytes(self, path: str) -> bytes:
        if self.failing_reads and "/snapshot/snapshot-" in path:
            self.failing_reads -= 1
            raise ConnectionError("connection reset while reading")
        return super().read_bytes(path)


def make(tmp_path, land: bool, read_failures: int = 0):
    io = FlakyFileIO(land, read_failures)
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


def test_publish_that_did_not_land_is_retried_and_keeps_the_attempts_files(tmp_path):
    """The snapshot is absent after the failed request: the commit retries and lands. The
    failed attempt's manifests stay (a request still in flight could land and need them)."""
    io, t = make(tmp_path, land=False)
    io.armed = True
    res = t.write(pa.table({"id": [1], "v": ["a"]}))
    assert res.snapshot_id == 1
    assert t.read().to_pylist() == [{"id": 1, "v": "a"}]
    manifests = [s.path for s in io.list_recursive(t.path) if "/manifest/" in s.path]
    assert len(manifests) > 4  # one snapshot's delta manifest + 2 lists, and the first attempt's


def test_read_back_failing_once_still_decides_the_outcome(tmp_path):
    io, t = make(tmp_path, land=True, read_failures=1)
    io.armed = True
    res = t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    assert res.snapshot_id == 1
    assert t.read().num_rows == 2


def test_ambiguous_commit_raises_outcome_unknown_and_deletes_nothing(tmp_path):
    """The publish landed, its answer was lost and every read-back failed: the error says the
    outcome is unknown, no file is deleted, the table reads the landed snapshot, and running
    the write again settles it (same rows, once)."""
    io, t = make(tmp_path, land=True, read_failures=10)
    t.write(pa.table({"id": [0], "v": ["z"]}))
    before = {s.path for s in io.list_recursive(t.path)}
    io.armed = True
    with pytest.raises(lf.CommitOutcomeUnknownError, match="may or may not have landed") as err:
        t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    assert not isinstance(err.value, lf.CommitFailedError)
    assert err.value.snapshot_id == 2 and err.value.path.endswith("snapshot-2")
    io.failing_reads = 0
    after = {s.path for s in io.list_recursive(t.path)}
    assert before < after  # data files, manifests and the snapshot all kept
    assert [s.id for s in t.snapshots()] == [1, 2]
    assert sorted(t.read().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 0, "v": "z"}, {"id": 1, "v": "a"}, {"id": 2, "v": "b"}]
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}))  # the retry
    assert sorted(t.read().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 0, "v": "z"}, {"id": 1, "v": "a"}, {"id": 2, "v": "b"}]


def test_ambiguous_commit_that_did_not_land_leaves_only_orphans(tmp_path):
    io, t = make(tmp_path, land=False, read_failures=10)
    io.armed = True
    with pytest.raises(lf.CommitOutcomeUnknownError):
        t.write(pa.table({"id": [1], "v": ["a"]}))
    io.failing_reads = 0
    assert t.snapshots() == [] and t.read().num_rows == 0
    data = [s.path for s in io.list_recursive(t.path) if "/bucket-0/" in s.path]
    assert data  # kept: orphan cleanup settles it
    assert t.write(pa.table({"id": [1], "v": ["a"]})).snapshot_id == 1
    assert t.read().to_pylist() == [{"id": 1, "v": "a"}]


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


def test_publish_whose_id_another_writer_took_is_settled_and_renumbered(tmp_path):
    """The publish failed and another writer then holds that snapshot id: ours can never
    land there, so the write renumbers (the other writer wrote the same bucket) and lands."""
    io, t = make(tmp_path, land=False)
    t.write(pa.table({"id": [0], "v": ["z"]}))
    other = lf.Catalog(str(tmp_path / "wh")).get_table("db.t")
    io.meanwhile = lambda: other.write(pa.table({"id": [1], "v": ["other"]}))
    io.armed = True
    res = t.write(pa.table({"id": [1], "v": ["ours"]}))
    assert res.snapshot_id == 3 and res.rewrites == 1
    assert sorted(t.read().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 0, "v": "z"}, {"id": 1, "v": "ours"}]


def test_write_giving_up_after_a_publish_that_may_still_land_deletes_nothing(tmp_path):
    """Every publish fails and reads back absent: the write gives up, but a request could still
    land, so the error is CommitOutcomeUnknownError and every file is kept."""
    io, t = make(tmp_path, land=False)
    t.alter(lf.SchemaChange.set_option("commit.max-retries", "1"))
    t.write(pa.table({"id": [0], "v": ["z"]}))
    before = {s.path for s in io.list_recursive(t.path)}

    def fail_again() -> None:
        io.armed = True

    io.meanwhile = fail_again
    io.armed = True
    with pytest.raises(lf.CommitOutcomeUnknownError, match="nothing was deleted"):
        t.write(pa.table({"id": [1], "v": ["a"]}))
    io.meanwhile = None
    io.armed = False
    after = {s.path for s in io.list_recursive(t.path)}
    assert before < after and any(p.endswith(".parquet") for p in after - before)
    assert [s.id for s in t.snapshots()] == [1]
