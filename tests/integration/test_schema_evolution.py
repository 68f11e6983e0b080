"""Schema evolution through the public API: alter, merge-schema writes, reads by field id.

Field ids, type rules, casts and merge-schema decisions are made on schema JSON and Arrow
columns; the store only publishes the schema files, and that publishing on S3 (a
write-if-absent, raced by two processes) is pinned by `test_merge_schema_concurrency` and the
S3 runs of `test_table` and `test_concurrent_writers`. Local disk only (`local_only`).
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat import Move
from lakeformat import SchemaChange as SC
from lakeformat.schema.type_text import parse_type
from lakeformat.schema.types import DataField

pytestmark = pytest.mark.local_only  # see the module docstring


def listing(t: lf.Table) -> dict[str, bytes]:
    io = t.file_io
    return {s.path: io.read_bytes(s.path) for s in io.list_recursive(t.path)}


def by_key(table: pa.Table, key: str = "id") -> dict:
    return {r[key]: r for r in table.to_pylist()}


def types_of(t: lf.Table) -> dict[str, str]:
    return {f.name: str(f.type) for f in t.table_schema.fields}


# -- the scenarios ------------------------------------------------------------------------

def test_merge_schema_write_adds_columns_null_for_old_rows(catalog):
    t = catalog.create_table("db.t", pa.schema([("a", pa.int32()), ("b", pa.string())]),
                             primary_keys=["a"], options={"bucket": "2"})
    t.write(pa.table({"a": pa.array([1, 2], pa.int32()), "b": ["x", "y"]}))
    ts = dt.datetime(2024, 5, 1, 12, 30)
    res = t.write(pa.table({"a": pa.array([3], pa.int32()), "b": ["z"], "c": [1.5],
                            "d": pa.array([ts], pa.timestamp("us"))}), merge_schema=True)
    assert res.snapshot_id == 2
    got = t.read()
    assert got.column_names == ["a", "b", "c", "d"]
    assert by_key(got, "a") == {
        1: {"a": 1, "b": "x", "c": None, "d": None},
        2: {"a": 2, "b": "y", "c": None, "d": None},
        3: {"a": 3, "b": "z", "c": 1.5, "d": ts}}
    schemas = t.schemas()
    assert [s.id for s in schemas] == [0, 1]
    new = {f.name: f for f in schemas[1].fields}
    assert (new["c"].id, new["d"].id, schemas[1].highest_field_id) == (2, 3, 3)
    assert str(new["c"].type) == "DOUBLE" and str(new["d"].type) == "TIMESTAMP(6)"
    assert t.snapshots()[-1].schema_id == 1
    # time travel to snapshot 1 reads with that snapshot's schema
    assert t.read(snapshot_id=1).column_names == ["a", "b"]


def test_dual_stream_partial_update_keeps_both_streams(catalog):
    t = catalog.create_table("db.wide", pa.schema([("id", pa.int64()), ("base", pa.string())]),
                             primary_keys=["id"],
                             options={"bucket": "2", "merge-engine": "partial-update"})
    t.write(pa.table({"id": [1, 2, 3], "base": ["b1", "b2", "b3"]}))
    # stream A adds its column, then stream B adds its own, then both keep writing
    t.write(pa.table({"id": [1, 2], "a_col": [10, 20]}), merge_schema=True)
    t.write(pa.table({"id": [2, 3], "b_col": ["B2", "B3"]}), merge_schema=True)
    t.write(pa.table({"id": [3], "a_col": [30]}), merge_schema=True)
    t.write(pa.table({"id": [1], "b_col": ["B1"]}), merge_schema=True)
    assert [s.id for s in t.schemas()] == [0, 1, 2]
    assert by_key(t.read()) == {
        1: {"id": 1, "base": "b1", "a_col": 10, "b_col": "B1"},
        2: {"id": 2, "base": "b2", "a_col": 20, "b_col": "B2"},
        3: {"id": 3, "base": "b3", "a_col": 30, "b_col": "B3"}}


def test_field_ids_survive_drop_add_and_readd(catalog):
    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("age", pa.int32()),
                        ("dt", pa.string())])
    t = catalog.create_table("db.people", schema, primary_keys=["id", "dt"],
                             partition_keys=["dt"], options={"bucket": "2"})
    t.write(pa.table({"id": [1, 2], "name": ["ann", "bob"], "age": pa.array([30, 40], pa.int32()),
                      "dt": ["d1", "d2"]}))
    t.alter([SC.drop_column("name")])
    t.alter([SC.add_column("new_col", "STRING", after="id")])
    got = t.read()
    assert got.column_names == ["id", "new_col", "age", "dt"]
    assert by_key(got) == {1: {"id": 1, "new_col": None, "age": 30, "dt": "d1"},
                           2: {"id": 2, "new_col": None, "age": 40, "dt": "d2"}}
    t.alter(SC.add_column("name", pa.string()))
    got = t.read()
    assert got.column_names == ["id", "new_col", "age", "dt", "name"]
    assert [r["name"] for r in got.to_pylist()] == [None, None]  # not "ann"/"bob"
    t.write(pa.table({"id": [3], "new_col": ["n"], "age": pa.array([50], pa.int32()),
                      "dt": ["d1"], "name": ["cy"]}))
    assert by_key(t.read())[3] == {"id": 3, "new_col": "n", "age": 50, "dt": "d1", "name": "cy"}
    ids = {f.name: f.id for f in t.table_schema.fields}
    assert ids == {"id": 0, "new_col": 4, "age": 2, "dt": 3, "name": 5}
    # partition pruning keeps working on the evolved table
    assert sorted(t.read(filter=[("dt", "=", "d1")])["id"].to_pylist()) == [1, 3]


def test_rename_move_and_widen_read_old_files(catalog):
    t = catalog.create_table("db.m", pa.schema([("id", pa.int64()), ("qty", pa.int32()),
                                                 ("price", pa.float32()),
                                                 ("amount", pa.decimal128(5, 2))]),
                             primary_keys=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1], "qty": pa.array([7], pa.int32()),
                      "price": pa.array([1.5], pa.float32()),
                      "amount": pa.array([Decimal("123.45")], pa.decimal128(5, 2))}))
    t.alter([SC.rename_column("qty", "quantity"),
             SC.update_column_type("quantity", "BIGINT"),
             SC.update_column_type("price", pa.float64()),
             SC.update_column_type("amount", "DECIMAL(12, 2)"),
             SC.update_column_position(Move.first("price"))])
    got = t.read()
    assert got.schema.field("quantity").type == pa.int64()
    assert got.schema.field("price").type == pa.float64()
    assert got.schema.field("amount").type == pa.decimal128(12, 2)
    assert got.to_pylist() == [{"price": 1.5, "id": 1, "quantity": 7,
                                "amount": Decimal("123.45")}]
    assert got.column_names == ["price", "id", "quantity", "amount"]
    # filters and projections use the current names
    assert t.read(columns=["quantity"], filter=[("quantity", ">", 5)]).to_pylist() == [
        {"quantity": 7}]
    # the old name is gone for readers of the latest schema, kept for time travel
    with pytest.raises(lf.LakeformatError, match="qty"):
        t.read(columns=["qty"])
    assert t.read(snapshot_id=1, columns=["qty"]).to_pylist() == [{"qty": 7}]


# -- widening rules of merge-schema writes -------------------------------------------------------

WIDENINGS = [
    (pa.int8(), [1], pa.int16(), [300], "SMALLINT"),
    (pa.int16(), [1], pa.int32(), [70000], "INT"),
    (pa.int32(), [1], pa.int64(), [2 ** 40], "BIGINT"),
    (pa.int8(), [1], pa.int64(), [2 ** 40], "BIGINT"),
    (pa.float32(), [1.5], pa.float64(), [0.1], "DOUBLE"),
    (pa.int32(), [1], pa.float64(), [0.5], "DOUBLE"),
    (pa.decimal128(5, 2), [Decimal("1.25")], pa.decimal128(12, 2), [Decimal("1234567890.12")],
     "DECIMAL(12, 2)"),
    (pa.timestamp("ms"), [dt.datetime(2024, 1, 1, 0, 0, 0, 123000)], pa.timestamp("us"),
     [dt.datetime(2024, 1, 1, 0, 0, 0, 123456)], "TIMESTAMP(6)"),
    (pa.binary(3), [b"abc"], pa.binary(5), [b"abcde"], "BINARY(5)"),
]


@pytest.mark.parametrize("old_type,old_vals,new_type,new_vals,expected", WIDENINGS,
                         ids=[w[-1] + f"-{i}" for i, w in enumerate(WIDENINGS)])
def test_merge_schema_widens_types(local_catalog, old_type, old_vals, new_type, new_vals, expected):
    t = local_catalog.create_table("db.w", pa.schema([("id", pa.int64()), ("v", old_type)]),
                           primary_keys=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1], "v": pa.array(old_vals, old_type)}))
    t.write(pa.table({"id": [2], "v": pa.array(new_vals, new_type)}), merge_schema=True)
    assert types_of(t)["v"] == expected
    got = by_key(t.read())
    assert got[2]["v"] == new_vals[0]
    old = got[1]["v"]
    assert old == (old_vals[0] + b"\x00\x00" if isinstance(old_vals[0], bytes) else old_vals[0])


def test_merge_schema_widens_char_and_varchar_lengths(local_catalog):
    fields = [DataField(0, "id", parse_type("BIGINT NOT NULL")),
              DataField(1, "c", parse_type("CHAR(3)")), DataField(2, "v", parse_type("VARCHAR(4)"))]
    t = local_catalog.create_table("db.s", fields, primary_keys=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1], "c": ["abc"], "v": ["wxyz"]}))
    t.alter([SC.update_column_type("v", "VARCHAR(10)")])
    assert types_of(t)["v"] == "VARCHAR(10)"
    # Arrow strings carry no length: a merge-schema write widens CHAR(3) to STRING
    t.write(pa.table({"id": [2], "c": ["a longer text"]}), merge_schema=True)
    assert types_of(t) == {"id": "BIGINT NOT NULL", "c": "STRING", "v": "VARCHAR(10)"}
    assert by_key(t.read()) == {1: {"id": 1, "c": "abc", "v": "wxyz"},
                                2: {"id": 2, "c": "a longer text", "v": None}}


def test_merge_schema_nested_row_gains_field(local_catalog):
    point = pa.struct([("x", pa.int32()), ("y", pa.int32())])
    t = local_catalog.create_table("db.n", pa.schema([("id", pa.int64()), ("p", point)]),
                           primary_keys=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1], "p": pa.array([{"x": 1, "y": 2}], point)}))
    point3 = pa.struct([("z", pa.string()), ("x", pa.int64())])  # new field, reordered, widened
    t.write(pa.table({"id": [2], "p": pa.array([{"z": "zz", "x": 5}], point3)}),
            merge_schema=True)
    p_type = t.table_schema.field("p").type
    assert [(f.name, str(f.type)) for f in p_type.fields] == [
        ("x", "BIGINT"), ("y", "INT"), ("z", "STRING")]
    assert p_type.fields[2].id == t.table_schema.highest_field_id == 4
    assert by_key(t.read()) == {1: {"id": 1, "p": {"x": 1, "y": 2, "z": None}},
                                2: {"id": 2, "p": {"x": 5, "y": None, "z": "zz"}}}


REFUSALS = [
    ("BIGINT -> INT", pa.int64(), [1], pa.int32(), [2]),
    ("STRING -> INT", pa.string(), ["a"], pa.int32(), [2]),
    ("DECIMAL scale", pa.decimal128(10, 2), [Decimal("1.00")], pa.decimal128(10, 3),
     [Decimal("1.000")]),
    ("DOUBLE -> FLOAT", pa.float64(), [1.0], pa.float32(), [1.0]),
    ("TIMESTAMP(6) -> (3)", pa.timestamp("us"), [dt.datetime(2024, 1, 1)], pa.timestamp("ms"),
     [dt.datetime(2024, 1, 1)]),
    ("INT -> STRING", pa.int32(), [1], pa.string(), ["x"]),
    ("ROW -> INT", pa.struct([("x", pa.int32())]), [{"x": 1}], pa.int32(), [1]),
]


@pytest.mark.parametrize("name,old_type,old_vals,new_type,new_vals", REFUSALS,
                         ids=[r[0] for r in REFUSALS])
def test_merge_schema_refusals_leave_table_unchanged(catalog, name, old_type, old_vals,
                                                     new_type, new_vals):
    t = catalog.create_table("db.r", pa.schema([("id", pa.int64()), ("v", old_type)]),
                             primary_keys=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1], "v": pa.array(old_vals, old_type)}))
    before = listing(t)
    with pytest.raises(lf.SchemaMismatchError, match="'v'") as err:
        t.write(pa.table({"id": [2], "v": pa.array(new_vals, new_type), "extra": [1]}),
                merge_schema=True)
    message = str(err.value)
    assert str(t.table_schema.field("v").type).split("(")[0] in message
    assert listing(t) == before
    assert [s.id for s in t.refresh().schemas()] == [0]


def test_explicit_cast_allows_lossy_type_change(local_catalog):
    t = local_catalog.create_table("db.e", pa.schema([("id", pa.int64()), ("v", pa.int64()),
                                               ("s", pa.string())]),
                           primary_keys=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1], "v": [42], "s": ["17"]}))
    with pytest.raises(lf.SchemaMismatchError):
        t.write(pa.table({"id": [2], "v": pa.array([5], pa.int32())}), merge_schema=True)
    t.write(pa.table({"id": [2], "v": pa.array([5], pa.int32()),
                      "s": pa.array([3], pa.int32())}),
            merge_schema=True, options={"write.merge-schema.explicit-cast": "true"})
    assert types_of(t) == {"id": "BIGINT NOT NULL", "v": "INT", "s": "INT"}
    assert by_key(t.read()) == {1: {"id": 1, "v": 42, "s": 17}, 2: {"id": 2, "v": 5, "s": 3}}


def test_without_type_widening_data_is_cast_to_table_types(local_catalog):
    t = local_catalog.create_table("db.k", pa.schema([("id", pa.int64()), ("v", pa.int64())]),
                           primary_keys=["id"],
                           options={"bucket": "1", "write.merge-schema.type-widening": "false"})
    t.write(pa.table({"id": [1], "v": pa.array([7], pa.int32()), "w": ["new"]}),
            merge_schema=True)
    assert types_of(t) == {"id": "BIGINT NOT NULL", "v": "BIGINT", "w": "STRING"}
    assert t.read().to_pylist() == [{"id": 1, "v": 7, "w": "new"}]


def test_merge_schema_option_on_table_and_not_null_columns(local_catalog):
    schema = pa.schema([("id", pa.int64()), ("v", pa.int64(), False)])
    t = local_catalog.create_table("db.o", schema, primary_keys=["id"], options={"bucket": "1"})
    t.alter(SC.set_option("write.merge-schema", "true"))
    before = listing(t)
    with pytest.raises(lf.SchemaMismatchError, match="NOT NULL"):
        t.write(pa.table({"id": [1], "c": [1.0]}))  # v is NOT NULL and missing
    assert listing(t) == before
    t.write(pa.table({"id": [1], "v": [2], "c": [1.0]}))
    assert t.read().to_pylist() == [{"id": 1, "v": 2, "c": 1.0}]
    with pytest.raises(lf.SchemaMismatchError, match="unexpected"):
        t.write(pa.table({"id": [2], "v": [2], "d": [1]}), merge_schema=False)


def test_merge_schema_noop_commits_no_schema(local_catalog):
    t = local_catalog.create_table("db.z", pa.schema([("id", pa.int64()), ("v", pa.int64())]),
                           primary_keys=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1], "v": [1]}), merge_schema=True)
    t.write(pa.table({"id": [2]}), merge_schema=True)  # fewer columns: nothing to add
    assert [s.id for s in t.schemas()] == [0]
    assert by_key(t.read()) == {1: {"id": 1, "v": 1}, 2: {"id": 2, "v": None}}


# -- alter: every change and Paimon's refusals -----------------------------------------------------

def test_alter_every_change_kind(local_catalog):
    t = local_catalog.create_table("db.a", pa.schema([("id", pa.int64()), ("a", pa.int32()),
                                               ("b", pa.string()),
                                               ("r", pa.struct([("x", pa.int32())]))]),
                           primary_keys=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1], "a": pa.array([1], pa.int32()), "b": ["one"],
                      "r": pa.array([{"x": 9}], pa.struct([("x", pa.int32())]))}))
    s = t.alter([SC.set_option("snapshot.num-retained.min", "3"),
                 SC.add_column("first_col", "DOUBLE", first=True),
                 SC.add_column(["r", "y"], "STRING", comment="nested"),
                 SC.rename_column(["r", "x"], "xx"),
                 SC.update_column_comment("a", "the a"),
                 SC.update_column_nullability("b", True),
                 SC.update_column_position("b", before="a"),
                 SC.update_comment("table comment")])
    assert s.id == 1 and s.options["snapshot.num-retained.min"] == "3"
    assert s.field_names == ["first_col", "id", "b", "a", "r"]
    assert s.field("a").description == "the a" and s.comment == "table comment"
    assert [(f.name, f.id) for f in s.field("r").type.fields] == [("xx", 4), ("y", 6)]
    assert s.field("first_col").id == 5 and s.highest_field_id == 6
    s = t.alter([SC.remove_option("snapshot.num-retained.min"), SC.drop_column(["r", "xx"])])
    assert "snapshot.num-retained.min" not in s.options
    assert t.read().to_pylist() == [{"first_col": None, "id": 1, "b": "one", "a": 1,
                                     "r": {"y": None}}]
    assert t.alter([]).id == 2  # nothing to change: no new schema
    assert t.read(snapshot_id=1).to_pylist() == [{"id": 1, "a": 1, "b": "one", "r": {"x": 9}}]


def test_alter_rename_updates_options_naming_the_column(local_catalog):
    t = local_catalog.create_table("db.agg", pa.schema([("id", pa.int64()), ("total", pa.int64()),
                                                 ("seq", pa.int64())]),
                           primary_keys=["id"],
                           options={"bucket": "1", "merge-engine": "aggregation",
                                    "fields.total.aggregate-function": "sum",
                                    "sequence.field": "seq"})
    t.write(pa.table({"id": [1, 1], "total": [2, 3], "seq": [1, 2]}))
    s = t.alter([SC.rename_column("total", "sum_total"), SC.rename_column("seq", "version")])
    assert s.options["fields.sum_total.aggregate-function"] == "sum"
    assert "fields.total.aggregate-function" not in s.options
    assert s.options["sequence.field"] == "version"
    t.write(pa.table({"id": [1], "sum_total": [10], "version": [3]}))
    assert t.read().to_pylist() == [{"id": 1, "sum_total": 15, "version": 3}]


REFUSED_ALTERS = [
    (SC.rename_column("dt", "day"), "partition column"),
    (SC.drop_column("dt"), "partition column"),
    (SC.drop_column("id"), "primary-key column"),
    (SC.update_column_type("id", "STRING"), "primary-key column"),
    (SC.update_column_type("dt", "INT"), "partition column"),
    (SC.update_column_nullability("id", True), "primary-key column"),
    (SC.update_column_nullability("v", False), "NOT NULL"),
    (SC.add_column("c", "INT NOT NULL"), "NOT NULL"),
    (SC.add_column("v", "INT"), "already exists"),
    (SC.add_column("c", "INT", after="nope"), "does not exist"),
    (SC.add_column("_SEQUENCE_NUMBER", "INT"), "reserved"),
    (SC.rename_column("v", "w"), "already exists"),
    (SC.drop_column("nope"), "does not exist"),
    (SC.update_column_type("v", "ARRAY<INT>"), "nested"),
    (SC.update_column_type("w", "BINARY(2)"), "cannot be converted"),
    (SC.set_option("merge-engine", "first-row"), "merge-engine"),
    (SC.set_option("bucket", "-1"), "bucket"),
    (SC.remove_option("bucket"), "bucket"),
    (SC.set_option("bucket-key", "v"), "bucket-key"),
    (SC.set_option("file.format", "lance"), "lance"),
    (SC.set_option("sequence.field", "nope"), "nope"),
    (SC.update_column_position(Move.after("v", "v")), "itself"),
]


@pytest.mark.parametrize("change,match", REFUSED_ALTERS,
                         ids=[f"{type(c).__name__}-{i}" for i, (c, _) in
                              enumerate(REFUSED_ALTERS)])
def test_alter_refusals_leave_table_unchanged(catalog, change, match):
    t = catalog.create_table("db.x", pa.schema([("dt", pa.string()), ("id", pa.int64()),
                                                 ("v", pa.int32()), ("w", pa.float64())]),
                             primary_keys=["dt", "id"], partition_keys=["dt"],
                             options={"bucket": "2"})
    t.write(pa.table({"dt": ["d"], "id": [1], "v": pa.array([1], pa.int32()), "w": [1.0]}))
    before = listing(t)
    with pytest.raises(lf.LakeformatError, match=match):
        t.alter([SC.add_column("ok_first", "INT"), change])
    assert listing(t) == before


def test_alter_before_any_snapshot_may_change_immutable_options(local_catalog):
    t = local_catalog.create_table("db.fresh", pa.schema([("id", pa.int64()), ("v", pa.int64())]),
                           primary_keys=["id"], options={"bucket": "1"})
    t.alter([SC.set_option("merge-engine", "first-row")])
    t.write(pa.table({"id": [1, 1], "v": [1, 2]}))
    assert t.read().to_pylist() == [{"id": 1, "v": 1}]


def test_update_type_to_char_and_binary_pads_like_java(local_catalog):
    t = local_catalog.create_table("db.p", pa.schema([("id", pa.int64()), ("s", pa.string()),
                                               ("n", pa.int64())]),
                           primary_keys=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1, 2], "s": ["ab", "abcdef"], "n": [12, -3]}))
    t.alter([SC.update_column_type("s", "CHAR(4)"), SC.update_column_type("n", "STRING")])
    assert by_key(t.read()) == {1: {"id": 1, "s": "ab  ", "n": "12"},
                                2: {"id": 2, "s": "abcd", "n": "-3"}}


@pytest.mark.parametrize("engine", ["deduplicate", "partial-update"])
def test_compaction_rewrites_old_schema_files_by_field_id(local_catalog, engine):
    t = local_catalog.create_table("db.c", pa.schema([("id", pa.int64()), ("a", pa.int32()),
                                               ("gone", pa.string()), ("b", pa.float32())]),
                           primary_keys=["id"], options={"bucket": "2", "merge-engine": engine})
    t.write(pa.table({"id": [1, 2, 3], "a": pa.array([1, 2, 3], pa.int32()),
                      "gone": ["x", "y", "z"], "b": pa.array([0.5, 1.5, 2.5], pa.float32())}))
    t.alter([SC.rename_column("a", "aa"), SC.drop_column("gone"),
             SC.update_column_type("b", "DOUBLE"), SC.add_column("gone", "STRING")])
    t.write(pa.table({"id": [2], "aa": pa.array([20], pa.int32()), "b": [9.0],
                      "gone": ["new"]}))
    t.write(pa.table({"id": [3, 4], "extra": [7, 8]}), merge_schema=True)
    before = by_key(t.read())
    result = t.compact(full=True)
    assert result.snapshot_ids == [t.snapshots()[-1].id] and not result.failed
    assert t.snapshots()[-1].commit_kind == "COMPACT"
    after = by_key(t.read())
    assert after == before
    latest = t.table_schema.id
    assert {f["schema_id"] for f in t.files()} == {latest}
    assert all(f["level"] == 5 for f in t.files())
    assert after[1] == {"id": 1, "aa": 1, "b": 0.5, "gone": None, "extra": None}


def test_merge_schema_never_changes_key_types(catalog):
    schema = pa.schema([("dt", pa.int32()), ("id", pa.int32()), ("v", pa.string())])
    t = catalog.create_table("db.k", schema, primary_keys=["dt", "id"], partition_keys=["dt"],
                             options={"bucket": "4"})
    ids = pa.array(range(-20, 0), pa.int32())
    t.write(pa.table({"dt": pa.array([1] * 20, pa.int32()), "id": ids, "v": ["a"] * 20}))
    # wider key data: refused (widening the key would re-bucket rows and split partitions)
    before = listing(t)
    with pytest.raises(lf.SchemaMismatchError, match="primary-key column 'id'"):
        t.write(pa.table({"dt": pa.array([1], pa.int32()), "id": pa.array([-1], pa.int64()),
                          "w": [1]}), merge_schema=True)
    with pytest.raises(lf.SchemaMismatchError, match="partition column 'dt'"):
        t.write(pa.table({"dt": pa.array([1], pa.int64()), "id": pa.array([-1], pa.int32())}),
                merge_schema=True)
    assert listing(t) == before
    # narrower key data is written as the key's type: same keys, same buckets, no duplicates
    t.write(pa.table({"dt": pa.array([1] * 20, pa.int8()), "id": pa.array(range(-20, 0),
                                                                              pa.int16()),
                      "v": ["b"] * 20, "w": [2] * 20}), merge_schema=True)
    got = t.read()
    assert got.num_rows == 20 and set(got["v"].to_pylist()) == {"b"}
    assert types_of(t)["id"] == "INT NOT NULL" and types_of(t)["dt"] == "INT NOT NULL"


def test_unknown_per_write_option_is_refused(local_catalog):
    t = local_catalog.create_table("db.u", pa.schema([("id", pa.int64())]), primary_keys=["id"],
                                   options={"bucket": "1"})
    with pytest.raises(lf.InvalidOptionError, match="bucket"):
        t.write(pa.table({"id": [1]}), options={"bucket": "8"})
    t.write(pa.table({"id": [1], "x": [1]}), options={"write.merge-schema": True})
    assert t.read().to_pylist() == [{"id": 1, "x": 1}]
