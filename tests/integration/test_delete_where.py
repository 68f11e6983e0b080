"""`Table.delete(where=...)`: a predicate on partition columns drops those partitions with an
OVERWRITE commit; any other predicate writes -D records for the matching keys. Nothing matched
commits nothing, a re-run with the same commit identifier lands once, an unknown column or a
merge engine that cannot take a retract fails before anything is written.

On local disk and the moto S3 server: a range dropping partitions (an OVERWRITE commit whose
data files go), a predicate retracting keys (an APPEND of -D records), the streamed read under
a small memory budget, and a re-run landing once (the commit identifier found among the
snapshots). The rest (`@local_disk`) varies the predicate, its types and text, the merge
engines and the refusals: predicate evaluation and checks made before any file is written or
read, the same above either store, on local disk only.
"""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lakeformat as lf

SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False),
                    pa.field("id", pa.int64(), nullable=False), ("v", pa.string()),
                    ("amount", pa.int64())])
DAYS = ["2024-01-01", "2024-01-02", "2024-01-03"]


#: a test of this module that never reaches store specifics: local disk only (module docstring)
local_disk = pytest.mark.parametrize("catalog", ["local"], indirect=True)


def make(catalog, name: str = "db.t", **options: str) -> lf.Table:
    t = catalog.create_table(name, SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                             options={"bucket": "2", **options})
    t.write(pa.table({"dt": [d for d in DAYS for _ in range(4)],
                      "id": [i for _ in DAYS for i in range(4)],
                      "v": [f"{d}/{i}" for d in DAYS for i in range(4)],
                      "amount": [i * 10 for _ in DAYS for i in range(4)]}, schema=SCHEMA))
    return t


def keys(t: lf.Table, **read) -> list[tuple[str, int]]:
    return sorted((r["dt"], r["id"]) for r in t.read(**read).to_pylist())


def state(t: lf.Table) -> tuple:
    return [s.id for s in t.snapshots()], sorted(map(str, t.read().to_pylist()))


ALL = [(d, i) for d in DAYS for i in range(4)]


@pytest.mark.parametrize("where", [
    [("dt", "=", "2024-01-02")],
    pc.field("dt") == "2024-01-02",
    [[("dt", "=", "2024-01-02")], [("dt", "=", "2099-01-01")]],
])
@local_disk
def test_partition_predicate_drops_partitions_with_an_overwrite_commit(catalog, where):
    t = make(catalog)
    before = t.read()
    res = t.delete(where=where)
    assert res.snapshot_id == 2 and res.commit_kind == "OVERWRITE"
    assert res.partitions_dropped == ("dt=2024-01-02",) and res.rows_deleted is None
    assert res.files_deleted == len(t.files(snapshot_id=1, )) - len(t.files())
    assert res.files_added == 0 and res.rows_written == 0
    assert t.latest_snapshot().commit_kind == "OVERWRITE"
    assert keys(t) == [k for k in ALL if k[0] != "2024-01-02"]
    assert {f["partition"]["dt"] for f in t.files()} == {"2024-01-01", "2024-01-03"}
    assert t.read(snapshot_id=1).sort_by("id").equals(before.sort_by("id"))  # time travel
    assert res.to_dict()["partitions_dropped"] == ["dt=2024-01-02"]


def test_range_on_a_partition_column_drops_every_matching_partition(catalog):
    t = make(catalog)
    res = t.delete(where=pc.field("dt") >= "2024-01-02")
    assert res.commit_kind == "OVERWRITE"
    assert res.partitions_dropped == ("dt=2024-01-02", "dt=2024-01-03")
    assert keys(t) == [k for k in ALL if k[0] == "2024-01-01"]


@local_disk
def test_typed_partition_values_are_compared_as_their_type(catalog):
    schema = pa.schema([pa.field("d", pa.date32(), nullable=False),
                        pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    t = catalog.create_table("db.dates", schema, primary_keys=["d", "id"], partition_keys=["d"],
                             options={"bucket": "1"})
    days = [dt.date(2024, 1, 1), dt.date(2024, 1, 2), dt.date(2024, 2, 1)]
    t.write(pa.table({"d": days, "id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=schema))
    res = t.delete(where=pc.field("d") < pa.scalar(dt.date(2024, 2, 1)))
    assert res.commit_kind == "OVERWRITE" and len(res.partitions_dropped) == 2
    assert t.read().column("id").to_pylist() == [3]


@pytest.mark.parametrize("where", [
    [("amount", ">=", 20)],
    (pc.field("amount") >= 20),
    [("dt", "in", DAYS), ("amount", ">=", 20)],  # also names a non-partition column
])
@local_disk
def test_other_predicates_retract_the_matching_keys(catalog, where):
    t = make(catalog)
    res = t.delete(where=where)
    assert res.snapshot_id == 2 and res.commit_kind == "APPEND"
    assert res.rows_deleted == 6 and res.rows_written == 6 and res.partitions_dropped == ()
    assert keys(t) == [k for k in ALL if k[1] < 2]
    untouched = t.read(filter=[("id", "<", 2)]).sort_by([("dt", "ascending"),
                                                          ("id", "ascending")])
    assert untouched.column("v").to_pylist() == [f"{d}/{i}" for d in DAYS for i in range(2)]
    assert keys(t, snapshot_id=1) == ALL


def test_mixed_predicate_only_touches_its_rows(catalog):
    t = make(catalog)
    res = t.delete(where=(pc.field("dt") == "2024-01-03") & (pc.field("v") == "2024-01-03/1"))
    assert res.commit_kind == "APPEND" and res.rows_deleted == 1
    assert keys(t) == [k for k in ALL if k != ("2024-01-03", 1)]


def test_delete_where_reads_within_a_small_memory_budget(catalog):
    t = catalog.create_table("db.big", SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                             options={"bucket": "2"})
    n = 20_000
    for day in DAYS[:2]:
        t.write(pa.table({"dt": [day] * n, "id": list(range(n)), "v": ["x" * 20] * n,
                          "amount": list(range(n))}, schema=SCHEMA))
    res = t.delete(where=pc.bit_wise_and(pc.field("amount"), 1) == 1, memory_budget="64 kb")
    assert res.rows_deleted == n
    got = t.read(columns=["amount"]).column("amount")
    assert len(got) == n and pc.all(pc.equal(pc.bit_wise_and(got, 1), 0)).as_py()


@local_disk
def test_not_null_value_columns_are_carried_by_the_retracts(catalog):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False),
                        pa.field("v", pa.string(), nullable=False)])
    t = catalog.create_table("db.nn", schema, primary_keys=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=schema))
    with pytest.raises(lf.SchemaMismatchError, match="NOT NULL column 'v'"):
        t.delete(pa.table({"id": [1]}))  # delete(keys) needs the NOT NULL value
    res = t.delete(where=[("v", "in", ["a", "c"])])
    assert res.rows_deleted == 2 and t.read().column("id").to_pylist() == [2]


@local_disk
def test_partial_update_refuses_row_retracts_but_drops_partitions(catalog):
    t = make(catalog, "db.pu", **{"merge-engine": "partial-update"})
    before = state(t)
    with pytest.raises(lf.SchemaMismatchError, match="partial-update.remove-record-on-delete"):
        t.delete(where=[("amount", "=", 10)])
    assert state(t) == before
    res = t.delete(where=[("dt", "=", "2024-01-01")])  # Paimon drops partitions of any engine
    assert res.commit_kind == "OVERWRITE"
    assert keys(t) == [k for k in ALL if k[0] != "2024-01-01"]


@pytest.mark.parametrize("where", [[("dt", "=", "2030-01-01")], [("amount", "<", 0)],
                                   pc.field("v") == "nothing"])
@local_disk
def test_matching_nothing_commits_nothing(catalog, where):
    t = make(catalog)
    res = t.delete(where=where)
    assert res.snapshot_id is None and res.commit_kind is None
    assert "nothing to commit" in str(res)
    assert [s.id for s in t.snapshots()] == [1] and keys(t) == ALL


@pytest.mark.parametrize("where,kind", [([("dt", "=", "2024-01-01")], "OVERWRITE"),
                                        ([("amount", "=", 30)], "APPEND")])
def test_rerun_with_the_same_commit_identifier_lands_once(catalog, where, kind):
    t = make(catalog)
    first = t.delete(where=where, commit_user="dag.task", commit_identifier=20240101)
    assert first.snapshot_id == 2 and first.commit_kind == kind and not first.already_committed
    after = state(t)
    again = t.delete(where=where, commit_user="dag.task", commit_identifier=20240101)
    assert again.already_committed and again.snapshot_id == 2 and again.commit_kind == kind
    assert state(t) == after
    snap = t.latest_snapshot()
    assert (snap.commit_user, snap.commit_identifier) == ("dag.task", 20240101)
    assert snap.properties == {"lakeformat.operation": "delete"}
    with pytest.raises(lf.InvalidArgumentError, match="not a write"):
        t.write(pa.table({"dt": ["2024-01-05"], "id": [9], "v": ["z"], "amount": [1]},
                         schema=SCHEMA), commit_user="dag.task", commit_identifier=20240101)


@pytest.mark.parametrize("where", [[("nope", "=", 1)], pc.field("nope") == 1,
                                   [("dt", "=", "2024-01-01"), ("nope", ">", 2)]])
@local_disk
def test_unknown_column_fails_and_leaves_the_table(catalog, where):
    t = make(catalog)
    before = state(t)
    with pytest.raises(lf.InvalidFilterError, match="'nope'"):
        t.delete(where=where)
    assert state(t) == before


@local_disk
def test_keys_and_where_are_exclusive_and_where_cannot_be_empty(catalog):
    t = make(catalog)
    key = pa.table({"dt": ["2024-01-01"], "id": [0]})
    with pytest.raises(lf.InvalidArgumentError, match="not both"):
        t.delete(key, where=[("id", "=", 1)])
    with pytest.raises(lf.SchemaMismatchError, match="None"):
        t.delete()  # no keys: as delete(None) always did
    for empty in ([], [[]]):
        with pytest.raises(lf.InvalidFilterError, match="every row"):
            t.delete(where=empty)
    assert [s.id for s in t.snapshots()] == [1]
    assert t.delete(key).commit_kind == "APPEND"  # the keys form still works
    assert ("2024-01-01", 0) not in keys(t)


@pytest.mark.parametrize("order", ["ascending", "descending"])
@local_disk
def test_retracts_carry_the_sequence_field_of_the_rows_they_delete(catalog, order):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("ts", pa.int64()),
                        ("v", pa.string())])
    t = catalog.create_table("db.seq", schema, primary_keys=["id"],
                             options={"bucket": "1", "sequence.field": "ts",
                                      "sequence.field.sort-order": order})
    t.write(pa.table({"id": [1, 2], "ts": [100, 100], "v": ["a", "b"]}, schema=schema))
    res = t.delete(where=[("v", "=", "a")])
    assert res.rows_deleted == 1
    assert t.read().column("id").to_pylist() == [2]


@local_disk
def test_delete_where_takes_where_text(catalog):
    t = catalog.create_table("db.text", pa.schema([("dt", pa.string()), ("id", pa.int64()),
                                                   ("name", pa.string())]),
                             primary_keys=["dt", "id"], partition_keys=["dt"],
                             options={"bucket": "1"})
    t.write(pa.table({"dt": ["a", "a", "b"], "id": [1, 2, 3], "name": ["x", None, "y"]}))
    assert t.delete(where="name IS NULL OR id IN (3)").rows_deleted == 2
    assert t.delete(where="dt = 'a' AND id = 99").snapshot_id is None
    with pytest.raises(lf.InvalidFilterError, match="nope"):
        t.delete(where="nope = 1")
    assert t.read().to_pylist() == [{"dt": "a", "id": 1, "name": "x"}]


@pytest.mark.parametrize("options, named", [
    ({"merge-engine": "aggregation", "fields.amount.aggregate-function": "sum"},
     "aggregation.remove-record-on-delete"),
    ({"merge-engine": "partial-update", "fields.amount.sequence-group": "v",
      "partial-update.remove-record-on-sequence-group": "amount"},
     "partial-update.remove-record-on-delete"),
    ({"ignore-delete": "true"}, "ignore-delete"),
    ({"merge-engine": "first-row"}, "first-row"),
])
@local_disk
def test_engines_that_would_keep_the_rows_are_refused_before_anything_is_read(
        catalog, options, named):
    """A -D record these engines drop or merge away would leave the rows while the result
    said they were deleted: refused, as Paimon's DELETE refuses them."""
    t = make(catalog, "db.keep", **options)
    before = state(t)
    with pytest.raises(lf.SchemaMismatchError, match=named):
        t.delete(where=[("id", "=", 1)])
    assert state(t) == before
    assert t.delete(where=[("dt", "=", DAYS[0])]).partitions_dropped == (f"dt={DAYS[0]}",)


@pytest.mark.parametrize("options", [
    {"merge-engine": "aggregation", "fields.amount.aggregate-function": "sum",
     "aggregation.remove-record-on-delete": "true"},
    {"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"},
])
@local_disk
def test_engines_told_to_remove_records_delete_the_matching_rows(catalog, options):
    t = make(catalog, "db.remove", **options)
    result = t.delete(where="amount >= 20")
    assert result.rows_deleted == 6
    assert keys(t) == [(d, i) for d in DAYS for i in (0, 1)]
