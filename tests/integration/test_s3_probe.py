"""The store probe: before the first conditional write to a bucket, check that the store
enforces ``If-None-Match: *`` and ``If-Match``, because a store that accepts and ignores them
would let two commits both "win" and lose one without a trace.

moto enforces both; the fault proxy's ``strip_conditional`` mode plays a store that does not.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.errors import UnsupportedError
from lakeformat.storage import S3FileIO, get_file_io
from tests.support.fault_proxy import FaultProxy
from tests.support.s3server import boto3_client, new_bucket, s3_options

PROBE_PREFIX = ".lakeformat-probe-"


@pytest.fixture()
def proxy(s3_server: str) -> Iterator[FaultProxy]:
    with FaultProxy(s3_server) as p:
        yield p


@pytest.fixture(params=[True, ["If-None-Match"], ["If-Match"]],
                ids=["ignores-both", "ignores-if-none-match", "ignores-if-match"])
def ignoring_store(request: pytest.FixtureRequest, s3_server: str) -> Iterator[FaultProxy]:
    """A store that takes conditional headers and ignores them (both, or one of the two)."""
    with FaultProxy(s3_server, strip_conditional=request.param) as p:
        yield p


def _io(endpoint: str, bucket: str) -> S3FileIO:
    io = get_file_io(f"s3://{bucket}/wh", s3_options(endpoint))
    assert isinstance(io, S3FileIO)
    return io


def _probe_requests(proxy: FaultProxy) -> list[tuple[str, str]]:
    return [(m, t) for m, t, _ in proxy.seen if PROBE_PREFIX in t]


def _keys(endpoint: str, bucket: str) -> list[str]:
    resp = boto3_client(endpoint).list_objects_v2(Bucket=bucket)
    return [o["Key"] for o in resp.get("Contents", [])]


def test_probe_passes_on_moto_once_per_bucket(s3_server: str, s3_bucket: str,
                                              proxy: FaultProxy) -> None:
    io = _io(proxy.endpoint, s3_bucket)
    snap = f"s3://{s3_bucket}/wh/db.db/t/snapshot/snapshot-1"
    assert io.write_if_absent(snap, b"one") is True
    probes = _probe_requests(proxy)
    # written, written again under If-None-Match, overwritten under a wrong If-Match, deleted
    # under a wrong If-Match, deleted; beside the file being written, under a name no Paimon
    # listing takes for a table file
    assert [m for m, _ in probes] == ["PUT", "PUT", "PUT", "DELETE", "DELETE"]
    assert all(f"/{s3_bucket}/wh/db.db/t/snapshot/{PROBE_PREFIX}" in t for _, t in probes)
    assert len({t for _, t in probes}) == 1
    assert _keys(s3_server, s3_bucket) == ["wh/db.db/t/snapshot/snapshot-1"]
    assert io.conditional_writes(s3_bucket) is True

    # the answer is kept per store and bucket: other paths and other FileIOs do not ask again
    other = _io(proxy.endpoint, s3_bucket)
    assert other.create_versioned(f"s3://{s3_bucket}/locks/x.lease", b"h")
    assert other.write_if_absent(snap, b"two") is False
    assert len(_probe_requests(proxy)) == 5
    # another bucket is asked again
    second = new_bucket(s3_server)
    assert io.write_if_absent(f"s3://{second}/k", b"x") is True
    assert len(_probe_requests(proxy)) == 10


def test_store_ignoring_conditions_is_refused_with_the_fix(
        s3_server: str, s3_bucket: str, ignoring_store: FaultProxy) -> None:
    io = _io(ignoring_store.endpoint, s3_bucket)
    snap = f"s3://{s3_bucket}/wh/db.db/t/snapshot/snapshot-1"
    with pytest.raises(UnsupportedError) as err:
        io.write_if_absent(snap, b"one")
    msg = str(err.value)
    assert "does not enforce conditional writes" in msg and s3_bucket in msg
    assert "lock.enabled=true" in msg and "lock.type=jdbc" in msg and "uri=" in msg
    assert io.conditional_writes(s3_bucket) is False
    assert ignoring_store.stripped > 0
    lease = f"s3://{s3_bucket}/locks/t.lease"
    for attempt in (
        lambda: io.create_versioned(lease, b"h"),
        lambda: io.replace_versioned(lease, b"h", '"abc"'),
        lambda: io.delete_versioned(lease, '"abc"'),
    ):
        with pytest.raises(UnsupportedError, match="lock.type=jdbc"):
            attempt()
    # nothing written but the probe, and the probe cleaned up after itself
    assert _keys(s3_server, s3_bucket) == []


def test_store_ignoring_if_match_on_delete_only_is_refused(s3_server: str,
                                                          s3_bucket: str) -> None:
    """Conditional PUTs enforced, `If-Match` on DELETE ignored: a paused lease holder's
    release would delete its successor's lease, so the store is refused as well."""
    with FaultProxy(s3_server, strip_conditional=["If-Match"], strip_methods=["DELETE"]) as p:
        io = _io(p.endpoint, s3_bucket)
        with pytest.raises(UnsupportedError, match="lock.type=jdbc"):
            io.create_versioned(f"s3://{s3_bucket}/locks/t.lease", b"h")
        assert io.conditional_writes(s3_bucket) is False
        assert p.stripped == 1  # only the probe's DELETE under a wrong If-Match
    assert _keys(s3_server, s3_bucket) == []


def test_publish_locked_falls_back_on_an_ignoring_store(
        s3_server: str, s3_bucket: str, ignoring_store: FaultProxy, proxy: FaultProxy) -> None:
    """Under the table's commit lock nobody else publishes, so "exists? then put" is safe."""
    io = _io(ignoring_store.endpoint, s3_bucket)
    snap = f"s3://{s3_bucket}/wh/db.db/t/snapshot/snapshot-1"
    assert io.publish_locked(snap, b"one") is True
    assert io.publish_locked(snap, b"two") is False
    assert io.read_bytes(snap) == b"one"
    # on a store that enforces conditions, publish_locked is the conditional write itself
    good = _io(proxy.endpoint, s3_bucket)
    assert good.publish_locked(snap, b"three") is False
    assert good.publish_locked(snap + "0", b"ten") is True
    # ... one conditional PUT, without the fallback's HEAD first
    assert [m for m, t, _ in proxy.seen if t.endswith("snapshot-10")] == ["PUT"]


def test_table_creation_through_an_ignoring_store_is_refused(
        s3_server: str, s3_bucket: str, ignoring_store: FaultProxy) -> None:
    """Through the public API: creating a table publishes its first schema file with a
    conditional write, so it fails with the fix in the message and leaves no table behind."""
    wh = f"s3://{s3_bucket}/wh"
    cat = lf.Catalog(wh, options=s3_options(ignoring_store.endpoint))
    cat.create_database("db")
    with pytest.raises(UnsupportedError, match="lock.type=jdbc"):
        cat.create_table("db.t", schema=pa.schema([("id", pa.int64())]), primary_keys=["id"],
                         options={"bucket": "1"})
    assert not lf.Catalog(wh, options=s3_options(s3_server)).table_exists("db.t")
