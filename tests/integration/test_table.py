"""The table suite: write, read, update, delete, overwrite, merge engines, options and refusals.

Runs on local disk; the tests that reach what differs between the stores run on the moto S3
server (over HTTP on 127.0.0.1) as well: a first write and read, unknown databases and tables
(a missing object, not a missing directory), corrupt metadata files named by their S3 path,
racing writers (conditional writes), listing and dropping tables (listing, deletes) and the
null partition's directory name in S3 keys. The others (`@local_disk`) exercise merging,
bucketing, file rolling, manifest merging, input checks and option parsing: code that runs the
same above either store, whose S3 reads and writes are the ones the tests above and
`test_storage_s3.py`, `test_compact_s3.py` and `test_maintenance_s3.py` make.
"""

from __future__ import annotations

import threading
import warnings
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lakeformat as lf
from lakeformat.meta.bucket import bucket_ids
from lakeformat.schema.types import bigint

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("name", pa.string()),
                    ("price", pa.decimal128(10, 2)), ("qty", pa.int32())])


def rows(dt, ids, names=None, prices=None, qty=None) -> pa.Table:
    n = len(ids)
    from decimal import Decimal
    return pa.table({
        "dt": [dt] * n if isinstance(dt, str) else dt, "id": ids,
        "name": names if names is not None else [f"n{i}" for i in ids],
        "price": [Decimal(p) if p is not None else None for p in prices]
        if prices is not None else [Decimal(i) / 4 for i in ids],
        "qty": qty if qty is not None else [i % 7 for i in ids]}, schema=SCHEMA)


#: a test of this module that never reaches store specifics: local disk only (module docstring)
local_disk = pytest.mark.parametrize("catalog", ["local"], indirect=True)


def as_dict(t: pa.Table, key=("dt", "id")) -> dict:
    return {tuple(r[k] for k in key): r for r in t.to_pylist()}


def make_table(catalog, name="db.t", **options) -> lf.Table:
    opts = {"bucket": "2", **options}
    return catalog.create_table(name, SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                                options=opts)


def table_files(t: lf.Table) -> set[str]:
    return {s.path for s in t.file_io.list_recursive(t.path)}


def test_write_then_read_returns_rows(catalog):
    t = make_table(catalog)
    data = rows("2024-01-01", list(range(100)))
    res = t.write(data)
    assert res.snapshot_id == 1 and res.commit_kind == "APPEND" and res.rows_written == 100
    out = t.read()
    assert as_dict(out) == as_dict(data)
    assert out.schema.names == SCHEMA.names
    assert [s.id for s in t.snapshots()] == [1]
    assert t.snapshots()[0].total_record_count == 100


@local_disk
def test_update_keeps_latest_and_sequence_continues_per_bucket(catalog):
    t = make_table(catalog)
    t.write(rows("2024-01-01", [1, 2, 3, 4]))
    first = {f["file_name"] for f in t.files()}
    t.write(rows("2024-01-01", [2, 3], names=["two", "three"]))
    got = as_dict(t.read())
    assert got[("2024-01-01", 2)]["name"] == "two"
    assert got[("2024-01-01", 1)]["name"] == "n1"
    assert len(got) == 4
    by_bucket: dict[int, list[dict]] = {}
    for f in t.files():
        by_bucket.setdefault(f["bucket"], []).append(f)
    for files in by_bucket.values():
        old = [f for f in files if f["file_name"] in first]
        new = [f for f in files if f["file_name"] not in first]
        if old and new:  # the second commit continues after the bucket's previous maximum
            assert min(f["min_sequence_number"] for f in new) == \
                max(f["max_sequence_number"] for f in old) + 1
    assert any(len(fs) == 2 for fs in by_bucket.values())


@local_disk
def test_rows_land_in_paimon_hash_bucket(catalog):
    import pyarrow.parquet as pq
    t = make_table(catalog, bucket="4")
    ids = list(range(200))
    t.write(rows("2024-01-01", ids))
    expected = bucket_ids([pa.array(ids, pa.int64())], [bigint(False)], 4)
    want = {i: int(b) for i, b in zip(ids, expected)}
    assert len(t.files()) == 4
    for f in t.files():
        ids_in_file = pq.read_table(t.file_io.open_input(f["path"]), columns=["id"])["id"]
        assert {want[i] for i in ids_in_file.to_pylist()} == {f["bucket"]}


@local_disk
def test_delete_removes_keys(catalog):
    t = make_table(catalog)
    t.write(rows("2024-01-01", [1, 2, 3]))
    res = t.delete(pa.table({"dt": ["2024-01-01"], "id": [2]}))
    assert res.snapshot_id == 2
    assert sorted(as_dict(t.read())) == [("2024-01-01", 1), ("2024-01-01", 3)]
    assert t.snapshots()[-1].delta_record_count == 1  # the -D row is a record too
    # the old snapshot still has the key
    assert ("2024-01-01", 2) in as_dict(t.read(snapshot_id=1))


@local_disk
def test_rowkind_field_gives_row_kinds(catalog):
    schema = SCHEMA.append(pa.field("rk", pa.string()))
    t = catalog.create_table("db.rk", schema, primary_keys=["dt", "id"], partition_keys=["dt"],
                             options={"bucket": "2", "rowkind.field": "rk"})
    base = rows("d", [1, 2, 3])
    t.write(base.append_column("rk", pa.array(["+I"] * 3)))
    change = rows("d", [1, 2], names=["old1", "new2"])
    t.write(change.append_column("rk", pa.array(["-D", "+U"])))
    got = as_dict(t.read())
    assert sorted(got) == [("d", 2), ("d", 3)]
    assert got[("d", 2)]["name"] == "new2"
    with pytest.raises(lf.SchemaMismatchError, match="rk"):
        t.write(rows("d", [5]).append_column("rk", pa.array(["XX"])))


@local_disk
def test_overwrite_replaces_only_written_partitions(catalog):
    t = make_table(catalog)
    t.write(pa.concat_tables([rows("a", [1, 2, 3]), rows("b", [1, 2])]))
    res = t.write(rows("a", [9]), overwrite=True)
    assert res.commit_kind == "OVERWRITE"
    assert sorted(as_dict(t.read())) == [("a", 9), ("b", 1), ("b", 2)]
    assert t.snapshots()[-1].total_record_count == 3
    # overwrite again with the same data is idempotent for readers
    t.write(rows("a", [9]), overwrite=True)
    assert sorted(as_dict(t.read())) == [("a", 9), ("b", 1), ("b", 2)]


@local_disk
def test_partial_update_merges_columns_of_two_streams(catalog):
    t = catalog.create_table(
        "db.wide", pa.schema([("id", pa.int64()), ("a", pa.string()), ("b", pa.int64())]),
        primary_keys=["id"], options={"bucket": "2", "merge-engine": "partial-update"})
    t.write(pa.table({"id": [1, 2], "a": ["x", "y"], "b": pa.nulls(2, pa.int64())}))
    t.write(pa.table({"id": [1, 3], "a": pa.nulls(2, pa.string()), "b": [10, 30]}))
    t.write(pa.table({"id": [2, 2], "a": [None, "y2"], "b": [20, None]}))  # merged in-batch
    got = {r["id"]: (r["a"], r["b"]) for r in t.read().to_pylist()}
    assert got == {1: ("x", 10), 2: ("y2", 20), 3: (None, 30)}


@local_disk
def test_time_travel_and_partition_filter(catalog):
    t = make_table(catalog)
    t.write(rows("a", [1]))
    t.write(pa.concat_tables([rows("b", [1, 2]), rows("c", [5])]))
    assert t.read(snapshot_id=1).num_rows == 1
    only_b = t.read(filter=[("dt", "=", "b")])
    assert sorted(as_dict(only_b)) == [("b", 1), ("b", 2)]
    in_filter = t.read(filter=[("dt", "in", ["a", "c"])], columns=["id"])
    assert sorted(in_filter["id"].to_pylist()) == [1, 5] and in_filter.column_names == ["id"]
    expr = t.read(filter=pc.field("qty") > 1)
    assert sorted(expr["id"].to_pylist()) == [2, 5]


@local_disk
def test_rolling_files_at_target_size(catalog):
    t = make_table(catalog, **{"target-file-size": "10 kb", "bucket": "1"})
    data = rows("a", list(range(20000)))
    t.write(data)
    files = t.files()
    assert len(files) > 2
    ranges = sorted((f["min_sequence_number"], f["max_sequence_number"]) for f in files)
    assert ranges[0][0] == 0 and ranges[-1][1] == 19999
    assert sum(f["row_count"] for f in files) == 20000
    assert t.read().num_rows == 20000


@local_disk
def test_manifests_are_merged_so_metadata_stays_bounded(catalog):
    t = make_table(catalog, **{"manifest.merge-min-count": "3", "bucket": "1"})
    for i in range(12):
        t.write(rows("a", [i]))
    from lakeformat.operation.scan import FileStoreScan
    scan = FileStoreScan(t.file_io, t.path, t.table_schema)
    base = scan.manifest_list.read(t.latest_snapshot().base_manifest_list)
    assert len(base) < 6
    assert sorted(t.read()["id"].to_pylist()) == list(range(12))


@pytest.mark.parametrize("bad,match", [
    (pa.table({"dt": ["a"], "name": ["x"]}), r"missing primary-key column\(s\) \['id'\]"),
    (rows("a", [1]).append_column("zzz", pa.array([1])), "unexpected"),
    (rows("a", [1]).set_column(4, "qty", pa.array(["x"])), "qty"),
    (rows("a", [1]).set_column(1, "id", pa.array([None], pa.int64())), "id"),
])
@local_disk
def test_bad_input_is_refused_and_table_unchanged(catalog, bad, match):
    t = make_table(catalog)
    t.write(rows("a", [1, 2]))
    before = table_files(t)
    with pytest.raises(lf.SchemaMismatchError, match=match):
        t.write(bad)
    assert table_files(t) == before
    assert [s.id for s in t.snapshots()] == [1]


def test_unknown_things_raise_clear_errors(catalog):
    with pytest.raises(lf.TableNotFoundError, match="db.nope"):
        catalog.get_table("db.nope")
    with pytest.raises(lf.DatabaseNotFoundError, match="nodb"):
        catalog.get_table("nodb.t")
    with pytest.raises(lf.InvalidIdentifierError):
        catalog.get_table("db.../x")
    with pytest.raises(lf.InvalidOptionError, match="bucket"):
        make_table(catalog, bucket="four")
    with pytest.raises(lf.UnsupportedError, match="merge-engine"):
        make_table(catalog, name="db.agg", **{"merge-engine": "no-such-engine"})
    with pytest.raises(lf.InvalidOptionError, match="sequence.field"):
        make_table(catalog, name="db.seq", **{"sequence.field": "no_such_column"})
    assert catalog.list_tables("db") == []


@local_disk
def test_create_table_without_bucket(catalog):
    """Paimon's default, dynamic bucket, also with a key that leaves out the partition
    (cross-partition upsert: a key moves to the partition it is written to)."""
    t = catalog.create_table("db.nobucket", SCHEMA, primary_keys=["dt", "id"])
    assert "bucket" not in t.table_schema.options
    t.write(rows("a", [1, 2]))
    assert t.read().num_rows == 2 and {f["bucket"] for f in t.files()} == {0}
    cross = catalog.create_table("db.cross", SCHEMA, primary_keys=["id"], partition_keys=["dt"])
    cross.write(rows("a", [1, 2]))
    cross.write(rows("b", [2, 3]))
    assert sorted((r["dt"], r["id"]) for r in cross.read().to_pylist()) == [
        ("a", 1), ("b", 2), ("b", 3)]


@local_disk
def test_table_option_typo_warns_naming_the_likely_key(catalog):
    with pytest.warns(lf.OptionNameWarning, match="'merge-engin'.*'merge-engine'"):
        t = catalog.create_table("db.typo", SCHEMA, primary_keys=["dt", "id"],
                                 options={"bucket": "1", "merge-engin": "first-row",
                                          "my.team.owner": "data-eng"})
    assert t.options["merge-engin"] == "first-row"  # stored as given, as Paimon stores it
    with pytest.warns(lf.OptionNameWarning, match="'fields.name.sequence-group'"):
        t.alter([lf.SchemaChange.set_option("fields.name.sequence-grop", "x")])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a user's own key and Paimon's keys: no warning
        t.alter([lf.SchemaChange.set_option("my.team.cost-center", "42"),
                 lf.SchemaChange.set_option("snapshot.num-retained.min", "3")])


def test_corrupt_snapshot_and_manifest_name_the_file(catalog):
    t = make_table(catalog)
    t.write(rows("a", [1]))
    snap = t.latest_snapshot()
    manifest = t.file_io.join(t.path, "manifest", snap.delta_manifest_list)
    t.file_io.write_bytes(manifest, b"not avro at all")
    with pytest.raises(lf.CorruptFileError, match=snap.delta_manifest_list):
        t.read()
    path = t.snapshot_manager.snapshot_path(1)
    t.file_io.write_bytes(path, b"{ broken json")
    with pytest.raises(lf.CorruptFileError, match="snapshot-1"):
        t.read()


def test_racing_writers_all_land_with_consecutive_snapshots(catalog):
    make_table(catalog, bucket="1")
    barrier = threading.Barrier(4)

    def writer(i: int) -> int:
        t = catalog.get_table("db.t")
        barrier.wait()
        return t.write(rows("a", [i * 100 + k for k in range(10)])).snapshot_id

    with ThreadPoolExecutor(4) as pool:
        ids = list(pool.map(writer, range(4)))
    assert sorted(ids) == [1, 2, 3, 4]
    t = catalog.get_table("db.t")
    assert t.read().num_rows == 40
    assert len({s.commit_user for s in t.snapshots()}) == 4
    assert t.snapshots()[-1].total_record_count == 40


def test_catalog_lists_and_drops(catalog):
    make_table(catalog, name="db.t1")
    make_table(catalog, name="db.t2")
    assert catalog.list_tables("db") == ["t1", "t2"]
    assert "db" in catalog.list_databases()
    catalog.drop_table("db.t1")
    assert catalog.list_tables("db") == ["t2"]
    with pytest.raises(lf.TableAlreadyExistsError):
        make_table(catalog, name="db.t2")


@pytest.mark.parametrize("options", [{"file.format": "orc"}, {"data-file.thin-mode": "true"},
                                     {"metadata.stats-mode": "full"}])
@local_disk
def test_file_layout_options_read_back(catalog, options):
    t = make_table(catalog, **options)
    t.write(rows("a", [1, 2, 3]))
    t.write(rows("a", [2], names=["two"]))
    got = as_dict(t.read())
    assert sorted(got) == [("a", 1), ("a", 2), ("a", 3)] and got[("a", 2)]["name"] == "two"
    if options.get("file.format") == "orc":
        assert all(f["file_name"].endswith(".orc") for f in t.files())


def test_null_partition_values_go_to_the_default_partition(catalog):
    """A nullable partition column outside the primary key: a null is a partition of its own,
    stored under Paimon's `partition.default-name` directory."""
    schema = pa.schema([("dt", pa.string()), ("hr", pa.int32()), ("id", pa.int64()),
                        ("v", pa.string())])
    t = catalog.create_table("db.nullpart", schema, primary_keys=["id"],
                             partition_keys=["dt", "hr"], options={"bucket": "2"})
    rows = pa.table({"dt": [None, "a", "a", None], "hr": [1, None, 2, 1], "id": [1, 2, 3, 4],
                     "v": ["w", "x", "y", "z"]}, schema=schema)
    t.write(rows)
    assert sorted(t.read().to_pylist(), key=lambda r: r["id"]) == rows.to_pylist()
    assert sorted({(f["partition"]["dt"], f["partition"]["hr"]) for f in t.files()},
                  key=str) == sorted({(None, 1), ("a", None), ("a", 2)}, key=str)
    assert any("dt=__DEFAULT_PARTITION__/hr=1/" in f["path"] for f in t.files())
    assert t.read(filter="dt IS NULL")["id"].to_pylist() == [1, 4]
    t.write(pa.table({"dt": [None], "hr": [1], "id": [4], "v": ["z2"]}, schema=schema))
    assert t.read(filter="dt IS NULL AND id = 4")["v"].to_pylist() == ["z2"]
