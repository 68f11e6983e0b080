"""first-row tables compact by key lookup, as Java's do whatever their changelog producer
(`LookupStrategy`: first-row always looks up): a compaction of level-0 files drops a record
whose key is already held above its output level, so each key is stored at most once above
level 0 (Paimon's readers then read those files without merging), and with
`changelog-producer=lookup` it writes +I for the keys it sees for the first time and nothing
else [JAVA FirstRowMergeFunctionWrapper, LookupMergeTreeCompactRewriter]. Writers compact after
each commit (`lookup-wait`). first-row with deletion vectors is refused, as Paimon refuses the
schema. Every expectation is computed here from the written batches."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lakeformat as lf
from lakeformat.data.kv_read import read_kv_file
from lakeformat.errors import UnsupportedError
from lakeformat.operation.paths import PathFactory
from lakeformat.operation.scan import FileStoreScan

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string()), ("n", pa.int64())])
KIND = {0: "+I", 1: "-U", 2: "+U", 3: "-D"}


def table(tmp_path, **options) -> lf.Table:
    cat = lf.Catalog(str(tmp_path / "wh"))
    cat.create_database("db", exist_ok=True)
    return cat.create_table("db.t", SCHEMA, primary_keys=["id"],
                            options={"bucket": "2", "merge-engine": "first-row", **options})


def batch(rng: np.random.Generator, round_no: int, size: int = 40, keys: int = 120) -> pa.Table:
    ids = rng.integers(0, keys, size)  # duplicates within a batch too
    return pa.table({"id": ids, "v": [f"r{round_no}-{i}" for i in range(size)],
                     "n": np.full(size, round_no)}, schema=SCHEMA)


def first_rows(batches: list[pa.Table]) -> dict[int, tuple]:
    """The reference: each key's first row over the batches in write order."""
    seen: dict[int, tuple] = {}
    for b in batches:
        for r in b.to_pylist():
            seen.setdefault(r["id"], (r["id"], r["v"], r["n"]))
    return seen


def read_rows(t: lf.Table) -> list[tuple]:
    return sorted((r["id"], r["v"], r["n"]) for r in t.read().to_pylist())


def changelog_of(t: lf.Table, snapshot_id: int) -> list[tuple]:
    """The rows of a snapshot's changelog files: (kind, *the table's columns)."""
    snap = t.snapshot_manager.snapshot(snapshot_id)
    if snap.changelog_manifest_list is None:
        return []
    scan = FileStoreScan(t.file_io, t.path, t.table_schema)
    paths = PathFactory(t.file_io, t.path, t.table_schema)
    out = []
    for e in scan.read_entries(scan.manifest_list.read(snap.changelog_manifest_list)):
        data = read_kv_file(t.file_io, paths.data_file((), e.bucket, e.file), "parquet")
        out += [(KIND[r["_VALUE_KIND"]], *(r[c] for c in t.schema.names))
                for r in data.to_pylist()]
    return sorted(out)


def keys_above_level_0(t: lf.Table) -> list[int]:
    """Every key stored in a file above level 0 (with repeats)."""
    out: list[int] = []
    for f in t.files():
        if f["level"] > 0:
            out += pq.read_table(f["path"], columns=["id"])["id"].to_pylist()
    return out


def test_lookup_changelog_holds_first_appearances_only(tmp_path):
    t = table(tmp_path, **{"changelog-producer": "lookup"})
    rng = np.random.default_rng(7)
    batches: list[pa.Table] = []
    for round_no in range(6):
        b = batch(rng, round_no)
        before = first_rows(batches)
        batches.append(b)
        result = t.write(b)
        # the write compacted its level-0 file (lookup-wait): +I for each key new this round,
        # with the round's first row of it; nothing for keys seen in earlier rounds
        assert len(result.compaction_snapshot_ids) == 1
        new = {k: r for k, r in first_rows(batches).items() if k not in before}
        assert changelog_of(t, result.compaction_snapshot_ids[0]) == \
            sorted(("+I", *r) for r in new.values())
        assert changelog_of(t, result.snapshot_id) == []
        assert read_rows(t) == sorted(first_rows(batches).values())
        assert all(f["level"] > 0 for f in t.files())
        ids = keys_above_level_0(t)
        assert len(ids) == len(set(ids)) == len(first_rows(batches))


def test_compactions_keep_each_key_once_above_level_0(tmp_path):
    """Writes that leave their level-0 files (`lookup-wait` off) and minor compactions, then a
    full one: reads return the first rows at every step; no key is stored twice above level 0;
    the changelog over all compactions is one +I per key, with its first row."""
    t = table(tmp_path, **{"changelog-producer": "lookup", "lookup-wait": "false",
                           "num-sorted-run.compaction-trigger": "3"})
    rng = np.random.default_rng(11)
    batches: list[pa.Table] = []
    compactions: list[int] = []
    for round_no in range(9):
        batches.append(batch(rng, round_no, size=30, keys=80))
        assert t.write(batches[-1]).compaction_snapshot_ids == []
        if round_no % 3 == 2:
            compactions += t.compact(full=False).snapshot_ids
        assert read_rows(t) == sorted(first_rows(batches).values())
        ids = keys_above_level_0(t)
        assert len(ids) == len(set(ids))
    batches.append(batch(rng, 9, size=30, keys=80))
    t.write(batches[-1])
    full = t.compact().snapshot_ids
    assert len(full) == 1
    compactions += full
    # num-levels defaults to the trigger + 1: the top level is 3 here
    assert {f["level"] for f in t.files()} == {3}
    assert read_rows(t) == sorted(first_rows(batches).values())
    log = [row for sid in compactions for row in changelog_of(t, sid)]
    assert sorted(log) == sorted(("+I", *r) for r in first_rows(batches).values())


def test_first_row_without_changelog_compacts_by_lookup_too(tmp_path):
    t = table(tmp_path)
    rng = np.random.default_rng(3)
    batches: list[pa.Table] = []
    for round_no in range(5):
        batches.append(batch(rng, round_no))
        result = t.write(batches[-1])
        assert len(result.compaction_snapshot_ids) == 1
        assert changelog_of(t, result.compaction_snapshot_ids[0]) == []
        ids = keys_above_level_0(t)
        assert len(ids) == len(set(ids))
    assert read_rows(t) == sorted(first_rows(batches).values())
    # a later row of a known key is not stored at all
    stored = sum(f["row_count"] for f in t.files())
    assert stored == len(first_rows(batches))


def test_ignore_delete_drops_retracts_of_first_row(tmp_path):
    t = table(tmp_path, **{"changelog-producer": "lookup", "ignore-delete": "true"})
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"], "n": [0, 0]}, schema=SCHEMA))
    from lakeformat.merge.sort import DELETE
    from lakeformat.operation.write import write_table
    result = write_table(t.file_io, t.path, t.table_schema,
                         pa.table({"id": [1, 3], "v": ["x", "c"], "n": [1, 1]}, schema=SCHEMA),
                         np.array([DELETE, 0], dtype=np.int8))
    assert read_rows(t.refresh()) == [(1, "a", 0), (2, "b", 0), (3, "c", 1)]
    assert changelog_of(t, result.compaction_snapshot_ids[0]) == [("+I", 3, "c", 1)]


def test_first_row_with_deletion_vectors_is_refused(tmp_path):
    t = table(tmp_path, **{"deletion-vectors.enabled": "true"})
    with pytest.raises(UnsupportedError, match="first-row with deletion-vectors.enabled"):
        t.write(pa.table({"id": [1], "v": ["a"], "n": [0]}, schema=SCHEMA))
    with pytest.raises(UnsupportedError, match="first-row with deletion-vectors.enabled"):
        t.compact()
    assert t.snapshots() == [] and t.files() == []
