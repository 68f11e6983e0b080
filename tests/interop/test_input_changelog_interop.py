"""`changelog-producer=input` between lakeformat and pypaimon 2.1.0: pypaimon reads the tables
lakeformat writes — every snapshot's rows, and, through its streaming changelog scan, each
snapshot's input changelog with its row kinds — and both libraries lay the changelog out alike
(`changelog-<uuid>-<n>.parquet` key-value files beside the data files, the APPEND snapshot's
changelog manifest list and record count). lakeformat's snapshot expiry deletes the changelog
files of pypaimon's expired snapshots and keeps the rest readable.

One deviation, where Java wins: pypaimon writes the batch's merged records as its changelog
(one per key), Java's `MergeTreeWriter` — and lakeformat — every input record. The layout test
therefore writes one record per key."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

pytest.importorskip("pypaimon")  # collected only in the interop venv

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from lakeformat.data.kv_read import read_kv_file  # noqa: E402
from lakeformat.operation.paths import PathFactory  # noqa: E402
from lakeformat.operation.scan import FileStoreScan  # noqa: E402
from tests.support.pypaimon_helpers import (  # noqa: E402
    create_paimon_table,
    paimon_read,
    paimon_write,
)

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string()), ("op", pa.string())])
PLAIN = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])
KIND = {0: "+I", 1: "-U", 2: "+U", 3: "-D"}
OPTIONS = {"bucket": "2", "changelog-producer": "input"}


def batch(records) -> pa.Table:
    return pa.table({"id": [r[0] for r in records], "v": [r[1] for r in records],
                     "op": [r[2] for r in records]}, schema=SCHEMA)


WRITES = [
    [(1, "a", "+I"), (2, "b", "+I"), (5, "e", "+I")],
    [(3, "c", "+I"), (1, "a", "-U"), (1, "a2", "+U"), (2, "b", "-D"), (3, "c", "-U"),
     (3, "c2", "+U")],
    [(4, "d", "+I"), (5, "e", "-D")],
]


def streamed_changelog(pt: Any, snapshots: int) -> list[list[tuple]]:
    """Each snapshot's changelog as pypaimon's streaming scan reads it (no initial full scan:
    from snapshot 1 on), as (row kind, id, v) sorted by id, each id's records in order."""
    builder = pt.new_stream_read_builder().with_include_row_kind(True)
    scan = builder.new_streaming_scan()
    scan.next_snapshot_id = 1
    read = builder.new_read()
    plans = scan.stream_sync()
    out = []
    for _ in range(snapshots):
        rows = read.to_arrow(next(plans).splits()).to_pylist()
        out.append(sorted(((r["_row_kind"], r["id"], r["v"]) for r in rows),
                          key=lambda r: r[1]))
    return out


def test_pypaimon_reads_the_table_and_its_input_changelog(paimon, lake):
    t = lake.create_table("db.cl", SCHEMA, primary_keys=["id"],
                          options={**OPTIONS, "rowkind.field": "op"})
    for records in WRITES:
        t.write(batch(records))
    pt = paimon.get_table("db.cl")
    for snap in t.snapshots():
        assert sorted(paimon_read(pt, snap.id).to_pylist(), key=lambda r: r["id"]) == sorted(
            t.read(snapshot_id=snap.id).to_pylist(), key=lambda r: r["id"])
    assert sorted(r["id"] for r in paimon_read(pt).to_pylist()) == [1, 3, 4]
    expected = [sorted(((k, i, v) for i, v, k in records), key=lambda r: r[1])
                for records in WRITES]
    assert streamed_changelog(pt, len(WRITES)) == expected


def snapshot_json(warehouse: str, name: str, snapshot_id: int) -> dict:
    path = os.path.join(warehouse, "db.db", name, "snapshot", f"snapshot-{snapshot_id}")
    with open(path) as f:
        return json.load(f)


def changelog_metas(t: Any, snap: Any) -> list[Any]:
    scan = FileStoreScan(t.file_io, t.path, t.table_schema)
    return [e for e in scan.read_entries(scan.manifest_list.read(snap.changelog_manifest_list))]


def test_changelog_layout_matches_pypaimons(paimon, lake, warehouse):
    rows = pa.table({"id": [3, 1, 4, 2], "v": ["c", "a", "d", "b"]}, schema=PLAIN)
    pt = create_paimon_table(paimon, "db.p", PLAIN, ["id"], options=OPTIONS)
    paimon_write(pt, rows)
    mine = lake.create_table("db.l", PLAIN, primary_keys=["id"], options=OPTIONS)
    mine.write(rows)
    theirs = lake.get_table("db.p")
    found: dict[str, list] = {}
    for name, t in (("p", theirs), ("l", mine)):
        snap = snapshot_json(warehouse, name, 1)
        assert snap["commitKind"] == "APPEND"
        assert snap["changelogRecordCount"] == 4 and snap["deltaRecordCount"] == 4
        assert snap["changelogManifestList"].startswith("manifest-list-")
        paths = PathFactory(t.file_io, t.path, t.table_schema)
        files = []
        for e in changelog_metas(t, t.snapshots()[-1]):
            f = e.file
            assert f.file_name.startswith("changelog-") and f.file_name.endswith("-0.parquet")
            assert (f.level, f.file_source) == (0, 0)
            path = paths.data_file((), e.bucket, f)
            data = read_kv_file(t.file_io, path, "parquet", expect=f)
            files.append((e.bucket, f.row_count, pq.read_schema(path).names,
                          [(KIND[r["_VALUE_KIND"]], r["id"], r["v"]) for r in data.to_pylist()]))
        found[name] = sorted(files)
    # the same buckets, record counts, columns (those of data files) and records
    assert found["l"] == found["p"]
    assert all(names == ["_KEY_id", "_SEQUENCE_NUMBER", "_VALUE_KIND", "id", "v"]
               for _, _, names, _ in found["l"])


def test_lakeformat_expires_pypaimons_changelog_files(paimon, lake):
    pt = create_paimon_table(paimon, "db.p", PLAIN, ["id"], options=OPTIONS)
    for i in range(3):
        paimon_write(pt, pa.table({"id": [i, 10], "v": [f"v{i}", f"w{i}"]}, schema=PLAIN))
    t = lake.get_table("db.p")
    paths = PathFactory(t.file_io, t.path, t.table_schema)
    per_snapshot = [[paths.data_file((), e.bucket, e.file) for e in changelog_metas(t, s)]
                    for s in t.snapshots()]
    assert all(per_snapshot) and all(os.path.exists(p) for ps in per_snapshot for p in ps)
    res = t.expire_snapshots(retain_min=1, retain_max=1)
    assert res.snapshots_deleted == [1, 2]
    assert res.changelog_files_deleted == len(per_snapshot[0]) + len(per_snapshot[1])
    assert not any(os.path.exists(p) for ps in per_snapshot[:2] for p in ps)
    assert all(os.path.exists(p) for p in per_snapshot[2])
    assert sorted(r["id"] for r in paimon_read(paimon.get_table("db.p")).to_pylist()) == [
        0, 1, 2, 10]
