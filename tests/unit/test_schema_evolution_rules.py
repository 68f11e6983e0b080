"""Rules behind schema evolution: Paimon's cast table, merge rules, field-id projection."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lakeformat.errors import SchemaMismatchError
from lakeformat.schema.casts import supports_cast
from lakeformat.schema.merging import MergeSchemaOptions, merge_schemas
from lakeformat.schema.projection import FieldIdProjection, evolve_column
from lakeformat.schema.table_schema import new_schema
from lakeformat.schema.type_text import parse_type
from lakeformat.schema.types import DataField, DataType, assign_field_ids


def T(text: str):
    return parse_type(text)


@pytest.mark.parametrize("src,dst,implicit,explicit", [
    ("TINYINT", "SMALLINT", True, True), ("SMALLINT", "INT", True, True),
    ("INT", "BIGINT", True, True), ("BIGINT", "INT", False, True),
    ("FLOAT", "DOUBLE", True, True), ("DOUBLE", "FLOAT", False, True),
    ("INT", "DOUBLE", True, True), ("BIGINT", "FLOAT", True, True),
    ("DECIMAL(10, 2)", "DOUBLE", True, True), ("DOUBLE", "DECIMAL(10, 2)", True, True),
    ("CHAR(3)", "VARCHAR(10)", True, True), ("VARCHAR(10)", "CHAR(3)", False, True),
    ("STRING", "INT", False, True), ("INT", "STRING", False, True),
    ("BINARY(3)", "VARBINARY(5)", True, True), ("VARBINARY(5)", "BINARY(3)", False, True),
    ("TIMESTAMP(3)", "TIMESTAMP(6)", True, True), ("TIMESTAMP(6)", "DATE", True, True),
    ("DATE", "TIMESTAMP(6)", False, True), ("TIMESTAMP(3) WITH LOCAL TIME ZONE",
                                            "TIMESTAMP(3)", True, True),
    ("BOOLEAN", "INT", False, True), ("INT", "BOOLEAN", False, True),
    ("DATE", "INT", False, False), ("ARRAY<INT>", "INT", False, False),
    ("INT", "INT NOT NULL", False, True),
])
def test_paimon_cast_table(src, dst, implicit, explicit):
    assert supports_cast(T(src), T(dst), False) is implicit
    assert supports_cast(T(src), T(dst), True) is explicit


def schema_of(text: list[tuple[str, str]], pk=("id",)):
    fields, _ = assign_field_ids([DataField(-1, n, T(t)) for n, t in text])
    return new_schema(0, fields, [], list(pk), {"bucket": "1"}, None)


def data(*cols: tuple[str, str]) -> list[DataField]:
    return [DataField(-1, n, T(t)) for n, t in cols]


def test_merge_assigns_ids_above_highest_nested_before_column():
    s = schema_of([("id", "BIGINT"), ("r", "ROW<a INT>")])  # ids 0, 1, nested 2
    assert s.highest_field_id == 2
    out = merge_schemas(s, data(("id", "BIGINT"), ("n", "ROW<p INT, q ROW<z INT>>"),
                                ("r", "ROW<a INT, b STRING>")))
    n = out.field("n")
    # merge-schema numbers a new column's nested fields first (SchemaMergingUtils)
    assert [(f.name, f.id) for f in n.type.fields] == [("p", 4), ("q", 5)]
    assert n.type.fields[1].type.fields[0].id == 6 and n.id == 7
    assert [(f.name, f.id) for f in out.field("r").type.fields] == [("a", 2), ("b", 3)]
    assert out.highest_field_id == 7 and out.id == 1


def test_merge_keeps_nullability_and_new_columns_are_nullable():
    s = schema_of([("id", "BIGINT"), ("v", "INT NOT NULL")])
    out = merge_schemas(s, data(("v", "BIGINT"), ("w", "STRING NOT NULL")))
    assert str(out.field("v").type) == "BIGINT NOT NULL"
    assert str(out.field("w").type) == "STRING"
    assert merge_schemas(s, data(("v", "INT"))) is s  # only nullability differs


def test_merge_decimal_precision_and_refusals():
    s = schema_of([("id", "BIGINT"), ("d", "DECIMAL(10, 2)"), ("t", "TIMESTAMP(6)")])
    assert str(merge_schemas(s, data(("d", "DECIMAL(5, 2)"))).field("d").type) == \
        "DECIMAL(10, 2)"
    assert str(merge_schemas(s, data(("d", "DECIMAL(20, 2)"))).field("d").type) == \
        "DECIMAL(20, 2)"
    with pytest.raises(SchemaMismatchError, match="scale"):
        merge_schemas(s, data(("d", "DECIMAL(10, 3)")))
    with pytest.raises(SchemaMismatchError, match="lower precision"):
        merge_schemas(s, data(("t", "TIMESTAMP(3)")))
    lossy = MergeSchemaOptions(explicit_cast=True)
    assert str(merge_schemas(s, data(("t", "TIMESTAMP(3)")), lossy).field("t").type) == \
        "TIMESTAMP(3)"
    kept = MergeSchemaOptions(type_widening=False)
    assert merge_schemas(s, data(("d", "DECIMAL(20, 4)"), ("t", "STRING")), kept) is s


def test_projection_maps_by_id_renames_drops_and_casts():
    old = [DataField(0, "id", T("BIGINT")), DataField(1, "name", T("STRING")),
           DataField(2, "qty", T("INT")),
           DataField(3, "r", DataType("ROW", fields=(DataField(4, "a", T("INT")),
                                                     DataField(5, "b", T("STRING")))))]
    new = [DataField(2, "quantity", T("BIGINT")), DataField(0, "id", T("BIGINT")),
           DataField(6, "name", T("STRING")),
           DataField(3, "r", DataType("ROW", fields=(DataField(5, "bb", T("STRING")),
                                                     DataField(7, "c", T("DOUBLE")),
                                                     DataField(4, "a", T("BIGINT")))))]
    p = FieldIdProjection(old, new)
    assert not p.identity
    names = ["quantity", "id", "name", "r"]
    assert p.file_columns(names) == ["qty", "id", "r"]
    r_type = pa.struct([("a", pa.int32()), ("b", pa.string())])
    table = pa.table({"qty": pa.array([1, None, 3], pa.int32()), "id": [1, 2, 3],
                      "r": pa.array([{"a": 1, "b": "x"}, None, {"a": None, "b": "z"}], r_type)})
    cols = p.project(table.slice(1), names)  # sliced input keeps alignment
    out = pa.table(cols, names=names).to_pylist()
    assert out == [{"quantity": None, "id": 2, "name": None, "r": None},
                   {"quantity": 3, "id": 3, "name": None,
                    "r": {"bb": "z", "c": None, "a": None}}]


def test_evolve_list_and_map_of_rows():
    src = DataType("ARRAY", element=DataType("ROW", fields=(DataField(10, "a", T("INT")),)))
    dst = DataType("ARRAY", element=DataType("ROW", fields=(DataField(10, "a2", T("BIGINT")),
                                                            DataField(11, "b", T("STRING")))))
    arr = pa.array([[{"a": 1}], None, [{"a": 2}, {"a": 3}]],
                   pa.list_(pa.field("element", pa.struct([("a", pa.int32())]))))
    out = evolve_column(arr.slice(1), src, dst)
    assert out.to_pylist() == [None, [{"a2": 2, "b": None}, {"a2": 3, "b": None}]]
    msrc = T("MAP<STRING, INT>")
    mdst = T("MAP<STRING, BIGINT>")
    m = pa.array([[("k", 1)], None, [("x", 5), ("y", None)]], pa.map_(pa.string(), pa.int32()))
    assert evolve_column(m.slice(1), msrc, mdst).to_pylist() == [None, [("x", 5), ("y", None)]]
