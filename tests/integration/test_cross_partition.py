"""Cross-partition upsert tables (bucket = -1, primary key without the partition column)
written by lakeformat: a key is unique across the table and the merge engine decides what a
key arriving in another partition does (Java's GlobalIndexAssigner and ExistingProcessors);
deletes by key find the key's partition; no HASH index is written; buckets fill to
`dynamic-bucket.target-row-num` keys; what is not handled is refused and leaves the table as
it was.

The key index is bootstrapped from the table's data files and the writes land as any write
does, so a key moving between partitions, compaction and expiry afterwards run on local disk
and on the moto S3 server; the rest (`@local_disk` and the tests on `local_catalog`: engines,
deletes by key, bucket filling, a larger random history against a model) is the assigner's
logic above either store, on local disk only.
"""

from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.errors import CommitConflictError, SchemaMismatchError, UnsupportedError
from lakeformat.operation.write import WriteJob, cross_partition

SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False),
                    pa.field("id", pa.int64(), nullable=False), ("v", pa.string()),
                    ("w", pa.string())])


#: a test of this module that never reaches store specifics: local disk only (module docstring)
local_disk = pytest.mark.parametrize("catalog", ["local"], indirect=True)


def rows(items) -> pa.Table:
    """items: (dt, id, v) or (dt, id, v, w)."""
    items = [tuple(i) + (None,) * (4 - len(i)) for i in items]
    return pa.table({"dt": [i[0] for i in items], "id": [i[1] for i in items],
                     "v": [i[2] for i in items], "w": [i[3] for i in items]}, schema=SCHEMA)


def cross(catalog, name="db.t", **options) -> lf.Table:
    return catalog.create_table(name, SCHEMA, primary_keys=["id"], partition_keys=["dt"],
                                options={"bucket": "-1", **options})


def state(t: lf.Table, columns=("dt", "id", "v")) -> list[tuple]:
    return sorted(tuple(r[c] for c in columns) for r in t.read().to_pylist())


def placement(t: lf.Table) -> dict[int, tuple[str, int]]:
    """id -> (dt, bucket) of every live key, as the next write's bootstrap sees it."""
    snap = t.snapshot_manager.latest_snapshot()
    index = cross_partition.bootstrap(t.file_io, t.path, t.table_schema, snap)
    ids = index.keys["id"].to_pylist()
    return {k: (index.values[p][0], b) for k, p, b in zip(ids, index.part.tolist(),
                                                           index.bucket.tolist())}


def data_files(t: lf.Table) -> list[str]:
    return sorted(s.path for s in t.file_io.list_recursive(t.path))


def test_deduplicate_moves_a_key(catalog):
    t = cross(catalog)
    t.write(rows([("d1", i, f"a{i}") for i in range(10)]))
    t.write(rows([("d2", 3, "b3"), ("d2", 4, "b4"), ("d1", 5, "b5")]))
    assert state(t) == sorted([("d1", i, f"a{i}") for i in range(10) if i not in (3, 4, 5)]
                              + [("d2", 3, "b3"), ("d2", 4, "b4"), ("d1", 5, "b5")])
    d1 = t.read(filter=[("dt", "=", "d1")]).column("id").to_pylist()
    assert 3 not in d1 and 4 not in d1 and len(d1) == 8
    assert t.snapshot_manager.latest_snapshot().index_manifest is None  # no HASH index
    assert not any("/index/" in p for p in data_files(t))
    assert {k: p for k, (p, _) in placement(t).items()} == {
        i: "d2" if i in (3, 4) else "d1" for i in range(10)}
    # the key moves back: the -D goes to d2, the row to d1
    t.write(rows([("d1", 3, "c3")]))
    assert ("d1", 3, "c3") in state(t) and len(state(t)) == 10


@pytest.mark.parametrize("engine", ["partial-update", "aggregation"])
def test_partial_update_and_aggregation_write_into_the_old_partition(local_catalog, engine):
    options = {"merge-engine": engine}
    if engine == "aggregation":
        options["fields.default-aggregate-function"] = "last_non_null_value"
    t = cross(local_catalog, **options)
    t.write(rows([("d1", 1, "a", None), ("d1", 2, "b", None)]))
    t.write(rows([("d2", 1, None, "x"), ("d2", 3, "c", "y")]))
    assert state(t, ("dt", "id", "v", "w")) == [("d1", 1, "a", "x"), ("d1", 2, "b", None),
                                                ("d2", 3, "c", "y")]
    assert {str(f["partition"]) for f in t.files()} == {"{'dt': 'd1'}", "{'dt': 'd2'}"}
    assert placement(t)[1] == ("d1", 0)


def test_first_row_keeps_the_first(local_catalog):
    t = cross(local_catalog, **{"merge-engine": "first-row"})
    t.write(rows([("d1", 1, "a"), ("d1", 2, "b")]))
    r = t.write(rows([("d2", 1, "x"), ("d1", 2, "y"), ("d2", 3, "z")]))
    assert state(t) == [("d1", 1, "a"), ("d1", 2, "b"), ("d2", 3, "z")]
    assert r.snapshot_id is not None
    # every row dropped: nothing to commit
    n = len(t.snapshots())
    t.write(rows([("d3", 1, "q")]))
    assert len(t.snapshots()) == n and state(t)[0] == ("d1", 1, "a")


@local_disk
def test_deletes_by_key_find_the_partition(catalog):
    t = cross(catalog)
    t.write(rows([("d1", 1, "a"), ("d2", 2, "b"), ("d3", 3, "c"), ("d1", 4, "d")]))
    t.delete(pa.table({"id": [2, 3, 99]}))  # no dt given; 99 is not live
    assert state(t) == [("d1", 1, "a"), ("d1", 4, "d")]
    assert not any("__DEFAULT_PARTITION__" in p for p in data_files(t))
    t.delete(pa.table({"dt": ["d9"], "id": [1]}))  # a given partition is not trusted
    assert state(t) == [("d1", 4, "d")]
    t.delete(where=[("v", "=", "d")])
    assert state(t) == []
    t.write(rows([("d2", 4, "again")]))  # a deleted key is new again
    assert state(t) == [("d2", 4, "again")]


def test_a_retract_row_of_a_key_held_elsewhere(local_catalog):
    """As Java: a -D row retracts the key in its old partition and is placed in its own."""
    schema = pa.schema([*SCHEMA, ("op", pa.string())])
    t = local_catalog.create_table("db.rk", schema, primary_keys=["id"],
                                   partition_keys=["dt"],
                                   options={"bucket": "-1", "rowkind.field": "op"})
    t.write(pa.table({"dt": ["d1", "d1"], "id": [1, 2], "v": ["a", "b"], "w": [None, None],
                      "op": ["+I", "+I"]}, schema=schema))
    t.write(pa.table({"dt": ["d2"], "id": [1], "v": [None], "w": [None], "op": ["-D"]},
                     schema=schema))
    assert [r["id"] for r in t.read().to_pylist()] == [2]


@pytest.mark.parametrize("engine, batch, expected", [
    ("deduplicate", [("d1", 1, "a"), ("d2", 1, "b"), ("d1", 1, "c"), ("d3", 2, "x")],
     [("d1", 1, "c"), ("d3", 2, "x")]),
    ("deduplicate", [("d1", 1, "a"), ("d2", 1, "b")], [("d2", 1, "b")]),
    ("first-row", [("d2", 1, "a"), ("d1", 1, "b"), ("d2", 1, "c")], [("d2", 1, "a")]),
    ("partial-update", [("d2", 1, "a"), ("d1", 1, None, "w"), ("d3", 1, "c")],
     [("d2", 1, "c")]),
])
def test_duplicate_keys_in_one_batch_follow_arrival_order(local_catalog, engine, batch,
                                                          expected):
    t = cross(local_catalog, **{"merge-engine": engine})
    t.write(rows(batch))
    assert state(t) == expected
    t.compact(full=True)
    assert state(t) == expected


def test_buckets_fill_to_the_target_and_moved_out_keys_free_room(local_catalog):
    t = cross(local_catalog, **{"dynamic-bucket.target-row-num": "3"})
    t.write(rows([("d1", i, "a") for i in range(7)]))
    got = placement(t)
    assert sorted(b for _, b in got.values()) == [0, 0, 0, 1, 1, 1, 2]
    assert [got[i][1] for i in range(7)] == [0, 0, 0, 1, 1, 1, 2]  # arrival order
    # two keys leave bucket 0 of d1, then new keys of d1 fill bucket 0 again, then bucket 2
    t.write(rows([("d2", 0, "m"), ("d2", 1, "m"), ("d1", 7, "n"), ("d1", 8, "n"),
                  ("d1", 9, "n")]))
    got = placement(t)
    assert [got[i] for i in (0, 1)] == [("d2", 0), ("d2", 0)]
    assert [got[i] for i in (7, 8, 9)] == [("d1", 0), ("d1", 0), ("d1", 2)]
    # within one write: a move out of d1 frees room for a later new key of d1
    t.write(rows([("d1", 10, "p"), ("d3", 2, "p"), ("d1", 11, "p")]))
    got = placement(t)
    assert got[10] == ("d1", 2) and got[11] == ("d1", 0) and got[2] == ("d3", 0)


def test_assigners_own_buckets(local_catalog):
    t = cross(local_catalog, **{"dynamic-bucket.target-row-num": "5",
                                "dynamic-bucket.initial-buckets": "3"})
    t.write(rows([("d1", i, "a") for i in range(60)]))
    snap = t.snapshot_manager.latest_snapshot()
    index = cross_partition.bootstrap(t.file_io, t.path, t.table_schema, snap)
    owner = np.abs(np.fmod(index.hashes.astype(np.int64), 3))
    assert (index.bucket % 3 == owner).all()
    sizes = np.unique(index.bucket, return_counts=True)[1]
    assert sizes.max() <= 5 and t.read().num_rows == 60


@local_disk
def test_many_keys_over_partitions_against_a_model(catalog):
    rng = np.random.default_rng(7)
    t = cross(catalog, **{"dynamic-bucket.target-row-num": "40",
                          "dynamic-bucket.initial-buckets": "2"})
    model: dict[int, tuple[str, str]] = {}
    for step in range(5):
        ids = rng.integers(0, 600, 500)
        days = rng.choice(["d1", "d2", "d3", "d4"], 500)
        batch = [(str(d), int(i), f"s{step}-{j}") for j, (d, i) in enumerate(zip(days, ids))]
        t.write(rows(batch))
        for d, i, v in batch:
            model[i] = (d, v)
        if step == 2:
            gone = [int(i) for i in rng.choice(list(model), 50, replace=False)]
            t.delete(pa.table({"id": gone}))
            for i in gone:
                model.pop(i)
        assert state(t) == sorted((d, i, v) for i, (d, v) in model.items())
    counts: dict[tuple[str, int], int] = {}
    for where in placement(t).values():
        counts[where] = counts.get(where, 0) + 1
    assert max(counts.values()) <= 40


def test_compaction_and_expiry_afterwards(catalog):
    t = cross(catalog, **{"dynamic-bucket.target-row-num": "4"})
    t.write(rows([("d1", i, "a") for i in range(10)]))
    t.write(rows([("d2", i, "b") for i in range(0, 10, 2)]))
    t.write(rows([("d3", i, "c") for i in range(0, 10, 4)]))
    expected = state(t)
    r = t.compact(full=True)
    assert r.snapshot_ids and not r.failed and state(t) == expected
    t.expire_snapshots(retain_min=1, older_than=dt.timedelta(0))
    assert len(t.snapshots()) == 1 and state(t) == expected
    t.write(rows([("d1", 0, "z")]))  # bootstraps from the compacted files
    assert ("d1", 0, "z") in state(t) and len(state(t)) == 10


def test_hash_collisions_are_told_apart(local_catalog, monkeypatch):
    """Every key hashing alike: placement still goes by the key itself."""
    monkeypatch.setattr(cross_partition, "key_hashes",
                        lambda schema, keys: np.zeros(keys.num_rows, dtype=np.int32))
    t = cross(local_catalog, **{"dynamic-bucket.target-row-num": "2"})
    t.write(rows([("d1", i, "a") for i in range(5)]))
    t.write(rows([("d2", 1, "b"), ("d1", 2, "c"), ("d2", 7, "d")]))
    assert state(t) == [("d1", 0, "a"), ("d1", 2, "c"), ("d1", 3, "a"), ("d1", 4, "a"),
                        ("d2", 1, "b"), ("d2", 7, "d")]
    ids = cross_partition.exact_ids(pa.table({"k": [5, 6, 5, 7, 6]}), np.zeros(5, np.int32))
    assert ids.tolist() == [0, 1, 0, 3, 1]


def test_bad_input_and_unhandled_options_leave_the_table_as_it_was(local_catalog):
    t = cross(local_catalog)
    t.write(rows([("d1", 1, "a"), ("d2", 2, "b")]))
    before, snaps = data_files(t), len(t.snapshots())
    with pytest.raises(SchemaMismatchError):
        t.write(pa.table({"dt": ["d1"], "id": ["not a number"]}))
    with pytest.raises(SchemaMismatchError):
        t.write(pa.table({"dt": [None], "id": [1]}, schema=pa.schema([("dt", pa.string()),
                                                                        ("id", pa.int64())])))
    with pytest.raises(UnsupportedError, match="overwrite"):
        t.write(rows([("d1", 3, "c")]), overwrite=True)
    with pytest.raises(SchemaMismatchError, match="primary-key"):
        t.delete(pa.table({"dt": ["d1"]}))
    assert data_files(t) == before and len(t.snapshots()) == snaps
    t.alter([lf.SchemaChange.set_option("cross-partition-upsert.index-ttl", "1 d")])
    before = data_files(t)
    with pytest.raises(UnsupportedError, match="cross-partition-upsert.index-ttl"):
        t.write(rows([("d1", 3, "c")]))
    assert data_files(t) == before
    first = cross(local_catalog, "db.first", **{"merge-engine": "first-row"})
    first.write(rows([("d1", 1, "a")]))
    before = data_files(first)
    with pytest.raises(lf.LakeformatError):
        first.delete(pa.table({"id": [1]}))
    assert data_files(first) == before and state(first) == [("d1", 1, "a")]


def test_a_write_planned_before_another_lands_is_refused(local_catalog):
    t = cross(local_catalog)
    t.write(rows([("d1", i, "a") for i in range(5)]))
    job = WriteJob(t.file_io, t.path, t.table_schema, rows([("d2", 1, "x"), ("d2", 9, "y")]),
                   None, False, None, None, table_name=t.name)
    job.plan()
    job.execute()
    t.write(rows([("d3", 9, "other")]))  # lands first: key 9 now lives in d3
    before = data_files(t)
    with pytest.raises(CommitConflictError, match="cross-partition"):
        job.commit()
    assert set(data_files(t)) <= set(before)
    assert state(t) == sorted([("d1", i, "a") for i in range(5)] + [("d3", 9, "other")])
    # a compaction in between moves no key: the write lands
    job = WriteJob(t.file_io, t.path, t.table_schema, rows([("d2", 1, "x")]), None, False,
                   None, None, table_name=t.name)
    job.plan()
    job.execute()
    t.compact(full=True)
    job.commit()
    assert ("d2", 1, "x") in state(t) and len(state(t)) == 6
