"""S3FileIO against moto's S3 server over real HTTP (no boto3 mocking)."""

from __future__ import annotations

import pickle
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakeformat.errors import InvalidOptionError, UnsupportedError
from lakeformat.storage import FileIO, S3FileIO, get_file_io
from lakeformat.storage.s3 import split_s3_path
from tests.support.s3server import boto3_client, new_bucket

Warehouse = tuple[str, dict[str, str]]


@pytest.fixture()
def wh(s3_warehouse: Warehouse) -> tuple[S3FileIO, str]:
    uri, options = s3_warehouse
    io = get_file_io(uri, options)
    assert isinstance(io, S3FileIO)
    return io, uri


def _put_many(io: FileIO, paths: list[str]) -> None:
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda p: io.write_bytes(p, b"x"), paths))


def test_split_s3_path_normalises() -> None:
    assert split_s3_path("s3://b/a//b/") == ("s3", "b", "a/b")
    assert split_s3_path("s3a://b") == ("s3a", "b", "")
    assert split_s3_path("S3N://b/k") == ("s3n", "b", "k")
    with pytest.raises(UnsupportedError):
        split_s3_path("/local/path")
    with pytest.raises(ValueError):
        split_s3_path("s3:///key")


@pytest.mark.parametrize("scheme", ["s3", "s3a", "s3n"])
def test_aliases_select_s3(scheme: str) -> None:
    assert isinstance(get_file_io(f"{scheme}://bucket/x", {}), S3FileIO)


def test_unknown_scheme_raises() -> None:
    with pytest.raises(UnsupportedError, match="'gs'"):
        get_file_io("gs://bucket/x", {"s3.endpoint": "http://x"})


def test_options_validation_and_unknown_s3_options_ignored() -> None:
    S3FileIO({"s3.endpoint": "http://h:1", "s3.some-future-option": "whatever"})
    with pytest.raises(InvalidOptionError, match="path-style"):
        S3FileIO({"s3.path-style-access": "maybe"})
    with pytest.raises(InvalidOptionError):
        S3FileIO({"s3.access-key": "only-half"})
    io = S3FileIO({"s3.endpoint": "h:9000", "s3.connection.ssl.enabled": "false",
                   "s3.secret-key": "SECRET", "s3.access-key": "AK"})
    assert io._endpoint == "http://h:9000"
    assert "SECRET" not in repr(io)


def test_read_write_exists_status(wh: tuple[S3FileIO, str]) -> None:
    io, uri = wh
    p = io.join(uri, "db.db", "t", "snapshot", "snapshot-1")
    assert p == uri + "/db.db/t/snapshot/snapshot-1"
    assert not io.exists(p)
    io.write_bytes(p, b'{"id": 1}')
    assert io.read_bytes(p) == b'{"id": 1}'
    assert io.exists(p)
    assert io.exists(io.join(uri, "db.db"))  # a prefix counts as a directory
    st = io.status(p)
    assert (st.path, st.size) == (p, 9) and st.mtime > 1.6e9
    io.write_bytes(p, b"over")
    assert io.read_bytes(p) == b"over"
    # aliases and sloppy slashes reach the same key
    alias = p.replace("s3://", "s3a://").replace("/t/", "//t/")
    assert io.read_bytes(alias) == b"over"
    bucket = split_s3_path(uri)[1]
    keys = [o["Key"] for o in boto3_client(io._endpoint).list_objects_v2(Bucket=bucket)["Contents"]]
    assert keys == ["wh/db.db/t/snapshot/snapshot-1"]


def test_missing_file_errors_name_the_path(wh: tuple[S3FileIO, str]) -> None:
    io, uri = wh
    p = uri + "/no/such/file"
    for fn in (io.read_bytes, io.status, io.open_input):
        with pytest.raises(FileNotFoundError) as ei:
            fn(p)
        assert p in str(ei.value)
    with pytest.raises(FileNotFoundError, match="no/such/file"):
        io.read_bytes("s3://lf-bucket-that-does-not-exist/no/such/file")


def test_listing_files_vs_dirs(wh: tuple[S3FileIO, str]) -> None:
    io, uri = wh
    for rel in ("a", "b", "sub/c", "sub/deeper/d", "other/e"):
        io.write_bytes(f"{uri}/t/{rel}", rel.encode())
    t = uri + "/t"
    for d in (t, t + "/"):
        assert [s.path for s in io.list_status(d)] == [f"{t}/a", f"{t}/b"]
        assert io.list_dirs(d) == [f"{t}/other", f"{t}/sub"]
    assert [s.path for s in io.list_recursive(t)] == [
        f"{t}/a", f"{t}/b", f"{t}/other/e", f"{t}/sub/c", f"{t}/sub/deeper/d"
    ]
    assert [s.size for s in io.list_status(t)] == [1, 1]
    assert io.is_dir(t) and io.is_dir(t + "/sub") and not io.is_dir(t + "/a")
    assert io.list_status(uri + "/missing") == [] and io.list_dirs(uri + "/missing") == []
    assert io.list_recursive(uri + "/missing") == []
    # "t/a" must not match a sibling prefix such as "t/ab"
    io.write_bytes(f"{t}/ab/x", b"x")
    assert io.list_status(t + "/a") == []
    # listing with an alias scheme returns paths in that scheme
    assert io.list_dirs(t.replace("s3://", "s3a://"))[0].startswith("s3a://")


def test_paging_and_batched_delete_past_1000_keys(
    wh: tuple[S3FileIO, str], s3_server: str
) -> None:
    """1,100 keys: listings must page (files and dirs interleave across the page boundary)
    and delete_many must split into DeleteObjects calls of at most 1,000 keys per bucket."""
    io, uri = wh
    d = uri + "/big"
    files = [f"{d}/{i:04d}" for i in range(0, 1100, 2)]
    nested = [f"{d}/{i:04d}d/x" for i in range(1, 1100, 2)]
    _put_many(io, files + nested)
    assert [s.path for s in io.list_status(d)] == files
    assert io.list_dirs(d) == [p.rsplit("/", 1)[0] for p in nested]
    assert len(io.list_recursive(d)) == 1100

    other = new_bucket(s3_server)
    other_paths = [f"s3://{other}/k{i}" for i in range(3)]
    _put_many(io, other_paths)
    batches: list[tuple[str, int]] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        batches.append((params["Bucket"], len(params["Delete"]["Objects"])))

    io.client.meta.events.register("provide-client-params.s3.DeleteObjects", record)
    everything = files + other_paths + nested + [d + "/never-existed"]
    assert io.delete_many(everything) == []
    bucket = split_s3_path(uri)[1]
    assert sorted(batches) == sorted([(bucket, 1000), (bucket, 101), (other, 3)])
    assert io.list_recursive(d) == [] and io.list_recursive(f"s3://{other}") == []
    assert io.delete_many([]) == []


def test_delete_many_reports_failures(wh: tuple[S3FileIO, str], s3_bucket: str) -> None:
    io, uri = wh
    good = uri + "/g/1"
    io.write_bytes(good, b"x")
    bad = ["s3://lf-bucket-that-does-not-exist/k", "s3://" + s3_bucket, "gs://x/y"]
    assert io.delete_many([bad[0], good, bad[1], bad[2]]) == bad
    assert not io.exists(good)


def test_delete_and_delete_dir(wh: tuple[S3FileIO, str]) -> None:
    io, uri = wh
    p = uri + "/x/f"
    io.write_bytes(p, b"x")
    assert io.delete(p) is True
    assert io.delete(p) is False
    for i in range(5):
        io.write_bytes(f"{uri}/tree/{i}/leaf", b"x")
    io.write_bytes(uri + "/tree-sibling", b"keep")
    io.mkdirs(uri + "/tree")  # no-op
    io.delete_dir(uri + "/tree/")
    assert not io.exists(uri + "/tree")
    assert io.read_bytes(uri + "/tree-sibling") == b"keep"
    io.delete_dir(uri + "/tree")  # missing: fine
    with pytest.raises(UnsupportedError):
        io.delete_dir("s3://" + split_s3_path(uri)[1])


def test_write_if_absent(wh: tuple[S3FileIO, str]) -> None:
    io, uri = wh
    p = uri + "/snapshot/snapshot-1"
    assert io.write_if_absent(p, b"first") is True
    assert io.write_if_absent(p, b"second") is False
    assert io.read_bytes(p) == b"first"


def test_write_if_absent_race_has_one_winner(wh: tuple[S3FileIO, str]) -> None:
    io, uri = wh
    for round_ in range(3):
        p = f"{uri}/snapshot/snapshot-{round_}"
        n = 16
        barrier = threading.Barrier(n)

        def attempt(i: int, p: str = p, barrier: threading.Barrier = barrier) -> bool:
            barrier.wait()
            return io.write_if_absent(p, f"writer-{i}".encode())

        with ThreadPoolExecutor(n) as pool:
            results = list(pool.map(attempt, range(n)))
        assert results.count(True) == 1, results
        assert io.read_bytes(p) == f"writer-{results.index(True)}".encode()


def test_write_if_absent_recognises_its_own_object(wh: tuple[S3FileIO, str]) -> None:
    """A 412 on botocore's retry of a PUT that had landed must still count as our win: the
    object carries the writer's token, which _created_by checks."""
    io, uri = wh
    _, bucket, key = split_s3_path(uri + "/snapshot/snapshot-9")
    io.client.put_object(Bucket=bucket, Key=key, Body=b"x", IfNoneMatch="*",
                         Metadata={"lakeformat-write-token": "tok-a"})
    assert io._created_by(bucket, key, "tok-a") is True
    assert io._created_by(bucket, key, "tok-b") is False
    assert io._created_by(bucket, key + "-missing", "tok-a") is False


def test_open_input_reads_parquet(wh: tuple[S3FileIO, str]) -> None:
    io, uri = wh
    table = pa.table({"id": list(range(100)), "s": [str(i) for i in range(100)]})
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    p = uri + "/data/part-0.parquet"
    io.write_bytes(p, sink.getvalue().to_pybytes())
    assert pq.read_table(io.open_input(p)).equals(table)


def test_pickle_roundtrip_then_use(wh: tuple[S3FileIO, str]) -> None:
    io, uri = wh
    io.write_bytes(uri + "/before", b"1")  # client now exists and must not be pickled
    clone = pickle.loads(pickle.dumps(io))
    assert isinstance(clone, S3FileIO)
    assert clone.read_bytes(uri + "/before") == b"1"
    clone.write_bytes(uri + "/after", b"2")
    assert io.read_bytes(uri + "/after") == b"2"
    assert clone.client is not io.client


def test_credentials_fall_back_to_aws_environment(
    s3_warehouse: Warehouse, monkeypatch: pytest.MonkeyPatch
) -> None:
    uri, options = s3_warehouse
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", options["s3.access-key"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", options["s3.secret-key"])
    monkeypatch.setenv("AWS_DEFAULT_REGION", options["s3.region"])
    io = get_file_io(uri, {"s3.endpoint": options["s3.endpoint"]})
    io.write_bytes(uri + "/env", b"env")
    with_token = get_file_io(uri, {**options, "s3.session-token": "tok"})
    assert with_token.read_bytes(uri + "/env") == b"env"
