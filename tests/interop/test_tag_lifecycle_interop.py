"""Tag lifecycle across the two libraries: pypaimon 2.1.0 lists and reads the tags lakeformat's
writers create automatically (`tag.automatic-creation`, names with a space, a retention from
`tag.default-time-retained`), and lakeformat's `expire_tags` expires a tag pypaimon created
with a retention, leaving what pypaimon reads of the others as it was."""

from __future__ import annotations

import datetime as dt
import time
from typing import Any

import pytest

pytest.importorskip("pypaimon")  # collected only in the interop venv

import pyarrow as pa  # noqa: E402

import lakeformat as lf  # noqa: E402
from lakeformat import clock  # noqa: E402

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def rows(t: pa.Table) -> list[tuple]:
    return sorted(tuple(r.values()) for r in t.to_pylist())


def paimon_tag_read(table: Any, tag: str) -> pa.Table:
    builder = table.copy({"scan.tag-name": tag}).new_read_builder()
    return builder.new_read().to_arrow(builder.new_scan().plan().splits())


def utc_ms(text: str) -> int:
    return int(dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC).timestamp() * 1000)


def test_pypaimon_reads_auto_created_tags_and_lakeformat_expires_pypaimon_tags(
        paimon: Any, lake: lf.Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    now = {"ms": utc_ms("2024-03-09 10:05")}
    monkeypatch.setattr(clock, "now_millis", lambda: now["ms"])
    t = lake.create_table("db.t", SCHEMA, primary_keys=["id"], options={
        "bucket": "2", "tag.automatic-creation": "process-time",
        "tag.creation-period": "hourly", "sink.process-time-zone": "UTC",
        "tag.default-time-retained": "1 d"})
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    now["ms"] = utc_ms("2024-03-09 11:20")
    t.write(pa.table({"id": [2, 3], "v": ["B", "c"]}, schema=SCHEMA))
    assert {x.name: x.snapshot_id for x in t.list_tags()} == {"2024-03-09 09": 1,
                                                             "2024-03-09 10": 2}

    table = paimon.get_table("db.t")
    assert sorted(table.list_tags()) == ["2024-03-09 09", "2024-03-09 10"]
    for name in ("2024-03-09 09", "2024-03-09 10"):
        assert rows(paimon_tag_read(table, name)) == rows(t.read(tag=name)), name
        tag = table.tag_manager().get(name)
        assert tag.tag_time_retained == dt.timedelta(days=1)
        assert tag.tag_create_time == {x.name: x for x in t.list_tags()}[name].create_time
    assert rows(paimon_tag_read(table, "2024-03-09 10")) == [(1, "a"), (2, "B"), (3, "c")]

    # pypaimon's own tags: one with a retention (its creation time is the real clock), one
    # without; lakeformat's clock then moves two hours past the real one
    table.create_tag("p_hour", snapshot_id=1, time_retained="1h")
    table.create_tag("p_keep", snapshot_id=1)
    now["ms"] = time.time_ns() // 1_000_000 + 2 * 3600 * 1000
    result = t.expire_tags()
    assert sorted(result.tags_deleted) == ["2024-03-09 09", "2024-03-09 10", "p_hour"]
    table = paimon.get_table("db.t")
    assert sorted(table.list_tags()) == ["p_keep"]
    assert rows(paimon_tag_read(table, "p_keep")) == [(1, "a"), (2, "b")]
