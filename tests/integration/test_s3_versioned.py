"""Versioned objects on S3 (compare-and-swap on one object, what lease locks stand on), against
the moto server over HTTP, directly and through the fault proxy.

The property that matters: of several callers racing to create an object, or to replace it
naming the same ETag, exactly one wins, even when answers get lost on the way back.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from lakeformat.storage import S3FileIO, StorageError, get_file_io
from tests.support.fault_proxy import FaultProxy
from tests.support.s3server import s3_options

THREADS = 8


@pytest.fixture()
def proxy(s3_server: str) -> Iterator[FaultProxy]:
    with FaultProxy(s3_server, seed=12) as p:
        yield p


def _io(endpoint: str, bucket: str) -> tuple[S3FileIO, str]:
    io = get_file_io(f"s3://{bucket}/locks", s3_options(endpoint))
    assert isinstance(io, S3FileIO)
    return io, f"s3://{bucket}/locks"


def _race(fn: Callable[[int], str | None]) -> list[str | None]:
    """``fn(i)`` in THREADS threads released together."""
    barrier = threading.Barrier(THREADS)

    def run(i: int) -> str | None:
        barrier.wait()
        return fn(i)

    with ThreadPoolExecutor(THREADS) as pool:
        return list(pool.map(run, range(THREADS)))


def test_create_read_replace_delete(s3_server: str, s3_bucket: str) -> None:
    io, root = _io(s3_server, s3_bucket)
    p = root + "/t.lease"
    first = io.create_versioned(p, b"holder-a")
    assert first
    assert io.create_versioned(p, b"holder-b") is None
    v = io.read_versioned(p)
    assert (v.data, v.etag) == (b"holder-a", first)

    assert io.replace_versioned(p, b"holder-c", '"0123456789abcdef0123456789abcdef"') is None
    second = io.replace_versioned(p, b"holder-a renewed", first)
    assert second and second != first
    assert io.replace_versioned(p, b"stale writer", first) is None  # the old tag is spent
    assert io.read_versioned(p) == type(v)(b"holder-a renewed", second)

    assert io.delete_versioned(p, first) is False  # stale tag: left alone
    assert io.read_bytes(p) == b"holder-a renewed"
    assert io.delete_versioned(p, second) is True
    with pytest.raises(FileNotFoundError, match="t.lease"):
        io.read_versioned(p)
    # gone: replace and delete say so instead of failing, create works again
    assert io.replace_versioned(p, b"x", second) is None
    assert io.delete_versioned(p, second) is False
    assert io.create_versioned(p, b"holder-d")


def test_one_winner_under_faults(s3_server: str, s3_bucket: str, proxy: FaultProxy) -> None:
    """Create, then replace naming the winner's ETag: one winner each round, its ETag the one
    read back, while the proxy fails a fifth of the requests (lost answers included)."""
    io, root = _io(proxy.endpoint, s3_bucket)
    io.conditional_writes(s3_bucket, "locks")  # probe before the faults start
    proxy.rate = 0.2
    for round_ in range(4):
        p = f"{root}/lease-{round_}"
        created = _race(lambda i, p=p: io.create_versioned(p, f"creator-{i}".encode()))
        winners = [i for i, tag in enumerate(created) if tag is not None]
        assert len(winners) == 1, created
        tag = created[winners[0]]
        assert io.read_versioned(p).data == f"creator-{winners[0]}".encode()

        replaced = _race(lambda i, p=p, tag=tag, r=round_: io.replace_versioned(
            p, f"taker-{i}-{r}".encode(), tag))
        winners = [i for i, t in enumerate(replaced) if t is not None]
        assert len(winners) == 1, replaced
        now = io.read_versioned(p)
        assert (now.data, now.etag) == (f"taker-{winners[0]}-{round_}".encode(),
                                        replaced[winners[0]])
    print(f"\n{proxy.summary()}; retries {io.retry_counts()}")
    assert proxy.failed_requests > 0


def test_own_write_recognised_when_its_answer_is_lost(
        s3_server: str, s3_bucket: str, proxy: FaultProxy) -> None:
    """The store does the PUT, the answer never comes, the retry meets the object: 412. The
    caller must still learn that it won (and the tag of its write), or a lock would be held
    by nobody and a commit reported failed although it landed."""
    io, root = _io(proxy.endpoint, s3_bucket)
    io.conditional_writes(s3_bucket, "locks")
    p = root + "/lost-answer.lease"

    proxy.inject("reset_after", method="PUT", path_contains="lost-answer")
    tag = io.create_versioned(p, b"mine")
    assert tag is not None
    assert io.read_versioned(p).etag == tag

    proxy.inject("reset_after", method="PUT", path_contains="lost-answer")
    renewed = io.replace_versioned(p, b"mine, renewed", tag)
    assert renewed is not None and renewed != tag
    assert io.read_versioned(p) == type(io.read_versioned(p))(b"mine, renewed", renewed)

    snap = root + "/snapshot/snapshot-1"
    proxy.inject("reset_after", method="PUT", path_contains="snapshot-1")
    assert io.write_if_absent(snap, b"commit") is True
    assert io.write_if_absent(snap, b"rival") is False
    assert io.read_bytes(snap) == b"commit"

    assert proxy.faults == {"reset_after": 3}
    assert io.retry_counts().get("request") == 3


def test_conditional_delete_under_a_lost_answer(
        s3_server: str, s3_bucket: str, proxy: FaultProxy) -> None:
    """A conditional delete whose answer is lost: the key is gone and stays gone, and the
    retry reports False (S3 cannot say who deleted it) instead of raising."""
    io, root = _io(proxy.endpoint, s3_bucket)
    p = root + "/release.lease"
    tag = io.create_versioned(p, b"holder")
    assert tag
    proxy.inject("reset_after", method="DELETE", path_contains="release.lease")
    assert io.delete_versioned(p, tag) is False
    assert not io.exists(p)
    assert proxy.faults == {"reset_after": 1}


def test_conflicts_are_retried_then_reported_not_guessed(
        s3_server: str, s3_bucket: str, proxy: FaultProxy) -> None:
    """409 ConditionalRequestConflict: another conditional write to the key is in flight.
    Retried a few times; if it persists the outcome is unknown, which is said, never guessed
    as "lost" (a committer would skip an id nobody wrote)."""
    io, root = _io(proxy.endpoint, s3_bucket)
    io.conditional_writes(s3_bucket, "locks")
    p = root + "/busy.lease"
    proxy.inject("conflict", method="PUT", path_contains="busy.lease", count=2)
    assert io.create_versioned(p, b"h")
    assert io.retry_counts() == {"conflict": 2}
    q = root + "/snapshot/snapshot-1"
    proxy.inject("conflict", method="PUT", path_contains="snapshot-1", count=5)
    with pytest.raises(StorageError, match="outcome unknown"):
        io.write_if_absent(q, b"commit")
    assert not io.exists(q)
    assert io.retry_counts() == {"conflict": 6}


def test_a_landed_publish_behind_a_409_is_still_ours(s3_server: str, s3_bucket: str,
                                                     proxy: FaultProxy) -> None:
    """The snapshot PUT lands but its answer is lost; the retry meets 409 (the first request
    still in flight); the next attempt meets 412. With one token per logical write that 412 is
    recognised as our own snapshot, so the commit neither reports a lost race nor deletes the
    manifests its published snapshot points to."""
    import pyarrow as pa

    import lakeformat as lf

    cat = lf.Catalog(f"s3://{s3_bucket}/wh", options=s3_options(proxy.endpoint))
    cat.create_database("db")
    t = cat.create_table("db.t", pa.schema([("id", pa.int64()), ("v", pa.string())]),
                         primary_keys=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1], "v": ["a"]}))
    proxy.inject("reset_after", method="PUT", path_contains="snapshot/snapshot-2")
    proxy.inject("conflict", method="PUT", path_contains="snapshot/snapshot-2")
    result = t.write(pa.table({"id": [2], "v": ["b"]}))
    assert result.snapshot_id == 2
    clean = lf.Catalog(f"s3://{s3_bucket}/wh", options=s3_options(s3_server)).get_table("db.t")
    assert [s.id for s in clean.snapshots()] == [1, 2]
    assert clean.read().sort_by("id").to_pylist() == [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}]
