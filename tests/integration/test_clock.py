"""One clock: every instant a table records comes from `lakeformat.clock`, so moving it moves
snapshot, schema, data-file and tag times together (and every age rule with them)."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat import clock

#: 2001-09-09 01:46:40 UTC, far from any real "now"
FIXED = 1_000_000_000_000


@pytest.fixture()
def frozen(monkeypatch):
    monkeypatch.setattr(clock, "now_millis", lambda: FIXED)


def test_moving_the_clock_moves_every_recorded_instant(tmp_path, frozen):
    cat = lf.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", pa.schema([("id", pa.int64()), ("v", pa.int64())]),
                         primary_keys=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1, 2], "v": [1, 2]}))
    local = dt.datetime.fromtimestamp(FIXED / 1000)
    local_as_utc_ms = int(local.replace(tzinfo=dt.UTC).timestamp() * 1000)

    assert [s.time_millis for s in t.snapshots()] == [FIXED]
    assert [s.time_millis for s in t.schemas()] == [FIXED]
    assert {f["creation_time"] for f in t.files()} == {local_as_utc_ms}
    assert t.create_tag("frozen").create_time == local
    assert [x.create_time for x in t.list_tags()] == [local]
    # the snapshot is 25 years old by the moved clock's own measure: it is not expired only
    # because it is the last one
    assert t.expire_snapshots(retain_min=1, older_than="1 d").snapshots_deleted == []
