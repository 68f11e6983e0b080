"""`record-level.expire-time` with `record-level.time-field`: a primary-key table's compaction
drops the records whose time is older than the expire time, as Java's `RecordLevelExpire`:
INT seconds, BIGINT seconds or milliseconds (from 10^12), TIMESTAMP and TIMESTAMP_LTZ; a record
is kept while now <= time + expire-time (whole seconds); a null time never expires; only rows a
compaction reads go (reads never filter); an expiry writes no changelog. The clock is fixed
(`lakeformat.clock.now_millis`) so boundaries are exact."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat import clock
from lakeformat.errors import InvalidOptionError
from tests.integration.test_first_row_lookup import changelog_of

NOW = 1_790_000_000  # epoch seconds of the fixed clock
HOUR = 3600


@pytest.fixture
def now(monkeypatch):
    """The clock, in epoch seconds; set `now[0]` to move it."""
    at = [NOW]
    monkeypatch.setattr(clock, "now_millis", lambda: at[0] * 1000 + 250)
    return at


def make(tmp_path, ts_type: pa.DataType = pa.int64(), name="db.t", **options) -> lf.Table:
    cat = lf.Catalog(str(tmp_path / "wh"))
    cat.create_database("db", exist_ok=True)
    schema = pa.schema([pa.field("id", pa.int64(), False), ("ts", ts_type), ("v", pa.string()),
                        ("w", pa.string())])
    opts = {"bucket": "1", "record-level.expire-time": "1 h",
            "record-level.time-field": "ts", **options}
    return cat.create_table(name, schema, primary_keys=["id"], options=opts)


def rows(t: lf.Table, ids, times, v="a", w=None) -> pa.Table:
    n = len(ids)
    return pa.Table.from_pydict({"id": list(ids), "ts": list(times), "v": [v] * n, "w": [w] * n},
                                schema=t.schema)


def ids_of(t: lf.Table) -> list[int]:
    return sorted(t.read(columns=["id"])["id"].to_pylist())


def utc(seconds: int, micros: int = 0) -> dt.datetime:
    return dt.datetime(1970, 1, 1) + dt.timedelta(seconds=seconds, microseconds=micros)


# time values per type: id 1 expired by one second, id 2 exactly at the boundary (kept),
# id 3 now, id 4 null; sub-second digits are cut towards zero as Java's division does
EDGE = NOW - HOUR
TYPES = {
    "INT": (pa.int32(), [EDGE - 1, EDGE, NOW, None]),
    "BIGINT seconds": (pa.int64(), [EDGE - 1, EDGE, NOW, None]),
    "BIGINT millis": (pa.int64(), [(EDGE - 1) * 1000 + 999, EDGE * 1000, NOW * 1000, None]),
    "TIMESTAMP(3)": (pa.timestamp("ms"), [utc(EDGE - 1, 999_000), utc(EDGE), utc(NOW), None]),
    "TIMESTAMP(6)": (pa.timestamp("us"), [utc(EDGE - 1, 999_999), utc(EDGE, 1), utc(NOW),
                                          None]),
    "TIMESTAMP_LTZ": (pa.timestamp("us", tz="UTC"),
                      [utc(EDGE - 1, 500_000).replace(tzinfo=dt.UTC),
                       utc(EDGE).replace(tzinfo=dt.UTC), utc(NOW).replace(tzinfo=dt.UTC),
                       None]),
}


@pytest.mark.parametrize("kind", list(TYPES))
def test_each_time_type_expires_at_the_boundary(tmp_path, now, kind):
    ts_type, times = TYPES[kind]
    t = make(tmp_path, ts_type)
    t.write(rows(t, [1, 2, 3, 4], times))
    assert ids_of(t) == [1, 2, 3, 4]  # reads never expire
    t.compact()
    assert ids_of(t) == [2, 3, 4]
    now[0] += 1  # one second later the boundary record goes too
    t.write(rows(t, [5], [times[2]]))
    t.compact()
    assert ids_of(t) == [3, 4, 5]


@pytest.mark.parametrize("text,seconds", [("1 h", 3600), ("60 min", 3600), ("3600 s", 3600),
                                          ("3600000", 3600), ("1 d", 86400),
                                          ("1500 ms", 1), ("999 ms", 0)])
def test_expire_time_units(tmp_path, now, text, seconds):
    t = make(tmp_path, **{"record-level.expire-time": text})
    t.write(rows(t, [1, 2], [NOW - seconds - 1, NOW - seconds]))
    t.compact()
    assert ids_of(t) == [2]


def test_only_compacted_files_lose_rows(tmp_path, now):
    t = make(tmp_path)
    t.write(rows(t, [1, 2], [NOW - 600, NOW]))
    t.compact()
    top = {f["file_name"] for f in t.files()}
    now[0] += HOUR  # id 1 has expired, in a file at the top level
    t.write(rows(t, [3], [NOW + HOUR]))
    t.compact(full=False)  # no pick: the expired row is still read
    assert ids_of(t) == [1, 2, 3]
    t.compact()  # the top file holds an expired record: rewritten, not moved up
    assert ids_of(t) == [2, 3]
    assert not top & {f["file_name"] for f in t.files()}


def test_full_compaction_rewrites_only_files_with_expired_records(tmp_path, now):
    """A bucket that is one run at the top level: a full compaction rewrites the files whose
    minimum time (their stats) has expired, and leaves the others as they are."""
    cat = lf.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    schema = pa.schema([pa.field("p", pa.string(), False), pa.field("id", pa.int64(), False),
                        ("ts", pa.int64())])
    t = cat.create_table("db.t", schema, primary_keys=["p", "id"], partition_keys=["p"],
                         options={"bucket": "1", "record-level.expire-time": "1 h",
                                  "record-level.time-field": "ts"})
    t.write(pa.table({"p": ["old", "old", "new"], "id": [1, 2, 3],
                      "ts": [NOW - 1800, NOW, NOW + 7200]}, schema=schema))
    t.compact()
    before = {f["partition"]["p"]: f["file_name"] for f in t.files()}
    now[0] += HOUR  # p=old id 1 expires; p=new holds nothing expired
    result = t.compact()
    assert len(result.snapshot_ids) == 1
    after = {f["partition"]["p"]: f["file_name"] for f in t.files()}
    assert after["new"] == before["new"] and after["old"] != before["old"]
    assert sorted(t.read(columns=["id"])["id"].to_pylist()) == [2, 3]


def test_deduplicate_drops_an_expired_newer_record_before_the_merge(tmp_path, now):
    """As Java filters what compaction reads before merging: when a key's newest record has
    expired and an older one has not, the older one is what stays."""
    t = make(tmp_path)
    t.write(rows(t, [1], [NOW], v="older"))
    t.write(rows(t, [1], [NOW - 2 * HOUR], v="newer"))
    assert t.read()["v"].to_pylist() == ["newer"]
    t.compact()
    assert t.read()["v"].to_pylist() == ["older"]


def test_partial_update_merges_only_records_that_have_not_expired(tmp_path, now):
    t = make(tmp_path, **{"merge-engine": "partial-update"})
    t.write(rows(t, [1, 2], [NOW - 2 * HOUR, NOW - 2 * HOUR], v="old-v", w=None))
    t.write(rows(t, [1], [NOW], v=None, w="new-w"))
    assert t.read().sort_by("id").to_pylist()[0] == {"id": 1, "ts": NOW, "v": "old-v",
                                                     "w": "new-w"}
    t.compact()
    assert t.read().to_pylist() == [{"id": 1, "ts": NOW, "v": None, "w": "new-w"}]


def test_lookup_changelog_of_expired_records(tmp_path, now):
    """An expiry writes no changelog (no -D); a key whose stored record expired comes back as
    +I, since the lookup, like Java's, reads through the expiry."""
    t = make(tmp_path, **{"changelog-producer": "lookup"})
    first = t.write(rows(t, [1, 2], [NOW, NOW], v="a"))
    assert [(r[0], r[1], r[3]) for r in changelog_of(t, first.compaction_snapshot_ids[0])] == \
        [("+I", 1, "a"), ("+I", 2, "a")]
    now[0] += 2 * HOUR  # both stored records have expired (still in their top-level file)
    later = now[0]
    second = t.write(rows(t, [1, 3], [later, later - 2 * HOUR], v="b"))
    # id 1: +I (its old record is not found); id 3 arrives expired: dropped, no changelog
    assert [(r[0], r[1], r[3]) for r in changelog_of(t, second.compaction_snapshot_ids[0])] == \
        [("+I", 1, "b")]
    full = t.compact()
    assert all(changelog_of(t, s) == [] for s in full.snapshot_ids)
    assert t.read().to_pylist() == [{"id": 1, "ts": later, "v": "b", "w": None}]


def test_full_compaction_changelog_has_no_deletes_for_expired_records(tmp_path, now):
    t = make(tmp_path, **{"changelog-producer": "full-compaction"})
    t.write(rows(t, [1, 2], [NOW, NOW], v="a"))
    t.compact()
    now[0] += 2 * HOUR
    t.write(rows(t, [2], [now[0]], v="b"))
    result = t.compact()
    # id 1 expired: gone without -D; id 2's stored record expired: +I, not -U/+U
    assert [(r[0], r[1], r[3]) for r in changelog_of(t, result.snapshot_ids[0])] == [("+I", 2, "b")]
    assert ids_of(t) == [2]


def test_deletion_vector_table_marks_the_expired_row_its_result_replaces(tmp_path, now):
    """Java's lookup does not find an expired stored record; lakeformat also marks that row
    deleted, so a deletion-vector read (no merge) never shows it beside the key's new row."""
    t = make(tmp_path, **{"deletion-vectors.enabled": "true"})
    t.write(rows(t, range(1, 301), [NOW] * 300, v="a"))  # compacted to the top level
    now[0] += 2 * HOUR
    t.write(rows(t, [1], [now[0]], v="b"))  # its compaction looks id 1 up in the top file
    assert sorted(f["level"] for f in t.files()) == [4, 5]
    got = t.read().sort_by("id").to_pylist()
    # ids 2.. have expired too, but no compaction has read them yet: still shown
    assert got == [{"id": 1, "ts": now[0], "v": "b", "w": None}] + [
        {"id": i, "ts": NOW, "v": "a", "w": None} for i in range(2, 301)]


def test_append_tables_keep_their_rows(tmp_path, now):
    """Java expires records in primary-key tables only."""
    cat = lf.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("ts", pa.int64())])
    t = cat.create_table("db.a", schema, options={"bucket": "-1",
                                                  "record-level.expire-time": "1 h",
                                                  "record-level.time-field": "ts"})
    for i in range(6):
        t.write(pa.table({"id": [i], "ts": [NOW - 10 * HOUR]}, schema=schema))
    t.compact()
    assert sorted(t.read()["id"].to_pylist()) == list(range(6))


@pytest.mark.parametrize("options,named", [
    ({"record-level.expire-time": "soon"}, "record-level.expire-time"),
    ({"record-level.expire-time": "1.5 h"}, "record-level.expire-time"),
    ({"record-level.expire-time": "3 fortnights"}, "record-level.expire-time"),
    ({"record-level.expire-time": "2 mins"}, "record-level.expire-time"),  # not a Java label
    ({"record-level.time-field": None}, "record-level.time-field"),
    ({"record-level.time-field": "missing"}, "record-level.time-field"),
    ({"record-level.time-field": "v"}, "record-level.time-field"),
])
def test_bad_settings_are_refused_by_name_and_change_nothing(tmp_path, now, options, named):
    t = make(tmp_path, **{"record-level.expire-time": "100 d"})
    t.write(rows(t, [1, 2], [NOW - 10 * HOUR, NOW]))
    changes = [lf.SchemaChange.remove_option(k) if v is None else lf.SchemaChange.set_option(k, v)
               for k, v in options.items()]
    t.alter(changes)
    t.refresh()
    snapshots = [s.id for s in t.snapshots()]
    files = sorted(p.path for p in t.file_io.list_recursive(t.path))
    with pytest.raises(InvalidOptionError, match=named):
        t.compact()
    with pytest.raises(InvalidOptionError, match=named):
        t.write(rows(t, [3], [NOW]))
    assert [s.id for s in t.snapshots()] == snapshots
    assert sorted(p.path for p in t.file_io.list_recursive(t.path)) == files
    assert ids_of(t) == [1, 2]
