"""changelog-producer=lookup: a compaction of level-0 files writes, per key with a level-0
record, the change against the key's newest record above level 0 (+I, -U/+U, -D), as Java's
lookup compaction does; `changelog-producer.row-deduplicate` leaves unchanged rows out.
Lookup tables merge a key's level-0 records with only its newest record above level 0."""

from __future__ import annotations

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.data.kv_read import read_kv_file
from lakeformat.operation.paths import PathFactory
from lakeformat.operation.scan import FileStoreScan
from tests.integration.test_compact_changelog import KIND
from tests.support.deletion_vectors import live_entries

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string()), ("n", pa.int64())])


def changelog_of(t: lf.Table, snap) -> list[tuple]:
    scan = FileStoreScan(t.file_io, t.path, t.table_schema)
    paths = PathFactory(t.file_io, t.path, t.table_schema)
    if snap.changelog_manifest_list is None:
        return []
    out: list[tuple] = []
    for e in scan.read_entries(scan.manifest_list.read(snap.changelog_manifest_list)):
        assert e.file.file_name.startswith("changelog-")
        data = read_kv_file(t.file_io, paths.data_file((), e.bucket, e.file), "parquet")
        out += [(KIND[r["_VALUE_KIND"]], r["id"], r["v"]) for r in data.to_pylist()]
    return sorted(out, key=lambda r: (r[1], r[0] not in ("-U", "-D")))


def rows(t) -> list[tuple]:
    return sorted((r["id"], r["v"], r["n"]) for r in t.read().to_pylist())


def data(ids, v, n=None) -> pa.Table:
    return pa.table({"id": list(ids), "v": [f"{v}{i}" if v else None for i in ids],
                     "n": [n] * len(ids)}, schema=SCHEMA)


def table(tmp_path, **options) -> lf.Table:
    """A lookup table whose writes leave level 0 for the compactions the tests run (`lookup-wait`
    off: the writer returns without compacting)."""
    cat = lf.Catalog(str(tmp_path))
    cat.create_database("db")
    return cat.create_table("db.t", SCHEMA, primary_keys=["id"],
                            options={"bucket": "1", "changelog-producer": "lookup",
                                     "changelog-producer.lookup-wait": "false", **options})


def test_writes_produce_their_changelog_before_they_return(tmp_path):
    t = table(tmp_path, **{"changelog-producer.lookup-wait": "true"})
    first = t.write(data(range(5), "a", 1))
    assert len(first.compaction_snapshot_ids) == 1
    assert {e.file.level for e in live_entries(t)} == {5}
    snap = t.snapshot_manager.snapshot(first.compaction_snapshot_ids[0])
    assert changelog_of(t, snap) == [("+I", i, f"a{i}") for i in range(5)]
    second = t.write(data([1, 9], "b", 2))
    snap = t.snapshot_manager.snapshot(second.compaction_snapshot_ids[0])
    assert changelog_of(t, snap) == [("-U", 1, "a1"), ("+U", 1, "b1"), ("+I", 9, "b9")]
    assert 0 not in {e.file.level for e in live_entries(t)}


def test_lookup_changelog_against_the_levels_above(tmp_path):
    t = table(tmp_path)
    n = 20_000  # the top run must outweigh the three small runs below (size ratio)
    t.write(pa.table({"id": list(range(n)), "v": [f"a{i}" for i in range(n)],
                      "n": [1] * n}, schema=SCHEMA))
    t.compact(full=False)  # nothing above yet: every key is new
    snap = t.latest_snapshot()
    assert snap.commit_kind == "COMPACT" and snap.changelog_record_count == n
    t.write(data([1, 2, 50_000], "b", 2))
    t.delete(pa.table({"id": [3]}))
    t.write(data([4], "a", 1).set_column(1, "v", pa.array(["a4"])))  # the same value again
    t.compact(full=False)
    snap = t.latest_snapshot()
    top = max(e.file.level for e in live_entries(t))
    assert {e.file.level for e in live_entries(t)} == {top, top - 1}  # a level below the top
    assert changelog_of(t, snap) == [
        ("-U", 1, "a1"), ("+U", 1, "b1"), ("-U", 2, "a2"), ("+U", 2, "b2"), ("-D", 3, "a3"),
        ("-U", 4, "a4"), ("+U", 4, "a4"), ("+I", 50_000, "b50000")]
    assert len(rows(t)) == n
    # a key deleted and written again between compactions: +I against nothing above
    t.write(data([3], "c", 3))
    t.compact(full=False)
    assert changelog_of(t, t.latest_snapshot()) == [("+I", 3, "c3")]


def test_row_deduplicate_leaves_unchanged_rows_out(tmp_path):
    t = table(tmp_path, **{"changelog-producer.row-deduplicate": "true",
                           "changelog-producer.row-deduplicate-ignore-fields": "n"})
    t.write(data(range(50), "a", 1))
    t.compact(full=False)
    t.write(data([1], "a", 1))  # unchanged
    t.write(data([2], "a", 9))  # only an ignored field changed
    t.write(data([3], "z", 1))
    t.compact(full=False)
    assert changelog_of(t, t.latest_snapshot()) == [("-U", 3, "a3"), ("+U", 3, "z3")]
    assert (2, "a2", 9) in rows(t)


def test_lookup_tables_merge_only_the_newest_record_above_level_0(tmp_path):
    """An aggregate kept at two levels must not be added up twice: level 4 holds the result
    of level 5's value plus later ones."""
    t = table(tmp_path, **{"merge-engine": "aggregation", "fields.n.aggregate-function": "sum",
                           "fields.v.aggregate-function": "last_non_null_value"})
    t.write(pa.table({"id": list(range(3000)), "v": ["x"] * 3000, "n": [1] * 3000},
                     schema=SCHEMA))
    t.compact(full=False)
    t.write(data([7], None, 10))
    t.compact(full=False)  # level 0 goes below the top, merged with the top's record
    levels = sorted({e.file.level for e in live_entries(t)})
    assert len(levels) == 2
    got = {r[0]: r for r in rows(t)}
    assert got[7] == (7, "x", 11) and got[8] == (8, "x", 1)
    t.write(data([7], None, 100))
    assert {r[0]: r for r in rows(t)}[7] == (7, "x", 111)  # merge-on-read, level 0 included
    t.compact(full=True)
    assert {r[0]: r for r in rows(t)}[7] == (7, "x", 111)


@pytest.mark.parametrize("engine", ["deduplicate", "partial-update"])
def test_lookup_compactions_keep_reads_equal_to_a_model(tmp_path, engine):
    import random

    rng = random.Random(7)
    t = table(tmp_path, **{"merge-engine": engine, "num-sorted-run.compaction-trigger": "3"})
    model: dict[int, tuple] = {}
    for step in range(12):
        ids = rng.sample(range(400), 60)
        n = step
        t.write(pa.table({"id": ids, "v": [f"s{step}" for _ in ids], "n": [n] * len(ids)},
                         schema=SCHEMA))
        for i in ids:
            model[i] = (i, f"s{step}", n)
        if step % 3 == 2:
            gone = rng.sample(sorted(model), 10)
            if engine == "deduplicate":
                t.delete(pa.table({"id": gone}))
                for i in gone:
                    del model[i]
        t.compact(full=False)
        assert rows(t) == sorted(model.values()), step
