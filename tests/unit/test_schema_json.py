"""Schema and snapshot JSON: read Java's and pypaimon's variants, write Java's form."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from lakeformat.errors import CorruptFileError, UnsupportedError
from lakeformat.meta.snapshot import Snapshot
from lakeformat.schema.table_schema import TableSchema, new_schema
from lakeformat.schema.types import (
    DataField,
    DataType,
    assign_field_ids,
    from_arrow,
    parse_atomic,
    to_arrow,
)

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "paimon-format-samples"


def sample(name: str) -> str:
    return (SAMPLES / name).read_text()


@pytest.mark.parametrize("text,canonical", [
    ("INT", "INT"), ("INTEGER NOT NULL", "INT NOT NULL"), ("bigint", "BIGINT"),
    ("DECIMAL(10,2)", "DECIMAL(10, 2)"), ("DECIMAL", "DECIMAL(10, 0)"),
    ("NUMERIC(38, 10) NOT NULL", "DECIMAL(38, 10) NOT NULL"),
    ("VARCHAR(2147483647)", "STRING"), ("STRING NOT NULL", "STRING NOT NULL"),
    ("VARCHAR(5)", "VARCHAR(5)"), ("CHAR", "CHAR(1)"), ("BYTES", "BYTES"),
    ("VARBINARY(2147483647)", "BYTES"), ("BINARY(4)", "BINARY(4)"),
    ("TIMESTAMP", "TIMESTAMP(6)"), ("TIMESTAMP(3)", "TIMESTAMP(3)"),
    ("TIMESTAMP_LTZ(3)", "TIMESTAMP(3) WITH LOCAL TIME ZONE"),
    ("TIMESTAMP(9) WITH LOCAL TIME ZONE NOT NULL", "TIMESTAMP(9) WITH LOCAL TIME ZONE NOT NULL"),
    ("TIME", "TIME(0)"), ("DATE", "DATE"), ("DOUBLE PRECISION", "DOUBLE"), ("BOOLEAN", "BOOLEAN"),
])
def test_atomic_type_text_round_trips_to_java_spelling(text, canonical):
    dt = parse_atomic(text)
    assert dt.to_json() == canonical
    assert parse_atomic(canonical) == dt


@pytest.mark.parametrize("text", ["FOO", "INT(3)", "DECIMAL(40, 2)", "DECIMAL(5, 6)", ""])
def test_unknown_types_are_refused_by_name(text):
    with pytest.raises(UnsupportedError):
        parse_atomic(text)


def test_pypaimon_schema_sample_reads_and_writes_java_form():
    s = TableSchema.from_json(sample("schema-0.json"))
    assert s.partition_keys == ("dt",) and s.primary_keys == ("dt", "id")
    assert s.field("price").type == DataType("DECIMAL", True, precision=10, scale=2)
    assert s.options == {"bucket": "2", "file.format": "parquet", "rowkind.field": "rk"}
    again = TableSchema.from_json(s.to_json())
    assert again == s
    assert list(json.loads(s.to_json())) == ["version", "id", "fields", "highestFieldId",
                                             "partitionKeys", "primaryKeys", "options", "comment",
                                             "timeMillis"]


def test_null_comment_is_omitted_like_java():
    s = TableSchema.from_json(sample("schema-0.json")).copy(comment=None)
    assert "comment" not in json.loads(s.to_json())


def test_nested_schema_sample_keeps_field_ids_and_drops_pypaimon_nullable_key():
    s = TableSchema.from_json(sample("nested-types-schema-0.json"))
    r = s.field("r").type
    assert [f.id for f in r.fields] == [10, 11] and s.highest_field_id == 11
    out = json.loads(s.to_json())
    arr = next(f for f in out["fields"] if f["name"] == "arr")
    assert arr["type"] == {"type": "ARRAY", "element": "STRING"}
    assert s.field("tl").type.to_json() == "TIMESTAMP(3) WITH LOCAL TIME ZONE"


def test_old_schema_versions_imply_old_defaults():
    obj = json.loads(sample("schema-0.json"))
    obj["version"] = 1
    del obj["options"]["bucket"]
    del obj["options"]["file.format"]
    s = TableSchema.from_json(json.dumps(obj))
    assert s.options["bucket"] == "1" and s.options["file.format"] == "orc"


def test_corrupt_schema_names_the_file():
    with pytest.raises(CorruptFileError, match="schema-7"):
        TableSchema.from_json("{", "x/schema/schema-7")


def test_arrow_mapping_round_trips_and_assigns_nested_ids():
    schema = pa.schema([("a", pa.int32(), False), ("s", pa.struct([("x", pa.int64()),
                                                                    ("y", pa.string())])),
                        ("m", pa.map_(pa.string(), pa.float64())), ("l", pa.list_(pa.int8())),
                        ("t", pa.timestamp("us", tz="UTC")), ("d", pa.decimal128(20, 3))])
    fields = [DataField(-1, f.name, from_arrow(f.type, f.nullable)) for f in schema]
    fields, highest = assign_field_ids(fields)
    assert [f.id for f in fields] == [0, 1, 2, 3, 4, 5]
    assert [f.id for f in fields[1].type.fields] == [6, 7] and highest == 7
    for f, af in zip(fields, schema):
        back = to_arrow(f.type)
        assert from_arrow(back, f.type.nullable) == from_arrow(af.type, af.nullable)
    assert to_arrow(fields[0].type) == pa.int32()
    assert to_arrow(fields[4].type) == pa.timestamp("us", tz="UTC")
    assert to_arrow(fields[5].type) == pa.decimal128(20, 3)


def test_primary_keys_become_not_null():
    f = [DataField(0, "id", parse_atomic("BIGINT")), DataField(1, "v", parse_atomic("INT"))]
    s = new_schema(0, f, [], ["id"], {}, None)
    assert s.field("id").type.nullable is False and s.field("v").type.nullable is True


def test_snapshot_sample_round_trips_and_omits_nulls():
    snap = Snapshot.from_json(sample("snapshot-3.json"))
    assert snap.id == 3 and snap.commit_kind == "APPEND" and snap.total_record_count == 7
    out = json.loads(snap.to_json())
    assert "changelogManifestList" not in out and out["commitIdentifier"] == 2**63 - 1
    assert Snapshot.from_json(snap.to_json()) == snap
    tag = Snapshot.from_json(sample("tag-tag1.json"))
    assert tag.id == 2


def test_corrupt_snapshot_names_the_file():
    with pytest.raises(CorruptFileError, match="snapshot-9"):
        Snapshot.from_json('{"id": 9}', "t/snapshot/snapshot-9")
