"""Maintenance by lakeformat on tables pypaimon 2.1.0 wrote, checked by pypaimon's own reads.

* pypaimon writes a history (upserts, partition overwrites, schema changes, a tag of its own);
  lakeformat adds a tag; then lakeformat expires snapshots, cleans schema files, removes orphan
  files, deletes tags and rolls back. After each step pypaimon reads the latest snapshot, every
  retained snapshot (`scan.snapshot-id`) and every tag (`scan.tag-name`) with exactly the rows
  it read right after writing them, and keeps committing on top.
* pypaimon finds the earliest snapshot from the `EARLIEST` hint and then probes at most 300
  ids: after lakeformat expires more than 300 snapshots, pypaimon's earliest snapshot is the
  hinted one (and, as a control, without the hint it cannot find it at all).
"""

from __future__ import annotations

import datetime as dt
import os
from typing import Any

import pytest

pytest.importorskip("pypaimon")  # collected only in the interop venv

import pyarrow as pa  # noqa: E402
from pypaimon.schema.data_types import AtomicType  # noqa: E402
from pypaimon.schema.schema_change import SchemaChange as PChange  # noqa: E402

import lakeformat as lf  # noqa: E402
from tests.support.pypaimon_helpers import (  # noqa: E402
    DAYS,
    create_paimon_table,
    paimon_base_manifests,
    paimon_live_files,
    paimon_read,
    paimon_snapshots,
    paimon_write,
)

IDENT = "db.t"
KEYS = ["dt", "id"]
SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False),
                    pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def rows(t: pa.Table) -> list[tuple]:
    return sorted(tuple(r.items()) for r in t.to_pylist())


def paimon_tag_read(table: Any, tag: str) -> pa.Table:
    builder = table.copy({"scan.tag-name": tag}).new_read_builder()
    return builder.new_read().to_arrow(builder.new_scan().plan().splits())


class History:
    """A pypaimon-written table and the rows pypaimon read of each snapshot and tag."""

    def __init__(self, paimon: Any, lake: lf.Catalog):
        self.paimon = paimon
        self.lake = lake
        self.table = create_paimon_table(paimon, IDENT, SCHEMA, KEYS, ["dt"], {"bucket": "2"})
        self.snapshots: dict[int, list[tuple]] = {}
        self.tags: dict[str, list[tuple]] = {}
        self.step = 0

    def write(self, day: int, ids: range, overwrite: bool = False) -> int:
        self.step += 1
        self.table = self.paimon.get_table(IDENT)  # the latest schema
        names = [f.name for f in self.table.table_schema.fields]
        data = [{c: (DAYS[day] if c == "dt" else i if c == "id" else f"{c}{self.step}-{i}")
                 for c in names} for i in ids]
        sid = paimon_write(self.table, data, overwrite={} if overwrite else None)
        self.snapshots[sid] = rows(paimon_read(self.table, sid))
        return sid

    def alter(self, *changes: Any) -> None:
        self.paimon.alter_table(IDENT, list(changes))
        self.table = self.paimon.get_table(IDENT)

    def lt(self) -> lf.Table:
        return self.lake.get_table(IDENT)

    def check(self, what: str) -> None:
        """pypaimon and lakeformat read every retained snapshot and tag as recorded."""
        table = self.paimon.get_table(IDENT)  # fresh: schema files may have gone
        lt = self.lt()
        ids = [s.id for s in lt.snapshots()]
        assert ids, what
        assert [s.id for s in table.snapshot_manager().list_snapshots()] == ids, what
        assert rows(paimon_read(table)) == self.snapshots[ids[-1]], f"{what}: latest"
        for sid in ids:
            assert rows(paimon_read(table, sid)) == self.snapshots[sid], f"{what}: snap {sid}"
            assert rows(lt.read(snapshot_id=sid)) == self.snapshots[sid], f"{what}: lf {sid}"
        assert sorted(x.name for x in lt.list_tags()) == sorted(self.tags), what
        assert sorted(table.list_tags()) == sorted(self.tags), what
        for name, want in self.tags.items():
            assert rows(paimon_tag_read(table, name)) == want, f"{what}: tag {name}"
            assert rows(lt.read(tag=name)) == want, f"{what}: lf tag {name}"


def data_files(lt: lf.Table, snapshot_ids, tags=()) -> set[str]:
    out = {f["path"] for sid in snapshot_ids for f in lt.files(snapshot_id=sid)}
    return out | {f["path"] for tag in tags for f in lt.files(tag=tag)}


def age(path: str, by: dt.timedelta) -> None:
    when = (dt.datetime.now() - by).timestamp()
    for folder, _, names in os.walk(path):
        for n in names:
            os.utime(os.path.join(folder, n), (when, when))


def test_lakeformat_maintenance_of_a_pypaimon_table(paimon, lake):
    h = History(paimon, lake)
    h.write(0, range(0, 6))                        # 1
    h.write(1, range(0, 6))                        # 2
    h.write(0, range(3, 9))                        # 3
    h.table.create_tag("p3", 3)                    # a pypaimon tag
    h.tags["p3"] = rows(paimon_tag_read(h.table, "p3"))
    assert h.tags["p3"] == h.snapshots[3]
    h.alter(PChange.add_column("extra", AtomicType("STRING")))
    h.write(0, range(0, 4), overwrite=True)        # 4: replaces day 0's files
    h.alter(PChange.set_option("snapshot.num-retained.min", "3"))  # schema 2: no snapshot
    h.alter(PChange.set_option("snapshot.expire.limit", "50"))
    h.write(1, range(10, 14))                      # 5
    h.lt().create_tag("lf5", 5)                    # a lakeformat tag, read by pypaimon
    h.tags["lf5"] = h.snapshots[5]
    h.alter(PChange.rename_column("extra", "extra2"))
    h.write(1, range(2, 12), overwrite=True)       # 6
    h.write(0, range(1, 3))                        # 7
    h.write(1, range(0, 3))                        # 8
    h.check("as written")

    lt = h.lt()
    # data files of the expiring snapshots that neither snapshot 6 nor a tag still reads
    doomed = data_files(lt, range(1, 6)) - data_files(lt, [6], ["p3", "lf5"])
    res = lt.expire_snapshots(older_than=dt.timedelta(0), max_deletes=100)  # the option: 3
    assert res.snapshots_deleted == [1, 2, 3, 4, 5]
    assert {p for p in res.deleted if "/bucket-" in p} == doomed
    assert not any(os.path.exists(p) for p in doomed)
    assert res.manifest_files_deleted > 0
    snap_dir = os.path.join(lt.path, "snapshot")
    assert open(os.path.join(snap_dir, "EARLIEST")).read().strip() == "6"
    assert h.table.snapshot_manager().try_get_earliest_snapshot().id == 6
    h.check("after expiry")

    # schema 0 (tag p3), 1 (files of snapshot 4, live in 6), 3 (tag lf5) and 4 (latest) stay
    used = {s.schema_id for s in lt.snapshots()} | {x.schema_id for x in lt.list_tags()}
    res = lt.clean_schemas(retain_min=1, older_than=dt.datetime.now())
    deleted_ids = sorted(int(p.rsplit("-", 1)[1]) for p in res.deleted)
    assert deleted_ids == [2]
    assert not set(deleted_ids) & used
    assert {s.id for s in lt.schemas()} >= used
    h.check("after clean_schemas")

    # pypaimon keeps writing on top, lakeformat keeps cleaning
    h.write(0, range(20, 24))                      # 9
    lt.delete_tag("p3")
    del h.tags["p3"]
    h.check("after delete_tag of pypaimon's tag")
    res = lt.rollback_to(7)                        # snapshots 8 and 9 go, their files orphan
    assert res.snapshots_deleted == [9, 8]
    del h.snapshots[8], h.snapshots[9]
    age(lt.path, dt.timedelta(days=2))
    res = lt.remove_orphan_files()
    assert res.data_files_deleted > 0 and res.manifest_files_deleted > 0
    h.check("after rollback and remove_orphan_files")
    h.write(1, range(30, 33), overwrite=True)      # 8 again, by pypaimon: replaces day 1
    doomed = data_files(lt, [6, 7]) - data_files(lt, [8], ["lf5"])
    assert doomed  # snapshot 6's day-1 files
    res = lt.expire_snapshots(retain_min=1, older_than=dt.timedelta(0), max_deletes=100)
    assert res.snapshots_deleted == [6, 7]
    assert {p for p in res.deleted if "/bucket-" in p} == doomed
    h.check("after a second expiry")
    lt.delete_tag("lf5")
    del h.tags["lf5"]
    h.check("after deleting the last tag")


def test_pypaimon_finds_the_earliest_snapshot_by_lakeformat_hint(paimon, lake):
    """More than 300 snapshots expired: pypaimon probes only 300 ids past the hint. (pypaimon
    writes the first and last commits; lakeformat the 300 between, which is twice as fast as
    pypaimon's growing manifests.)"""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    table = create_paimon_table(paimon, IDENT, schema, ["id"], options={"bucket": "1"})
    n = 306
    lt = lake.get_table(IDENT)
    for i in range(n):
        data = [{"id": i % 7, "v": f"v{i}"}]
        if 3 <= i < n - 3:
            lt.write(pa.Table.from_pylist(data, schema=lt.schema))
        else:
            paimon_write(table, data)
    want = rows(paimon_read(table))
    res = lt.expire_snapshots(retain_min=2, older_than=dt.timedelta(0), max_deletes=1000)
    assert res.snapshots_deleted == list(range(1, n - 1))
    sm = paimon.get_table(IDENT).snapshot_manager()
    assert sm.try_get_earliest_snapshot().id == n - 1
    assert [s.id for s in sm.list_snapshots()] == [n - 1, n]
    assert rows(paimon_read(paimon.get_table(IDENT))) == want
    paimon_write(paimon.get_table(IDENT), [{"id": 100, "v": "after"}])
    assert sm.get_latest_snapshot().id == n + 1
    # the control: without the hint pypaimon cannot find snapshot 305 from 1 (301 probes)
    os.remove(os.path.join(lt.path, "snapshot", "EARLIEST"))
    with pytest.raises(RuntimeError, match="Cannot find earliest snapshot"):
        sm.try_get_earliest_snapshot()


def test_pypaimon_reads_after_clean_schemas_compacts_manifests(paimon, lake):
    """`clean_schemas(compact_manifests=True)` commits a COMPACT snapshot whose base list holds
    only ADD entries: pypaimon reads it (and the snapshot before it) with the same rows and
    counts, keeps writing on top, and still reads once the old schema files are gone."""
    h = History(paimon, lake)
    h.write(0, range(0, 6))                        # 1: schema 0 files
    h.write(1, range(0, 4))                        # 2
    h.alter(PChange.add_column("extra", AtomicType("STRING")))
    h.write(0, range(3, 9))                        # 3: schema 1 files
    h.write(1, range(2, 5))                        # 4
    lt = h.lt()
    lt.compact(full=True)                          # 5: every file rewritten under schema 1
    lt.expire_snapshots(retain_min=1, older_than=dt.timedelta(0))
    table = paimon.get_table(IDENT)
    want = rows(paimon_read(table))
    assert [s.id for s in lt.snapshots()] == [5]

    res = lt.clean_schemas(retain_min=1, older_than=dt.timedelta(0), compact_manifests=True)
    assert res.manifest_compaction_snapshot == 6 and res.kept_kinds[0] == "deleted-file"
    table = paimon.get_table(IDENT)
    snaps = {s.id: s for s in paimon_snapshots(table)}
    assert snaps[6].commit_kind == "COMPACT"
    assert snaps[6].total_record_count == snaps[5].total_record_count
    assert all(deleted == 0 for _, deleted, _ in paimon_base_manifests(table, snaps[6]))
    assert rows(paimon_read(table)) == rows(paimon_read(table, 5)) == want
    assert sorted(f["file_name"] for f in paimon_live_files(table, 6)) == sorted(
        f["file_name"] for f in paimon_live_files(table, 5))

    h.snapshots = {6: want}
    sid = h.write(1, range(20, 22))                # 7: pypaimon commits on top
    assert sid == 7
    lt = h.lt()
    lt.expire_snapshots(retain_min=1, older_than=dt.timedelta(0))
    res = lt.clean_schemas(retain_min=1, older_than=dt.timedelta(0))
    assert res.deleted == [lt.schema_manager.schema_path(0)]
    table = paimon.get_table(IDENT)
    assert rows(paimon_read(table)) == h.snapshots[7]
    assert rows(paimon_read(table)) == rows(lt.read())
