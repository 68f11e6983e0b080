"""clean_schemas: keeps exactly the schema files a snapshot, tag or data file still needs plus
the newest `retain_min`; every retained snapshot still reads; young schemas and the schema a
young one replaced are kept; a failed read deletes nothing. Local disk and moto S3."""

from __future__ import annotations

import datetime as dt
import time

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat import SchemaChange
from lakeformat.meta.tag import TagManager

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])
KEY = [("dt", "ascending"), ("id", "ascending")]


def make_table(catalog, **options) -> lf.Table:
    return catalog.create_table("db.t", SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                                options={"bucket": "1", **options})


def write(t: lf.Table, day: str, ids, **extra) -> None:
    cols = {f.name: None for f in t.table_schema.fields}
    cols.update(dt=[day] * len(ids), id=list(ids), v=[f"{day}-{i}" for i in ids])
    for name, value in extra.items():
        cols[name] = [value] * len(ids)
    t.write(pa.table({k: v if v is not None else [None] * len(ids) for k, v in cols.items()},
                     schema=t.schema), merge_schema=False)


def set_options(t: lf.Table, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        t.alter(SchemaChange.set_option("custom.counter", str(i)))


def schema_ids(t: lf.Table) -> list[int]:
    return t.schema_manager.schema_ids()


def needed(t: lf.Table) -> set[int]:
    """Schema ids that snapshots and tags, and the files they hold, name (found through the
    public API, independently of the library's scan)."""
    out = set()
    targets = [("snapshot_id", s.id) for s in t.snapshots()]
    targets += [("tag", name) for name in TagManager(t.file_io, t.path).names()]
    for kind, value in targets:
        snap = (t.snapshot_manager.snapshot(value) if kind == "snapshot_id"
                else TagManager(t.file_io, t.path).get(value).snapshot)
        out.add(snap.schema_id)
        out.update(f["schema_id"] for f in t.files(**{kind: value}))
    return out


def reads(t: lf.Table) -> dict:
    return {s.id: t.read(snapshot_id=s.id).sort_by(KEY) for s in t.snapshots()}


def test_200_option_changes_keep_exactly_what_is_needed(local_catalog):
    t = make_table(local_catalog, **{"schema.num-retained.min": "3",
                                     "schema.time-retained": "1 ms"})
    write(t, "d1", range(5))  # snapshot 1, files of schema 0
    set_options(t, 60)
    t.alter(SchemaChange.add_column("c1", "INT"))
    write(t, "d2", range(5), c1=7)  # snapshot 2, files of schema 61
    set_options(t, 80, 100)
    t.alter(SchemaChange.rename_column("c1", "c2"))
    set_options(t, 60, 200)
    t.alter(SchemaChange.add_column("c3", "STRING"))
    write(t, "d3", range(3), c2=1, c3="x")  # snapshot 3
    set_options(t, 5, 300)
    write(t, "d1", [0], c2=2, c3="y")  # snapshot 4, an update of d1
    # as snapshot expiry leaves it: snapshot 1 gone, its files still live in later snapshots
    t.file_io.delete(t.snapshot_manager.snapshot_path(1))
    before = reads(t)
    ids = schema_ids(t)
    assert len(ids) == 209
    want = needed(t) | set(ids[-3:])
    assert 0 in want and 0 not in {s.schema_id for s in t.snapshots()}  # only a data file

    plan = t.clean_schemas(dry_run=True)  # retain_min and older_than from the options
    assert schema_ids(t) == ids
    res = t.clean_schemas()
    assert res.deleted == plan.deleted and res.schema_files_deleted == len(ids) - len(want)
    assert res.bytes_deleted == plan.bytes_deleted > 0
    assert set(schema_ids(t)) == want
    assert res.deleted == [t.schema_manager.schema_path(k) for k in sorted(set(ids) - want)]
    fresh = local_catalog.get_table("db.t")
    assert reads(fresh) == before
    assert fresh.read().sort_by(KEY).equals(before[4])
    assert t.clean_schemas().deleted == []


def test_young_schemas_and_the_schema_a_young_one_replaced_are_kept(local_catalog):
    t = make_table(local_catalog)
    write(t, "d1", range(3))
    times = []
    for i in range(3):  # schemas 1..3, a few milliseconds apart, so that the cut-off below
        times.append(t.alter(SchemaChange.set_option("custom.x", str(i))).time_millis)
        time.sleep(0.005)  # falls strictly between two of them even on a fast machine
    t1, t2, t3 = times
    assert t1 < t2 < t3 - 1
    assert t.clean_schemas(retain_min=1).deleted == []  # default: 1 day
    cut = dt.datetime.fromtimestamp((t2 + t3) / 2000)
    res = t.clean_schemas(retain_min=1, older_than=cut)
    # 1 is old and so is 2 which replaced it; 2 is old but 3 which replaced it is young
    assert res.deleted == [t.schema_manager.schema_path(1)]
    assert schema_ids(t) == [0, 2, 3]
    assert t.clean_schemas(retain_min=2, older_than=dt.timedelta(0)).deleted == []
    assert t.clean_schemas(retain_min=1, older_than=dt.timedelta(0)).deleted == [
        t.schema_manager.schema_path(2)]
    assert schema_ids(t) == [0, 3]


def test_a_tag_keeps_its_schema_and_reads(catalog):
    t = make_table(catalog)
    write(t, "d1", range(4))
    TagManager(t.file_io, t.path).create("v0", t.latest_snapshot())
    tagged = t.read(tag="v0").sort_by(KEY)
    set_options(t, 4)
    t.alter(SchemaChange.add_column("c1", "BIGINT"))
    t.write(pa.table({"dt": ["d1"], "id": [9], "v": ["new"], "c1": [1]}), overwrite=True)
    t.file_io.delete(t.snapshot_manager.snapshot_path(1))
    res = t.clean_schemas(retain_min=1, older_than=dt.timedelta(0))
    assert schema_ids(t) == [0, 5] and res.schema_files_deleted == 4
    fresh = catalog.get_table("db.t")
    assert fresh.read(tag="v0").sort_by(KEY).equals(tagged)
    assert fresh.read().to_pylist() == [{"dt": "d1", "id": 9, "v": "new", "c1": 1}]
    # without the tag, schema 0's files are still named by snapshot 2's DELETE entries: kept
    # (conservative: they are gone only once snapshot expiry processes that delta)
    t.file_io.delete(TagManager(t.file_io, t.path).tag_path("v0"))
    assert t.clean_schemas(retain_min=1, older_than=dt.timedelta(0)).schema_files_deleted == 0
    assert schema_ids(t) == [0, 5]


def test_s3_option_changes_and_column_changes(catalog):
    t = make_table(catalog)
    write(t, "d1", range(3))
    set_options(t, 12)
    t.alter(SchemaChange.add_column("c1", "INT"))
    write(t, "d2", range(3), c1=5)
    set_options(t, 12, 50)
    before = reads(t)
    want = needed(t) | set(schema_ids(t)[-2:])
    res = t.clean_schemas(retain_min=2, older_than=dt.timedelta(0))
    assert set(schema_ids(t)) == want == {0, 13, 24, 25}
    assert res.schema_files_deleted == 22
    assert reads(catalog.get_table("db.t")) == before


def test_refusals_and_failed_reads_delete_nothing(catalog):
    t = make_table(catalog)
    write(t, "d1", range(3))
    set_options(t, 3)
    ids = schema_ids(t)
    with pytest.raises(lf.InvalidOptionError, match="future"):
        t.clean_schemas(older_than=dt.datetime.now() + dt.timedelta(hours=1))
    with pytest.raises(lf.InvalidOptionError, match="schema.num-retained.min"):
        t.clean_schemas(retain_min=0)
    t.file_io.write_bytes(t.file_io.join(t.path, "tag", "tag-broken"), b"{not json")
    with pytest.raises(lf.LakeformatError, match="nothing deleted: cannot read tag broken"):
        t.clean_schemas(retain_min=1, older_than=dt.timedelta(0))
    t.file_io.delete(t.file_io.join(t.path, "tag", "tag-broken"))
    manifest = t.latest_snapshot().delta_manifest_list
    t.file_io.delete(t.file_io.join(t.path, "manifest", manifest))
    t.file_io.metadata_cache.clear()  # another process's view: this one cached what it wrote
    with pytest.raises(lf.LakeformatError, match="nothing deleted: cannot read snapshot 1"):
        t.clean_schemas(retain_min=1, older_than=dt.timedelta(0))
    assert schema_ids(t) == ids
