"""`changelog-producer=input`: every write also writes its input as changelog files, as Java's
`MergeTreeWriter` does — each record, unmerged, with its row kind (-U and -D included), in the
write buffer's order (by key, a key's records in arrival order) — listed in the APPEND
snapshot's changelog manifest list with its `changelogRecordCount`. Data reads are the same as
without a changelog; deletes write their -D records into the changelog too; an overwrite
commits none; snapshot expiry deletes the changelog files of the snapshots it expires.

The changelog and expiry tests run on local disk and the moto S3 server (files are written,
listed and deleted on the store); the others vary what is written (`@local_disk`).
"""

from __future__ import annotations

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.data.kv_read import read_kv_file
from lakeformat.meta.binary_row import from_avro_bytes
from lakeformat.operation.paths import PathFactory
from lakeformat.operation.scan import FileStoreScan

local_disk = pytest.mark.parametrize("catalog", ["local"], indirect=True)

SCHEMA = pa.schema([pa.field("dt", pa.string(), False), pa.field("id", pa.int64(), False),
                    ("v", pa.string()), ("op", pa.string())])
KIND = {0: "+I", 1: "-U", 2: "+U", 3: "-D"}


def table(catalog, name="db.t", **options) -> lf.Table:
    return catalog.create_table(name, SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                                options={"bucket": "2", "changelog-producer": "input",
                                         "rowkind.field": "op", **options})


def batch(records) -> pa.Table:
    """(dt, id, v, row kind) records in arrival order."""
    return pa.table({"dt": [r[0] for r in records], "id": [r[1] for r in records],
                     "v": [r[2] for r in records], "op": [r[3] for r in records]},
                    schema=SCHEMA)


def changelog_files(t: lf.Table, snap) -> list[tuple[str, int, object, str]]:
    """(partition dt, bucket, file meta, path) of every changelog file of `snap`."""
    if snap.changelog_manifest_list is None:
        return []
    scan = FileStoreScan(t.file_io, t.path, t.table_schema)
    paths = PathFactory(t.file_io, t.path, t.table_schema)
    types = [f.type for f in t.table_schema.partition_fields()]
    out = []
    for e in scan.read_entries(scan.manifest_list.read(snap.changelog_manifest_list)):
        values = from_avro_bytes(e.partition, types)
        out.append((values[0], e.bucket, e.file, paths.data_file(values, e.bucket, e.file)))
    return out


def changelog_of(t: lf.Table, snap) -> list[list[tuple]]:
    """Each changelog file's records, in file order: (row kind, dt, id, v, op)."""
    out = []
    for _, _, meta, path in changelog_files(t, snap):
        fmt = meta.file_name.rsplit(".", 1)[1]
        data = read_kv_file(t.file_io, path, fmt, expect=meta, schema=t.table_schema)
        out.append([(KIND[r["_VALUE_KIND"]], r["dt"], r["id"], r["v"], r["op"])
                    for r in data.to_pylist()])
    return out


def as_written(files: list[list[tuple]]) -> list[tuple]:
    """The records of all files as (row kind, dt, id, v), sorted by key, each key's records
    in file order."""
    flat = [r for f in files for r in f]
    return sorted(((k, dt, i, v) for k, dt, i, v, _ in flat), key=lambda r: (r[1], r[2]))


def arrival(records) -> list[tuple]:
    """Input records as (row kind, dt, id, v), sorted by key, each key's in arrival order."""
    return sorted(((k, dt, i, v) for dt, i, v, k in records), key=lambda r: (r[1], r[2]))


def rows(t: lf.Table, snapshot_id=None) -> list[tuple]:
    return sorted((r["dt"], r["id"], r["v"]) for r in t.read(snapshot_id=snapshot_id).to_pylist())


FIRST = [("d1", 3, "a", "+I"), ("d1", 1, "b", "+I"), ("d2", 7, "c", "+I"),
         ("d1", 3, "a", "-U"), ("d1", 3, "a2", "+U"), ("d1", 1, "b", "-D"),
         ("d1", 1, "b2", "+I"), ("d1", 5, "e", "+I"), ("d2", 7, "c", "-D")]
SECOND = [("d1", 5, "e", "-U"), ("d1", 5, "e2", "+U"), ("d2", 8, "f", "+I")]


def test_changelog_files_hold_exactly_the_raw_input_per_snapshot(catalog):
    t = table(catalog)
    plain = catalog.create_table("db.plain", SCHEMA, primary_keys=["dt", "id"],
                                 partition_keys=["dt"],
                                 options={"bucket": "2", "rowkind.field": "op"})
    for records in (FIRST, SECOND):
        t.write(batch(records))
        plain.write(batch(records))
        snap = t.snapshots()[-1]
        assert snap.commit_kind == "APPEND"
        assert snap.changelog_record_count == len(records)
        files = changelog_of(t, snap)
        assert as_written(files) == arrival(records)
        for f in files:  # each file in key order, a key's records in arrival order
            assert [(r[1], r[2]) for r in f] == sorted((r[1], r[2]) for r in f)
        for dt, bucket, meta, path in changelog_files(t, snap):
            assert meta.file_name.startswith("changelog-") and meta.file_name.endswith(
                ".parquet")
            assert meta.level == 0 and meta.file_source == 0
            assert f"/dt={dt}/bucket-{bucket}/" in path
            kinds = [r[0] for f in changelog_of_file(t, meta, path) for r in f]
            assert meta.row_count == len(kinds)
            assert meta.delete_row_count == sum(k in ("-U", "-D") for k in kinds)
        assert rows(t) == rows(plain)  # data reads are what they are without a changelog
    assert rows(t) == [("d1", 1, "b2"), ("d1", 3, "a2"), ("d1", 5, "e2"), ("d2", 8, "f")]
    # the data files hold merged records, the changelog files the raw ones
    live = FileStoreScan(t.file_io, t.path, t.table_schema).live_entries(t.latest_snapshot())
    assert all(e.file.file_name.startswith("data-") for e in live)
    assert sum(e.file.row_count for e in live) < len(FIRST) + len(SECOND)


def changelog_of_file(t: lf.Table, meta, path) -> list[list[tuple]]:
    data = read_kv_file(t.file_io, path, meta.file_name.rsplit(".", 1)[1], expect=meta,
                        schema=t.table_schema)
    return [[(KIND[r["_VALUE_KIND"]], r["dt"], r["id"], r["v"], r["op"])
             for r in data.to_pylist()]]


def test_deletes_write_their_minus_d_records_into_the_changelog(catalog):
    t = table(catalog)
    t.write(batch(FIRST))
    t.delete(pa.table({"dt": ["d1"], "id": [3]}))
    snap = t.snapshots()[-1]
    assert snap.changelog_record_count == 1
    assert as_written(changelog_of(t, snap)) == [("-D", "d1", 3, None)]
    # by predicate: the rows it read, whole, as -D records (Java's DELETE writes the rows)
    t.delete(where="v = 'e'")
    snap = t.snapshots()[-1]
    assert changelog_of(t, snap) == [[("-D", "d1", 5, "e", "-D")]]
    assert rows(t) == [("d1", 1, "b2")]
    # a delete of whole partitions drops them: no changelog, as Java's partition drop
    t.write(batch([("d3", 1, "x", "+I")]))
    t.delete(where="dt = 'd3'")
    assert t.snapshots()[-1].commit_kind == "OVERWRITE"
    assert t.snapshots()[-1].changelog_manifest_list is None


@local_disk
def test_an_overwrite_commits_no_changelog_and_leaves_no_changelog_file(catalog):
    t = table(catalog)
    t.write(batch(FIRST))
    before = changelog_files(t, t.snapshots()[-1])
    t.write(batch([("d1", 9, "z", "+I")]), overwrite=True)
    snap = t.snapshots()[-1]
    assert snap.commit_kind == "OVERWRITE" and snap.changelog_manifest_list is None
    on_disk = [s.path for s in t.file_io.list_recursive(t.path)
               if s.path.rsplit("/", 1)[1].startswith("changelog-")]
    assert sorted(on_disk) == sorted(p for *_, p in before)
    assert rows(t) == [("d1", 9, "z")]


@local_disk
def test_changelog_files_roll_on_size_only_and_take_the_changelog_format(catalog):
    t = table(catalog, **{"target-file-row-num": "2", "changelog-file.format": "avro",
                          "bucket": "1"})
    records = [("d1", i, f"v{i}", "+I") for i in range(7)]
    t.write(batch(records))
    snap = t.snapshots()[-1]
    files = changelog_files(t, snap)
    assert [m.file_name.rsplit(".", 1)[1] for _, _, m, _ in files] == ["avro"]
    assert files[0][2].row_count == 7  # Java's changelog writer rolls on size alone
    live = FileStoreScan(t.file_io, t.path, t.table_schema).live_entries(snap)
    assert sorted(e.file.row_count for e in live) == [1, 2, 2, 2]  # data files: 2 rows each
    assert as_written(changelog_of(t, snap)) == arrival(records)


def test_expiry_deletes_the_changelog_files_of_expired_snapshots(catalog):
    t = table(catalog)
    for i in range(3):
        t.write(batch([("d1", i, f"v{i}", "+I"), ("d1", 100, f"w{i}", "+I")]))
    snaps = t.snapshots()
    old = [p for s in snaps[:2] for *_, p in changelog_files(t, s)]
    kept = [p for *_, p in changelog_files(t, snaps[2])]
    assert old and kept and all(t.file_io.exists(p) for p in old + kept)
    res = t.expire_snapshots(retain_min=1, retain_max=1)
    assert res.snapshots_deleted == [1, 2]
    assert res.changelog_files_deleted == len(old)
    assert not any(t.file_io.exists(p) for p in old)
    assert all(t.file_io.exists(p) for p in kept)
    assert as_written(changelog_of(t, t.snapshots()[-1])) == [
        ("+I", "d1", 2, "v2"), ("+I", "d1", 100, "w2")]
    # orphan removal counts the retained snapshot's changelog files as referenced
    orphans = t.remove_orphan_files(older_than="0 s", dry_run=True,
                                    enforce_retention_duration=False)
    assert not [p for p in orphans.deleted if "changelog-" in p]
    assert rows(t) == [("d1", 0, "v0"), ("d1", 1, "v1"), ("d1", 2, "v2"), ("d1", 100, "w2")]
