"""changelog-producer=full-compaction: writes produce no changelog; each full compaction
writes the difference between the previous top-level rows and the new ones (+I, -U/+U, -D),
referenced from the COMPACT snapshot's changelog manifest list."""

from __future__ import annotations

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.data.kv_read import read_kv_file
from lakeformat.operation.paths import PathFactory
from lakeformat.operation.scan import FileStoreScan

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])
KIND = {0: "+I", 1: "-U", 2: "+U", 3: "-D"}


def changelog_of(t: lf.Table, snap) -> list[tuple]:
    scan = FileStoreScan(t.file_io, t.path, t.table_schema)
    paths = PathFactory(t.file_io, t.path, t.table_schema)
    out: list[tuple] = []
    if snap.changelog_manifest_list is None:
        return out
    for e in scan.read_entries(scan.manifest_list.read(snap.changelog_manifest_list)):
        assert e.file.file_name.startswith("changelog-")
        data = read_kv_file(t.file_io, paths.data_file((), e.bucket, e.file), "parquet")
        out += [(KIND[r["_VALUE_KIND"]], r["id"], r["v"]) for r in data.to_pylist()]
    return sorted(out, key=lambda r: (r[1], r[0] != "-U" and r[0] != "-D"))


@pytest.mark.parametrize("target", [None, "1 b"])  # "1 b": files move up without rewriting
def test_full_compaction_changelog(tmp_path, target):
    cat = lf.Catalog(str(tmp_path))
    cat.create_database("db")
    options = {"bucket": "1", "changelog-producer": "full-compaction"}
    if target:
        options["target-file-size"] = target
    t = cat.create_table("db.t", SCHEMA, primary_keys=["id"], options=options)
    t.write(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=SCHEMA))
    assert t.latest_snapshot().changelog_manifest_list is None  # writes produce none
    t.compact()
    snap = t.latest_snapshot()
    assert snap.commit_kind == "COMPACT" and snap.changelog_record_count == 3
    assert changelog_of(t, snap) == [("+I", 1, "a"), ("+I", 2, "b"), ("+I", 3, "c")]
    t.write(pa.table({"id": [2, 4], "v": ["B", "d"]}, schema=SCHEMA))
    t.delete(pa.table({"id": [3]}))
    t.write(pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA))  # same value: still -U/+U
    t.compact()
    snap = t.latest_snapshot()
    assert changelog_of(t, snap) == [
        ("-U", 1, "a"), ("+U", 1, "a"), ("-U", 2, "b"), ("+U", 2, "B"), ("-D", 3, "c"),
        ("+I", 4, "d")]
    assert snap.changelog_record_count == 6
    assert sorted(t.read().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "v": "a"}, {"id": 2, "v": "B"}, {"id": 4, "v": "d"}]
    # a delete of a key that was never compacted produces nothing
    t.write(pa.table({"id": [9], "v": ["x"]}, schema=SCHEMA))
    t.delete(pa.table({"id": [9]}))
    t.compact()
    assert changelog_of(t, t.latest_snapshot()) == []
