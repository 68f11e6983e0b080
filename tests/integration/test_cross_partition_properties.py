"""Property tests of cross-partition upsert tables: random histories of upserts that move keys
between partitions (duplicates inside a write included), deletes by key, compactions and
snapshot expiry, under deduplicate, partial-update and first-row, with a small
`dynamic-bucket.target-row-num` and a random number of assigners.

After every step the read equals a model kept in a dict (key -> partition and value, by the
engine's rule for a key arriving in another partition), each key is read once, and no bucket
holds more than the target of live keys.
"""

from __future__ import annotations

import datetime as dt
import tempfile

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lakeformat as lf
from lakeformat.operation.write import cross_partition
from tests.support.depth import examples

EXAMPLES = examples(5, 25, "CROSS_PARTITION_PROPERTY_EXAMPLES")  # per engine; support/depth.py
DAYS = ["d1", "d2", "d3"]
SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False),
                    pa.field("id", pa.int64(), nullable=False), ("v", pa.int64())])

keys = st.tuples(st.sampled_from(DAYS), st.integers(0, 25))
steps = st.lists(st.one_of(
    st.tuples(st.just("upsert"), st.lists(keys, min_size=1, max_size=30)),
    st.tuples(st.just("upsert"), st.lists(keys, min_size=1, max_size=30)),
    st.tuples(st.just("delete"), st.lists(st.integers(0, 25), min_size=1, max_size=5)),
    st.tuples(st.just("compact"), st.booleans()),
    st.tuples(st.just("expire"), st.integers(1, 3)),
), min_size=2, max_size=10)


def apply(model: dict, engine: str, day: str, key: int, value: int) -> None:
    if key not in model:
        model[key] = (day, value)
    elif engine == "deduplicate":
        model[key] = (day, value)  # moves (or stays) with the newest row
    elif engine == "partial-update":
        model[key] = (model[key][0], value)  # stays in its partition, takes the value
    # first-row: the first row stays


@pytest.mark.parametrize("engine", ["deduplicate", "partial-update", "first-row"])
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(target=st.integers(1, 5), assigners=st.integers(1, 3), history=steps)
def test_random_cross_partition_histories(engine, target, assigners, history):
    """Each engine is a case of its own (not drawn), so a shallow run still covers all three."""
    with tempfile.TemporaryDirectory() as wh:
        catalog = lf.Catalog(wh)
        catalog.create_database("db")
        options = {"bucket": "-1", "merge-engine": engine,
                   "dynamic-bucket.target-row-num": str(target),
                   "dynamic-bucket.initial-buckets": str(assigners)}
        if engine == "partial-update":
            options["partial-update.remove-record-on-delete"] = "true"
        t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], partition_keys=["dt"],
                                 options=options)
        model: dict[int, tuple[str, int]] = {}
        counter = 0
        for step in history:
            if step[0] == "upsert":
                batch = []
                for day, key in step[1]:
                    counter += 1
                    batch.append({"dt": day, "id": key, "v": counter})
                    apply(model, engine, day, key, counter)
                t.write(pa.Table.from_pylist(batch, schema=SCHEMA))
            elif step[0] == "delete":
                if engine == "first-row":
                    continue  # first-row keeps rows: deletes are refused
                t.delete(pa.table({"id": pa.array(step[1], pa.int64())}))
                for key in step[1]:
                    model.pop(key, None)
            elif step[0] == "compact":
                t.compact(full=step[1])
            else:
                t.expire_snapshots(retain_min=step[1], older_than=dt.timedelta(0))
            got = t.read().to_pylist()
            assert len(got) == len(model), step
            assert {r["id"]: (r["dt"], r["v"]) for r in got} == model, step
            check_buckets(t, target)


def check_buckets(t: lf.Table, target: int) -> None:
    snap = t.snapshot_manager.latest_snapshot()
    index = cross_partition.bootstrap(t.file_io, t.path, t.table_schema, snap)
    counts: dict[tuple[int, int], int] = {}
    for p, b in zip(index.part.tolist(), index.bucket.tolist()):
        counts[(p, b)] = counts.get((p, b), 0) + 1
    assert not counts or max(counts.values()) <= target
