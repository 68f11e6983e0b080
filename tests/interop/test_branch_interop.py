"""Branches pypaimon 2.1.0 made and wrote, maintained on the main branch by lakeformat.

pypaimon creates branches as Java does (a copy of the tag, its snapshot and the schemas under
`branch/branch-<name>/`) and writes a branch's data files and manifests into the table's own
directories. lakeformat lists and reads them, then deletes the tag the branch was made from,
compacts, expires every snapshot but the latest, cleans schema files and removes orphans on the
main branch: pypaimon still reads the branch (and the tag the branch holds) with the rows it
read before, and keeps writing to it. A branch lakeformat creates from a tag is one pypaimon
lists and reads.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

pytest.importorskip("pypaimon")  # collected only in the interop venv

import pyarrow as pa  # noqa: E402

from tests.support.pypaimon_helpers import (  # noqa: E402
    create_paimon_table,
    paimon_read,
    paimon_write,
)

IDENT = "db.t"
SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False),
                    pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
NOW = dt.timedelta(0)


def rows(t: pa.Table) -> list[tuple]:
    return sorted(tuple(r.values()) for r in t.to_pylist())


def data(day: str, ids, tag: str) -> list[dict]:
    return [{"dt": day, "id": i, "v": f"{tag}{i}"} for i in ids]


def tag_read(table: Any, tag: str) -> pa.Table:
    builder = table.copy({"scan.tag-name": tag}).new_read_builder()
    return builder.new_read().to_arrow(builder.new_scan().plan().splits())


def test_main_maintenance_keeps_a_pypaimon_branch_readable(paimon, lake):
    main = create_paimon_table(paimon, IDENT, SCHEMA, ["dt", "id"], ["dt"], {"bucket": "2"})
    paimon_write(main, data("d1", range(8), "a"))
    paimon_write(main, data("d2", range(4), "b"))
    main.create_tag("t1")
    tagged = rows(paimon_read(main))
    main.branch_manager().create_branch("b", "t1")
    branch = paimon.get_table(f"{IDENT}$branch_b")
    paimon_write(branch, data("d1", [0, 1, 20], "br"))
    paimon_write(branch, data("d3", [5], "br"))
    branch_rows = rows(paimon_read(paimon.get_table(f"{IDENT}$branch_b")))
    paimon_write(main, data("d1", range(4), "m"))
    paimon_write(main, data("d2", range(4), "m"))

    t = lake.get_table(IDENT)
    [info] = t.branches()
    assert (info.name, info.earliest_snapshot, info.latest_snapshot, info.tags) == (
        "b", 2, 4, ["t1"])
    assert rows(t.branch("b").read()) == branch_rows
    assert rows(t.branch("b").read(tag="t1")) == tagged
    held = {f["path"] for f in t.branch("b").files()}

    t.delete_tag("t1")
    t.compact(full=True)
    main_rows = rows(t.read())
    expired = t.expire_snapshots(retain_min=1, retain_max=1, older_than=NOW)
    assert expired.snapshots_deleted == [1, 2, 3, 4]
    t.clean_schemas(retain_min=1, older_than=NOW)
    t.remove_orphan_files(older_than=NOW, enforce_retention_duration=False)
    assert all(t.file_io.exists(p) for p in held)

    branch = paimon.get_table(f"{IDENT}$branch_b")
    assert rows(paimon_read(branch)) == branch_rows
    assert rows(tag_read(branch, "t1")) == tagged
    assert rows(paimon_read(paimon.get_table(IDENT))) == main_rows
    # the branch takes more writes after the main branch's cleanup
    paimon_write(branch, data("d3", [6], "late"))
    assert rows(paimon_read(paimon.get_table(f"{IDENT}$branch_b"))) == sorted(
        branch_rows + [("d3", 6, "late6")])


def test_pypaimon_reads_a_branch_lakeformat_created(paimon, lake):
    create_paimon_table(paimon, IDENT, SCHEMA, ["dt", "id"], ["dt"], {"bucket": "1"})
    t = lake.get_table(IDENT)
    t.write(pa.Table.from_pylist(data("d1", range(5), "a"), schema=SCHEMA))
    t.create_tag("t1")
    t.write(pa.Table.from_pylist(data("d1", range(5), "z"), schema=SCHEMA))
    t.create_branch("b", tag="t1")
    t.create_branch("e")
    assert sorted(paimon.list_branches(IDENT)) == ["b", "e"]
    tagged = rows(t.read(tag="t1"))
    assert rows(paimon_read(paimon.get_table(f"{IDENT}$branch_b"))) == tagged
    # pypaimon writes to the empty branch; lakeformat reads what it wrote
    paimon_write(paimon.get_table(f"{IDENT}$branch_e"), data("d9", [1], "e"))
    assert rows(lake.get_table(IDENT).branch("e").read()) == [("d9", 1, "e1")]
    t.delete_branch("b")
    assert paimon.list_branches(IDENT) == ["e"]
