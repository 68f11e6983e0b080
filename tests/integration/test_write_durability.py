"""A write's data files are on disk, whole and at their names, before its snapshot names them;
a disk error on one of them fails the write and leaves the table as it was."""

from __future__ import annotations

import errno
import os
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import lakeformat as lf

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string())])


def batch(ids: np.ndarray, tag: str) -> pa.Table:
    return pa.table({"id": pa.array(ids), "name": pa.array([f"{tag}{i}" for i in ids])},
                    schema=SCHEMA)


def files_on_disk(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")
                  if p.is_file() and "bucket-" in p.parent.name)


@pytest.fixture
def table(tmp_path: Path) -> lf.Table:
    catalog = lf.Catalog(str(tmp_path))
    catalog.create_database("db")
    return catalog.create_table("db.t", SCHEMA, primary_keys=["id"],
                                options={"bucket": "4", "target-file-size": "16kb"})


def test_written_files_are_whole_at_their_names_when_the_write_returns(
        table: lf.Table, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    flushed: set[str] = set()
    real = os.fsync

    def spy(fd: int) -> None:  # a slow disk: the files finish well after their units end
        name = os.path.basename(os.readlink(f"/proc/self/fd/{fd}"))
        if name.startswith(".data-"):
            time.sleep(0.05)
        real(fd)
        flushed.add(name)

    monkeypatch.setattr(os, "fsync", spy)
    table.write(batch(np.arange(40_000), "a"))
    files = table.files()
    assert len(files) > 4  # several rolled files per bucket, each finished in the background
    for f in files:
        assert os.stat(f["path"]).st_size == f["file_size"]
    on_disk = files_on_disk(tmp_path / "db.db" / "t")
    assert sorted(Path(p).name for p in on_disk) == sorted(f["file_name"] for f in files)
    # every data file went through fsync under its temp name before it was renamed
    assert len([n for n in flushed if n.startswith(".data-")]) == len(on_disk)
    assert table.read().num_rows == 40_000


def test_a_disk_error_on_one_file_fails_the_write_and_leaves_the_table(
        table: lf.Table, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table.write(batch(np.arange(1_000), "old"))
    before = table.read().sort_by("id")
    root = tmp_path / "db.db" / "t"
    files_before = files_on_disk(root)
    snapshot = table.latest_snapshot()
    real = os.fsync
    hit: list[str] = []

    def failing(fd: int) -> None:
        name = os.path.basename(os.readlink(f"/proc/self/fd/{fd}"))
        if name.startswith(".data-") and not hit:
            hit.append(name)
            raise OSError(errno.EIO, "Input/output error")
        real(fd)

    monkeypatch.setattr(os, "fsync", failing)
    with pytest.raises(OSError, match="Input/output error"):
        table.write(batch(np.arange(500, 30_000), "new"))
    assert hit
    monkeypatch.setattr(os, "fsync", real)
    assert table.latest_snapshot() == snapshot
    assert table.read().sort_by("id").equals(before)
    assert files_on_disk(root) == files_before  # the other files removed, no temp file left
