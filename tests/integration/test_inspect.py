"""`Table.inspect` (Paimon's system tables as Arrow tables) and `Table.history` on a table with
two partition keys, several snapshots, a compaction, a tag, an alter and a delete: column
names and types, and values checked against the table's own metadata.

The inspect tables read snapshots, manifests and files through the store (file paths and sizes
are the store's), so the tests of that table run on local disk and on the moto S3 server; the
table is built once per store for the module (`table`, module-scoped: the tests only read it,
and the one that adds a tag deletes it again). A dropped table's refusal (its directory gone
from the store) also runs on both. The other small tables (`@local_disk`: empty, unpartitioned,
several higher-level files in one run, a partition key named like a column) check how rows are
counted and named, the same above either store, on local disk only.
"""

from __future__ import annotations

import datetime as dt
import json

import pyarrow as pa
import pytest

import lakeformat as lf
from tests.support.s3server import new_bucket, s3_options

SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False),
                    pa.field("hr", pa.int32(), nullable=False),
                    pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
UTC_MS = pa.timestamp("ms", tz="UTC")
LOCAL_MS = pa.timestamp("ms")


def rows(keys: list[tuple[str, int, int]], v: str) -> pa.Table:
    return pa.table({"dt": [k[0] for k in keys], "hr": pa.array([k[1] for k in keys], pa.int32()),
                     "id": [k[2] for k in keys], "v": [v] * len(keys)}, schema=SCHEMA)


#: a test of this module that never reaches store specifics: local disk only (module docstring)
local_disk = pytest.mark.parametrize("catalog", ["local"], indirect=True)


@pytest.fixture(scope="module", params=["local", "s3"])
def table(request, tmp_path_factory) -> lf.Table:
    """Snapshots: 1 APPEND (3 partitions), 2 APPEND (an update), tag t1 on 2, schema 1 adds
    `n`, 3 APPEND, 4 COMPACT, 5 APPEND by a delete with a commit identifier. Built once per
    store for the module: tests must leave it as they found it."""
    if request.param == "local":
        catalog = lf.Catalog(str(tmp_path_factory.mktemp("inspect") / "wh"))
    else:
        server = request.getfixturevalue("s3_server")
        catalog = lf.Catalog(f"s3://{new_bucket(server)}/wh", options=s3_options(server))
    catalog.create_database("db")
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["dt", "hr", "id"],
                             partition_keys=["dt", "hr"], options={"bucket": "2"})
    t.write(rows([("2024-01-01", 0, 1), ("2024-01-01", 0, 2), ("2024-01-01", 1, 3),
                  ("2024-01-02", 0, 4)], "a"))
    t.write(rows([("2024-01-01", 0, 1)], "b"))
    t.create_tag("t1")
    t.alter([lf.SchemaChange.add_column("n", pa.int32())])
    t.write(pa.table({"dt": ["2024-01-02"], "hr": pa.array([0], pa.int32()), "id": [5],
                      "v": ["c"], "n": pa.array([7], pa.int32())}))
    t.compact(full=True, partitions=[{"dt": "2024-01-02", "hr": 0}])
    t.delete(pa.table({"dt": ["2024-01-01"], "hr": pa.array([1], pa.int32()), "id": [3]}),
             commit_user="job", commit_identifier=7)
    return t


def names_types(t: pa.Table) -> list[tuple[str, pa.DataType]]:
    return [(f.name, f.type) for f in t.schema]


def test_snapshots_table_has_paimon_columns_and_each_snapshot(table):
    snaps = table.inspect.snapshots()
    assert names_types(snaps) == [
        ("snapshot_id", pa.int64()), ("schema_id", pa.int64()), ("commit_user", pa.string()),
        ("commit_identifier", pa.int64()), ("commit_kind", pa.string()),
        ("commit_time", UTC_MS), ("base_manifest_list", pa.string()),
        ("delta_manifest_list", pa.string()), ("changelog_manifest_list", pa.string()),
        ("total_record_count", pa.int64()), ("delta_record_count", pa.int64()),
        ("changelog_record_count", pa.int64()), ("watermark", pa.int64()),
        ("next_row_id", pa.int64()), ("operation", pa.string()),
        ("properties", pa.map_(pa.string(), pa.string()))]
    expected = table.snapshots()
    got = snaps.to_pylist()
    assert [r["snapshot_id"] for r in got] == [1, 2, 3, 4, 5]
    assert [r["commit_kind"] for r in got] == ["APPEND", "APPEND", "APPEND", "COMPACT", "APPEND"]
    assert [r["schema_id"] for r in got] == [0, 0, 1, 1, 1]
    assert [r["operation"] for r in got][-1] == "delete"
    assert dict(got[-1]["properties"]) == {"lakeformat.operation": "delete"}
    for row, snap in zip(got, expected, strict=True):
        assert row["commit_time"] == dt.datetime.fromtimestamp(snap.time_millis / 1000, dt.UTC)
        assert (row["total_record_count"], row["delta_record_count"]) == (
            snap.total_record_count, snap.delta_record_count)
        assert (row["base_manifest_list"], row["delta_manifest_list"]) == (
            snap.base_manifest_list, snap.delta_manifest_list)
        assert (row["commit_user"], row["commit_identifier"]) == (snap.commit_user,
                                                                  snap.commit_identifier)
    assert got[-1]["commit_user"] == "job" and got[-1]["commit_identifier"] == 7


def test_history_is_newest_first_with_operations(table):
    history = table.history()
    assert [h["version"] for h in history] == [5, 4, 3, 2, 1]
    assert [h["snapshot_id"] for h in history] == [5, 4, 3, 2, 1]
    assert [h["operation"] for h in history] == ["delete", "COMPACT", "APPEND", "APPEND",
                                                 "APPEND"]
    newest = history[0]
    assert newest["timestamp"].tzinfo is not None and newest["commit_user"] == "job"
    assert newest["delta_record_count"] == 1 and newest["schema_id"] == 1
    assert history[0]["timestamp"] >= history[-1]["timestamp"]
    assert [h["version"] for h in table.history(limit=2)] == [5, 4]
    assert table.history(limit=0) == []


def test_files_table_lists_the_live_files_with_typed_partitions(table):
    files = table.inspect.files()
    assert names_types(files) == [
        ("partition", pa.string()), ("dt", pa.string()), ("hr", pa.int32()),
        ("bucket", pa.int32()), ("total_buckets", pa.int32()), ("file_name", pa.string()),
        ("file_path", pa.string()), ("file_format", pa.string()), ("schema_id", pa.int64()),
        ("level", pa.int32()), ("record_count", pa.int64()),
        ("file_size_in_bytes", pa.int64()), ("min_key", pa.string()), ("max_key", pa.string()),
        ("min_sequence_number", pa.int64()), ("max_sequence_number", pa.int64()),
        ("creation_time", LOCAL_MS), ("delete_row_count", pa.int64()),
        ("file_source", pa.string())]
    expected = {f["file_name"]: f for f in table.files()}
    got = files.to_pylist()
    assert sorted(r["file_name"] for r in got) == sorted(expected)
    for r in got:
        f = expected[r["file_name"]]
        assert (r["dt"], r["hr"]) == (f["partition"]["dt"], f["partition"]["hr"])
        assert r["partition"] == f"dt={r['dt']}/hr={r['hr']}"
        assert (r["bucket"], r["level"], r["record_count"], r["file_size_in_bytes"],
                r["schema_id"], r["file_path"]) == (
            f["bucket"], f["level"], f["row_count"], f["file_size"], f["schema_id"], f["path"])
        assert table.file_io.exists(r["file_path"]) and r["file_format"] == "parquet"
        assert r["creation_time"].tzinfo is None
    compacted = [r for r in got if r["dt"] == "2024-01-02"]
    assert [(r["level"], r["file_source"], r["min_key"], r["max_key"]) for r in compacted] == \
        [(5, "COMPACT", "[4]", "[5]")]
    # sorted by partition values, then bucket and level
    order = [(r["dt"], r["hr"], r["bucket"], r["level"]) for r in got]
    assert order == sorted(order)


def test_files_of_a_tag_and_of_an_old_snapshot(table):
    by_tag = table.inspect.files(tag="t1")
    assert sorted(by_tag["file_name"].to_pylist()) == sorted(
        f["file_name"] for f in table.files(tag="t1"))
    first = table.inspect.files(snapshot_id=1)
    assert first.num_rows == 3 and set(first["schema_id"].to_pylist()) == {0}
    assert sum(first["record_count"].to_pylist()) == 4
    with pytest.raises(lf.TagNotFoundError):
        table.inspect.files(tag="nope")


def test_partitions_table_sums_files_per_partition(table):
    parts = table.inspect.partitions()
    assert names_types(parts) == [
        ("partition", pa.string()), ("dt", pa.string()), ("hr", pa.int32()),
        ("record_count", pa.int64()), ("file_size_in_bytes", pa.int64()),
        ("file_count", pa.int64()), ("bucket_count", pa.int64()),
        ("last_update_time", LOCAL_MS)]
    expected: dict[tuple, list] = {}
    for f in table.files():
        expected.setdefault((f["partition"]["dt"], f["partition"]["hr"]), []).append(f)
    got = parts.to_pylist()
    assert [(r["dt"], r["hr"]) for r in got] == sorted(expected)
    for r in got:
        fs = expected[(r["dt"], r["hr"])]
        assert r["record_count"] == sum(f["row_count"] for f in fs)
        assert r["file_size_in_bytes"] == sum(f["file_size"] for f in fs)
        assert r["file_count"] == len(fs)
        assert r["bucket_count"] == len({f["bucket"] for f in fs})
        newest = max(f["creation_time"] for f in fs)
        assert r["last_update_time"] == dt.datetime(1970, 1, 1) + dt.timedelta(
            milliseconds=newest)
    # (2024-01-01, 0): the first write and the update; (2024-01-01, 1): a row and its -D
    assert [(r["partition"], r["record_count"], r["file_count"]) for r in got] == [
        ("dt=2024-01-01/hr=0", 3, 2), ("dt=2024-01-01/hr=1", 2, 2),
        ("dt=2024-01-02/hr=0", 2, 1)]


def test_buckets_table_counts_sorted_runs(table):
    got = table.inspect.buckets().to_pylist()
    assert [k for k in got[0]] == ["partition", "dt", "hr", "bucket", "total_buckets",
                                   "file_count", "sorted_runs", "level0_files", "max_level",
                                   "record_count", "file_size_in_bytes", "last_update_time"]
    shape = {(r["dt"], r["hr"]): (r["file_count"], r["sorted_runs"], r["level0_files"],
                                  r["max_level"]) for r in got}
    assert shape == {("2024-01-01", 0): (2, 2, 2, 0), ("2024-01-01", 1): (2, 2, 2, 0),
                     ("2024-01-02", 0): (1, 1, 0, 5)}
    assert all(r["total_buckets"] == 2 for r in got)
    before = {(r["dt"], r["hr"]): r["sorted_runs"]
              for r in table.inspect.buckets(snapshot_id=3).to_pylist()}
    assert before[("2024-01-02", 0)] == 2


def test_manifests_table_describes_base_and_delta_manifests(table):
    manifests = table.inspect.manifests()
    assert names_types(manifests) == [
        ("file_name", pa.string()), ("file_size", pa.int64()), ("num_added_files", pa.int64()),
        ("num_deleted_files", pa.int64()), ("schema_id", pa.int64()),
        ("min_partition_stats", pa.string()), ("max_partition_stats", pa.string()),
        ("min_bucket", pa.int32()), ("max_bucket", pa.int32()), ("min_level", pa.int32()),
        ("max_level", pa.int32()), ("min_row_id", pa.int64()), ("max_row_id", pa.int64()),
        ("manifest_list", pa.string())]
    got = manifests.to_pylist()
    delta = [r for r in got if r["manifest_list"] == "delta"]
    # snapshot 5's delta: the delete's one new file in dt=2024-01-01/hr=1
    assert [(r["num_added_files"], r["num_deleted_files"], r["min_partition_stats"],
             r["max_partition_stats"]) for r in delta] == [(1, 0, "[2024-01-01, 1]",
                                                            "[2024-01-01, 1]")]
    assert {r["manifest_list"] for r in got} == {"base", "delta"}
    live = sum(r["num_added_files"] - r["num_deleted_files"] for r in got)
    assert live == len(table.files())
    for r in got:
        assert r["file_size"] == table.file_io.status(
            f"{table.path}/manifest/{r['file_name']}").size
    first = table.inspect.manifests(snapshot_id=1).to_pylist()
    assert [(r["manifest_list"], r["num_added_files"]) for r in first] == [("delta", 3)]
    assert first[0]["min_partition_stats"] == "[2024-01-01, 0]"
    assert first[0]["max_partition_stats"] == "[2024-01-02, 1]"


def test_schemas_table_has_each_version(table):
    schemas = table.inspect.schemas()
    assert names_types(schemas) == [
        ("schema_id", pa.int64()), ("fields", pa.string()),
        ("partition_keys", pa.list_(pa.string())), ("primary_keys", pa.list_(pa.string())),
        ("options", pa.string()), ("comment", pa.string()), ("update_time", UTC_MS)]
    got = schemas.to_pylist()
    assert [r["schema_id"] for r in got] == [0, 1]
    assert [[f["name"] for f in json.loads(r["fields"])] for r in got] == [
        ["dt", "hr", "id", "v"], ["dt", "hr", "id", "v", "n"]]
    assert json.loads(got[1]["fields"])[-1]["type"] == "INT"
    assert all(r["partition_keys"] == ["dt", "hr"] for r in got)
    assert all(r["primary_keys"] == ["dt", "hr", "id"] for r in got)
    assert json.loads(got[0]["options"])["bucket"] == "2"
    for r, s in zip(got, table.schemas(), strict=True):
        assert r["update_time"] == dt.datetime.fromtimestamp(s.time_millis / 1000, dt.UTC)


def test_tags_table(table):
    table.create_tag("kept", snapshot_id=4, time_retained="1 h")
    try:
        tags = table.inspect.tags()
        info = {i.name: i for i in table.list_tags()}
    finally:  # the module's other tests see the table as built
        table.delete_tag("kept")
    assert names_types(tags) == [
        ("tag_name", pa.string()), ("snapshot_id", pa.int64()), ("schema_id", pa.int64()),
        ("commit_time", UTC_MS), ("record_count", pa.int64()), ("create_time", LOCAL_MS),
        ("time_retained", pa.duration("ms"))]
    got = tags.to_pylist()
    snaps = {s.id: s for s in table.snapshots()}
    assert [(r["tag_name"], r["snapshot_id"], r["schema_id"]) for r in got] == [
        ("t1", 2, 0), ("kept", 4, 1)]
    assert [r["record_count"] for r in got] == [snaps[2].total_record_count,
                                               snaps[4].total_record_count]
    assert got[0]["commit_time"] == dt.datetime.fromtimestamp(snaps[2].time_millis / 1000,
                                                              dt.UTC)
    assert [r["time_retained"] for r in got] == [None, dt.timedelta(hours=1)]
    assert got[0]["create_time"] == info["t1"].create_time.replace(
        microsecond=info["t1"].create_time.microsecond // 1000 * 1000)


@local_disk
def test_inspect_of_an_empty_table_gives_empty_typed_tables(catalog):
    t = catalog.create_table("db.empty", SCHEMA, primary_keys=["dt", "hr", "id"],
                             partition_keys=["dt", "hr"], options={"bucket": "1"})
    for name in ("snapshots", "files", "partitions", "buckets", "manifests", "tags"):
        got = getattr(t.inspect, name)()
        assert got.num_rows == 0, name
    assert t.inspect.files().schema.field("hr").type == pa.int32()
    assert t.inspect.schemas().num_rows == 1 and t.history() == []


@local_disk
def test_unpartitioned_table_has_one_partition_row(catalog):
    t = catalog.create_table("db.flat", pa.schema([pa.field("id", pa.int64(), nullable=False),
                                                    ("v", pa.string())]),
                             primary_keys=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    parts = t.inspect.partitions().to_pylist()
    assert [(p["partition"], p["record_count"], p["file_count"]) for p in parts] == [("", 2, 1)]
    assert t.inspect.files().column_names[:2] == ["partition", "bucket"]


def test_inspect_of_a_dropped_table_raises(catalog):
    t = catalog.create_table("db.gone", SCHEMA, primary_keys=["dt", "hr", "id"],
                             options={"bucket": "1"})
    catalog.drop_table("db.gone")
    with pytest.raises(lf.TableNotFoundError):
        t.inspect.files()
    with pytest.raises(lf.TableNotFoundError):
        t.history()


@local_disk
def test_sorted_runs_count_each_higher_level_once(catalog):
    t = catalog.create_table("db.runs", SCHEMA, primary_keys=["dt", "hr", "id"],
                             options={"bucket": "1", "target-file-size": "4 kb"})
    n = 5000
    t.write(pa.table({"dt": ["d"] * n, "hr": pa.array([0] * n, pa.int32()),
                      "id": list(range(n)), "v": [f"value-{i}" for i in range(n)]},
                     schema=SCHEMA))
    t.compact(full=True)  # one sorted run, rolled into several files
    t.write(rows([("d", 0, 1)], "new"))
    [bucket] = t.inspect.buckets().to_pylist()
    top = [f for f in t.files() if f["level"] > 0]
    assert len(top) > 1 and bucket["file_count"] == len(top) + 1
    assert (bucket["sorted_runs"], bucket["level0_files"]) == (2, 1)


@local_disk
def test_a_partition_key_named_like_an_inspect_column_gets_a_prefix(catalog):
    schema = pa.schema([pa.field("level", pa.string(), nullable=False),
                        pa.field("id", pa.int64(), nullable=False)])
    t = catalog.create_table("db.clash", schema, primary_keys=["level", "id"],
                             partition_keys=["level"], options={"bucket": "1"})
    t.write(pa.table({"level": ["gold", "gold"], "id": [1, 2]}, schema=schema))
    [f] = t.inspect.files().to_pylist()
    assert (f["partition"], f["partition_level"], f["level"]) == ("level=gold", "gold", 0)
    [p] = t.inspect.partitions().to_pylist()
    assert (p["level"], p["record_count"]) == ("gold", 2)  # no clash in $partitions
