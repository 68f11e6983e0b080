"""`Table.delta_partitions`: the partitions one snapshot itself changed (appends, compactions,
overwrites, deletes), filtered by a partition given as text.

Local disk only (`local_only`): the partitions come from a snapshot's delta manifests, read as
every scan reads them; the S3 runs of `test_table.py` and `test_inspect.py` read manifests on
S3.
"""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.errors import InvalidArgumentError, SnapshotNotFoundError

pytestmark = pytest.mark.local_only  # see the module docstring

SCHEMA = pa.schema([pa.field("dt", pa.string(), False), pa.field("hr", pa.int32(), False),
                    pa.field("id", pa.int64(), False), ("v", pa.string())])


def rows(parts: list[tuple[str, int]], ids=(1, 2, 3)) -> pa.Table:
    data = [(d, h, i, f"{d}/{h}/{i}") for d, h in parts for i in ids]
    return pa.table({"dt": [r[0] for r in data], "hr": [r[1] for r in data],
                     "id": [r[2] for r in data], "v": [r[3] for r in data]}, schema=SCHEMA)


def make(cat: lf.Catalog, name: str = "db.t") -> lf.Table:
    return cat.create_table(name, SCHEMA, primary_keys=["dt", "hr", "id"],
                            partition_keys=["dt", "hr"], options={"bucket": "2"})


def as_set(parts: list[dict]) -> set[tuple]:
    return {tuple(sorted(p.items())) for p in parts}


def test_each_snapshot_names_only_the_partitions_it_changed(catalog):
    t = make(catalog)
    s1 = t.write(rows([("a", 1)])).snapshot_id
    s2 = t.write(rows([("b", 1), ("b", 2)])).snapshot_id
    s3 = t.write(rows([("a", 1), ("c", 5)], ids=(4,))).snapshot_id
    compacted = t.compact(full=True, partitions=[{"dt": "a", "hr": 1}])
    s4 = t.latest_snapshot().id
    assert s4 > s3 and t.latest_snapshot().commit_kind == "COMPACT", compacted
    s5 = t.write(rows([("b", 2)], ids=(9,)), overwrite=True).snapshot_id
    s6 = t.delete(pa.table({"dt": ["c"], "hr": pa.array([5], pa.int32()), "id": [4]})
                  ).snapshot_id

    assert t.delta_partitions(s1) == [{"dt": "a", "hr": 1}]
    assert as_set(t.delta_partitions(s2)) == as_set([{"dt": "b", "hr": 1}, {"dt": "b", "hr": 2}])
    assert as_set(t.delta_partitions(s3)) == as_set([{"dt": "a", "hr": 1}, {"dt": "c", "hr": 5}])
    assert t.delta_partitions(s4) == [{"dt": "a", "hr": 1}]  # only the compacted partition
    assert t.delta_partitions(s5) == [{"dt": "b", "hr": 2}]  # the overwritten partition
    assert t.delta_partitions(s6) == [{"dt": "c", "hr": 5}]

    # a partition given as text, in full or by some of its keys
    assert t.delta_partitions(s2, {"dt": "b", "hr": "2"}) == [{"dt": "b", "hr": 2}]
    assert as_set(t.delta_partitions(s2, {"dt": "b"})) == as_set(t.delta_partitions(s2))
    assert t.delta_partitions(s2, {"dt": "a"}) == []
    assert t.delta_partitions(s3, {"hr": 5}) == [{"dt": "c", "hr": 5}]
    assert t.delta_partitions(s4, {"dt": "c"}) == []
    # asking commits nothing
    assert t.latest_snapshot().id == s6


def test_date_partition_matches_iso_text(local_catalog):
    schema = pa.schema([pa.field("day", pa.date32(), False), pa.field("id", pa.int64(), False)])
    t = local_catalog.create_table("db.d", schema, primary_keys=["day", "id"],
                                   partition_keys=["day"], options={"bucket": "1"})
    sid = t.write(pa.table({"day": [dt.date(2024, 1, 1), dt.date(2024, 1, 3)], "id": [1, 2]},
                           schema=schema)).snapshot_id
    assert t.delta_partitions(sid, {"day": "2024-01-03"}) == [{"day": dt.date(2024, 1, 3)}]
    assert t.delta_partitions(sid, {"day": dt.date(2024, 1, 1)}) == [{"day": dt.date(2024, 1, 1)}]
    assert t.delta_partitions(sid, {"day": "2024-01-02"}) == []
    with pytest.raises(InvalidArgumentError, match="day"):
        t.delta_partitions(sid, {"day": "not a date"})


def test_manifests_outside_the_partition_are_not_read(local_catalog):
    """The manifest list's partition range decides: with the snapshot's only delta manifest
    gone, a partition outside its range is still answered (nothing was read), one inside it
    is not."""
    t = make(local_catalog)
    sid = t.write(rows([("b", 1), ("d", 1)])).snapshot_id
    snap = t.snapshot_manager.snapshot(sid)
    from lakeformat.meta.manifest import ManifestList

    ml = ManifestList(t.file_io, t.path)
    (meta,) = ml.read(snap.delta_manifest_list)
    t.file_io.delete(t.file_io.join(ml.manifest_dir, meta.file_name))
    assert t.delta_partitions(sid, {"dt": "a"}) == []
    assert t.delta_partitions(sid, {"dt": "e"}) == []
    assert t.delta_partitions(sid, {"hr": 2}) == []
    with pytest.raises(FileNotFoundError):
        t.delta_partitions(sid, {"dt": "c"})  # inside [b, d]: the manifest must be read


def test_bad_arguments_name_the_problem(local_catalog):
    t = make(local_catalog)
    sid = t.write(rows([("a", 1)])).snapshot_id
    with pytest.raises(InvalidArgumentError, match="'day'.*partition keys are \\['dt', 'hr'\\]"):
        t.delta_partitions(sid, {"day": "a"})
    with pytest.raises(InvalidArgumentError, match="hr"):
        t.delta_partitions(sid, {"hr": "three"})
    with pytest.raises(SnapshotNotFoundError, match="snapshot 99"):
        t.delta_partitions(99)
    flat = local_catalog.create_table("db.flat", pa.schema([pa.field("id", pa.int64(), False)]),
                                      primary_keys=["id"], options={"bucket": "1"})
    fid = flat.write(pa.table({"id": [1]})).snapshot_id
    assert flat.delta_partitions(fid) == [{}]
    with pytest.raises(InvalidArgumentError, match="not partitioned"):
        flat.delta_partitions(fid, {"dt": "a"})
