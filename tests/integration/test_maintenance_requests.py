"""What maintenance costs in S3 requests, on the moto S3 server: snapshot expiry, orphan
removal, `health()` and a snapshot sensor's poll, counted request by request (a botocore hook
on a fresh catalog's client, so nothing is cached from the writes), and proof that their
independent reads are in flight together (a FileIO that holds each read until several are
waiting: reads issued one after another never get there and the test fails).

Counts, not times: a regression that adds a request, reads a file twice or serializes a fan-out
fails here whatever the machine's speed.
"""

from __future__ import annotations

import datetime as dt
import math
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import unquote, urlsplit

import pyarrow as pa

import lakeformat as lf
from lakeformat.table import Table

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int64())])
RETAIN = {"snapshot.num-retained.min": "1000", "snapshot.num-retained.max": "1000",
          "num-sorted-run.compaction-trigger": "1000", "num-sorted-run.stop-trigger": "2000"}


class Requests:
    """The S3 requests a client sends, by operation, with the keys of its GETs."""

    def __init__(self, client) -> None:
        self.ops: Counter[str] = Counter()
        self.gets: Counter[str] = Counter()
        self.puts: Counter[str] = Counter()
        self._lock = threading.Lock()
        client.meta.events.register("before-send.s3", self._sent)

    def _sent(self, request, event_name: str, **_) -> None:
        op = event_name.rsplit(".", 1)[-1]
        with self._lock:
            self.ops[op] += 1
            if op in ("GetObject", "PutObject"):
                key = unquote(urlsplit(request.url).path)
                (self.gets if op == "GetObject" else self.puts)[key] += 1

    def clear(self) -> None:
        with self._lock:
            self.ops.clear()
            self.gets.clear()
            self.puts.clear()


class Gate:
    """Holds the calls it is given until `k` are in flight at once, or until one has waited
    `timeout` seconds: then it opens for good and `overlapped` stays False. `peak`: the most
    calls ever in flight together."""

    def __init__(self, k: int, timeout: float = 5.0):
        self.k, self.timeout = k, timeout
        self.peak = 0
        self.overlapped = False
        self._open = False
        self._in_flight = 0
        self._cond = threading.Condition()

    def __call__(self, call, *args):
        with self._cond:
            self._in_flight += 1
            self.peak = max(self.peak, self._in_flight)
            if self._in_flight >= self.k:
                self.overlapped = self._open = True
                self._cond.notify_all()
            elif not self._open and not self._cond.wait_for(lambda: self._open, self.timeout):
                self._open = True  # issued one by one: stop holding calls, the test fails
                self._cond.notify_all()
        try:
            return call(*args)
        finally:
            with self._cond:
                self._in_flight -= 1

    def check(self, what: str) -> None:
        assert self.overlapped, f"{what} issued one by one (at most {self.peak} in flight)"


class GatedIO:
    """A FileIO whose directory listings pass through `lists` and whose reads of paths
    containing `read_part` through `reads` (gates; None: not held)."""

    def __init__(self, inner, lists: Gate | None = None, reads: Gate | None = None,
                 read_part: str = "/manifest/"):
        self.inner, self.lists, self.reads, self.read_part = inner, lists, reads, read_part

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def read_bytes(self, path):
        if self.reads is None or self.read_part not in path:
            return self.inner.read_bytes(path)
        return self.reads(self.inner.read_bytes, path)

    def list_status(self, path):
        if self.lists is None:
            return self.inner.list_status(path)
        return self.lists(self.inner.list_status, path)


def fresh(warehouse, name: str) -> tuple[lf.Table, Requests]:
    """The table through a new catalog (an empty metadata cache), its requests counted from
    here on."""
    uri, options = warehouse
    t = lf.Catalog(uri, options=options).get_table(name)
    return t, Requests(t.file_io.client)


def make_table(warehouse, commits: int, name: str = "db.t") -> lf.Table:
    uri, options = warehouse
    cat = lf.Catalog(uri, options=options)
    cat.create_database("db")
    t = cat.create_table(name, SCHEMA, primary_keys=["id"], options={"bucket": "1", **RETAIN})
    for i in range(commits):
        t.write(pa.table({"id": [i % 3], "v": [i]}, schema=SCHEMA))
    return t


def repeated(gets: Counter[str]) -> list[str]:
    return [k for k, n in gets.items() if n > 1]


def test_expiry_reads_each_file_once_and_batches_its_deletes(s3_warehouse):
    n = 30
    written = make_table(s3_warehouse, n)
    written.compact(full=True)  # snapshot n + 1 deletes the n files written before
    snaps = written.snapshots()
    lists = {x for s in snaps for x in (s.base_manifest_list, s.delta_manifest_list)}
    t, req = fresh(s3_warehouse, "db.t")
    res = t.expire_snapshots(retain_min=1, retain_max=1, older_than=dt.timedelta(0),
                             max_deletes=n)
    assert res.snapshots_deleted == list(range(1, n + 1))
    assert not repeated(req.gets), "a file read twice in one expiry"
    snapshot_gets = [k for k in req.gets if "/snapshot/snapshot-" in k]
    list_gets = [k for k in req.gets if k.rsplit("/", 1)[-1] in lists]
    assert len(snapshot_gets) == n + 1 and len(list_gets) == len(lists) == 2 * (n + 1)
    # no probe of any snapshot: the listing said which exist; no hint read either
    assert req.ops["HeadObject"] == 0
    assert not [k for k in req.gets if k.endswith(("/LATEST", "/EARLIEST"))]
    # the schema (the verb's refresh), the snapshot, changelog, consumer and tag directories
    # (at once), and the branches before deleting
    assert req.ops["ListObjectsV2"] == 6
    # one batch per kind: data files, manifests and lists, snapshot files; then EARLIEST
    kinds = [res.data_files_deleted, res.manifest_files_deleted, len(res.snapshots_deleted)]
    assert res.data_files_deleted == n
    assert req.ops["DeleteObjects"] == sum(math.ceil(k / 1000) for k in kinds) == 3
    # the maintenance lease (taken, given back) and the EARLIEST hint
    assert sorted(k.rsplit("/", 1)[-1] for k in req.puts) == ["EARLIEST", "maintenance.lease"]
    assert req.ops["PutObject"] == 2 and req.ops["DeleteObject"] == 1
    others = set(req.ops) - {"GetObject", "HeadObject", "ListObjectsV2", "DeleteObjects",
                             "PutObject", "DeleteObject"}
    assert not others, others
    assert t.read().num_rows == 3


def test_expiry_reads_snapshots_and_manifests_concurrently(s3_warehouse):
    make_table(s3_warehouse, 12)
    t, _ = fresh(s3_warehouse, "db.t")
    # the snapshot, changelog, consumer and tag listings together; the 24 manifest lists of
    # the 12 snapshots at least 12 at a time
    lists, manifests = Gate(4), Gate(12)
    io = GatedIO(t.file_io, lists, manifests, "/manifest/manifest-list-")
    res = Table(t.name, t.path, io).expire_snapshots(retain_min=1, retain_max=1,
                                                      older_than=dt.timedelta(0),
                                                      max_deletes=11)
    assert res.snapshots_deleted == list(range(1, 12))
    lists.check("the listings")
    manifests.check("the manifest list reads")


def test_orphan_removal_lists_once_and_deletes_in_batches_of_1000(s3_warehouse):
    make_table(s3_warehouse, 3)
    t, req = fresh(s3_warehouse, "db.t")
    orphans = [t.file_io.join(t.path, "bucket-0", f"data-orphan-{i}.parquet")
               for i in range(1001)]
    uri, options = s3_warehouse
    writer = lf.Catalog(uri, options=options).file_io
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda p: writer.write_bytes(p, b"x"), orphans))
    req.clear()
    res = t.remove_orphan_files(older_than=dt.timedelta(0), enforce_retention_duration=False)
    assert sorted(res.deleted) == sorted(orphans)
    assert req.ops["DeleteObjects"] == 2  # 1,001 data files: ceil(1001 / 1000)
    assert not repeated(req.gets)
    # snapshots and tags are each read once (3 snapshots, their lists, their manifests)
    assert req.ops["HeadObject"] == 0
    assert sum(1 for k in req.gets if "/snapshot/snapshot-" in k) == 3


def test_health_reads_each_file_once_and_overlaps_its_first_reads(s3_warehouse):
    make_table(s3_warehouse, 8)
    t, req = fresh(s3_warehouse, "db.t")
    req.clear()
    h = t.health()
    assert h.snapshots["count"] == 8
    assert not repeated(req.gets), "a file read twice in one health()"
    assert req.ops["HeadObject"] <= 2  # the probes of LATEST's next id and of EARLIEST's id
    t2, _ = fresh(s3_warehouse, "db.t")
    lists = Gate(4)  # the tag, consumer, schema and changelog directories, together
    Table(t2.name, t2.path, GatedIO(t2.file_io, lists)).health()
    lists.check("the listings")


def test_a_sensor_poll_with_nothing_new_is_one_get_of_latest(s3_warehouse):
    from lakeformat.operation.read import SnapshotWatch

    written = make_table(s3_warehouse, 2)
    t, req = fresh(s3_warehouse, "db.t")
    watch = SnapshotWatch()
    assert watch.check(t) is None
    req.clear()
    for _ in range(5):
        assert watch.check(t) is None
    assert req.ops == Counter({"GetObject": 5})
    assert [k.endswith("/wh/db.db/t/snapshot/LATEST") for k in req.gets] == [True]
    written.write(pa.table({"id": [9], "v": [9]}, schema=SCHEMA))
    req.clear()
    found = watch.check(t)
    assert found is not None and found["snapshot_id"] == 3
    assert req.ops == Counter({"GetObject": 2})  # LATEST, then the new snapshot


def test_a_quick_poll_never_trusts_a_hint_ahead_of_the_snapshots(tmp_path):
    """A commit that landed before a rollback may write its LATEST hint after it: the hint then
    names an id the rollback removed. The quick poll must not move its watermark over that id,
    or the commit that takes it again is never reported."""
    from lakeformat.operation.read import SnapshotWatch

    catalog = lf.Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    for i in range(3):
        t.write(pa.table({"id": [i], "v": [i]}, schema=SCHEMA))
    watch = SnapshotWatch()
    assert watch.check(t) is None  # a full check: snapshot 3 seen
    for i in (3, 4):
        t.write(pa.table({"id": [i], "v": [i]}, schema=SCHEMA))
    t.rollback_to(3)
    t.snapshot_manager.commit_latest_hint(5)  # the late hint of the commit that landed 5
    assert watch.check(t) is None  # snapshots 4 and 5 are gone: nothing new
    t.write(pa.table({"id": [7], "v": [7]}, schema=SCHEMA))  # takes id 4 again
    found = watch.check(t)
    assert found is not None and found["snapshot_id"] == 4 and found["delta_record_count"] == 1
