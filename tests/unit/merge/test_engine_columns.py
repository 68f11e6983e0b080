"""`MergeEngine.required_columns`: what a merge-on-read reads for the columns asked for."""

from __future__ import annotations

from lakeformat.merge import merge_engine
from lakeformat.merge.engine import MergeEngine
from lakeformat.schema.table_schema import new_schema
from lakeformat.schema.types import DataField, bigint, string


def schema(engine: str, not_null: tuple[str, ...] = (), **options: str):
    names = ["id", "a", "b", "c", "d", "ts"]
    fields = [DataField(i, n, (bigint() if n in ("id", "ts") else string()).copy(
        n not in not_null)) for i, n in enumerate(names)]
    opts = {"bucket": "1", "merge-engine": engine, **options}
    return new_schema(0, fields, [], ["id"], opts, None)


def required_columns(table_schema, requested):
    return merge_engine(table_schema).required_columns(requested)


def test_row_picking_engines_read_key_sequence_field_and_requested():
    assert required_columns(schema("deduplicate"), ["b"]) == ["id", "b"]
    assert required_columns(schema("first-row"), ["c", "a"]) == ["id", "a", "c"]
    assert required_columns(schema("deduplicate", **{"sequence.field": "ts"}), ["b"]) == [
        "id", "b", "ts"]


def test_partial_update_reads_whole_sequence_groups_and_not_null_columns():
    assert required_columns(schema("partial-update"), ["a"]) == ["id", "a"]
    grouped = schema("partial-update", **{"fields.ts.sequence-group": "b,c"})
    assert required_columns(grouped, ["a"]) == ["id", "a", "b", "c", "ts"]
    assert required_columns(schema("partial-update", not_null=("d",)), ["a"]) == [
        "id", "a", "d"]


def test_aggregation_reads_columns_whose_function_cannot_retract():
    plain = schema("aggregation", **{"fields.a.aggregate-function": "max"})
    assert required_columns(plain, ["b"]) == ["id", "a", "b"]  # max cannot retract
    ignoring = schema("aggregation", **{"fields.a.aggregate-function": "max",
                                        "fields.a.ignore-retract": "true"})
    assert required_columns(ignoring, ["b"]) == ["id", "b"]


def test_an_engine_that_does_not_say_reads_every_column():
    class Plain(MergeEngine):  # a future engine without its own rule: fail closed
        name = "plain"

    assert Plain(schema("deduplicate")).required_columns(["a"]) == [
        "id", "a", "b", "c", "d", "ts"]
