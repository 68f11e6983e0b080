"""The data jobs that write no data file (`operation/commit/metadata_jobs.py`), driven directly:
a partition drop lands once per commit identity (a re-run plans nothing; a twin that landed
while it committed is reported, not repeated) and refuses an identity another call used; a
manifest compaction plans nothing without DELETE entries. Their callers (partition expiry,
delete by predicate, schema retention) are tested in their own modules. Local disk."""

from __future__ import annotations

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.meta.binary_row import to_avro_bytes
from lakeformat.operation.commit import CompactManifestsJob, DropPartitionsJob

SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False),
                    pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def make(catalog: lf.Catalog) -> lf.Table:
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                             options={"bucket": "1"})
    t.write(pa.table({"dt": ["a", "a", "b", "c"], "id": [1, 2, 1, 1], "v": list("wxyz")},
                     schema=SCHEMA))
    return t


def drop(t: lf.Table, *days: str, **identity) -> DropPartitionsJob:
    schema = t.table_schema
    types = [f.type for f in schema.partition_fields()]
    rows = [to_avro_bytes([d], types) for d in days]
    return DropPartitionsJob(t.file_io, t.path, schema, lambda _latest: rows, t.name,
                             operation="delete", **identity)


def test_a_drop_lands_once_per_commit_identity(local_catalog):
    t = make(local_catalog)
    identity = {"commit_user": "dag.task", "commit_identifier": 7}
    first, twin = drop(t, "a", **identity), drop(t, "a", **identity)
    assert len(first.plan()) == 1 and len(twin.plan()) == 1
    snap = first.run()
    assert snap is not None and snap.commit_kind == "OVERWRITE" and first.landed is None
    assert len(first.committer.committed_entries) == 1  # partition a's one file, deleted
    assert snap.properties == {"lakeformat.operation": "delete"}
    # the twin planned before the first landed: its commit finds it and publishes nothing
    assert twin.commit(twin.execute()) == snap and twin.landed == snap
    again = drop(t, "a", **identity)
    assert again.plan() == [] and again.commit() == snap  # a re-run plans nothing
    assert [s.id for s in t.snapshots()] == [1, 2]
    assert sorted(set(t.read().column("dt").to_pylist())) == ["b", "c"]


def test_a_drop_refuses_an_identity_a_write_used(local_catalog):
    t = make(local_catalog)
    t.write(pa.table({"dt": ["d"], "id": [1], "v": ["q"]}, schema=SCHEMA), commit_user="u",
            commit_identifier=1)
    with pytest.raises(lf.InvalidArgumentError, match="not a delete"):
        drop(t, "a", commit_user="u", commit_identifier=1).plan()


def test_nothing_to_drop_commits_nothing(local_catalog):
    t = make(local_catalog)
    job = drop(t, "zz")  # not live
    assert job.run() is None and [s.id for s in t.snapshots()] == [1]
    assert drop(t).run() is None


def test_manifest_compaction_plans_only_over_delete_entries(local_catalog):
    t = make(local_catalog)
    schema = t.table_schema
    job = CompactManifestsJob(t.file_io, t.path, schema, t.name)
    assert job.plan() == [] and job.deletes == 0 and job.run() is None
    t.compact(full=True)  # replaces live files: the manifests now hold DELETE entries
    job = CompactManifestsJob(t.file_io, t.path, schema, t.name)
    units = job.plan()
    assert [u.id for u in units] == [2] and job.deletes > 0
    snap = job.commit(job.execute(units))
    assert snap is not None and snap.commit_kind == "COMPACT" and snap.id == 3
    assert CompactManifestsJob(t.file_io, t.path, schema).plan() == []
    assert t.read().num_rows == 4
