"""The requests a commit makes on S3, counted by verb at the fault proxy (no fault injected) in
front of the moto server, so a change that adds a read to the commit path fails here.

A steady-state small commit (1 row, 1 bucket, into a table this catalog wrote before) is its
6 PUTs (data file, manifest, base and delta manifest lists, snapshot, LATEST) and 4 reads: the
schema listing and LATEST at once, the snapshot LATEST names, and that snapshot again beside
the manifest PUTs (a rollback re-uses snapshot ids, so landing the next id alone does not prove
the base unchanged). Manifest lists and manifests this catalog wrote or read are not read again.
Counts, never times.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pyarrow as pa
import pytest

import lakeformat as lf
from tests.support.fault_proxy import FaultProxy
from tests.support.s3server import s3_options

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("n", pa.int64())])
VERBS = ("GET", "PUT", "HEAD", "LIST", "DELETE", "POST")


@pytest.fixture()
def proxied(s3_server: str, s3_bucket: str) -> Iterator[tuple[FaultProxy, str, dict[str, str]]]:
    with FaultProxy(s3_server) as proxy:
        yield proxy, f"s3://{s3_bucket}/wh", s3_options(proxy.endpoint)


def one(i: int) -> pa.Table:
    return pa.table({"id": pa.array([i], pa.int64()), "n": pa.array([1], pa.int64())})


def counted(proxy: FaultProxy, action: Callable[[], object]) -> dict[str, int]:
    """The requests `action` made, by verb (verbs it did not use left out)."""
    before = dict(proxy.methods)
    action()
    after = proxy.methods
    return {v: after.get(v, 0) - before.get(v, 0) for v in VERBS
            if after.get(v, 0) - before.get(v, 0)}


def new_table(wh: str, options: dict[str, str], primary_keys: bool = True) -> lf.Catalog:
    cat = lf.Catalog(wh, options)
    cat.create_database("db")
    cat.create_table("db.t", SCHEMA, primary_keys=["id"] if primary_keys else None,
                     options={"bucket": "1"} if primary_keys else {})
    return cat


@pytest.mark.parametrize("primary_keys", [True, False], ids=["pk", "append"])
def test_steady_state_small_commit(proxied, primary_keys):
    proxy, wh, options = proxied
    cat = new_table(wh, options, primary_keys)
    t = cat.get_table("db.t")
    t.write(one(0))
    t.write(one(1))
    for i in range(2, 5):  # every steady-state commit alike
        assert counted(proxy, lambda i=i: t.write(one(i))) == {"PUT": 6, "LIST": 1, "GET": 3}
    # opening the table again: one listing (the schema file is held under the version the
    # listing shows); then the same commit
    assert counted(proxy, lambda: cat.get_table("db.t")) == {"LIST": 1}
    t = cat.get_table("db.t")
    assert counted(proxy, lambda: t.write(one(9))) == {"PUT": 6, "LIST": 1, "GET": 3}
    assert len(t.read()) == 6


def test_commit_after_another_writer_landed(proxied):
    """Plan + commit after a second catalog committed: the new snapshot's two manifest lists
    and its one new manifest are read (at once); nothing this catalog already holds."""
    proxy, wh, options = proxied
    cat = new_table(wh, options)
    t = cat.get_table("db.t")
    t.write(one(0))
    t.write(one(1))
    other = lf.Catalog(wh, options).get_table("db.t")
    other.write(one(2))
    assert counted(proxy, lambda: t.write(one(3))) == {"PUT": 6, "LIST": 1, "GET": 6}
    other.write(one(4))
    other.write(one(5))  # two commits since: still only the latest snapshot's files
    assert counted(proxy, lambda: t.write(one(6))) == {"PUT": 6, "LIST": 1, "GET": 7}
    assert sorted(r["id"] for r in t.read().to_pylist()) == list(range(7))


def test_commit_when_another_writer_lands_between_plan_and_commit(proxied):
    """The first attempt builds on the planned base and loses snapshot N+1: its manifests and
    lists are deleted (one DeleteObjects), LATEST and the snapshots after the base are read,
    and the attempt again lands on top."""
    proxy, wh, options = proxied
    cat = new_table(wh, options, primary_keys=False)
    t = cat.get_table("db.t")
    t.write(one(0))
    other = lf.Catalog(wh, options).get_table("db.t")
    other.write(one(1))
    from lakeformat.operation.write import WriteJob

    t.refresh()
    job = WriteJob(t.file_io, t.path, t.table_schema, one(2), None, False, None, None,
                   table_name=t.name)
    # LATEST, the snapshot it names, then its two lists and the one manifest it added
    assert counted(proxy, job.plan) == {"GET": 5}
    assert counted(proxy, job.execute) == {"PUT": 1}
    other.write(one(3))
    counts = counted(proxy, job.commit)
    # lost attempt: 3 metadata PUTs beside the base re-read, the snapshot PUT (412, then a
    # HEAD: was the 412 our own retried write?), one DeleteObjects of its files; the retry: LATEST,
    # the new latest beside the probe of the next id, that snapshot's two lists, 5 PUTs
    assert counts == {"PUT": 9, "GET": 5, "HEAD": 2, "POST": 1}
    assert sorted(r["id"] for r in t.read().to_pylist()) == [0, 1, 2, 3]


def test_idempotent_commit_reads_each_snapshot_once(proxied):
    """A write with a commit identity first looks for its pair among the retained snapshots:
    one listing, and only the snapshots the catalog has not read as listed (here the one the
    previous write published) — not every retained snapshot on every job."""
    proxy, wh, options = proxied
    cat = new_table(wh, options)
    t = cat.get_table("db.t")
    for i in range(6):
        t.write(one(i), commit_user="dag.task", commit_identifier=i)
    counts = counted(proxy, lambda: t.write(one(6), commit_user="dag.task",
                                            commit_identifier=6))
    # the schema and snapshot listings, LATEST and the snapshot it names, the previous
    # write's snapshot as listed, the base re-read beside the manifest PUTs
    assert counts == {"PUT": 6, "LIST": 2, "GET": 4}
    again = counted(proxy, lambda: t.write(one(6), commit_user="dag.task",
                                           commit_identifier=6))
    assert again == {"LIST": 2, "GET": 3}  # found landed: nothing written
    assert len(t.read()) == 7
