"""Table maintenance on S3: the moto server over HTTP on 127.0.0.1, counted request by request.

* A reader that has planned a retained snapshot (read its snapshot and manifests) and is about
  to open its data files finishes with every row while expiry runs in between.
* Expiring 60 snapshots of 16 files each (bench/expire.py: 500 and 20,000 files), about 1,200
  keys, sends batched DeleteObjects (about one per 1,000 keys, no single deletes), reads each
  manifest and manifest list at most once, and writes only `EARLIEST`; what it reported
  deleted is gone from the bucket and the latest snapshot still reads.
* Tags on S3 keep their rows through expiry; deleting the tag frees exactly the data files
  only it still held (computed from the file lists users see), and what its dry run listed.

Requests are counted on the client: a botocore `before-send` handler on the boto3 client of the
table's S3FileIO sees every HTTP request it sends to the server (retries included).
"""

from __future__ import annotations

import datetime as dt
import math
import os
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import unquote, urlsplit

import numpy as np
import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.operation.maintain import TableReferences
from tests.support.s3server import boto3_client, s3_options

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])
KV = pa.schema([("id", pa.int64()), ("v", pa.int64())])


class RequestLog:
    """Every request a boto3 client sends: by operation, and GETs by key."""

    def __init__(self, client) -> None:
        self.ops: Counter[str] = Counter()
        self.gets: Counter[str] = Counter()
        self.lock_ops: Counter[str] = Counter()
        self._lock = threading.Lock()
        self.on = False
        client.meta.events.register("before-send.s3", self._sent)

    def _sent(self, request, event_name: str, **_) -> None:
        if not self.on:
            return
        op = event_name.rsplit(".", 1)[-1]
        key = unquote(urlsplit(request.url).path).split("/", 2)[-1]  # path style: /<bucket>/<key>
        with self._lock:
            if "/.lakeformat/" in key or ".lakeformat-probe-" in key:
                self.lock_ops[op] += 1  # the maintenance lease and the store probe
                return
            self.ops[op] += 1
            if op == "GetObject":
                self.gets[key] += 1


def bucket_keys(client, bucket: str, prefix: str = "") -> dict[str, int]:
    out = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        out.update({o["Key"]: o["Size"] for o in page.get("Contents", [])})
    return out


def key_of(path: str) -> str:
    return path.split("://", 1)[1].split("/", 1)[1]


def rows_of(t: pa.Table) -> list[tuple]:
    return sorted(tuple(r.values()) for r in t.to_pylist())


def batch(day: str, ids, step: int) -> pa.Table:
    ids = list(ids)
    return pa.table({"dt": [day] * len(ids), "id": ids, "v": [f"s{step}-{i}" for i in ids]},
                    schema=SCHEMA)


@pytest.fixture()
def s3_catalog(s3_warehouse) -> lf.Catalog:
    uri, options = s3_warehouse
    cat = lf.Catalog(uri, options=options)
    cat.create_database("db")
    return cat


def small_history(cat: lf.Catalog, name: str = "db.t") -> tuple[lf.Table, dict[int, list]]:
    """Eight commits: upserts, a delete, partition overwrites (they delete data files); rows
    of every snapshot as read right after its commit."""
    t = cat.create_table(name, SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                         options={"bucket": "2"})
    expected = {}
    steps = [
        lambda: t.write(batch("d1", range(0, 6), 1)),
        lambda: t.write(batch("d2", range(0, 6), 2)),
        lambda: t.write(batch("d1", range(3, 9), 3)),
        lambda: t.write(batch("d1", range(0, 4), 4), overwrite=True),
        lambda: t.delete(pa.table({"dt": ["d2"], "id": [1]})),
        lambda: t.write(batch("d2", range(10, 14), 6), overwrite=True),
        lambda: t.write(batch("d1", range(2, 5), 7)),
        lambda: t.write(batch("d2", range(12, 16), 8)),
    ]
    for step in steps:
        sid = step().snapshot_id
        expected[sid] = rows_of(t.read(snapshot_id=sid))
    return t, expected


# -- a reader keeps reading while expiry runs ---------------------------------------------------
def test_reader_of_retained_snapshot_finishes_while_expiry_runs(s3_warehouse, s3_catalog):
    t, expected = small_history(s3_catalog)
    target = 6  # retained: expiry below keeps snapshots 6..8
    uri, options = s3_warehouse
    reader_table = lf.Catalog(uri, options=options).get_table("db.t")  # its own FileIO
    io = reader_table.file_io
    planned, expired = threading.Event(), threading.Event()
    opened: list[str] = []
    real_open = io.open_input

    def gated_open(path: str):
        # the first data file: the snapshot and its manifests were read, no data yet
        if not planned.is_set():
            planned.set()
        assert expired.wait(60), "expiry never finished"
        opened.append(path)
        return real_open(path)

    io.open_input = gated_open
    with ThreadPoolExecutor(max_workers=1) as pool:
        reading = pool.submit(reader_table.read, snapshot_id=target)
        assert planned.wait(60), "the reader never reached its data files"
        try:
            res = t.expire_snapshots(retain_min=3, older_than=dt.timedelta(0), max_deletes=100)
        finally:
            expired.set()
        got = reading.result(timeout=120)
    assert res.snapshots_deleted == [1, 2, 3, 4, 5]
    assert res.data_files_deleted > 0  # the overwrites' replaced files really went
    deleted = set(res.deleted)
    assert not deleted & set(opened), "expiry deleted a file the reader was reading"
    assert rows_of(got) == expected[target]
    # and a reader starting now sees every retained snapshot whole
    for sid in (6, 7, 8):
        assert rows_of(t.read(snapshot_id=sid)) == expected[sid]


# -- request counts of a large expiry -----------------------------------------------------------
# The scale (500 snapshots, 20,000 data files) takes minutes to build on moto: it is
# bench/expire.py. Here 60 snapshots of 16 buckets: 960 data files and their snapshots,
# manifests and manifest lists, about 1,200 keys to delete, so more than one DeleteObjects
# batch (S3 takes at most 1,000 keys a request). Many files per commit rather than many commits:
# each key is cheaper to build, and a commit's own keys are what the metadata reads count.
N_SNAPSHOTS = 60
FILES_PER_COMMIT = 16
ROWS = 256  # ids per overwrite: enough that every one of the 16 buckets gets rows


def build_local_then_upload(tmp_path, s3_server, bucket: str) -> tuple[str, int]:
    """N_SNAPSHOTS overwrite commits of FILES_PER_COMMIT buckets written on local disk by
    lakeformat, then uploaded object by object (writing to moto directly is 5x slower)."""
    root = tmp_path / "wh"
    cat = lf.Catalog(str(root))
    cat.create_database("db")
    t = cat.create_table("db.big", KV, primary_keys=["id"],
                         options={"bucket": str(FILES_PER_COMMIT)})
    ids = np.arange(ROWS)
    for i in range(N_SNAPSHOTS):
        t.write(pa.table({"id": ids, "v": ids * 1000 + i}, schema=KV), overwrite=True)
    client = boto3_client(s3_server)
    files = [os.path.join(d, n) for d, _, ns in os.walk(root) for n in ns]

    def put(p: str) -> None:
        with open(p, "rb") as f:
            client.put_object(Bucket=bucket, Key="wh/" + os.path.relpath(p, root), Body=f.read())

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(put, files))
    data_files = sum(1 for p in files if "/bucket-" in p)
    return "wh/db.db/big/", data_files


def test_expiring_many_snapshots_batches_deletes_and_reads_each_manifest_once(
        tmp_path, s3_server, s3_bucket):
    prefix, data_files = build_local_then_upload(tmp_path, s3_server, s3_bucket)
    assert data_files == N_SNAPSHOTS * FILES_PER_COMMIT
    client = boto3_client(s3_server)
    t = lf.Catalog(f"s3://{s3_bucket}/wh", options=s3_options(s3_server)).get_table("db.big")
    assert [s.id for s in t.snapshots()] == list(range(1, N_SNAPSHOTS + 1))
    want = pa.table({"id": np.arange(ROWS), "v": np.arange(ROWS) * 1000 + N_SNAPSHOTS - 1})
    before = bucket_keys(client, s3_bucket, prefix)

    log = RequestLog(t.file_io.client)
    log.on = True
    res = t.expire_snapshots(retain_min=1, older_than=dt.timedelta(0),
                             max_deletes=N_SNAPSHOTS)
    log.on = False

    assert res.snapshots_deleted == list(range(1, N_SNAPSHOTS))
    assert res.skipped == []
    # every file of every overwritten commit went; the latest commit's files stay
    assert res.data_files_deleted == data_files - FILES_PER_COMMIT
    n = len(res.deleted)
    assert n > 1000  # more than one batch
    assert log.ops["DeleteObjects"] <= math.ceil(n / 1000) + 2, log.ops  # one partial batch
    assert log.ops["DeleteObjects"] >= math.ceil(n / 1000)               # per kind of file
    assert log.ops["DeleteObject"] == 0, log.ops
    assert log.ops["PutObject"] == 1, log.ops  # the EARLIEST hint, nothing else
    # the maintenance lease: created and released (+ the store probe's 3 PUTs and 2 DELETEs)
    assert log.lock_ops["PutObject"] in (1, 4) and log.lock_ops["DeleteObject"] in (1, 3)
    assert sum(log.lock_ops.values()) <= 7, log.lock_ops
    manifest_gets = {k: c for k, c in log.gets.items() if "/manifest/" in k}
    assert manifest_gets, "expiry read no manifest at all?"
    assert max(manifest_gets.values()) == 1, [k for k, c in manifest_gets.items() if c > 1][:5]
    assert not any("/bucket-" in k for k in log.gets), "expiry read a data file"

    after = bucket_keys(client, s3_bucket, prefix)
    assert set(before) - set(after) == {key_of(p) for p in res.deleted}
    assert set(after) - set(before) <= {prefix + "snapshot/EARLIEST"}
    hint = client.get_object(Bucket=s3_bucket, Key=prefix + "snapshot/EARLIEST")["Body"].read()
    assert hint.decode().strip() == str(N_SNAPSHOTS)
    t.refresh()
    assert t.read().sort_by("id").to_pylist() == want.to_pylist()
    refs = TableReferences(t.file_io, t.path, t.table_schema)
    latest = t.latest_snapshot()
    for name in refs.metadata_names(latest):
        assert prefix + "manifest/" + name in after
    assert {key_of(f["path"]) for f in t.files()} <= set(after)
    print(f"\nexpired {len(res.snapshots_deleted)} snapshots, {n} files: {dict(log.ops)}")


# -- tags on S3 ---------------------------------------------------------------------------------
def test_tags_survive_expiry_and_delete_tag_frees_only_its_files(s3_catalog, s3_bucket,
                                                                  s3_server):
    t, expected = small_history(s3_catalog)
    t.create_tag("before-overwrite", 3)
    t.create_tag("mid", 5)
    tagged_files = {f["path"] for f in t.files(tag="before-overwrite")}
    res = t.expire_snapshots(retain_min=1, older_than=dt.timedelta(0), max_deletes=100)
    assert res.snapshots_deleted == list(range(1, 8))
    assert rows_of(t.read(tag="before-overwrite")) == expected[3]
    assert rows_of(t.read(tag="mid")) == expected[5]
    assert rows_of(t.read()) == expected[8]
    assert {x.name for x in t.list_tags()} == {"before-overwrite", "mid"}

    client = boto3_client(s3_server)
    # files the tag holds that neither the latest snapshot nor the other tag uses
    still_used = {f["path"] for f in t.files()} | {f["path"] for f in t.files(tag="mid")}
    only_tag = tagged_files - still_used
    assert only_tag, "the history should leave files only the tag holds"
    dry = t.delete_tag("before-overwrite", dry_run=True)
    keys_before = bucket_keys(client, s3_bucket)
    real = t.delete_tag("before-overwrite")
    keys_after = bucket_keys(client, s3_bucket)
    assert real.deleted == dry.deleted
    assert set(keys_before) - set(keys_after) == {key_of(p) for p in real.deleted}
    data_deleted = {p for p in real.deleted if "/bucket-" in p}
    assert data_deleted == only_tag
    assert real.data_files_deleted == len(only_tag)
    # nothing the other tag or the latest snapshot reads went
    assert rows_of(t.read(tag="mid")) == expected[5]
    assert rows_of(t.read()) == expected[8]
    assert [x.name for x in t.list_tags()] == ["mid"]
