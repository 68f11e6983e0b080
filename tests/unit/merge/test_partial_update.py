"""merge-engine=partial-update: Paimon's rules, one test per rule, plus a row-at-a-time check.

Expectations marked "Java:" are transcribed from Paimon's PartialUpdateMergeFunctionTest and
PartialUpdateITCase: a Java test adds records one by one and checks the row after some of them;
here each check is the merge of the records up to that point (Paimon's reducer rule only
differs for a single record, which the Java unit tests never check).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakeformat.errors import InvalidOptionError, LakeformatError, UnsupportedError
from lakeformat.merge import merge_engine
from lakeformat.merge.codes import ordering_codes
from lakeformat.merge.partial_update import PartialUpdateConfig
from lakeformat.merge.sequence_group import java_hash_map_order, java_split
from lakeformat.merge.sort import sort_for_merge
from lakeformat.schema.table_schema import new_schema
from lakeformat.schema.types import (
    DataField,
    DataType,
    bigint,
    decimal,
    double,
    float_,
    int_,
    string,
    timestamp,
    to_arrow,
)

from .kv_records import kv as kv_records
from .kv_records import schema as kv_schema

IN, UB, UA, D = 0, 1, 2, 3

# the engine's own option checks (before: partial_update.validate)
validate = PartialUpdateConfig.of


def make_schema(columns: list[tuple[str, DataType]], pk: str = "f0", **options: str):
    fields = [DataField(i, n, t) for i, (n, t) in enumerate(columns)]
    opts = {"bucket": "1", "merge-engine": "partial-update", **options}
    return new_schema(0, fields, [], [pk], opts, None)


def ints(n: int, pk: str = "f0", **options: str):
    """Columns f0..f{n-1}, all INT, f0 the primary key (the shape of Java's unit tests)."""
    return make_schema([(f"f{i}", int_()) for i in range(n)], pk, **options)


def run(schema, records: list[tuple]) -> list[dict[str, Any]]:
    """records: (kind, v0, v1, ...) in arrival order; sequence numbers are the positions."""
    cols: dict[str, pa.Array] = {
        "_SEQUENCE_NUMBER": pa.array(range(len(records)), pa.int64()),
        "_VALUE_KIND": pa.array([r[0] for r in records], pa.int8()),
    }
    for i, f in enumerate(schema.fields):
        cols[f.name] = pa.array([r[i + 1] for r in records], to_arrow(f.type))
    merge = merge_engine(schema).merge_sorted
    return merge(sort_for_merge(pa.table(cols), list(schema.trimmed_primary_keys))).to_pylist()


def row_of(schema, records) -> tuple:
    out = run(schema, records)
    assert len(out) == 1
    return tuple(out[0][n] for n in schema.field_names)


def kind_of(schema, records) -> int:
    return run(schema, records)[0]["_VALUE_KIND"]


def check_states(schema, records, expected: dict[int, tuple]):
    """expected: number of records merged -> the row Java shows after them."""
    for count, want in expected.items():
        assert row_of(schema, records[:count]) == want, f"after {count} records"


# -- without sequence groups -----------------------------------------------------------------

def test_non_null_values_overwrite():  # Java: testUpdateNonNull
    s = ints(7)
    assert row_of(s, [(IN, 1, 1, 1, 1, 1, 1, 1), (IN, 1, 2, 2, 2, 2, 2, None)]) == \
        (1, 2, 2, 2, 2, 2, 1)


def test_lone_record_is_returned_unchanged_even_a_retract():
    s = ints(3)
    out = run(s, [(D, 1, None, 5)])
    assert out == [{"_SEQUENCE_NUMBER": 0, "_VALUE_KIND": D, "f0": 1, "f1": None, "f2": 5}]
    out = run(s, [(UA, 1, None, 5)])
    assert out[0]["_VALUE_KIND"] == UA


def test_retract_is_refused_by_default_naming_the_options():
    s = ints(3)
    with pytest.raises(LakeformatError, match="ignore-delete") as e:
        run(s, [(IN, 1, 1, 1), (D, 1, 1, 1)])
    assert "partial-update.remove-record-on-delete" in str(e.value)
    assert "partial-update.remove-record-on-sequence-group" in str(e.value)
    with pytest.raises(LakeformatError, match="ignore-delete"):
        run(s, [(UB, 1, 1, 1), (IN, 1, 2, 2)])


def test_null_into_not_null_column_is_an_error():
    s = make_schema([("f0", int_(False)), ("f1", int_(False)), ("f2", int_())])
    with pytest.raises(LakeformatError, match="f1"):
        run(s, [(IN, 1, 1, 1), (IN, 1, None, 2)])
    assert row_of(s, [(IN, 1, None, 1)]) == (1, None, 1)  # lone record: not merged


@pytest.mark.parametrize("key", ["ignore-delete", "partial-update.ignore-delete",
                                 "deduplicate.ignore-delete", "first-row.ignore-delete"])
def test_ignore_delete_and_its_fallback_keys(key):
    s = ints(3, **{key: "true"})
    recs = [(IN, 1, 1, 1), (D, 1, 9, 9), (UB, 1, 8, 8), (IN, 1, None, 2)]
    out = run(s, recs)[0]
    assert (out["f1"], out["f2"], out["_VALUE_KIND"]) == (1, 2, IN)
    # Java: an ignored retract does not move the result's sequence number
    assert run(s, recs[:3])[0]["_SEQUENCE_NUMBER"] == 0


def test_ignore_delete_main_key_wins_over_fallback():
    s = ints(3, **{"ignore-delete": "false", "partial-update.ignore-delete": "true"})
    with pytest.raises(LakeformatError, match="ignore-delete"):
        run(s, [(IN, 1, 1, 1), (D, 1, 1, 1)])


def test_first_retract_initialises_the_row_even_with_ignore_delete():
    # Java ITCase testIgnoreDelete: +IN(1, null, apple), -D(1, null, apple), +IN(1, A, null)
    s = make_schema([("pk", int_()), ("a", string()), ("b", string())], "pk",
                    **{"ignore-delete": "true"})
    assert row_of(s, [(IN, 1, None, "apple"), (D, 1, None, "apple"), (IN, 1, "A", None)]) == \
        (1, "A", "apple")
    # the first record is the retract: its values survive where later adds have nulls
    out = run(s, [(D, 1, "x", "y"), (IN, 1, None, "z")])[0]
    assert (out["a"], out["b"], out["_VALUE_KIND"], out["_SEQUENCE_NUMBER"]) == ("x", "z", IN, 1)


def test_only_retracts_give_delete_with_sequence_number_zero_under_ignore_delete():
    s = ints(3, **{"ignore-delete": "true"})
    out = run(s, [(D, 1, 1, 1), (UB, 1, 2, 2)])[0]
    assert (out["_VALUE_KIND"], out["_SEQUENCE_NUMBER"], out["f1"]) == (D, 0, 1)


def test_remove_record_on_delete():  # Java ITCase testRemoveRecordOnDeleteWithoutSequenceGroup
    s = make_schema([("pk", int_()), ("a", string()), ("b", string())], "pk",
                    **{"partial-update.remove-record-on-delete": "true"})
    recs = [(IN, 1, None, "apple"), (D, 1, None, "apple"), (IN, 1, None, "apache"),
            (IN, 1, "A", None), (D, 1, "A", None)]
    assert kind_of(s, recs[:2]) == D
    assert row_of(s, recs[:4]) == (1, "A", "apache")
    assert kind_of(s, recs[:4]) == IN
    assert kind_of(s, recs) == D
    # Java testDeleteReproduceCorrectSequenceNumber: the -D's sequence number is kept
    assert run(s, recs[:2])[0]["_SEQUENCE_NUMBER"] == 1


def test_remove_record_on_delete_later_adds_continue_from_the_delete_row():
    s = ints(4, **{"partial-update.remove-record-on-delete": "true"})
    out = run(s, [(IN, 1, 1, 1, 1), (D, 1, 7, None, 7), (IN, 1, None, 2, None)])[0]
    assert (out["f1"], out["f2"], out["f3"], out["_VALUE_KIND"]) == (7, 2, 7, IN)


def test_remove_record_on_delete_ignores_update_before_but_clears_the_delete_flag():
    s = ints(3, **{"partial-update.remove-record-on-delete": "true"})
    out = run(s, [(IN, 1, 1, 1), (UB, 1, 5, 5)])[0]
    assert (out["f1"], out["_VALUE_KIND"], out["_SEQUENCE_NUMBER"]) == (1, IN, 1)
    # Java resets its delete flag on every record: -D then -U yields the -D row as an INSERT
    out = run(s, [(IN, 1, 1, 1), (D, 1, 4, None), (UB, 1, 5, 5)])[0]
    assert (out["f1"], out["f2"], out["_VALUE_KIND"]) == (4, None, IN)
    # no add record at all: DELETE
    assert kind_of(s, [(UB, 1, 1, 1), (UB, 1, 2, 2)]) == D


def test_remove_record_on_delete_initialises_nullable_fields_from_the_delete():
    # Java testInitRowWithNullableFieldOnDelete
    s = make_schema([("f0", int_(False)), ("f1", int_(False)), ("f2", int_())],
                    **{"partial-update.remove-record-on-delete": "true"})
    assert row_of(s, [(IN, 1, 3, 5), (D, 1, 2, None)]) == (1, 2, None)
    with pytest.raises(LakeformatError, match="f1"):
        run(s, [(IN, 1, 3, 5), (D, 1, None, 2)])


# -- sequence groups ---------------------------------------------------------------------------

def test_sequence_group():  # Java: testSequenceGroup
    s = ints(7, **{"fields.f3.sequence-group": "f1,f2", "fields.f6.sequence-group": "f4,f5"})
    recs = [(IN, 1, 1, 1, 1, 1, 1, 1), (IN, 1, 2, 2, 2, 2, 2, None), (IN, 1, 3, 3, 1, 3, 3, 3),
            (D, 1, 1, 1, 3, 1, 1, None), (D, 1, 1, 1, 3, 1, 1, 4), (IN, 1, 4, 4, 4, 5, 5, 5),
            (D, 1, 1, 1, 6, 1, 1, 6)]
    check_states(s, recs, {
        2: (1, 2, 2, 2, 1, 1, 1), 3: (1, 2, 2, 2, 3, 3, 3), 4: (1, None, None, 3, 3, 3, 3),
        5: (1, None, None, 3, None, None, 4), 6: (1, 4, 4, 4, 5, 5, 5),
        7: (1, None, None, 6, None, None, 6)})
    assert kind_of(s, recs) == IN


def test_sequence_group_partial_delete():  # Java: testSequenceGroupPartialDelete
    s = ints(7, **{"fields.f3.sequence-group": "f1,f2", "fields.f6.sequence-group": "f4,f5",
                   "partial-update.remove-record-on-sequence-group": "f6"})
    recs = [(IN, 1, 1, 1, 1, 1, 1, 1), (IN, 1, 2, 2, 2, 2, 2, None), (IN, 1, 3, 3, 1, 3, 3, 3),
            (D, 1, 1, 1, 3, 1, 1, None), (D, 1, 1, 1, 3, 1, 1, 4), (IN, 1, 4, 4, 4, 5, 5, 5),
            (D, 1, 1, 1, 6, 1, 1, 6)]
    check_states(s, recs, {
        2: (1, 2, 2, 2, 1, 1, 1), 3: (1, 2, 2, 2, 3, 3, 3), 4: (1, None, None, 3, 3, 3, 3),
        5: (1, 1, 1, 3, 1, 1, 4), 6: (1, 4, 4, 4, 5, 5, 5), 7: (1, 1, 1, 6, 1, 1, 6)})
    assert kind_of(s, recs[:4]) == IN
    assert kind_of(s, recs[:5]) == D
    assert kind_of(s, recs[:6]) == IN
    assert kind_of(s, recs) == D


def test_sequence_group_partial_delete_with_reordered_columns():
    # Java: testSequenceGroupPartialDeleteWithProjection (columns f3, f6, f0, f1, f2, f4, f5)
    s = make_schema([(n, int_()) for n in ("f3", "f6", "f0", "f1", "f2", "f4", "f5")], "f0",
                    **{"fields.f3.sequence-group": "f1,f2", "fields.f6.sequence-group": "f4,f5",
                       "partial-update.remove-record-on-sequence-group": "f3,f6"})
    recs = [(IN, 11, 22, 100, 200, 1, 12, 21), (D, 11, 22, 100, 200, 1, 12, 21)]
    assert row_of(s, recs) == (11, 22, 100, 200, 1, 12, 21)
    assert kind_of(s, recs) == D


def test_multi_field_sequence_groups():  # Java: testMultiSequenceFields
    s = ints(9, **{"fields.f3,f4.sequence-group": "f1,f2",
                   "fields.f7,f8.sequence-group": "f5,f6"})
    assert row_of(s, [(IN, 1, None, None, None, None, 1, 1, 1, 3),
                      (IN, 1, 2, 2, None, None, 2, 2, 1, 3)]) == \
        (1, None, None, None, None, 2, 2, 1, 3)
    recs = [(IN, 1, 1, 1, 1, 1, 1, 1, 1, 3), (IN, 1, 2, 2, 2, 2, 2, 1, 1, None),
            (IN, 1, 1, 3, 1, 3, 3, 3, 3, 2), (D, 1, 1, 1, 3, 3, 1, 1, None, None),
            (D, 1, 1, 1, 3, 1, 1, 1, 4, 4), (IN, 1, 4, 4, 4, 4, 5, 5, 5, 5),
            (D, 1, 1, 1, 6, 1, 1, 1, 6, 1)]
    check_states(s, recs, {
        2: (1, 2, 2, 2, 2, 1, 1, 1, 3), 3: (1, 2, 2, 2, 2, 3, 3, 3, 2),
        4: (1, None, None, 3, 3, 3, 3, 3, 2), 5: (1, None, None, 3, 3, None, None, 4, 4),
        6: (1, 4, 4, 4, 4, 5, 5, 5, 5), 7: (1, None, None, 6, 1, None, None, 6, 1)})


def test_sequence_group_default_aggregate_function():  # Java: testSequenceGroupDefaultAggFunc
    s = ints(7, **{"fields.f3.sequence-group": "f1,f2", "fields.f6.sequence-group": "f4,f5",
                   "fields.default-aggregate-function": "last_non_null_value"})
    recs = [(IN, 1, 1, 1, 1, 1, 1, 1), (IN, 1, 2, 2, 2, 2, 2, None), (IN, 1, 3, 3, 1, 3, 3, 3),
            (IN, 1, 4, None, 4, 5, None, 5)]
    check_states(s, recs, {2: (1, 2, 2, 2, 1, 1, 1), 3: (1, 2, 2, 2, 3, 3, 3),
                           4: (1, 4, 2, 4, 5, 3, 5)})


def test_multi_field_groups_default_aggregate_function():
    # Java: testMultiSequenceFieldsDefaultAggFunc
    s = ints(9, **{"fields.f3,f4.sequence-group": "f1,f2",
                   "fields.f7,f8.sequence-group": "f5,f6",
                   "fields.default-aggregate-function": "last_non_null_value"})
    recs = [(IN, 1, 1, 1, 1, 1, 1, 1, 1, 1), (IN, 1, 2, 2, 2, 2, 2, 2, None, None),
            (IN, 1, 3, 3, 1, 1, 3, 3, 3, 3), (IN, 1, 4, None, 4, 4, 5, None, 5, 5)]
    check_states(s, recs, {2: (1, 2, 2, 2, 2, 1, 1, 1, 1), 3: (1, 2, 2, 2, 2, 3, 3, 3, 3),
                           4: (1, 4, 2, 4, 4, 5, 3, 5, 5)})


def test_fields_outside_groups_keep_non_null_values():
    # Java: testAdjustProjectionAllFieldsProject ('f6' is in no group)
    s = ints(8, **{"fields.f4.sequence-group": "f1,f3", "fields.f5.sequence-group": "f7"})
    assert row_of(s, [(IN, 1, 1, 1, 1, 1, 1, 1, 1), (IN, 1, 2, 4, 2, 2, 0, None, 3)]) == \
        (1, 2, 4, 2, 2, 1, 1, 1)


def test_itcase_sequence_group():  # Java ITCase testSequenceGroup / testMultiFieldsSequenceGroup
    cols = [(n, int_()) for n in ("k", "a", "b", "g_1", "c", "d", "g_2")]
    s = make_schema(cols, "k", **{"fields.g_1.sequence-group": "a,b",
                                  "fields.g_2.sequence-group": "c,d"})
    recs = [(IN, 1, 1, 1, 1, 1, 1, 1), (IN, 1, 2, 2, 2, 2, 2, None), (IN, 1, 3, 3, 1, 3, 3, 3),
            (IN, 1, 3, 3, 3, 2, 2, None), (IN, 1, 4, 4, 4, 2, 2, None),
            (IN, 1, 5, 5, 3, 5, None, 4)]
    check_states(s, recs, {2: (1, 2, 2, 2, 1, 1, 1), 3: (1, 2, 2, 2, 3, 3, 3),
                           6: (1, 4, 4, 4, 5, None, 4)})
    cols = [(n, int_()) for n in ("k", "a", "b", "g_1", "c", "d", "g_2", "g_3")]
    s = make_schema(cols, "k", **{"fields.g_1.sequence-group": "a,b",
                                  "fields.g_2,g_3.sequence-group": "c,d"})
    recs = [(IN, 1, 1, 1, 1, 1, 1, 1, 1), (IN, 1, 2, 2, 2, 2, 2, 1, None),
            (IN, 1, 3, 3, 1, 3, 3, 3, 1), (IN, 1, 3, 3, 3, 2, 2, None, 1),
            (IN, 1, 4, 4, 4, 2, 2, None, 1), (IN, 1, 5, 5, 3, 5, None, 4, 1)]
    check_states(s, recs, {2: (1, 2, 2, 2, 1, 1, 1, 1), 3: (1, 2, 2, 2, 3, 3, 3, 1),
                           6: (1, 4, 4, 4, 5, None, 4, 1)})


def test_itcase_remove_record_on_sequence_group():
    # Java ITCase testRemoveRecordOnDeleteWithSequenceGroup
    s = make_schema([("pk", int_()), ("a", string()), ("seq_a", int_()), ("b", string()),
                     ("seq_b", int_())], "pk",
                    **{"fields.seq_a.sequence-group": "a", "fields.seq_b.sequence-group": "b",
                       "partial-update.remove-record-on-sequence-group": "seq_a"})
    recs = [(IN, 1, "apple", 2, "a", 1), (IN, 1, "banana", 1, "b", 2),
            (D, 1, None, None, "b", 2), (D, 1, "apple", 2, None, None)]
    assert row_of(s, recs[:2]) == (1, "apple", 2, "b", 2)
    assert row_of(s, recs[:3]) == (1, "apple", 2, None, 2)
    assert kind_of(s, recs[:3]) == IN
    assert kind_of(s, recs) == D
    assert kind_of(s, [(IN, 2, "flink", 2, "paimon", 1), (D, 2, "flink", 2, "paimon", 1)]) == D


def test_null_ordering_value_skips_the_group_and_the_reducer_rule_shows_it():
    # paimon-format.md §8.1: one record keeps its group; two such records give null
    s = ints(4, **{"fields.f3.sequence-group": "f1,f2"})
    assert row_of(s, [(IN, 1, 5, 6, None)]) == (1, 5, 6, None)
    assert row_of(s, [(IN, 1, 5, 6, None), (IN, 1, 7, 8, None)]) == (1, None, None, None)


def test_winning_add_writes_nulls_and_equal_ordering_value_wins():
    s = ints(4, **{"fields.f3.sequence-group": "f1,f2"})
    assert row_of(s, [(IN, 1, 1, 1, 5), (IN, 1, None, 2, 5)]) == (1, None, 2, 5)
    assert row_of(s, [(IN, 1, 1, 1, 5), (IN, 1, 9, 9, 4)]) == (1, 1, 1, 5)


def test_older_record_leaves_plain_fields_and_reverse_aggregates():
    # Java testFirstValue / ITCase testFirstValuePartialUpdate
    s = ints(4, **{"fields.f1.sequence-group": "f2,f3", "fields.f2.aggregate-function":
                   "first_value", "fields.f3.aggregate-function": "last_value"})
    recs = [(IN, 1, 1, 1, 1), (IN, 1, 2, 2, 2), (IN, 1, 0, 3, 3)]
    check_states(s, recs, {2: (1, 2, 1, 2), 3: (1, 2, 3, 2)})
    cols = [(n, int_()) for n in ("k", "a", "g_1")]
    s = make_schema(cols, "k", **{"fields.g_1.sequence-group": "a",
                                  "fields.a.aggregate-function": "first_value"})
    check_states(s, [(IN, 1, 1, 1), (IN, 1, 2, 2), (IN, 1, 0, 0)], {2: (1, 1, 2), 3: (1, 0, 2)})


def test_multi_field_groups_first_value():  # Java: testMultiSequenceFieldsFirstValue
    s = ints(5, **{"fields.f1,f2.sequence-group": "f3,f4",
                   "fields.f3.aggregate-function": "first_value",
                   "fields.f4.aggregate-function": "last_value"})
    recs = [(IN, 1, 1, 1, 1, 1), (IN, 1, 2, 2, 2, 2), (IN, 1, 0, 1, 3, 3)]
    check_states(s, recs, {2: (1, 2, 2, 1, 2), 3: (1, 2, 2, 3, 2)})


def test_partial_update_with_aggregation():  # Java: testPartialUpdateWithAggregation
    s = ints(8, **{"fields.f1.sequence-group": "f2,f3,f4", "fields.f7.sequence-group": "f6",
                   "fields.f0.aggregate-function": "listagg",
                   "fields.f2.aggregate-function": "sum",
                   "fields.f4.aggregate-function": "last_value",
                   "fields.f6.aggregate-function": "last_non_null_value",
                   "fields.f4.ignore-retract": "true", "fields.f6.ignore-retract": "true"})
    recs = [(IN, 1, 1, 1, 1, 1, 1, 1, 1), (IN, 1, 2, 1, 2, 2, 2, 2, 0),
            (IN, 1, 1, 1, 1, 1, 1, 2, 0), (IN, 1, 1, -1, 1, 1, 2, 2, 0),
            (IN, 1, 3, None, None, None, None, None, 2), (IN, 1, 3, 1, 1, 1, 1, 1, 3),
            (UB, 1, 3, 2, 1, 1, 1, 1, 3), (D, 1, 3, 2, 1, 1, 1, 1, 3),
            (D, 1, 2, 2, 1, 1, 1, 1, 3)]
    check_states(s, recs, {
        2: (1, 2, 2, 2, 2, 2, 1, 1), 3: (1, 2, 3, 2, 2, 1, 1, 1),
        5: (1, 3, 2, None, None, 2, 1, 2), 6: (1, 3, 3, 1, 1, 1, 1, 3),
        7: (1, 3, 1, None, 1, 1, 1, 3), 8: (1, 3, -1, None, 1, 1, 1, 3),
        9: (1, 3, -3, None, 1, 1, 1, 3)})


def test_multi_field_groups_with_aggregation():
    # Java: testMultiSequenceFieldsPartialUpdateWithAggregation
    s = ints(9, **{"fields.f1,f2.sequence-group": "f3,f4,f5",
                   "fields.f7,f8.sequence-group": "f6",
                   "fields.f0.aggregate-function": "listagg",
                   "fields.f3.aggregate-function": "sum",
                   "fields.f4.aggregate-function": "first_value",
                   "fields.f5.aggregate-function": "last_value",
                   "fields.f6.aggregate-function": "last_non_null_value",
                   "fields.f4.ignore-retract": "true", "fields.f6.ignore-retract": "true"})
    recs = [(IN, 1, None, None, 1, 1, 1, 1, 1, 1), (D, 1, None, None, 1, 1, 1, 0, 1, 1),
            (IN, 1, 1, 1, 1, 1, 1, 1, 1, 1), (IN, 1, 1, 2, 1, 2, 2, None, 2, 0),
            (IN, 1, 1, 1, 1, 3, 1, 1, 2, 0), (IN, 1, 1, 3, None, None, None, None, 4, 2),
            (IN, 1, 2, 3, 1, 1, 1, 1, 4, 3), (UB, 1, 2, 3, 2, 1, 2, 1, 4, 3),
            (D, 1, 3, 2, 3, 1, 1, 4, 3, None), (D, 1, 2, 2, 2, 1, 1, 1, 1, 3)]
    # (Java's 9th record has one value too few; here its last field is null, which leaves the
    # second group's outcome unchanged since (3, null) < (4, 3).)
    check_states(s, recs, {
        2: (1, None, None, None, None, None, 1, 1, 1),
        4: (1, 1, 2, 2, 1, 2, 1, 2, 0), 5: (1, 1, 2, 3, 3, 2, 1, 2, 0),
        6: (1, 1, 3, 3, 3, None, 1, 4, 2), 7: (1, 2, 3, 4, 3, 1, 1, 4, 3),
        8: (1, 2, 3, 2, 3, None, 1, 4, 3), 9: (1, 3, 2, -1, 3, None, 1, 4, 3),
        10: (1, 3, 2, -3, 3, None, 1, 4, 3)})


def test_itcase_default_and_field_aggregation():
    # Java ITCase testPartialUpdateWithDefaultAndFieldAggregation
    s = make_schema([("k", int_()), ("a", int_()), ("b", int_()), ("g_1", int_()),
                     ("c", string()), ("g_2", int_())], "k",
                    **{"fields.a.aggregate-function": "sum", "fields.g_1.sequence-group": "a",
                       "fields.g_2.sequence-group": "c",
                       "fields.default-aggregate-function": "last_non_null_value"})
    recs = [(IN, 1, 1, 1, 1, "1", 1), (IN, 1, 2, 2, 2, "2", None), (IN, 1, 3, 3, 1, "3", 3),
            (IN, 1, None, None, 2, None, 4)]
    check_states(s, recs, {2: (1, 3, 2, 2, "1", 1), 3: (1, 6, 3, 2, "3", 3),
                           4: (1, 6, 3, 2, "3", 4)})
    # Java ITCase testSequenceGroupWithDefaultAgg: the default applies to protected columns
    s = make_schema([("pk", int_()), ("seq", int_()), ("v", int_())], "pk",
                    **{"fields.seq.sequence-group": "v",
                       "fields.default-aggregate-function": "sum"})
    assert row_of(s, [(IN, 0, 1, 1), (IN, 0, 2, 2)]) == (0, 2, 3)


def test_retract_of_a_function_without_retraction_fails_unless_ignored():
    opts = {"fields.f1.sequence-group": "f2", "fields.f2.aggregate-function": "max"}
    with pytest.raises(LakeformatError, match="max"):
        run(ints(3, **opts), [(IN, 1, 1, 5), (UB, 1, 0, 5)])  # older: still retracted
    out = run(ints(3, **opts, **{"fields.f2.ignore-retract": "true"}),
              [(IN, 1, 1, 5), (UB, 1, 2, 5), (IN, 1, 3, 4)])
    assert (out[0]["f1"], out[0]["f2"]) == (3, 5)
    # an empty group is skipped entirely, retract included
    assert row_of(ints(3, **opts), [(IN, 1, 1, 5), (UB, 1, None, 5)]) == (1, 1, 5)


def test_first_retract_initialises_then_retracts_with_groups():
    s = ints(4, **{"fields.f1.sequence-group": "f2,f3", "fields.f3.aggregate-function": "sum"})
    # row := (1, 5, 7, 4); the retract then wins against itself: f2 -> null, f3 -> 4 - 4
    out = run(s, [(D, 1, 5, 7, 4), (IN, 1, None, 9, 1)])[0]
    assert (out["f1"], out["f2"], out["f3"], out["_VALUE_KIND"]) == (5, None, 0, IN)
    s = ints(4, **{"fields.f1.sequence-group": "f2", "ignore-delete": "true"})
    out = run(s, [(D, 1, 5, 7, 4), (IN, 1, 4, 9, None)])[0]
    assert (out["f1"], out["f2"], out["f3"]) == (5, 7, 4)  # the init row's group is newer


def test_remove_on_sequence_group_runs_in_rounds():
    s = ints(4, **{"fields.f1.sequence-group": "f2",
                   "partial-update.remove-record-on-sequence-group": "f1"})
    recs = [(IN, 1, 5, 50, 1),
            (D, 1, 3, 30, 2),     # older: no removal, plain fields and f3 untouched
            (D, 1, 6, 60, None),  # newer: row := (1, 6, 60, null), deleted
            (IN, 1, 2, 20, 7),     # older than 6: f2 stays 60
            (D, 1, 4, 40, 8),     # older than 6: no removal
            (D, 1, 6, 61, 9),     # ties 6: removes again
            (D, 1, 1, 10, 10),    # judged against the reset row's 6: no removal
            (IN, 1, 3, 33, None)]
    check_states(s, recs, {2: (1, 5, 50, 1), 3: (1, 6, 60, None), 4: (1, 6, 60, 7),
                           5: (1, 6, 60, 7), 6: (1, 6, 61, 9), 7: (1, 6, 61, 9),
                           8: (1, 6, 61, 9)})
    assert [kind_of(s, recs[:k]) for k in range(2, 9)] == [IN, D, IN, IN, D, IN, IN]


def test_remove_on_sequence_group_depends_on_earlier_removals():
    # a removal copies every column of the -D, so it can lower another group's stored
    # ordering value: the next -D then wins that group although it is older than the first add
    s = ints(5, **{"fields.f1.sequence-group": "f2", "fields.f3.sequence-group": "f4",
                   "partial-update.remove-record-on-sequence-group": "f1,f3"})
    recs = [(IN, 1, 5, 50, 5, 50), (D, 1, 5, 51, 1, 10), (D, 1, 4, 40, 2, 20),
            (IN, 1, 4, 41, 3, 30)]
    check_states(s, recs, {2: (1, 5, 51, 1, 10), 3: (1, 4, 40, 2, 20), 4: (1, 4, 41, 3, 30)})
    assert [kind_of(s, recs[:k]) for k in (2, 3, 4)] == [D, D, IN]
    # without the first removal the second -D loses both groups
    assert row_of(s, [recs[0], recs[2]]) == (1, 5, 50, 5, 50)


def test_retract_error_on_fields_walked_before_a_removing_group():
    # Java walks fields by index: f1 (max, protected by g on f3) is retracted before the
    # removing group's ordering field f3 is reached; f4 (after it) never is
    opts = {"fields.f3.sequence-group": "f1,f4", "fields.f1.aggregate-function": "max",
            "fields.f4.aggregate-function": "min",
            "partial-update.remove-record-on-sequence-group": "f3"}
    s = ints(5, **opts)
    with pytest.raises(LakeformatError, match="max"):
        run(s, [(IN, 1, 1, 1, 1, 1), (D, 1, 1, 1, 2, 1)])
    s = ints(5, **opts, **{"fields.f1.ignore-retract": "true"})
    recs = [(IN, 1, 1, 1, 1, 1), (D, 1, 7, 7, 2, 7)]
    assert row_of(s, recs) == (1, 7, 7, 2, 7) and kind_of(s, recs) == D


def test_protected_fields_before_their_ordering_field():
    s = make_schema([("k", int_()), ("a", int_()), ("b", string()), ("ts", bigint())], "k",
                    **{"fields.ts.sequence-group": "a,b"})
    recs = [(IN, 1, 1, "x", 10), (IN, 1, 2, "y", 9), (IN, 1, None, "z", 10), (D, 1, 5, "q", 10)]
    check_states(s, recs, {2: (1, 1, "x", 10), 3: (1, None, "z", 10), 4: (1, None, None, 10)})


@pytest.mark.parametrize("dt,values,winner", [
    (string(), ["b", "ab", "b"], 2),
    (string(), ["é", "z", None], 0),            # UTF-8 byte order: é (0xC3..) > z
    (double(), [0.0, -0.0, float("nan")], 2),   # Double.compare: NaN is largest
    (double(), [0.0, -0.0, -1.0], 0),           # -0.0 < 0.0
    (float_(), [float("nan"), float("inf"), 1.0], 0),
    (decimal(10, 2), [Decimal("1.50"), Decimal("1.25"), Decimal("-3.00")], 0),
    (timestamp(3), [5_000, 4_000, 5_000], 2),
])
def test_ordering_values_compare_like_java(dt, values, winner):
    from datetime import UTC, datetime

    if dt.root == "TIMESTAMP":
        values = [datetime.fromtimestamp(v / 1000, UTC).replace(tzinfo=None)
                  for v in values]
    s = make_schema([("k", int_()), ("v", int_()), ("o", dt)], "k",
                    **{"fields.o.sequence-group": "v"})
    recs = [(IN, 1, i, values[i]) for i in range(3)]
    assert row_of(s, recs)[1] == winner


def test_ordering_codes_rank_tuples_with_nulls_lowest():
    a = pa.array([1, None, 1, None, 2, 1], pa.int32())
    b = pa.array(["x", "z", None, None, "a", "x"])
    codes = ordering_codes([a, b])
    assert codes[3] == 0  # all null
    assert codes[1] < codes[2] < codes[0] == codes[5] < codes[4]


def test_mission_single_group_cumulative():
    s = make_schema([("id", int_()), ("name", string()), ("age", int_()),
                     ("name_last_update_time", bigint())], "id",
                    **{"fields.name_last_update_time.sequence-group": "name"})
    recs = [(IN, 1, "zhang1", 2, 202509102016), (IN, 1, "zhang1", 3, 202509102016),
            (IN, 1, "zhang1", 4, 202509102017), (IN, 1, "zhang2", 0, 202509102015)]
    assert [row_of(s, recs[:k]) for k in range(1, 5)] == [
        (1, "zhang1", 2, 202509102016), (1, "zhang1", 3, 202509102016),
        (1, "zhang1", 4, 202509102017), (1, "zhang1", 0, 202509102017)]


def test_mission_one_group_per_column_cumulative():
    s = make_schema([("id", int_()), ("name", string()), ("age", int_()),
                     ("name_last_update_time", bigint()), ("age_last_update_time", bigint())],
                    "id", **{"fields.name_last_update_time.sequence-group": "name",
                             "fields.age_last_update_time.sequence-group": "age"})
    recs = [(IN, 1, "zhang1", 100, 202509102016, None), (IN, 1, "zhang2", 200, 202509102017, None),
            (IN, 1, "zhang3", 300, 202509102018, 202509102018),
            (IN, 1, "zhang4", 400, 202509102019, 202509102017),
            (IN, 1, "zhang5", 500, 202509102020, 202509102020),
            (IN, 1, "zhang6", 600, 202509102021, None)]
    rows = [row_of(s, recs[:k]) for k in range(1, 7)]
    assert [r[2] for r in rows] == [100, None, 300, 300, 500, 500]
    assert [r[1] for r in rows] == ["zhang1", "zhang2", "zhang3", "zhang4", "zhang5", "zhang6"]


def test_many_keys_and_lone_keys_in_one_batch():
    s = ints(4, **{"fields.f3.sequence-group": "f1,f2", "fields.f2.aggregate-function": "sum"})
    recs = [(IN, 1, 1, 1, 1), (IN, 2, 2, 2, 2), (IN, 1, 3, 3, 0), (D, 3, 3, 3, 3),
            (IN, 2, 4, 4, 3), (IN, 4, 5, 5, None)]
    out = {r["f0"]: (r["f1"], r["f2"], r["f3"], r["_VALUE_KIND"]) for r in run(s, recs)}
    assert out == {1: (1, 4, 1, IN), 2: (4, 6, 3, IN), 3: (3, 3, 3, D), 4: (5, 5, None, IN)}


# -- validation ----------------------------------------------------------------------------------

@pytest.mark.parametrize("options,error,match", [
    ({"fields.f3.sequence-group": "f1,f2,f7", "fields.f6.sequence-group": "f4,f5"},
     InvalidOptionError, "Field f7 can not be found in table schema"),
    ({"fields.f2,f9.sequence-group": "f1"}, InvalidOptionError, "Field f9 can not be found"),
    ({"fields.f3.sequence-group": "f1,f2", "fields.f4.sequence-group": "f1,f2"},
     InvalidOptionError, "is defined repeatedly by multiple groups"),
    ({"fields.f3,f4.sequence-group": "f1,f2", "fields.f5,f6.sequence-group": "f1,f2"},
     InvalidOptionError, "is defined repeatedly by multiple groups"),
    ({"fields.f3.sequence-group": "f1,f1"}, InvalidOptionError, "defined repeatedly"),
    ({"fields.f0.sequence-group": "f1,f2"}, InvalidOptionError,
     "The sequence-group 'fields.f0.sequence-group' contains primary key field 'f0'"),
    ({"fields.f4.sequence-group": "f1,f0"}, InvalidOptionError, "primary key field 'f0'"),
    ({"fields.f1.aggregate-function": "sum"}, InvalidOptionError,
     "Must use sequence group for aggregation functions but not found for field f1"),
    ({"fields.default-aggregate-function": "sum", "fields.f2.sequence-group": "f1"},
     InvalidOptionError, "not found for field f3"),
    ({"fields.f2.sequence-group": "f1", "fields.f1.aggregate-function": "no_such"},
     InvalidOptionError, "no_such"),
    ({"fields.f0.aggregate-function": "no_such"}, InvalidOptionError, "no_such"),
    ({"ignore-delete": "true", "partial-update.remove-record-on-delete": "true"},
     InvalidOptionError, "conflicting"),
    ({"partial-update.ignore-delete": "true",
      "partial-update.remove-record-on-sequence-group": "f2", "fields.f2.sequence-group": "f1"},
     InvalidOptionError, "conflicting"),
    ({"partial-update.remove-record-on-delete": "true", "fields.f2.sequence-group": "f1"},
     InvalidOptionError, "sequence-group and partial-update.remove-record-on-delete"),
    ({"partial-update.remove-record-on-sequence-group": "f1", "fields.f2.sequence-group": "f1"},
     InvalidOptionError, "must be part of sequence groups"),
    ({"partial-update.remove-record-on-sequence-group": "f2"}, InvalidOptionError,
     "must be part of sequence groups"),
    ({"partial-update.remove-record-on-delete": "yes"}, InvalidOptionError,
     "partial-update.remove-record-on-delete"),
    ({"fields.f2.sequence-group": "f1", "fields.f1.aggregate-function": "sum",
      "fields.f1.ignore-retract": "perhaps"}, InvalidOptionError, "ignore-retract"),
    ({"fieldsf2.sequence-group": "f1"}, InvalidOptionError, "Invalid sequence-group option"),
    ({"fields.f2.sequence-group": "f1, f3"}, InvalidOptionError, "Field  f3 can not be found"),
    ({"fields.f2.sequence-group": "f1", "fields.f1.aggregate-function": "hll_sketch"},
     UnsupportedError, "hll_sketch"),
    ({"fields.f2.sequence-group": "f1", "fields.f1.aggregate-function": "bool_and"},
     InvalidOptionError, "bool_and"),
])
def test_validation_names_the_option(options, error, match):
    with pytest.raises(error, match=match):
        validate(ints(7, **options))
    with pytest.raises(error, match=match):
        merge_engine(ints(7, **options))


def test_aggregate_functions_allowed_where_java_allows_them():
    validate(ints(4, **{"fields.f1.aggregate-function": "last_non_null_value"}))
    validate(ints(4, **{"fields.default-aggregate-function": "last_non_null_value"}))
    # primary keys and ordering fields never aggregate, whatever is configured
    validate(ints(4, **{"fields.f0.aggregate-function": "listagg",
                        "fields.f2.sequence-group": "f1",
                        "fields.f2.aggregate-function": "sum",
                        "fields.f1.aggregate-function": "sum"}))
    # Java testAggregationWithoutSequenceGroup
    cols = [(n, int_()) for n in ("pk", "f0", "g0", "f1", "g1")]
    opts = {"fields.f0.aggregate-function": "listagg", "fields.f1.aggregate-function": "listagg"}
    with pytest.raises(InvalidOptionError, match="not found for field f0"):
        validate(make_schema(cols, "pk", **opts))
    with pytest.raises(InvalidOptionError, match="not found for field f1"):
        validate(make_schema(cols, "pk", **opts, **{"fields.g0.sequence-group": "f0"}))


def test_ordering_field_types():
    from lakeformat.schema.types import DataType as T

    arr = T("ARRAY", element=int_())
    s = make_schema([("k", int_()), ("v", int_()), ("o", arr)], "k",
                    **{"fields.o.sequence-group": "v"})
    with pytest.raises(UnsupportedError, match="ordering field 'o'"):
        validate(s)


@pytest.mark.parametrize("first,second,quiet", [("a_ts", "b_ts", True), ("t1", "t2", False)])
def test_ordering_field_protected_by_another_group_follows_java_option_order(first, second,
                                                                             quiet):
    # Java reads the options from a HashMap: if the group protecting `second` comes first,
    # `second` quietly stays the other group's ordering field; else it is "defined repeatedly".
    # ('fields.a_ts.sequence-group' iterates before 'fields.b_ts.sequence-group'; 't2' before
    # 't1'.)
    a, b = f"fields.{first}.sequence-group", f"fields.{second}.sequence-group"
    order = java_hash_map_order(["bucket", "merge-engine", a, b])
    assert (order.index(a) < order.index(b)) is quiet
    cols = [(n, int_()) for n in ("k", "u", first, "v", second)]
    s = make_schema(cols, "k", **{a: f"u,{second}", b: "v"})
    if quiet:
        cfg = PartialUpdateConfig.of(s)
        assert [(g.option, g.ordering, g.protected) for g in cfg.groups] == \
            [(a, (2,), (1,)), (b, (4,), (3,))]
        assert row_of(s, [(IN, 1, 1, 5, 1, 5), (IN, 1, 2, 4, 2, 6)]) == (1, 1, 5, 2, 6)
    else:
        with pytest.raises(InvalidOptionError, match=f"Field {second} is defined repeatedly"):
            validate(s)


def test_java_hash_map_order_and_split():
    from lakeformat.merge.sequence_group import _java_string_hash

    assert _java_string_hash("hello") == 99162322  # Java "hello".hashCode()
    assert _java_string_hash("\u00e9t\U0001F600") == (((0xE9 * 31 + ord("t")) * 31 + 0xD83D) * 31
                                                      + 0xDE00) & 0xFFFFFFFF
    assert java_hash_map_order(["c", "a", "b"]) == ["a", "b", "c"]
    assert java_hash_map_order(["q", "a"]) == ["q", "a"]  # same bucket: insertion order
    assert java_hash_map_order(["a", "q"]) == ["a", "q"]
    assert java_split("a,b,") == ["a", "b"] and java_split(",a") == ["", "a"]
    assert java_split("") == [""] and java_split(",") == []


def test_ordering_field_shared_by_two_groups_is_unsupported():
    with pytest.raises(UnsupportedError, match="shared"):
        validate(ints(5, **{"fields.f3.sequence-group": "f1", "fields.f3,f4.sequence-group": "f2"}))


# -- against a row-at-a-time model of Paimon's merge function -------------------------------------

class _Agg:
    """Java FieldAggregator semantics for the functions the property test uses."""

    def __init__(self, name: str, ignore_retract: bool):
        self.name, self.ignore_retract, self.initialized = name, ignore_retract, False

    def agg(self, acc, v):
        n = self.name
        if n == "sum":
            return v if acc is None else acc if v is None else acc + v
        if n == "last_value":
            return v
        if n == "last_non_null_value":
            return acc if v is None else v
        if n == "first_value":
            if not self.initialized:
                self.initialized = True
                return v
            return acc
        raise AssertionError(n)

    def agg_reversed(self, acc, v):
        return self.agg(v, acc)

    def retract(self, acc, v):
        if self.ignore_retract:
            return acc
        n = self.name
        if n == "sum":
            if acc is None or v is None:
                return (None if v is None else -v) if acc is None else acc
            return acc - v
        if n == "last_value":
            return None
        if n == "last_non_null_value":
            return None if v is not None else acc
        raise LakeformatError(f"Aggregate function '{n}' does not support retraction")


def java_model(records: list[tuple], cfg: PartialUpdateConfig, removal: set[str]):
    """Paimon's PartialUpdateMergeFunction for one key, field by field: (kind, seq, row)."""
    if len(records) == 1:
        seq, kind, vals = records[0]
        return kind, seq, tuple(vals)
    n = len(cfg.names)
    comp = {}
    for g in cfg.groups:
        for i in (*g.ordering, *g.protected):
            comp[i] = g
    aggs = {i: _Agg(a.function, a.ignore_retract) for i, a in cfg.aggs.items()}
    row: list = [None] * n
    meet_insert = filled = deleted = False
    latest = 0

    def init(vals):
        for i in range(n):
            if vals[i] is None and not cfg.nullable[i]:
                raise LakeformatError("not null")
        return list(vals)

    def newer(g, vals):
        for f in g.ordering:
            a, b = vals[f], row[f]
            if a is None and b is None:
                continue
            if a is None or b is None:
                return b is None
            if a != b:
                return a > b
        return True

    for seq, kind, vals in records:
        deleted = False
        if kind in (UB, D):
            if not filled:
                row, filled = init(vals), True
            if cfg.ignore_delete:
                continue
            latest = seq
            if cfg.groups:
                done, updated = set(), set()
                for i in range(n):
                    g = comp.get(i)
                    if g is None or i in done:
                        continue
                    if all(vals[f] is None for f in g.ordering):
                        done |= set(g.ordering)
                        continue
                    if newer(g, vals):
                        if i in g.ordering:
                            stop = False
                            for f in g.ordering:
                                if f not in updated:
                                    if kind == D and cfg.names[f] in removal:
                                        deleted, row, stop = True, init(vals), True
                                        break
                                    row[f] = vals[f]
                                    updated.add(f)
                                done.add(f)
                            if stop:
                                break
                        elif i in aggs:
                            row[i] = aggs[i].retract(row[i], vals[i])
                        else:
                            row[i] = None
                    elif i in aggs:
                        row[i] = aggs[i].retract(row[i], vals[i])
                continue
            if cfg.remove_on_delete:
                if kind == D:
                    deleted, row = True, init(vals)
                continue
            raise LakeformatError("retract refused")
        latest = seq
        if not cfg.groups:
            for i in range(n):
                if vals[i] is not None:
                    row[i] = vals[i]
                elif not cfg.nullable[i]:
                    raise LakeformatError("not null")
        else:
            done = set()
            for i in range(n):
                g = comp.get(i)
                if g is None:
                    if vals[i] is not None:
                        row[i] = vals[i]
                    continue
                if i in done:
                    continue
                if all(vals[f] is None for f in g.ordering):
                    done |= set(g.ordering)
                    continue
                if newer(g, vals):
                    if i in g.ordering:
                        for f in g.ordering:
                            row[f] = vals[f]
                            done.add(f)
                        continue
                    row[i] = aggs[i].agg(row[i], vals[i]) if i in aggs else vals[i]
                elif i in aggs:
                    row[i] = aggs[i].agg_reversed(row[i], vals[i])
        meet_insert = filled = True
    return (D if deleted or not meet_insert else IN), latest, tuple(row)


# (options, columns) shapes: columns k, c0..c5 (INT); k the key
_SHAPES = [
    {},
    {"ignore-delete": "true"},
    {"partial-update.remove-record-on-delete": "true"},
    {"fields.c0.sequence-group": "c1,c2", "fields.c3.sequence-group": "c4"},
    {"fields.c0.sequence-group": "c1,c2", "fields.c3.sequence-group": "c4",
     "ignore-delete": "true"},
    {"fields.c0.sequence-group": "c1,c2", "fields.c3.sequence-group": "c4",
     "partial-update.remove-record-on-sequence-group": "c3"},
    {"fields.c0.sequence-group": "c1,c2", "fields.c3.sequence-group": "c4",
     "partial-update.remove-record-on-sequence-group": "c0,c3"},
    {"fields.c2,c3.sequence-group": "c0,c4", "fields.c5.sequence-group": "c1",
     "partial-update.remove-record-on-sequence-group": "c3"},
    {"fields.c2,c3.sequence-group": "c0,c4", "fields.c5.sequence-group": "c1"},
]
_AGG_CHOICES = [None, "sum", "last_value", "last_non_null_value", "first_value"]


@st.composite
def scenario(draw):
    options = dict(draw(st.sampled_from(_SHAPES)))
    protected = [c for k, v in options.items() if k.startswith("fields.")
                 for c in v.split(",")]
    for c in protected:
        fn = draw(st.sampled_from(_AGG_CHOICES))
        if fn:
            options[f"fields.{c}.aggregate-function"] = fn
            if draw(st.booleans()):
                options[f"fields.{c}.ignore-retract"] = "true"
    value = st.one_of(st.none(), st.integers(0, 3))
    record = st.tuples(st.integers(0, 3), st.sampled_from([IN, IN, IN, UA, UB, D, D]),
                       st.lists(value, min_size=6, max_size=6))
    records = draw(st.lists(record, max_size=30))
    return options, records


@settings(max_examples=400, deadline=None)
@given(scenario())
def test_vectorized_merge_equals_the_field_by_field_model(case):
    options, records = case
    cols = [("k", int_())] + [(f"c{i}", int_()) for i in range(6)]
    s = make_schema(cols, "k", **options)
    cfg = PartialUpdateConfig.of(s)
    removal = set(java_split(options.get("partial-update.remove-record-on-sequence-group", "")))
    by_key: dict[int, list] = {}
    rows = []
    for seq, (k, kind, vals) in enumerate(records):
        by_key.setdefault(k, []).append((seq, kind, [k, *vals]))
        rows.append((kind, k, *vals))
    want, error = {}, False
    try:
        for k, recs in by_key.items():
            recs.sort(key=lambda r: (r[0], r[1] not in (UB, D)))
            want[k] = java_model(recs, cfg, removal)
    except LakeformatError:
        error = True
    if error:
        with pytest.raises(LakeformatError):
            run(s, rows)
        return
    got = {r["k"]: (r["_VALUE_KIND"], r["_SEQUENCE_NUMBER"],
                    tuple(r[n] for n in s.field_names)) for r in run(s, rows)}
    assert got == want


def test_partial_update_single_retract_is_emitted_unchanged():
    merge = merge_engine(kv_schema(**{"merge-engine": "partial-update"})).merge_sorted
    out = merge(sort_for_merge(kv_records([(1, 0, 3, "x", None)]), ["k"])).to_pylist()
    assert out[0]["_VALUE_KIND"] == 3
