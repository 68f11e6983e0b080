"""The catalog's metadata cache (one per FileIO) on the moto S3 server: never stale.

Manifest lists, manifests and index manifests have unique names and are cached by path; the
files whose names come back — `snapshot-N` after a rollback, `schema-N` of a table dropped and
created again — are held only under what a listing shows of them, or within one job. Each test
changes a table behind a catalog's back (the same catalog, a second one in the process) and
reads through the catalog that had cached the old state.
"""

from __future__ import annotations

import threading

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.errors import InvalidOptionError
from lakeformat.options import parse_memory_size
from lakeformat.storage.metadata_cache import MAX_SIZE_OPTION, MetadataCache

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def rows(ids, tag: str) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [f"{tag}{i}" for i in ids]})


def content(t: lf.Table) -> dict[int, str]:
    return {r["id"]: r["v"] for r in t.read().to_pylist()}


def catalogs(s3_warehouse, n: int = 2, **options: str) -> list[lf.Catalog]:
    uri, base = s3_warehouse
    return [lf.Catalog(uri, {**base, **options}) for _ in range(n)]


def make(cat: lf.Catalog, schema: pa.Schema = SCHEMA, name: str = "db.t") -> lf.Table:
    cat.create_database("db", exist_ok=True)
    return cat.create_table(name, schema, primary_keys=["id"], options={"bucket": "2"})


@pytest.mark.parametrize("who", ["same", "other"])
def test_rollback_reusing_snapshot_ids(s3_warehouse, who):
    """Snapshots 2 and 3 are rolled back and new ones committed under the same ids (by this
    catalog, or by a second one); the first catalog, which read the old 2 and 3, reads and
    writes on the new ones."""
    mine, other = catalogs(s3_warehouse)
    t = make(mine)
    t.write(rows(range(4), "a"))
    t.write(rows(range(2, 6), "b"))
    t.write(rows(range(5, 8), "c"))
    assert content(t) == {0: "a0", 1: "a1", 2: "b2", 3: "b3", 4: "b4", 5: "c5", 6: "c6", 7: "c7"}
    actor = (mine if who == "same" else other).get_table("db.t")
    actor.rollback_to(1)
    actor.write(rows([1, 9], "d"))  # snapshot 2 again, another content
    actor.write(rows([0], "e"))  # snapshot 3 again
    want = {0: "e0", 1: "d1", 2: "a2", 3: "a3", 9: "d9"}
    assert content(t) == want  # the Table object held since before
    assert content(mine.get_table("db.t")) == want
    assert [s.id for s in t.snapshots()] == [1, 2, 3]
    t.write(rows([3], "f"))  # a commit planned on the new snapshot 3, by the first catalog
    assert content(other.get_table("db.t")) == {**want, 3: "f3"}


def test_write_planned_before_a_rollback_by_another_catalog(s3_warehouse):
    """A job plans on snapshot 2; another catalog rolls back to 1 and commits a new 2: the
    job's commit must not build on the 2 it planned on (landing 3 does not prove it)."""
    from lakeformat.operation.write import WriteJob

    mine, other = catalogs(s3_warehouse)
    t = make(mine)
    t.write(rows(range(3), "a"))
    t.write(rows(range(3), "b"))
    t.refresh()
    job = WriteJob(t.file_io, t.path, t.table_schema, rows([7], "j"), None, False, None, None,
                   table_name=t.name)
    job.plan()
    job.execute()
    theirs = other.get_table("db.t")
    theirs.rollback_to(1)
    theirs.write(rows([1], "x"))
    job.commit()
    assert content(other.get_table("db.t")) == {0: "a0", 1: "x1", 2: "a2", 7: "j7"}


def test_table_dropped_and_created_again(s3_warehouse):
    """A catalog that read a table reads the table created anew under its name by another
    catalog: its schema file has the same name and, here, the same size."""
    mine, other = catalogs(s3_warehouse)
    t = make(mine)
    t.write(rows(range(5), "old"))
    assert content(mine.get_table("db.t")) == {i: f"old{i}" for i in range(5)}
    other.drop_table("db.t")
    renamed = pa.schema([pa.field("id", pa.int64(), nullable=False), ("w", pa.string())])
    fresh = make(other, renamed)
    fresh.write(pa.table({"id": pa.array([1, 2], pa.int64()), "w": ["n1", "n2"]}))
    again = mine.get_table("db.t")
    assert again.schema.names == ["id", "w"]
    assert again.read().sort_by("id").to_pylist() == [{"id": 1, "w": "n1"}, {"id": 2, "w": "n2"}]
    again.write(pa.table({"id": pa.array([3], pa.int64()), "w": ["n3"]}))
    assert len(other.get_table("db.t").read()) == 3
    # and dropped and created again by the catalog itself
    mine.drop_table("db.t")
    t = make(mine)
    t.write(rows([4], "z"))
    assert content(other.get_table("db.t")) == {4: "z4"}


def test_two_catalogs_writing_one_table_alternately(s3_warehouse):
    a, b = catalogs(s3_warehouse)
    make(a)
    ta, tb = a.get_table("db.t"), b.get_table("db.t")
    want: dict[int, str] = {}
    for i in range(6):
        writer = ta if i % 2 == 0 else tb
        writer.write(rows([i, i + 10], f"r{i}-"))
        want.update({i: f"r{i}-{i}", i + 10: f"r{i}-{i + 10}"})
        assert content(ta) == want
        assert content(tb) == want
    assert a.file_io.metadata_cache.stats()["hits"] > 0


def test_a_tiny_bound_evicts_and_still_reads_correctly(s3_warehouse):
    (cat,) = catalogs(s3_warehouse, 1, **{MAX_SIZE_OPTION: "256kb"})
    t = make(cat)
    for i in range(8):
        t.write(rows(range(i, i + 3), f"w{i}-"))
    want = {}
    for i in range(8):
        want.update({k: f"w{i}-{k}" for k in range(i, i + 3)})
    assert content(cat.get_table("db.t")) == want
    stats = cat.file_io.metadata_cache.stats()
    assert stats["evictions"] > 0
    assert stats["bytes"] <= 256 * 1024


def test_zero_turns_the_cache_off(s3_warehouse):
    (cat,) = catalogs(s3_warehouse, 1, **{MAX_SIZE_OPTION: "0"})
    t = make(cat)
    t.write(rows(range(3), "a"))
    t.write(rows(range(2, 4), "b"))
    assert content(cat.get_table("db.t")) == {0: "a0", 1: "a1", 2: "b2", 3: "b3"}
    cache = cat.file_io.metadata_cache
    assert not cache.enabled
    assert cache.stats()["entries"] == 0 and cache.stats()["hits"] == 0


def test_a_malformed_bound_is_refused(s3_warehouse):
    with pytest.raises(InvalidOptionError, match=MAX_SIZE_OPTION):
        catalogs(s3_warehouse, 1, **{MAX_SIZE_OPTION: "lots"})


def test_many_threads_reading_through_one_catalog(s3_warehouse):
    (cat,) = catalogs(s3_warehouse, 1)
    t = make(cat)
    for i in range(4):
        t.write(rows(range(i * 5, i * 5 + 5), f"p{i}-"))
    want = content(t)
    errors: list[BaseException] = []
    seen: list[dict[int, str]] = []
    lock = threading.Lock()

    def reader() -> None:
        try:
            for _ in range(3):
                got = content(cat.get_table("db.t"))
                with lock:
                    seen.append(got)
        except BaseException as e:  # noqa: BLE001 - reported below
            with lock:
                errors.append(e)

    threads = [threading.Thread(target=reader) for _ in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    assert len(seen) == 24 and all(s == want for s in seen)


# -- the cache itself --------------------------------------------------------------------------
def test_lru_by_bytes_and_validators() -> None:
    cache = MetadataCache(4000)
    cache.put("a", ["A"], 1000)
    cache.put(("b", "kind"), ["B"], 1000)
    cache.put("c", ["C"], 1000, validator=(1, 2.0, "etag1"))
    assert cache.get("a") == ["A"]  # a is now the most recent
    cache.put("d", ["D"], 1000)  # at the bound
    cache.put("e", ["E"], 10)  # over it: b, the least recent, goes
    assert cache.get(("b", "kind")) is None
    assert cache.get("a") == ["A"] and cache.get("e") == ["E"]
    assert cache.get("c", (1, 2.0, "etag2")) is None  # another version: dropped
    assert cache.get("c", (1, 2.0, "etag1")) is None
    cache.put("big", ["X"], 1001)  # more than a quarter of the bound: not kept
    assert cache.get("big") is None
    cache.put(("s3://b/t/manifest/m-1", "records"), [1], 10)
    cache.invalidate_path("s3://b/t/manifest/m-1")
    assert cache.get(("s3://b/t/manifest/m-1", "records")) is None
    cache.invalidate_prefix("")
    assert cache.stats()["entries"] == 0 and cache.stats()["bytes"] == 0
    assert parse_memory_size("64 mb") == 64 << 20 and parse_memory_size("512kb") == 512 << 10
    assert parse_memory_size("0") == 0
    with pytest.raises(InvalidOptionError):
        parse_memory_size("-1", MAX_SIZE_OPTION)
