"""Decoupled changelog between lakeformat and pypaimon 2.1.0: after lakeformat's snapshot and
changelog expiry, pypaimon's own `ChangelogManager` finds the same long-lived changelogs
(`changelog/changelog-<id>`, its EARLIEST / LATEST hints), decodes each as its `Changelog`,
reads each one's changelog manifest list and manifests, and every changelog file they add
exists; pypaimon reads every retained snapshot as lakeformat does."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("pypaimon")  # collected only in the interop venv

import pyarrow as pa  # noqa: E402

from lakeformat.meta.changelog import ChangelogManager  # noqa: E402

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
OPTIONS = {"bucket": "1", "snapshot.num-retained.min": "2", "snapshot.num-retained.max": "2",
           "snapshot.time-retained": "1 ms", "changelog.num-retained.min": "6",
           "changelog.num-retained.max": "6"}


def rows(t: pa.Table) -> list[tuple]:
    return sorted((r["id"], r["v"]) for r in t.to_pylist())


@pytest.mark.parametrize("producer", ["lookup", "none"])
def test_pypaimon_reads_the_long_lived_changelogs(paimon, lake, producer):
    from pypaimon.manifest.manifest_file_manager import ManifestFileManager
    from pypaimon.manifest.manifest_list_manager import ManifestListManager

    from tests.support.pypaimon_helpers import paimon_read

    t = lake.create_table("db.cl", SCHEMA, primary_keys=["id"],
                          options={**OPTIONS, "changelog-producer": producer})
    for i in range(6):
        t.write(pa.table({"id": [i, i + 1], "v": [f"a{i}", f"b{i}"]}, schema=SCHEMA))
        if producer == "none" and i % 2:
            t.compact(full=True)
    result = t.expire_snapshots()
    assert result.changelogs_written and result.changelogs_deleted
    ours = ChangelogManager(t.file_io, t.path)
    ids = ours.changelog_ids()

    pt = paimon.get_table("db.cl")
    cm = pt.changelog_manager()
    assert cm.earliest_long_lived_changelog_id() == ids[0]
    assert cm.latest_long_lived_changelog_id() == ids[-1]
    lists, manifests = ManifestListManager(pt), ManifestFileManager(pt)
    bucket = os.path.join(t.path, "bucket-0")
    read_files = 0
    for cid in ids:
        theirs, mine = cm.changelog(cid), ours.changelog(cid)
        assert (theirs.id, theirs.schema_id, theirs.commit_kind, theirs.time_millis) == (
            mine.id, mine.schema_id, mine.commit_kind, mine.time_millis)
        assert theirs.changelog_manifest_list == mine.changelog_manifest_list
        if producer == "lookup":  # changelog files: what the changelog list adds
            metas = lists.read_changelog(theirs)
        elif mine.commit_kind == "APPEND":  # the delta is the changelog
            metas = lists.read_delta(theirs)
        else:
            continue
        for meta in metas:
            for e in manifests.read(meta.file_name):
                if e.kind == 0:
                    assert os.path.exists(os.path.join(bucket, e.file.file_name)), cid
                    read_files += 1
    assert read_files
    for snap in t.snapshots():
        assert rows(paimon_read(pt, snap.id)) == rows(t.read(snapshot_id=snap.id))
