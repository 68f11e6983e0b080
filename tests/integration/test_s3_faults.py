"""S3 faults survived: throttling, server errors, connection resets (before the store acts,
after it acted, in the middle of an answer's body) and stalls, injected by the fault proxy in
front of the moto server.

Each fault that leaves a request unanswered or refused must cost exactly one retry, and the
rows a user reads back must be exactly the rows written.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.storage import S3FileIO, get_file_io
from tests.support.fault_proxy import FaultProxy
from tests.support.s3server import s3_options


@pytest.fixture()
def proxy(s3_server: str) -> Iterator[FaultProxy]:
    with FaultProxy(s3_server, seed=2024) as p:
        yield p


def _io(proxy: FaultProxy, bucket: str, **options: str) -> S3FileIO:
    io = get_file_io(f"s3://{bucket}/d", {**s3_options(proxy.endpoint), **options})
    assert isinstance(io, S3FileIO)
    return io


def test_table_write_and_read_at_a_fifth_of_requests_failing(
        s3_bucket: str, proxy: FaultProxy) -> None:
    cat = lf.Catalog(f"s3://{s3_bucket}/wh", options=s3_options(proxy.endpoint))
    cat.create_database("db")
    t = cat.create_table("db.orders", schema=pa.schema([("id", pa.int64()), ("v", pa.string())]),
                         primary_keys=["id"], options={"bucket": "2"})
    proxy.rate = 0.18
    expected: dict[int, str] = {}
    # overlapping keys: later batches update earlier rows; 8 batches, so that the requests
    # of these commits (about 10 each) meet 10 faults or more
    for batch in range(8):
        ids = list(range(batch * 60, batch * 60 + 100))
        values = [f"b{batch}-{i}" for i in ids]
        t.write(pa.table({"id": ids, "v": values}))
        expected.update(zip(ids, values, strict=True))
    got = cat.get_table("db.orders").read().sort_by("id")
    proxy.rate = 0.0

    assert got.column("id").to_pylist() == sorted(expected)
    assert got.column("v").to_pylist() == [expected[k] for k in sorted(expected)]
    assert [s.id for s in t.snapshots()] == list(range(1, 9))
    io = cat.file_io
    assert isinstance(io, S3FileIO)
    print(f"\n{proxy.summary()}\nretries made: {io.retries} {io.retry_counts()}")
    assert proxy.failed_requests >= 10
    assert io.retries == proxy.failed_requests


def test_get_body_cut_off_is_read_again(s3_bucket: str, proxy: FaultProxy) -> None:
    io = _io(proxy, s3_bucket)
    data = bytes(range(256)) * 4096  # 1 MiB
    p = f"s3://{s3_bucket}/d/part-0.parquet"
    io.write_bytes(p, data)
    proxy.inject("reset_body", method="GET", path_contains="part-0", count=2)
    assert io.read_bytes(p) == data
    proxy.inject("reset_body", method="GET", path_contains="part-0")
    assert io.read_range(p, 1000, 5000) == data[1000:6000]
    assert proxy.faults == {"reset_body": 3}
    assert io.retry_counts() == {"read": 3}


def test_get_body_stalled_past_the_read_timeout_is_read_again(
        s3_bucket: str, proxy: FaultProxy) -> None:
    """``s3.connection.timeout`` (Hadoop's socket timeout, in milliseconds) bounds a stall."""
    io = _io(proxy, s3_bucket, **{"s3.connection.timeout": "300"})
    p = f"s3://{s3_bucket}/d/slow"
    io.write_bytes(p, b"z" * 100_000)
    proxy.stall = 1.5
    proxy.inject("stall_body", method="GET", path_contains="/d/slow")
    assert io.read_bytes(p) == b"z" * 100_000
    assert io.retry_counts() == {"read": 1}


def test_listing_broken_off_mid_way_resumes(s3_bucket: str, proxy: FaultProxy) -> None:
    io = _io(proxy, s3_bucket, **{"s3.paging.maximum": "5"})
    names = [f"s3://{s3_bucket}/d/f-{i:02d}" for i in range(23)]
    for n in names:
        io.write_bytes(n, b"x")
    pages = 5
    proxy.inject("reset_body", method="GET", path_contains="list-type=2", skip=2)
    proxy.inject("reset", method="GET", path_contains="list-type=2", skip=3)
    assert [f.path for f in io.list_status(f"s3://{s3_bucket}/d")] == names
    listings = [t for m, t, _ in proxy.seen if "list-type=2" in t]
    assert len(listings) == pages + 2
    # the broken page is asked again with its own continuation token, not from the start
    assert sum("continuation-token" not in t for t in listings) == 1
    assert io.retry_counts() == {"request": 2}


def test_retries_are_bounded(s3_bucket: str, proxy: FaultProxy) -> None:
    """A store that keeps failing: ``s3.attempts.maximum`` attempts, then the error."""
    io = _io(proxy, s3_bucket, **{"s3.attempts.maximum": "3"})
    p = f"s3://{s3_bucket}/d/k"
    io.write_bytes(p, b"v")
    proxy.inject("internal", method="GET", path_contains="/d/k", count=3)
    with pytest.raises(Exception, match="InternalError"):
        io.read_bytes(p)
    assert io.retries == 2
    proxy.inject("reset", method="HEAD", path_contains="/d/k", count=2)
    assert io.exists(p)
    assert io.retries == 4


def test_retries_never_run_dry_under_a_steady_fault_rate(
        s3_bucket: str, proxy: FaultProxy) -> None:
    """botocore's "standard" retries stop once their quota is spent (500 units, 14 per retried
    error, refunded only by a 2xx answer): at 20 % faults on traffic that is mostly 404s
    (exists checks) it gives up within about 150 requests. Ours retry every request."""
    io = _io(proxy, s3_bucket)
    p = f"s3://{s3_bucket}/d/present"
    io.write_bytes(p, b"v")
    proxy.kinds = {"internal": 1.0, "reset": 1.0}
    proxy.rate = 0.2
    for i in range(300):
        if i % 5 == 0:
            assert io.read_bytes(p) == b"v"
        else:
            with pytest.raises(FileNotFoundError):
                io.status(f"s3://{s3_bucket}/d/absent-{i}")
    print(f"\n{proxy.summary()}; retries {io.retry_counts()}")
    assert io.retries == proxy.failed_requests > 30
