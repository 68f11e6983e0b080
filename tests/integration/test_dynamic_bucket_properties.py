"""Property tests of dynamic-bucket tables: random histories of upserts, deletes, partition
overwrites, compactions and snapshot expiry with a small `dynamic-bucket.target-row-num` and a
random number of assigners.

After every step the latest read equals a last-writer-wins model (a key split over two buckets
would read twice), every key hash is indexed in exactly one bucket of its partition, no bucket
holds more hashes than the target (no `max-buckets` here), the index files on disk are exactly
those the latest snapshot lists once expiry ran, and every retained snapshot reads back what it
read when it was made.
"""

from __future__ import annotations

import datetime as dt
import tempfile

import numpy as np
import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lakeformat as lf
from lakeformat.meta.bucket import hash_rows
from lakeformat.meta.index_manifest import IndexManifestFile
from lakeformat.schema.types import DataField, bigint
from tests.support.depth import examples

EXAMPLES = examples(12, 30, "DYNAMIC_BUCKET_PROPERTY_EXAMPLES")  # tests/support/depth.py
DAYS = ["d1", "d2"]
SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False),
                    pa.field("id", pa.int64(), nullable=False), ("v", pa.int64())])

keys = st.tuples(st.sampled_from(DAYS), st.integers(0, 30))
steps = st.lists(st.one_of(
    st.tuples(st.just("upsert"), st.lists(keys, min_size=1, max_size=25)),
    st.tuples(st.just("upsert"), st.lists(keys, min_size=1, max_size=25)),
    st.tuples(st.just("delete"), st.lists(keys, min_size=1, max_size=5)),
    st.tuples(st.just("overwrite"), st.sampled_from(DAYS), st.integers(1, 8)),
    st.tuples(st.just("compact"), st.booleans()),
    st.tuples(st.just("expire"), st.integers(1, 3)),
), min_size=2, max_size=12)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(target=st.integers(1, 6), assigners=st.integers(1, 3), history=steps)
def test_random_dynamic_bucket_histories(target, assigners, history):
    with tempfile.TemporaryDirectory() as wh:
        catalog = lf.Catalog(wh)
        catalog.create_database("db")
        t = catalog.create_table("db.t", SCHEMA, primary_keys=["dt", "id"],
                                 partition_keys=["dt"], options={
                                     "bucket": "-1",
                                     "dynamic-bucket.target-row-num": str(target),
                                     "dynamic-bucket.initial-buckets": str(assigners)})
        model: dict[tuple[str, int], int] = {}
        recorded: dict[int, list] = {}
        counter = 0
        for step in history:
            if step[0] == "upsert":
                rows = []
                for day, key in step[1]:
                    counter += 1
                    rows.append({"dt": day, "id": key, "v": counter})
                    model[(day, key)] = counter
                t.write(pa.Table.from_pylist(rows, schema=SCHEMA))
            elif step[0] == "delete":
                t.delete(pa.table({"dt": [d for d, _ in step[1]], "id": [k for _, k in step[1]]}))
                for k in step[1]:
                    model.pop(k, None)
            elif step[0] == "overwrite":
                rows = [{"dt": step[1], "id": 100 + i, "v": -i} for i in range(step[2])]
                t.write(pa.Table.from_pylist(rows, schema=SCHEMA), overwrite=True)
                model = {k: v for k, v in model.items() if k[0] != step[1]}
                model.update({(step[1], r["id"]): r["v"] for r in rows})
            elif step[0] == "compact":
                t.compact(full=step[1])
            else:
                t.expire_snapshots(retain_min=step[1], older_than=dt.timedelta(0))
            latest = t.snapshot_manager.latest_snapshot()
            if latest is not None and latest.id not in recorded:
                recorded[latest.id] = sorted(t.read().to_pylist(), key=lambda r: (r["dt"],
                                                                                 r["id"]))
            got = {(r["dt"], r["id"]): r["v"] for r in t.read().to_pylist()}
            assert got == model and t.read().num_rows == len(model), step
            check_index(t, model, target)
            alive = {s.id for s in t.snapshots()}
            for sid, rows in recorded.items():
                if sid in alive:
                    assert sorted(t.read(snapshot_id=sid).to_pylist(),
                                  key=lambda r: (r["dt"], r["id"])) == rows, sid


def check_index(t: lf.Table, model: dict, target: int) -> None:
    latest = t.snapshot_manager.latest_snapshot()
    if latest is None:
        return
    idx = IndexManifestFile(t.file_io, t.path)
    entries = idx.read(latest.index_manifest)
    by_partition: dict[bytes, list[np.ndarray]] = {}
    for e in entries:
        hashes = idx.read_hashes(e)
        assert len(hashes) <= target and len(np.unique(hashes)) == len(hashes)
        by_partition.setdefault(e.partition, []).append(hashes)
    for day in DAYS:
        live = [k for (d, k) in model if d == day]
        if not live:
            continue
        want = hash_rows([pa.array(live, pa.int64())], [DataField(0, "id", bigint(False)).type])
        part = [h for p, hs in by_partition.items() if day.encode() in p for h in hs]
        indexed = np.concatenate(part)
        assert len(np.unique(indexed)) == len(indexed)  # one bucket per hash
        assert set(want.tolist()) <= set(indexed.tolist())
