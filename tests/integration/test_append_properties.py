"""Property tests of append tables: random histories of writes, partition overwrites, added
columns, full and minor compactions, tags and snapshot expiry, on a bucket-unaware and on a
bucketed table (random file sizes and `compaction.min.file-num`).

A model keeps every row written (an append table keeps duplicates). After every step the latest
read equals the model, every retained snapshot and every tag reads back exactly the rows
recorded when it was made, and on the bucketed table each key's rows come back in write order
(compaction keeps the sequence order of a bucket).
"""

from __future__ import annotations

import datetime as dt
import tempfile
from collections import Counter

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lakeformat as lf
from tests.support.depth import examples

EXAMPLES = examples(15, 30, "APPEND_PROPERTY_EXAMPLES")  # tests/support/depth.py
DAYS = ["d1", "d2", "d3"]
BASE = pa.schema([("dt", pa.string()), ("id", pa.int32()), ("v", pa.string())])

writes = st.tuples(st.just("write"), st.lists(st.tuples(st.sampled_from(DAYS),
                                                         st.integers(0, 6)), min_size=1,
                                               max_size=40))
steps = st.lists(st.one_of(
    writes, writes,
    st.tuples(st.just("overwrite"), st.sampled_from(DAYS), st.integers(0, 8)),
    st.tuples(st.just("compact"), st.booleans()),
    st.tuples(st.just("add_column")),
    st.tuples(st.just("tag")),
    st.tuples(st.just("expire"), st.integers(1, 4)),
), min_size=3, max_size=14)


def canon(rows: list[dict]) -> Counter:
    return Counter(tuple(sorted((k, v) for k, v in r.items())) for r in rows)


def key_orders(rows: list[dict]) -> dict[tuple, list[str]]:
    out: dict[tuple, list[str]] = {}
    for r in rows:
        out.setdefault((r["dt"], r["id"]), []).append(r["v"])
    return out


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bucketed=st.booleans(), target=st.sampled_from(["2 kb", "16 kb", "128 mb"]),
       min_files=st.integers(2, 5), history=steps)
def test_random_append_histories_read_back_the_model(bucketed, target, min_files, history):
    with tempfile.TemporaryDirectory() as wh:
        catalog = lf.Catalog(wh)
        catalog.create_database("db")
        options = {"target-file-size": target, "compaction.min.file-num": str(min_files),
                   "source.split.open-file-cost": "1 b"}
        if bucketed:
            options.update({"bucket": "2", "bucket-key": "id"})
        t = catalog.create_table("db.t", BASE, partition_keys=["dt"], options=options)
        model: list[dict] = []
        extra: list[str] = []  # columns added so far
        recorded: dict[int, list[dict]] = {}
        tags: dict[str, list[dict]] = {}
        counter = 0

        def row(day: str, key: int) -> dict:
            nonlocal counter
            counter += 1
            r = {"dt": day, "id": key, "v": f"{counter:05d}"}
            r.update({c: f"{c}-{counter}" for c in extra})
            return r

        def table(rows: list[dict]) -> pa.Table:
            schema = pa.schema([*BASE, *((c, pa.string()) for c in extra)])
            return pa.Table.from_pylist(rows, schema=schema)

        def record() -> None:
            latest = t.snapshot_manager.latest_snapshot()
            if latest is not None and latest.id not in recorded:
                recorded[latest.id] = t.read(snapshot_id=latest.id).to_pylist()

        for step in history:
            kind = step[0]
            if kind == "write":
                new = [row(d, k) for d, k in step[1]]
                t.write(table(new))
                model += new
            elif kind == "overwrite":
                new = [row(step[1], k) for k in range(step[2])]
                if not new:
                    continue
                t.write(table(new), overwrite=True)
                model = [r for r in model if r["dt"] != step[1]] + new
            elif kind == "compact":
                t.compact(full=step[1])
            elif kind == "add_column":
                name = f"c{len(extra)}"
                t.alter(lf.SchemaChange.add_column(name, "STRING"))
                extra.append(name)
                for r in model:
                    r[name] = None
            elif kind == "tag":
                latest = t.snapshot_manager.latest_snapshot()
                if latest is not None:
                    name = f"tag{latest.id}"
                    if name not in tags:
                        t.create_tag(name, snapshot_id=latest.id)
                        tags[name] = t.read(tag=name).to_pylist()
            elif kind == "expire":
                t.expire_snapshots(retain_min=step[1], older_than=dt.timedelta(0))
            record()

            got = t.read().to_pylist()
            assert canon(got) == canon(model), step
            if bucketed:  # a key's rows in write order (v grows with every row written)
                for key, values in key_orders(got).items():
                    assert values == sorted(values), (key, step)
            alive = {s.id for s in t.snapshots()}
            for sid, rows in recorded.items():
                if sid in alive:
                    assert canon(t.read(snapshot_id=sid).to_pylist()) == canon(rows), sid
            for name, rows in tags.items():
                assert canon(t.read(tag=name).to_pylist()) == canon(rows), name
