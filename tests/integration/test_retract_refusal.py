"""Retracts (delete, -U/-D rows) a table's merge engine cannot take are refused before anything
is written, naming the option that would allow them; the ones it can take are merged.

The refusals happen before anything is written and the merges are merge-engine rules, so
the store never enters into it. Local disk only (`local_only`); "nothing written" on S3 is
pinned by the S3 runs of `test_table` (bad input refused, table unchanged) and
`test_delete_where`.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

import lakeformat as lf

pytestmark = pytest.mark.local_only  # see the module docstring

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int64()),
                    ("ts", pa.int64()), ("rk", pa.string())])
ID = pa.table({"id": pa.array([1], pa.int64())})


def state(t: lf.Table) -> tuple:
    files = sorted(s.path for s in t.file_io.list_recursive(t.path + "/bucket-0"))
    return [s.id for s in t.snapshots()], files


def make(catalog, name: str, **options: str) -> lf.Table:
    t = catalog.create_table(f"db.{name}", SCHEMA, primary_keys=["id"],
                             options={"bucket": "1", "rowkind.field": "rk", **options})
    t.write(pa.table({"id": [1, 2], "v": [10, 20], "ts": [1, 1], "rk": ["+I", "+I"]},
                     schema=SCHEMA))
    return t


def rows_with(kind: str) -> pa.Table:
    return pa.table({"id": [1], "v": [10], "ts": [2], "rk": [kind]}, schema=SCHEMA)


REFUSED = [
    ("first-row", {"merge-engine": "first-row"}, "-D", "'ignore-delete' = 'true'"),
    ("first-row", {"merge-engine": "first-row"}, "-U", "'ignore-delete' = 'true'"),
    ("pu", {"merge-engine": "partial-update"}, "-D",
     "partial-update.remove-record-on-delete"),
    ("pu", {"merge-engine": "partial-update"}, "-U", "sequence-group"),
    ("agg_max", {"merge-engine": "aggregation", "fields.v.aggregate-function": "max"}, "-D",
     "'fields.v.ignore-retract'='true'.*aggregation.remove-record-on-delete"),
    ("agg_rod", {"merge-engine": "aggregation", "fields.v.aggregate-function": "max",
                 "aggregation.remove-record-on-delete": "true"}, "-U",
     "'fields.v.ignore-retract'='true'"),
    ("pu_grp_max", {"merge-engine": "partial-update", "fields.ts.sequence-group": "v",
                    "fields.v.aggregate-function": "max"}, "-D",
     "'fields.v.ignore-retract'='true'"),
]


@pytest.mark.parametrize("name,options,kind,match", REFUSED)
def test_retracts_the_engine_cannot_take_are_refused(catalog, name, options, kind, match):
    t = make(catalog, name, **options)
    before = state(t)
    with pytest.raises(lf.SchemaMismatchError, match=match):
        t.write(rows_with(kind))
    if kind == "-D" and "fields.ts.sequence-group" not in options:  # delete: ts null
        with pytest.raises(lf.SchemaMismatchError, match=match):
            t.delete(ID)
    assert state(t) == before
    assert sorted(r["id"] for r in t.read().to_pylist()) == [1, 2]
    t.compact(full=True)  # the table stays readable and compactable


ACCEPTED = [
    # (name, options, kind, value of key 1 afterwards; None = the key is gone)
    ("dedup", {}, "-D", None),
    ("first_row_ignore", {"merge-engine": "first-row", "ignore-delete": "true"}, "-D", 10),
    ("pu_ignore", {"merge-engine": "partial-update", "ignore-delete": "true"}, "-D", 10),
    ("pu_rod", {"merge-engine": "partial-update",
                "partial-update.remove-record-on-delete": "true"}, "-D", None),
    ("pu_grp", {"merge-engine": "partial-update", "fields.ts.sequence-group": "v"}, "-D",
     "retracted"),
    ("agg_sum", {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"}, "-D", 0),
    ("agg_ignore", {"merge-engine": "aggregation", "fields.v.aggregate-function": "max",
                    "fields.v.ignore-retract": "true"}, "-U", 10),
    ("agg_rod", {"merge-engine": "aggregation", "fields.v.aggregate-function": "max",
                 "aggregation.remove-record-on-delete": "true"}, "-D", None),
]


@pytest.mark.parametrize("name,options,kind,value", ACCEPTED)
def test_retracts_the_engine_can_take_are_merged(catalog, name, options, kind, value):
    t = make(catalog, name, **options)
    t.write(rows_with(kind))
    for _ in range(2):  # merge on read, then after a full compaction
        got = {r["id"]: r["v"] for r in t.read().to_pylist()}
        assert got[2] == 20
        if value is None:
            assert 1 not in got
        elif value == "retracted":  # the -D wins the group (ts 2 >= 1): its columns null
            assert got[1] is None
        else:
            assert got[1] == value
        t.compact(full=True)


def test_null_ordering_retract_passes_a_group_that_cannot_retract(catalog):
    """A retract whose sequence-group ordering value is null never reaches the group's
    aggregate function, so it is not refused."""
    t = make(catalog, "pu_null", **{"merge-engine": "partial-update",
                                    "fields.ts.sequence-group": "v",
                                    "fields.v.aggregate-function": "max"})
    t.write(pa.table({"id": [1], "v": [5], "ts": [None], "rk": ["-D"]}, schema=SCHEMA))
    assert {r["id"]: r["v"] for r in t.read().to_pylist()} == {1: 10, 2: 20}
