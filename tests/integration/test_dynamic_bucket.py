"""Dynamic-bucket primary-key tables (bucket = -1, Paimon's default) written by lakeformat:
buckets fill to `dynamic-bucket.target-row-num` keys and a key always goes back to its bucket,
assigners and `max-buckets` follow Java, an overwrite starts the partition's index afresh, a
concurrent index change is refused, and what is not written yet is refused by name.

Expiry deleting replaced index files (index files written, listed and deleted) runs on local
disk and on the moto S3 server; how buckets fill (`@local_disk`, and the tests on
`local_catalog`) is the assigner's logic above either store, on local disk only.
"""

from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.errors import CommitConflictError
from lakeformat.meta.index_manifest import IndexManifestFile
from lakeformat.operation.write import WriteJob

SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False),
                    pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


#: a test of this module that never reaches store specifics: local disk only (module docstring)
local_disk = pytest.mark.parametrize("catalog", ["local"], indirect=True)


def batch(ids, day="d1", tag="v") -> pa.Table:
    ids = list(ids)
    return pa.table({"dt": [day] * len(ids), "id": ids, "v": [f"{tag}{i}" for i in ids]},
                    schema=SCHEMA)


def dynamic(catalog, name="db.t", **options) -> lf.Table:
    return catalog.create_table(name, SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                                options={"bucket": "-1", **options})


def index(t) -> dict[tuple[bytes, int], np.ndarray]:
    idx = IndexManifestFile(t.file_io, t.path)
    snap = t.snapshot_manager.latest_snapshot()
    return {(e.partition, e.bucket): idx.read_hashes(e) for e in idx.read(snap.index_manifest)}


@local_disk
def test_buckets_fill_to_the_target_and_keys_stay(catalog):
    t = dynamic(catalog, **{"dynamic-bucket.target-row-num": "10"})
    t.write(batch(range(25)))
    sizes = sorted(len(h) for h in index(t).values())
    assert sizes == [5, 10, 10]  # buckets 0 and 1 full, bucket 2 open
    t.write(batch(range(20, 40), tag="w"))  # 20..24 known (bucket 2), 25.. fill 2 then open 3
    assert sorted(len(h) for h in index(t).values()) == [10, 10, 10, 10]
    got = t.read().sort_by("id").to_pylist()
    assert [r["id"] for r in got] == list(range(40))  # one row per key: no key in two buckets
    assert [r["v"] for r in got] == [f"v{i}" for i in range(20)] + [f"w{i}" for i in range(20, 40)]
    files = t.inspect.files().to_pylist()
    assert {f["total_buckets"] for f in files} == {-1} and {f["bucket"] for f in files} == {
        0, 1, 2, 3}
    t.delete(pa.table({"dt": ["d1"], "id": [3]}))  # a -D goes to the key's bucket
    assert 3 not in t.read().column("id").to_pylist() and t.read().num_rows == 39
    t.compact()
    assert t.read().num_rows == 39 and sorted(len(h) for h in index(t).values()) == [10] * 4


def test_assigners_and_max_buckets(local_catalog):
    t = dynamic(local_catalog, **{"dynamic-bucket.target-row-num": "4",
                                  "dynamic-bucket.initial-buckets": "2",
                                  "dynamic-bucket.max-buckets": "3"})
    t.write(batch(range(40)))
    idx = index(t)
    assert sorted(b for _, b in idx) == [0, 1, 2]  # capped at 3 buckets, then filled at random
    assert sum(len(h) for h in idx.values()) == 40
    assert t.read().num_rows == 40
    t.write(batch(range(40), tag="again"))  # every key known: same buckets, no new hash
    assert {k: sorted(v.tolist()) for k, v in index(t).items()} == {
        k: sorted(v.tolist()) for k, v in idx.items()}
    assert set(t.read().column("v").to_pylist()) == {f"again{i}" for i in range(40)}


def test_overwrite_starts_the_partition_index_afresh(local_catalog):
    t = dynamic(local_catalog, **{"dynamic-bucket.target-row-num": "5"})
    t.write(batch(range(12)))
    t.write(batch(range(3), day="d2"))
    t.write(batch(range(100, 103)), overwrite=True)
    idx = index(t)
    d1 = [h for (p, b), h in idx.items() if b'd1' in p]
    assert sorted(len(h) for h in d1) == [3]  # only the overwrite's keys, in bucket 0
    assert sorted(len(h) for (p, _), h in idx.items() if b'd2' in p) == [3]
    assert sorted(t.read().column("id").to_pylist()) == [0, 1, 2, 100, 101, 102]


def test_a_concurrent_index_change_is_refused_and_leaves_nothing(local_catalog):
    t = dynamic(local_catalog)
    t.write(batch(range(5)))
    job = WriteJob(t.file_io, t.path, t.table_schema, batch(range(5, 10)), None, False, None,
                   None, table_name=t.name)
    job.plan()
    job.execute()
    t.write(batch(range(10, 15)))  # lands first, changing the partition's index
    before = sorted(s.path for s in t.file_io.list_recursive(t.path))
    with pytest.raises(CommitConflictError, match="changed the index"):
        job.commit()
    after = sorted(s.path for s in t.file_io.list_recursive(t.path))
    assert set(after) <= set(before) and t.read().num_rows == 10
    t.write(batch(range(5, 10)))  # a new run succeeds
    assert t.read().num_rows == 15


def test_refusals(local_catalog):
    t = dynamic(local_catalog, "db.bad", **{"dynamic-bucket.target-row-num": "0"})
    with pytest.raises(lf.InvalidOptionError, match="target-row-num"):
        t.write(batch(range(3)))
    assert t.snapshots() == []


def test_expiry_deletes_replaced_index_files(catalog):
    t = dynamic(catalog, **{"dynamic-bucket.target-row-num": "3"})
    for i in range(4):
        t.write(batch(range(i * 2, i * 2 + 4)))
    live = {e for e in index(t)}
    r = t.expire_snapshots(retain_min=1, older_than=dt.timedelta(0))
    index_dir = t.file_io.join(t.path, "index")
    left = [s.path for s in t.file_io.list_status(index_dir)]
    assert len(left) == len(live) and r.other_files_deleted > 0
    assert any("/index/index-" in p for p in r.deleted)
    assert t.read().num_rows == 10
