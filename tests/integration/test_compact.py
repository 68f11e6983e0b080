"""Compaction through the public API on local storage: what users see in rows, files,
snapshots and the result object; minor picks; slices; partition selection; conflicts; CLI."""

from __future__ import annotations

import json
from datetime import timedelta

import numpy as np
import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.cli import main
from lakeformat.errors import CommitConflictError, LakeformatError, UnsupportedError
from lakeformat.mergetree import reader as merge_tree_reader
from lakeformat.operation.commit import FileStoreCommit
from lakeformat.operation.compact import CompactJob

SCHEMA = pa.schema([pa.field("dt", pa.string(), False), pa.field("id", pa.int64(), False),
                    ("v", pa.int64()), ("s", pa.string())])


@pytest.fixture()
def catalog(tmp_path) -> lf.Catalog:
    cat = lf.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    return cat


def rows(dt: str, ids, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    ids = np.asarray(ids, dtype=np.int64)
    return pa.table({"dt": [dt] * len(ids), "id": ids, "v": rng.integers(0, 1000, len(ids)),
                     "s": [f"value-{i}-{seed}" for i in range(len(ids))]}, schema=SCHEMA)


def make(catalog, name="db.t", **options) -> lf.Table:
    opts = {"bucket": "2", **options}
    return catalog.create_table(name, SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                                options=opts)


def sorted_rows(t: lf.Table) -> pa.Table:
    return t.read().sort_by([("dt", "ascending"), ("id", "ascending")])


def data_files_on_disk(t: lf.Table) -> set[str]:
    return {s.path.rsplit("/", 1)[-1] for s in t.file_io.list_recursive(t.path)
            if s.path.rsplit("/", 1)[-1].startswith(("data-", "changelog-"))}


def test_full_compaction_result_layout_and_rows(catalog):
    t = make(catalog)
    for i in range(4):
        t.write(rows("d1", range(i * 50, i * 50 + 200), seed=i))
        t.write(rows("d2", range(0, 100, i + 1), seed=10 + i))
    t.delete(pa.table({"dt": ["d1"], "id": [7]}))
    before = sorted_rows(t)
    result = t.compact()
    assert sorted_rows(t).equals(before)
    snap = t.latest_snapshot()
    assert snap.commit_kind == "COMPACT" and result.snapshot_ids == [snap.id]
    assert {f["level"] for f in t.files()} == {5}
    assert sum(f["row_count"] for f in t.files()) == before.num_rows  # deletes dropped
    d = result.to_dict()
    json.dumps(d)
    assert d["total"]["buckets_compacted"] == 4
    assert d["total"]["sorted_runs_after"] == 4
    assert d["total"]["rows_out"] == before.num_rows
    assert set(d["partitions"]) == {"dt=d1", "dt=d2"}
    assert d["total"]["files_in"] == sum(p["files_in"] for p in d["partitions"].values())
    assert "full compaction" in str(result) and "dt=d1" in str(result)
    # a bucket that is one file at the top level is left alone
    again = t.compact()
    assert again.snapshot_ids == [] and again.total.buckets_compacted == 0
    assert t.latest_snapshot().id == snap.id
    # every output file is marked as compaction output
    from lakeformat.operation.scan import FileStoreScan
    live = FileStoreScan(t.file_io, t.path, t.table_schema).live_entries(t.latest_snapshot())
    assert {e.file.file_source for e in live} == {1}
    assert {e.file.delete_row_count for e in live} == {0}


def test_sequence_numbers_are_kept(catalog):
    t = make(catalog, bucket="1")
    t.write(rows("d", range(10), seed=1))
    t.write(rows("d", range(5, 15), seed=2))
    live_seq = sorted((f["min_sequence_number"], f["max_sequence_number"]) for f in t.files())
    t.compact()
    (f,) = t.files()
    assert (f["min_sequence_number"], f["max_sequence_number"]) == (0, live_seq[-1][1])
    t.write(rows("d", [3], seed=3))  # the writer continues after the compacted maximum
    assert max(x["max_sequence_number"] for x in t.files()) == live_seq[-1][1] + 1


def test_many_slices_and_rolling_files_give_the_same_rows(catalog, monkeypatch):
    t = make(catalog, bucket="1", **{"target-file-size": "32 kb",
                                     "merge-engine": "partial-update"})
    rng = np.random.default_rng(3)
    for i in range(5):
        ids = np.unique(rng.integers(0, 30_000, 12_000))
        batch = rows("d", ids, seed=i)
        mask = pa.array(rng.random(len(ids)) < 0.3)
        batch = batch.set_column(2, "v", pa.compute.if_else(mask, None, batch["v"]))
        t.write(batch)
    before = sorted_rows(t)
    slices = []
    original = merge_tree_reader.MergeTreeReader._slice

    def counting(self, *args, **kwargs):
        out = original(self, *args, **kwargs)
        slices.append(out.rows.num_rows)
        return out

    monkeypatch.setattr(merge_tree_reader.MergeTreeReader, "_slice", counting)
    result = t.compact(memory_budget=256 << 10, workers=1)
    assert len(slices) > 10
    # a run's short tail reads on before the next slice: no slice but the last is a sliver
    assert min(slices[:-1]) >= np.median(slices) / 4, slices
    assert sorted_rows(t).equals(before)
    files = t.files()
    assert len(files) > 3 and result.total.files_out == len(files)
    # one sorted run: key ranges of the top-level files do not overlap (the commit checks it,
    # and the reader would double rows if they did)
    assert sum(f["row_count"] for f in files) == before.num_rows


def test_minor_compaction_follows_universal_picks(catalog):
    t = make(catalog, bucket="1")
    for i in range(5):
        t.write(rows("d", range(i * 10, i * 10 + 100), seed=i))
    # 5 level-0 runs = trigger: size amplification (4 newer runs >> 2 x the oldest) picks all
    before = sorted_rows(t)
    r = t.compact(full=False)
    assert r.total.sorted_runs_before == 5 and r.total.sorted_runs_after == 1
    assert {f["level"] for f in t.files()} == {5}
    assert sorted_rows(t).equals(before)
    # below the trigger nothing is picked
    for i in range(3):
        t.write(rows("d", [i], seed=20 + i))
    assert t.compact(full=False).snapshot_ids == []
    # with a lower trigger the newest small runs are compacted into a level below the top
    t2 = make(catalog, "db.t2", bucket="1", **{"num-sorted-run.compaction-trigger": "2"})
    t2.write(rows("d", range(10_000), seed=1))  # outweighs the two small runs (size ratio)
    t2.compact()
    t2.write(rows("d", [1, 2], seed=2))
    t2.write(rows("d", [3, 4], seed=3))
    before = sorted_rows(t2)
    r = t2.compact(full=False)
    levels = sorted(f["level"] for f in t2.files())
    assert r.total.buckets_compacted == 1
    # num-levels 3: top is 2; 3 runs > trigger 2, so the 2 newest runs are compacted and the
    # size-ratio chain stops at the large top run: output = its level - 1
    assert levels == [1, 2]
    assert sorted_rows(t2).equals(before)


def test_partition_selection_where_and_idle_time(catalog):
    t = make(catalog)
    for i in range(2):
        for dt in ("2024-01-01", "2024-01-02", "2024-01-03"):
            t.write(rows(dt, range(i, 50 + i), seed=i))
    r = t.compact(partitions=[{"dt": "2024-01-01"}])
    assert set(r.partitions) == {"dt=2024-01-01"}
    r = t.compact(where=[("dt", ">=", "2024-01-03")])
    assert set(r.partitions) == {"dt=2024-01-03"}
    assert t.compact(partition_idle_time=timedelta(hours=1)).snapshot_ids == []
    r = t.compact(partition_idle_time="0 s")
    assert set(r.partitions) == {"dt=2024-01-02"}
    with pytest.raises(LakeformatError, match="partition columns"):
        t.compact(where=[("id", "=", 1)])
    with pytest.raises(LakeformatError, match="non-partition"):
        t.compact(partitions=[{"id": 1}])


def stepped_job(t: lf.Table) -> CompactJob:
    """A compaction whose plan, execute and commit steps the test calls one by one."""
    t.refresh()
    return CompactJob(t.file_io, t.path, t.table_schema, t.name, memory_budget=1 << 20,
                      workers=1)


def test_compaction_beside_a_writer_loses_nothing(catalog):
    t = make(catalog, bucket="1")
    for i in range(3):
        t.write(rows("d", range(i * 5, i * 5 + 20), seed=i))
    job = stepped_job(t)
    outcomes = job.execute([task for group in job.plan() for task in group])
    t.write(rows("d", range(10, 40), seed=99))  # lands between plan and commit
    expected = sorted_rows(t)
    ok, ids = job.commit(outcomes, {})
    assert ids and ok
    assert sorted_rows(t).equals(expected)
    assert sorted(f["level"] for f in t.files()) == [0, 5]


def test_two_compactions_at_once_one_commits_the_other_cleans_up(catalog):
    t = make(catalog)
    for i in range(3):
        t.write(rows("a", range(i, 30 + i), seed=i))
        t.write(rows("b", range(i, 30 + i), seed=i))
    expected = sorted_rows(t)
    a, b = stepped_job(t), stepped_job(t)
    first = a.execute([task for group in a.plan() for task in group])
    second = b.execute([task for group in b.plan() for task in group])
    ok, ids = a.commit(first, {})
    assert len(ids) == 1
    failed: dict = {}
    ok2, ids2 = b.commit(second, failed)
    assert ids2 == [] and ok2 == []
    assert set(failed) == {"dt=a", "dt=b"}  # retried per partition, each conflicted
    assert "no longer live" in failed["dt=a"]
    live = {f["file_name"] for f in t.files()}
    old = {f.file_name for o in first for f in o.message.deleted_files}
    assert data_files_on_disk(t) == live | old  # the loser left nothing behind
    assert sorted_rows(t).equals(expected)
    assert t.compact().snapshot_ids == []  # a rerun finds nothing left to do


def test_lsm_overlap_on_a_level_is_a_conflict(catalog):
    t = make(catalog, bucket="1")
    t.write(rows("d", range(100), seed=1))
    t.compact()
    (top,) = [e for e in t.files()]
    t.write(rows("d", range(50, 60), seed=2))
    from lakeformat.operation.commit import CommitMessage
    from lakeformat.operation.scan import FileStoreScan

    live = FileStoreScan(t.file_io, t.path, t.table_schema).live_entries(t.latest_snapshot())
    level0 = [e for e in live if e.file.level == 0][0]
    moved = level0.file.upgrade(5)  # would overlap the top-level file
    msg = CommitMessage(level0.partition, level0.bucket, level0.total_buckets,
                        new_files=[moved], deleted_files=[level0.file])
    with pytest.raises(CommitConflictError, match="LSM conflicts"):
        FileStoreCommit(t.file_io, t.path, t.table_schema).commit([msg], kind="COMPACT")
    assert top["level"] == 5


def test_failed_merge_deletes_what_was_written(catalog, monkeypatch):
    # lookup-wait off: the writes leave their level-0 files for this compaction
    t = make(catalog, bucket="1", **{"merge-engine": "first-row", "lookup-wait": "false"})
    t.write(rows("d", range(10), seed=1))
    t.write(rows("d", range(5), seed=2))
    from lakeformat.merge.engine import MergeEngine
    from lakeformat.merge.sort import DELETE
    from lakeformat.operation.write import write_table
    # lakeformat refuses this -D at write time; another writer's file may still hold one
    monkeypatch.setattr(MergeEngine, "check_retracts", lambda *args: None)
    write_table(t.file_io, t.path, t.table_schema, rows("d", [3], seed=3),
                np.array([DELETE], dtype=np.int8))
    files = data_files_on_disk(t)
    with pytest.raises(LakeformatError, match="first-row"):
        t.compact()
    assert data_files_on_disk(t) == files


def test_unsupported_options_are_refused(catalog):
    # Paimon refuses a first-row schema with deletion vectors: writes and compaction here too
    t = make(catalog, **{"deletion-vectors.enabled": "true", "merge-engine": "first-row"})
    with pytest.raises(UnsupportedError, match="first-row with deletion-vectors.enabled"):
        t.write(rows("d", [1]))
    with pytest.raises(UnsupportedError, match="first-row with deletion-vectors.enabled"):
        t.compact()
    assert t.snapshots() == []
    t = make(catalog, "db.t2", **{"compaction.force-up-level-0": "true"})
    t.write(rows("d", [1]))
    with pytest.raises(UnsupportedError, match="compaction.force-up-level-0"):
        t.compact()


def test_cli_compact(catalog, tmp_path, capsys):
    t = make(catalog)
    for i in range(2):
        t.write(rows("2024-01-01", range(i, 20 + i), seed=i))
        t.write(rows("2024-01-02", range(i, 20 + i), seed=i))
    wh = str(tmp_path / "wh")
    assert main(["--warehouse", wh, "compact", "db.t", "--partition", "dt=2024-01-01",
                 "--json"]) == 0
    out = capsys.readouterr()
    d = json.loads(out.out)["result"]
    assert list(d["partitions"]) == ["dt=2024-01-01"] and d["full"] is True
    assert "buckets to compact" in out.err
    assert main(["--warehouse", wh, "compact", "db.t", "--minor", "--where",
                 "dt>=2024-01-02"]) == 0
    assert "minor compaction" in capsys.readouterr().out
    assert main(["--warehouse", wh, "compact", "db.t"]) == 0
    assert "full compaction" in capsys.readouterr().out
