"""LocalFileIO against a real temp directory: semantics the commit and expiry code rely on."""

from __future__ import annotations

import os
import pickle
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakeformat.errors import UnsupportedError
from lakeformat.storage import FileIO, FileStatus, LocalFileIO, PendingFiles, get_file_io
from lakeformat.storage.local import local_path


@pytest.fixture()
def io() -> LocalFileIO:
    return LocalFileIO()


def test_get_file_io_picks_local_for_plain_and_file_uris(tmp_path: Path) -> None:
    for uri in (str(tmp_path), f"file://{tmp_path}", f"file:{tmp_path}"):
        assert isinstance(get_file_io(uri), LocalFileIO)


@pytest.mark.parametrize("uri", ["hdfs://nn/x", "gs://b/x", "abfs://c@a/x", "oss://b/x"])
def test_unknown_scheme_is_unsupported_and_named(uri: str) -> None:
    with pytest.raises(UnsupportedError) as ei:
        get_file_io(uri)
    assert repr(uri.split(":")[0]) in str(ei.value)


def test_local_path_strips_file_scheme() -> None:
    assert local_path("file:///a/b") == "/a/b"
    assert local_path("file:/a/b") == "/a/b"
    assert local_path("file://localhost/a/b") == "/a/b"
    assert local_path("/a/b") == "/a/b"
    with pytest.raises(UnsupportedError):
        local_path("file://otherhost/a")
    with pytest.raises(UnsupportedError):
        local_path("s3://b/k")


def test_join_never_doubles_slashes(io: LocalFileIO) -> None:
    assert io.join("/a/", "/b/", "c") == "/a/b/c"
    assert io.join("/", "a") == "/a"
    assert io.join("file:///a", "b") == "/a/b"
    assert io.join("/a", "", "b") == "/a/b"


def test_write_read_roundtrip_creates_parents(io: LocalFileIO, tmp_path: Path) -> None:
    p = str(tmp_path / "x" / "y" / "f.bin")
    io.write_bytes(p, b"hello")
    assert io.read_bytes(p) == b"hello"
    io.write_bytes(p, b"again")  # overwrite
    assert io.read_bytes(f"file://{p}") == b"again"
    assert io.exists(p) and io.exists(f"file:{p}")
    assert sorted(os.listdir(tmp_path / "x" / "y")) == ["f.bin"]  # no temp left behind


def test_missing_file_errors_name_the_path(io: LocalFileIO, tmp_path: Path) -> None:
    p = str(tmp_path / "nope.json")
    for fn in (io.read_bytes, io.status, io.open_input):
        with pytest.raises(FileNotFoundError) as ei:
            fn(p)
        assert p in str(ei.value)
    assert not io.exists(p)


def test_status(io: LocalFileIO, tmp_path: Path) -> None:
    p = str(tmp_path / "f")
    io.write_bytes(p, b"12345")
    st = io.status(p)
    assert st == FileStatus(p, 5, os.stat(p).st_mtime)
    assert io.status(f"file://{p}").size == 5


def test_listing_files_vs_dirs(io: LocalFileIO, tmp_path: Path) -> None:
    root = str(tmp_path / "t")
    io.write_bytes(f"{root}/a.txt", b"a")
    io.write_bytes(f"{root}/b.txt", b"bb")
    io.write_bytes(f"{root}/sub/c.txt", b"ccc")
    io.write_bytes(f"{root}/sub/deeper/d.txt", b"dddd")
    io.mkdirs(f"{root}/empty")
    files = io.list_status(root)
    assert [f.path for f in files] == [f"{root}/a.txt", f"{root}/b.txt"]
    assert [f.size for f in files] == [1, 2]
    assert io.list_status(root + "/") == files
    assert io.list_dirs(root) == [f"{root}/empty", f"{root}/sub"]
    rec = io.list_recursive(root)
    assert [f.path for f in rec] == [
        f"{root}/a.txt", f"{root}/b.txt", f"{root}/sub/c.txt", f"{root}/sub/deeper/d.txt"
    ]
    assert [f.path for f in io.list_status(f"file://{root}")] == [f.path for f in files]
    assert io.is_dir(root) and io.is_dir(f"{root}/empty") and not io.is_dir(f"{root}/a.txt")


def test_listing_missing_dir_is_empty(io: LocalFileIO, tmp_path: Path) -> None:
    missing = str(tmp_path / "missing")
    assert io.list_status(missing) == []
    assert io.list_dirs(missing) == []
    assert io.list_recursive(missing) == []
    assert not io.is_dir(missing)


def test_write_if_absent(io: LocalFileIO, tmp_path: Path) -> None:
    p = str(tmp_path / "snapshot" / "snapshot-1")
    assert io.write_if_absent(p, b"first") is True
    assert io.write_if_absent(p, b"second") is False
    assert io.read_bytes(p) == b"first"
    assert os.listdir(tmp_path / "snapshot") == ["snapshot-1"]  # temp files cleaned up


def test_write_if_absent_race_has_one_winner(io: LocalFileIO, tmp_path: Path) -> None:
    p = str(tmp_path / "snapshot-7")
    n = 16
    barrier = threading.Barrier(n)

    def attempt(i: int) -> bool:
        barrier.wait()
        return io.write_if_absent(p, f"writer-{i}".encode() * 1000)

    with ThreadPoolExecutor(n) as pool:
        results = list(pool.map(attempt, range(n)))
    assert results.count(True) == 1
    winner = results.index(True)
    assert io.read_bytes(p) == f"writer-{winner}".encode() * 1000
    assert os.listdir(tmp_path) == ["snapshot-7"]


def test_failed_write_removes_temp(io: LocalFileIO, tmp_path: Path) -> None:
    target = tmp_path / "d" / "f"
    target.mkdir(parents=True)  # a directory where the file should go: replace must fail
    with pytest.raises(OSError):
        io.write_bytes(str(target), b"x")
    assert os.listdir(tmp_path / "d") == ["f"]
    with pytest.raises(TypeError):
        io.write_bytes(str(tmp_path / "d" / "g"), "not bytes")  # type: ignore[arg-type]
    assert os.listdir(tmp_path / "d") == ["f"]


def test_temp_file_naming(io: LocalFileIO, tmp_path: Path) -> None:
    tmp = io._temp_path(str(tmp_path / "manifest-1"))
    name = os.path.basename(tmp)
    assert os.path.dirname(tmp) == str(tmp_path)
    assert name.startswith(".manifest-1.") and name.endswith(".tmp")


def test_delete_and_delete_many(io: LocalFileIO, tmp_path: Path) -> None:
    paths = [str(tmp_path / f"f{i}") for i in range(5)]
    for p in paths:
        io.write_bytes(p, b"x")
    assert io.delete(paths[0]) is True
    assert io.delete(paths[0]) is False
    assert io.delete_many(paths + [str(tmp_path / "never-existed")]) == []
    assert os.listdir(tmp_path) == []


def test_delete_many_reports_failures(io: LocalFileIO, tmp_path: Path) -> None:
    full = tmp_path / "full"
    io.write_bytes(str(full / "child"), b"x")  # non-empty dir: delete() refuses
    ok = str(tmp_path / "ok")
    io.write_bytes(ok, b"x")
    assert io.delete_many([ok, str(full)]) == [str(full)]
    assert not io.exists(ok)


def test_delete_empty_dir_and_delete_dir(io: LocalFileIO, tmp_path: Path) -> None:
    io.mkdirs(str(tmp_path / "e"))
    assert io.delete(str(tmp_path / "e")) is True
    io.write_bytes(str(tmp_path / "t" / "a" / "b"), b"x")
    io.delete_dir(str(tmp_path / "t"))
    assert not io.exists(str(tmp_path / "t"))
    io.delete_dir(str(tmp_path / "t"))  # missing: no error
    with pytest.raises(UnsupportedError):
        io.delete_dir("/")


def test_open_input_reads_parquet(io: LocalFileIO, tmp_path: Path) -> None:
    p = str(tmp_path / "data.parquet")
    table = pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]})
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    io.write_bytes(p, sink.getvalue().to_pybytes())
    with io.open_input(p) as f:
        assert pq.read_table(f).equals(table)


def test_pickle_roundtrip(io: LocalFileIO, tmp_path: Path) -> None:
    clone = pickle.loads(pickle.dumps(io))
    assert isinstance(clone, FileIO)
    clone.write_bytes(str(tmp_path / "p"), b"ok")
    assert io.read_bytes(str(tmp_path / "p")) == b"ok"


def _sync_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "lakeformat-sync"]


def test_open_output_flushes_while_writing(io: LocalFileIO, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # a streamed file is flushed to disk as it grows (by a helper thread), not only at the end
    flushed: list[int] = []
    real = os.fdatasync

    def spy(fd: int) -> None:
        flushed.append(os.fstat(fd).st_size)
        real(fd)

    monkeypatch.setattr(os, "fdatasync", spy)
    piece = os.urandom(1 << 20)
    target = tmp_path / "d" / "data-1.parquet"
    with io.open_output(str(target)) as out:
        for _ in range(3):
            out.write(piece)
        out.flush()
        deadline = time.monotonic() + 5
        while not flushed and time.monotonic() < deadline:
            time.sleep(0.01)
        assert flushed and flushed[0] >= 2 << 20  # flushed before the writer is done
        out.write(piece)
        assert not target.exists()  # only a temp file until the stream is closed
    assert target.read_bytes() == piece * 4
    assert os.listdir(target.parent) == ["data-1.parquet"]
    assert not _sync_threads()


def test_open_output_failures_leave_nothing(io: LocalFileIO, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "d" / "data-1.parquet"
    with pytest.raises(RuntimeError, match="encoder broke"):
        with io.open_output(str(target)) as out:
            out.write(b"x" * 100)
            raise RuntimeError("encoder broke")
    assert os.listdir(tmp_path / "d") == []

    # a flush that fails (a disk error) fails the write: nothing is published
    def broken(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fdatasync", broken)
    with pytest.raises(OSError, match="Input/output error"):
        with io.open_output(str(target)) as out:
            out.write(os.urandom(3 << 20))
            out.flush()
            time.sleep(0.2)
    assert os.listdir(tmp_path / "d") == []
    assert not _sync_threads()


def test_open_output_with_pending_publishes_in_the_background(
        io: LocalFileIO, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the last flush and the rename happen on the helper thread: the writer's block ends
    # at once, and the file is at its path (whole, flushed) when the pending files are waited for
    release = threading.Event()
    synced: list[int] = []
    real = os.fsync

    def slow_fsync(fd: int) -> None:
        release.wait(5)
        synced.append(os.fstat(fd).st_size)
        real(fd)

    monkeypatch.setattr(os, "fsync", slow_fsync)
    pending = PendingFiles()
    piece = os.urandom(1 << 20)
    targets = [tmp_path / "d" / f"data-{i}.parquet" for i in range(3)]
    for target in targets:
        with io.open_output(str(target), pending) as out:
            out.write(piece)
    assert not any(t.exists() for t in targets)  # still finishing: not published yet
    release.set()
    pending.wait()
    assert all(t.read_bytes() == piece for t in targets)
    assert synced == [1 << 20] * 3
    assert sorted(os.listdir(targets[0].parent)) == [t.name for t in targets]
    assert not _sync_threads()
    pending.wait()  # nothing left to wait for


def test_pending_file_that_fails_is_not_published(io: LocalFileIO, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # a disk error on one file's last flush: every file ends, the error is raised by wait(),
    # the failed file is neither at its path nor left as a temp file
    real = os.fsync

    def failing(fd: int) -> None:
        if os.fstat(fd).st_size == 7:
            raise OSError(5, "Input/output error")
        real(fd)

    monkeypatch.setattr(os, "fsync", failing)
    pending = PendingFiles()
    good, bad = tmp_path / "d" / "good.parquet", tmp_path / "d" / "bad.parquet"
    with io.open_output(str(bad), pending) as out:
        out.write(b"x" * 7)
    with io.open_output(str(good), pending) as out:
        out.write(b"y" * 9)
    with pytest.raises(OSError, match="Input/output error"):
        pending.wait()
    assert os.listdir(tmp_path / "d") == ["good.parquet"]
    assert good.read_bytes() == b"y" * 9
    assert not _sync_threads()
