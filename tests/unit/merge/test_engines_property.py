"""Every merge engine against the row-at-a-time reference model (`engines_model` beside this file).

Hypothesis draws a table schema with an option set Java accepts (per engine), then a history
of records for a few keys (many records per key, nulls, ties in ordering values, sequence
numbers out of order, -U/-D). `merge_engine(schema).merge` must give, key by key, exactly
the model's row and kind, or raise a LakeformatError where Java's merge throws.

The first section checks the model itself against cases whose expected values are facts about
Java Paimon (its unit tests' vectors and the behaviour of its classes), so a reader can trust
the oracle before trusting the comparison.
"""

from __future__ import annotations

import datetime
import math
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakeformat.errors import InvalidOptionError, LakeformatError, UnsupportedError
from lakeformat.merge import merge_engine
from lakeformat.schema.table_schema import TableSchema, new_schema
from lakeformat.schema.types import (
    DataField,
    DataType,
    assign_field_ids,
    bigint,
    boolean,
    bytes_,
    date,
    decimal,
    double,
    float_,
    int_,
    smallint,
    string,
    timestamp,
    tinyint,
    to_arrow,
    varchar,
)
from tests.support.depth import examples

from . import engines_model as M
from .engines_model import (
    DELETE,
    INSERT,
    SEQUENCE_NUMBER,
    UPDATE_AFTER,
    UPDATE_BEFORE,
    VALUE_KIND,
    model_merge,
    unordered_columns,
)

# Reducer rule for aggregation. Java master's ReducerMergeFunctionWrapper returns a key's lone
# record unchanged for EVERY engine, aggregation included (see
# test_aggregation_lone_record_is_returned_unchanged_like_java); paimon-format.md §8.1 and the
# first merge contract said aggregation runs on lone records. The comparison follows Java.
AGGREGATION_MERGES_LONE_RECORDS = False

EXAMPLES = examples(150, 400, "MERGE_PROPERTY_EXAMPLES")  # tests/support/depth.py
PROPERTY = settings(max_examples=EXAMPLES, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


# =============================================================================================
# helpers
# =============================================================================================

def make_schema(columns: list[tuple[str, DataType]], pks: list[str],
                options: dict[str, str]) -> TableSchema:
    fields, _ = assign_field_ids([DataField(-1, n, t) for n, t in columns])
    return new_schema(0, fields, [], pks, {"bucket": "1", **options}, None)


def arrow_records(schema: TableSchema, records: list[dict]) -> pa.Table:
    fields = [pa.field(SEQUENCE_NUMBER, pa.int64(), False), pa.field(VALUE_KIND, pa.int8(), False)]
    fields += [pa.field(f.name, to_arrow(f.type), f.type.nullable) for f in schema.fields]
    arrow_schema = pa.schema(fields)
    cols = [pa.array([r[f.name] for r in records], f.type) for f in arrow_schema]
    return pa.Table.from_arrays(cols, schema=arrow_schema)


def rec(kind: int, seq: int, **values: Any) -> dict:
    return {SEQUENCE_NUMBER: seq, VALUE_KIND: kind, **values}


def canonical(value: Any, how: str | None = None) -> Any:
    """Hashable, order-normalised form; floats keep their sign of zero and NaN-ness."""
    if isinstance(value, float):
        if math.isnan(value):
            return ("nan",)
        return ("f", value, math.copysign(1.0, value))
    if isinstance(value, Decimal):
        return ("d", value.normalize() if value != 0 else Decimal(0))
    if isinstance(value, dict):
        return ("row",) + tuple(sorted((k, canonical(v)) for k, v in value.items()))
    if isinstance(value, tuple):
        return ("tuple",) + tuple(canonical(v) for v in value)
    if isinstance(value, list):
        items = [canonical(v) for v in value]
        if how in ("elements", "map", "rows"):
            items = sorted(items, key=repr)
        return ("list",) + tuple(items)
    return value


def canonical_row(row: dict, schema: TableSchema) -> dict:
    unordered = unordered_columns(schema)
    out = {n: canonical(row[n], unordered.get(n)) for n in schema.field_names}
    out[SEQUENCE_NUMBER] = row[SEQUENCE_NUMBER]
    out[VALUE_KIND] = row[VALUE_KIND]
    return out


def describe(schema: TableSchema, records: list[dict], key: tuple | None = None) -> str:
    cols = ", ".join(f"{f.name} {f.type}" for f in schema.fields)
    opts = {k: v for k, v in schema.options.items() if k != "bucket"}
    keys = list(schema.primary_keys)
    shown = [r for r in records if key is None or tuple(r[k] for k in keys) == key]
    shown = sorted(shown, key=lambda r: r[SEQUENCE_NUMBER])
    lines = [f"columns: {cols}", f"primary key: {keys}", f"options: {opts}",
             "records (by _SEQUENCE_NUMBER):"]
    lines += [f"  {r}" for r in shown]
    return "\n".join(lines)


def compare_with_model(schema: TableSchema, records: list[dict],
                       aggregation_merges_lone_records: bool = AGGREGATION_MERGES_LONE_RECORDS
                       ) -> None:
    """The core oracle check: engine output equals the model, key by key."""
    table = arrow_records(schema, records)
    records = table.to_pylist()  # both sides see exactly the values Arrow holds
    expected = model_merge(records, schema,
                           aggregation_merges_lone_records=aggregation_merges_lone_records)
    # the option set is valid in Java, so the engine must accept it
    merge_engine(schema)
    failing = {k: e for k, e in expected.items() if isinstance(e, Exception)}
    if failing:
        key, err = next(iter(failing.items()))
        try:
            got = merge_engine(schema).merge(table)
        except LakeformatError:
            return
        pytest.fail(f"Java's merge throws for key {key} ({type(err).__name__}: {err}) but "
                    f"merge returned {got.num_rows} rows\n"
                    + describe(schema, records, key))
    try:
        got = merge_engine(schema).merge(table)
    except LakeformatError as e:
        pytest.fail(f"merge raised {type(e).__name__}: {e}\nbut Java merges every "
                    f"key\n" + describe(schema, records))
    keys = list(M.engine_setup(schema).key_names)
    rows = got.to_pylist()
    by_key = {tuple(r[k] for k in keys): r for r in rows}
    assert len(by_key) == len(rows), "merge returned two rows for one key"
    assert set(by_key) == set(expected), (
        f"keys differ: engine {sorted(by_key)} vs model {sorted(expected)}")
    for key, want in expected.items():
        have = by_key[key]
        if want is None:
            assert have[VALUE_KIND] in (UPDATE_BEFORE, DELETE), (
                f"key {key}: Java's merge gives no record (every record skipped) but the engine "
                f"returned a visible row {have}\n" + describe(schema, records, key))
            continue
        w, h = canonical_row(want, schema), canonical_row(have, schema)
        if w != h:
            diff = {n: (w[n], h[n]) for n in w if w[n] != h[n]}
            visible = "" if want[VALUE_KIND] in (INSERT, UPDATE_AFTER) else (
                " (a retract result: invisible to readers, but written by compaction)")
            pytest.fail(f"key {key}{visible}: (model, engine) differ in {diff}\n"
                        f"model:  {want}\nengine: {have}\n" + describe(schema, records, key))


# =============================================================================================
# 1. the model against facts about Java
# =============================================================================================

INT7 = [(f"f{i}", int_(i != 0)) for i in range(7)]


def run_mf(schema: TableSchema, steps: list[tuple]) -> None:
    """Drive one merge function like Java's unit tests: add records, check getResult()."""
    setup = M.engine_setup(schema)
    mf = setup.make()
    mf.reset()
    seq = 0
    names = schema.field_names
    for step in steps:
        if step[0] == "add":
            kind, values = step[1], step[2]
            mf.add(rec(kind, seq, **dict(zip(names, values))))
            seq += 1
        else:
            got = mf.get_result()
            assert [got[n] for n in names] == list(step[1]), step


def test_model_partial_update_non_null_overwrite():
    s = make_schema(INT7, ["f0"], {"merge-engine": "partial-update"})
    run_mf(s, [("add", INSERT, (1, 1, 1, 1, 1, 1, 1)), ("add", INSERT, (1, 2, 2, 2, 2, 2, None)),
               ("check", (1, 2, 2, 2, 2, 2, 1))])


@pytest.mark.parametrize("partial_delete", [False, True])
def test_model_partial_update_sequence_groups_and_retracts(partial_delete):
    opts = {"merge-engine": "partial-update", "fields.f3.sequence-group": "f1,f2",
            "fields.f6.sequence-group": "f4,f5"}
    if partial_delete:
        opts["partial-update.remove-record-on-sequence-group"] = "f6"
    s = make_schema(INT7, ["f0"], opts)
    steps = [("add", INSERT, (1, 1, 1, 1, 1, 1, 1)), ("add", INSERT, (1, 2, 2, 2, 2, 2, None)),
             ("check", (1, 2, 2, 2, 1, 1, 1)), ("add", INSERT, (1, 3, 3, 1, 3, 3, 3)),
             ("check", (1, 2, 2, 2, 3, 3, 3)),
             ("add", DELETE, (1, 1, 1, 3, 1, 1, None)), ("check", (1, None, None, 3, 3, 3, 3)),
             ("add", DELETE, (1, 1, 1, 3, 1, 1, 4))]
    if partial_delete:
        steps += [("check", (1, 1, 1, 3, 1, 1, 4)), ("add", INSERT, (1, 4, 4, 4, 5, 5, 5)),
                  ("check", (1, 4, 4, 4, 5, 5, 5)), ("add", DELETE, (1, 1, 1, 6, 1, 1, 6)),
                  ("check", (1, 1, 1, 6, 1, 1, 6))]
    else:
        steps += [("check", (1, None, None, 3, None, None, 4)),
                  ("add", INSERT, (1, 4, 4, 4, 5, 5, 5)), ("check", (1, 4, 4, 4, 5, 5, 5)),
                  ("add", DELETE, (1, 1, 1, 6, 1, 1, 6)),
                  ("check", (1, None, None, 6, None, None, 6))]
    run_mf(s, steps)


def test_model_first_value_inside_sequence_group_uses_agg_reversed():
    s = make_schema(INT7[:4], ["f0"], {
        "merge-engine": "partial-update", "fields.f1.sequence-group": "f2,f3",
        "fields.f2.aggregate-function": "first_value",
        "fields.f3.aggregate-function": "last_value"})
    run_mf(s, [("add", INSERT, (1, 1, 1, 1)), ("add", INSERT, (1, 2, 2, 2)),
               ("check", (1, 2, 1, 2)), ("add", INSERT, (1, 0, 3, 3)), ("check", (1, 2, 3, 2))])


def test_model_multi_field_ordering_first_value():
    s = make_schema(INT7[:5], ["f0"], {
        "merge-engine": "partial-update", "fields.f1,f2.sequence-group": "f3,f4",
        "fields.f3.aggregate-function": "first_value",
        "fields.f4.aggregate-function": "last_value"})
    run_mf(s, [("add", INSERT, (1, 1, 1, 1, 1)), ("add", INSERT, (1, 2, 2, 2, 2)),
               ("check", (1, 2, 2, 1, 2)), ("add", INSERT, (1, 0, 1, 3, 3)),
               ("check", (1, 2, 2, 3, 2))])


def test_model_partial_update_with_aggregation_and_retracts():
    cols = [(f"f{i}", int_(i != 0)) for i in range(8)]
    s = make_schema(cols, ["f0"], {
        "merge-engine": "partial-update", "fields.f1.sequence-group": "f2,f3,f4",
        "fields.f7.sequence-group": "f6", "fields.f0.aggregate-function": "listagg",
        "fields.f2.aggregate-function": "sum", "fields.f4.aggregate-function": "last_value",
        "fields.f6.aggregate-function": "last_non_null_value",
        "fields.f4.ignore-retract": "true", "fields.f6.ignore-retract": "true"})
    run_mf(s, [
        ("add", INSERT, (1, 1, 1, 1, 1, 1, 1, 1)), ("add", INSERT, (1, 2, 1, 2, 2, 2, 2, 0)),
        ("check", (1, 2, 2, 2, 2, 2, 1, 1)),
        ("add", INSERT, (1, 1, 1, 1, 1, 1, 2, 0)), ("check", (1, 2, 3, 2, 2, 1, 1, 1)),
        ("add", INSERT, (1, 1, -1, 1, 1, 2, 2, 0)),
        ("add", INSERT, (1, 3, None, None, None, None, None, 2)),
        ("check", (1, 3, 2, None, None, 2, 1, 2)),
        ("add", INSERT, (1, 3, 1, 1, 1, 1, 1, 3)), ("check", (1, 3, 3, 1, 1, 1, 1, 3)),
        ("add", UPDATE_BEFORE, (1, 3, 2, 1, 1, 1, 1, 3)), ("check", (1, 3, 1, None, 1, 1, 1, 3)),
        ("add", DELETE, (1, 3, 2, 1, 1, 1, 1, 3)), ("check", (1, 3, -1, None, 1, 1, 1, 3)),
        ("add", DELETE, (1, 2, 2, 1, 1, 1, 1, 3)), ("check", (1, 3, -3, None, 1, 1, 1, 3)),
    ])


def test_model_remove_record_on_delete_keeps_delete_sequence_and_row():
    cols = [("f0", int_(False)), ("f1", int_(False)), ("f2", int_()), ("f3", int_())]
    s = make_schema(cols, ["f0"], {"merge-engine": "partial-update",
                                   "partial-update.remove-record-on-delete": "true"})
    setup = M.engine_setup(s)
    out = M.reduce_key([rec(INSERT, 0, f0=1, f1=3, f2=5, f3=7),
                        rec(DELETE, 1, f0=1, f1=2, f2=2, f3=None)], setup)
    assert out == {"f0": 1, "f1": 2, "f2": 2, "f3": None, SEQUENCE_NUMBER: 1, VALUE_KIND: DELETE}


def test_model_listagg_facts():
    agg = M.ListaggAgg("listagg", string(), ",", distinct=True)
    acc = None
    for v in ["", "user2", "user1,user3"]:
        acc = agg.agg(acc, v)
    assert acc == "user2,user1,user3"
    acc = None
    for v in ["user1", "user2", "user1", "user3", "", " ", "\t", " \t\n\r\n \u3000 ", "user2",
              "\u2000"]:
        acc = agg.agg(acc, v)
    assert acc == "user1,user2,user3"
    plain = M.ListaggAgg("listagg", string(), ",", distinct=False)
    assert plain.agg(plain.agg(None, " "), "first line") == "first line"
    assert plain.agg("a", "\u00a0") == "a,\u00a0"  # NBSP is not Java whitespace
    spaced = M.ListaggAgg("listagg", string(), " ", distinct=True)
    acc = None
    for v in ["k1=v1 k2=v2", " k1=v1  k3=v3", " "]:
        acc = spaced.agg(acc, v)
    assert acc == "k1=v1 k2=v2 k3=v3"


def test_model_first_value_state_and_reversal():
    fv = M.FirstValueAgg("first_value", int_())
    assert fv.agg(None, 1) == 1 and fv.agg(1, 2) == 1
    fv.reset()
    assert fv.agg(1, 3) == 3
    fv.reset()
    # aggReversed(acc, v) = agg(v, acc): the first call returns acc, later calls return v
    assert fv.agg_reversed(5, 9) == 5 and fv.agg_reversed(5, 9) == 9
    fnn = M.FirstNonNullValueAgg("first_non_null_value", int_())
    assert fnn.agg(None, None) is None and fnn.agg(None, 1) == 1 and fnn.agg(1, 2) == 1


def test_model_numeric_facts():
    with pytest.raises(M.ArithmeticFailure):
        M.SumAgg("sum", tinyint()).agg(100, 100)
    with pytest.raises(M.ArithmeticFailure):
        M.SumAgg("sum", int_()).retract(None, -(2**31))  # negateExact
    assert M.SumAgg("sum", int_()).retract(None, 5) == -5
    assert M.ProductAgg("product", int_()).retract(7, -2) == -3  # truncates toward zero
    with pytest.raises(M.ArithmeticFailure):
        M.ProductAgg("product", int_()).retract(7, 0)
    dec = M.ProductAgg("product", decimal(10, 2))
    assert dec.agg(Decimal("0.05"), Decimal("0.50")) == Decimal("0.03")  # HALF_UP
    assert dec.agg(Decimal("-0.05"), Decimal("0.50")) == Decimal("-0.03")
    assert dec.agg(Decimal("99999.99"), Decimal("99999.99")) is None  # precision overflow
    with pytest.raises(M.ArithmeticFailure):
        dec.retract(Decimal("1.00"), Decimal("3.00"))  # non-terminating
    wide = M.SumAgg("sum", decimal(20, 2))
    assert wide.agg(Decimal("999999999999999999.99"), Decimal("0.01")) is None
    assert M.SumAgg("sum", float_()).agg(0.1, 0.2) == float(pa.array([0.3], pa.float32())[0]
                                                            .as_py())
    assert M.MaxAgg("max", double()).agg(0.0, -0.0) == 0.0
    assert math.copysign(1, M.MinAgg("min", double()).agg(0.0, -0.0)) == -1


def test_model_collect_and_merge_map_facts():
    c = M.CollectAgg("collect", DataType("ARRAY", element=int_()), distinct=False)
    assert c.agg([1, 2], [2, 3]) == [1, 2, 2, 3]
    assert c.retract([1, 2, 2, 3], [2, 4]) == [1, 2, 3]
    assert c.retract(None, [1]) is None
    d = M.CollectAgg("collect", DataType("ARRAY", element=int_()), distinct=True)
    assert sorted(d.agg(None, [1, 1, 2])) == [1, 2]
    ir = M.IgnoreRetractAgg(c)  # reversal is NOT forwarded: inner agg(input, acc)
    assert ir.agg_reversed([1], [2]) == [2, 1] and c.agg_reversed([1], [2]) == [1, 2]
    m = M.MergeMapAgg("merge_map", DataType("MAP", key=string(False), value=int_()))
    assert dict(m.agg([("a", 1), ("b", 2)], [("b", 3)])) == {"a": 1, "b": 3}
    assert dict(m.retract([("a", 1), ("b", 2)], [("b", 0)])) == {"a": 1}


def test_model_nested_update_facts():
    row_t = DataType("ROW", fields=(DataField(0, "k", int_()), DataField(1, "s", int_()),
                                    DataField(2, "v", string())))
    arr = DataType("ARRAY", element=row_t)
    keyed = M.NestedUpdateAgg("nested_update", arr, "n", ["k"], "MERGE", ["s"], 2**31 - 1)
    acc = keyed.agg(None, [{"k": 1, "s": 2, "v": "a"}, {"k": 2, "s": 0, "v": "b"}])
    acc = keyed.agg(acc, [{"k": 1, "s": 1, "v": "old"}, {"k": 2, "s": 0, "v": "tie"}])
    assert sorted(acc, key=lambda r: r["k"]) == [{"k": 1, "s": 2, "v": "a"},
                                                 {"k": 2, "s": 0, "v": "tie"}]
    limited = M.NestedUpdateAgg("nested_update", arr, "n", [], "MERGE", [], 2)
    assert limited.agg(None, [None, {"k": 1, "s": 1, "v": "x"}, {"k": 2, "s": 1, "v": "y"},
                              {"k": 3, "s": 1, "v": "z"}]) == [{"k": 1, "s": 1, "v": "x"},
                                                               {"k": 2, "s": 1, "v": "y"}]
    strict = M.NestedUpdateAgg("nested_update", arr, "n", ["k"], "ERROR", [], 2**31 - 1)
    with pytest.raises(M.NestedKeyNull):
        strict.agg(None, [{"k": None, "s": 1, "v": "x"}])
    npu = M.NestedPartialUpdateAgg("nested_partial_update", arr, "n", ["k"], "MERGE")
    out = npu.agg([{"k": 1, "s": 1, "v": "a"}], [{"k": 1, "s": None, "v": "b"}])
    assert out == [{"k": 1, "s": 1, "v": "b"}]


def test_model_null_sorts_lowest_in_both_orders():
    for order in ("ascending", "descending"):
        s = make_schema([("k", int_()), ("t", int_()), ("v", string())], ["k"],
                        {"sequence.field": "t", "sequence.field.sort-order": order})
        recs = [rec(INSERT, 0, k=1, t=5, v="five"), rec(INSERT, 1, k=1, t=None, v="null"),
                rec(INSERT, 2, k=1, t=3, v="three")]
        got = model_merge(recs, s)[(1,)]
        assert got["v"] == ("five" if order == "ascending" else "three")
        ordered = M.merge_order(recs, M.engine_setup(s))
        assert ordered[0]["v"] == "null"


def test_model_lone_record_and_ignore_delete_edge_cases():
    s = make_schema([("k", int_()), ("v", int_())], ["k"], {"ignore-delete": "true"})
    res = model_merge([rec(DELETE, 0, k=1, v=1), rec(UPDATE_BEFORE, 1, k=1, v=2),
                       rec(DELETE, 2, k=2, v=3)], s)
    assert res[(1,)] is None  # Deduplicate skipped both: no record
    assert res[(2,)][VALUE_KIND] == DELETE  # lone record: returned as is
    pu = make_schema([("k", int_()), ("a", int_()), ("b", int_())], ["k"],
                     {"merge-engine": "partial-update", "ignore-delete": "true"})
    res = model_merge([rec(DELETE, 0, k=1, a=1, b=2), rec(INSERT, 1, k=1, a=None, b=5),
                       rec(DELETE, 5, k=1, a=9, b=9)], pu)
    # the first retract initialised the row; the ignored retract's sequence number is not taken
    assert res[(1,)] == {"k": 1, "a": 1, "b": 5, SEQUENCE_NUMBER: 1, VALUE_KIND: INSERT}


# =============================================================================================
# 2. value and schema strategies
# =============================================================================================

DEC = decimal(10, 2)
DEC_WIDE = decimal(20, 2)

def keytime_map_type(nullable: bool = True) -> DataType:
    row = DataType("ROW", fields=(DataField(-1, "v", int_()), DataField(-1, "ts", string())))
    return DataType("MAP", nullable, key=string(False), value=row)


# kind -> (type factory, non-null value strategy)
_VALUES: dict[str, tuple[Any, st.SearchStrategy]] = {
    "tinyint": (tinyint, st.one_of(st.integers(-3, 3), st.sampled_from([-128, 127, 100, -100]))),
    "smallint": (smallint, st.one_of(st.integers(-3, 3), st.sampled_from([-32768, 32767, 20000]))),
    "int": (int_, st.one_of(st.integers(-4, 4), st.sampled_from([-(2**31), 2**31 - 1, 2**30]))),
    "bigint": (bigint, st.one_of(st.integers(-4, 4),
                                 st.sampled_from([-(2**63), 2**63 - 1, 2**62]))),
    "float": (float_, st.sampled_from([0.0, -0.0, 0.5, -1.0, 2.0, 3.25, -2.5, 1e20])),
    "double": (double, st.sampled_from([0.0, -0.0, 0.5, -1.0, 2.0, 3.25, -2.5, 1e200])),
    "decimal": (lambda nullable=True: decimal(10, 2, nullable),
                st.sampled_from([Decimal(x) for x in ("0.00", "1.25", "-3.50", "0.05", "-0.05",
                                                      "0.50", "12.34", "99.99", "2.00")])),
    "decimal_wide": (lambda nullable=True: decimal(20, 2, nullable),
                     st.sampled_from([Decimal(x) for x in ("0.00", "1.25", "-0.05", "0.50",
                                                           "999999999999999999.99",
                                                           "-999999999999999999.99")])),
    "bool": (boolean, st.booleans()),
    "string": (string, st.sampled_from(["a", "b", "c", "a,b", "b,a", "", " ", "\t", "\u00a0",
                                        "a,,b", ",a", "x y", "a;b", "a--b", "a,a", "b;b"])),
    "date": (date, st.sampled_from([datetime.date(2024, 1, d) for d in (1, 2, 3)])),
    "timestamp": (lambda nullable=True: timestamp(3, nullable),
                  st.sampled_from([datetime.datetime(2024, 1, 1, 0, 0, s, ms * 1000)
                                   for s in (0, 1) for ms in (0, 5)])),
    "bytes": (bytes_, st.sampled_from([b"", b"\x00", b"\x7f", b"\x80", b"\xff", b"a", b"ab"])),
    "array_bytes": (lambda nullable=True: DataType("ARRAY", nullable, element=bytes_()),
                    st.lists(st.one_of(st.none(), st.sampled_from([b"a", b"\x80", b""])),
                             max_size=3)),
    "array_int": (lambda nullable=True: DataType("ARRAY", nullable, element=int_()),
                  st.lists(st.one_of(st.none(), st.integers(0, 3)), max_size=3)),
    "array_str": (lambda nullable=True: DataType("ARRAY", nullable, element=string()),
                  st.lists(st.one_of(st.none(), st.sampled_from(["a", "b", "c"])), max_size=3)),
    "map": (lambda nullable=True: DataType("MAP", nullable, key=string(False), value=int_()),
            st.dictionaries(st.sampled_from(["a", "b", "c"]),
                            st.one_of(st.none(), st.integers(0, 5)), max_size=3)
            .map(lambda d: list(d.items()))),
    "map_keytime": (lambda nullable=True: keytime_map_type(nullable),
                    st.dictionaries(st.sampled_from(["a", "b", "c"]), st.one_of(
                        st.none(), st.fixed_dictionaries({
                            "v": st.one_of(st.none(), st.integers(0, 5)),
                            "ts": st.one_of(st.none(), st.sampled_from(["2024-01", "2024-02",
                                                                        "2024-1"]))})),
                        max_size=3).map(lambda d: list(d.items()))),
    "nested": (lambda nullable=True: DataType("ARRAY", nullable, element=DataType(
        "ROW", fields=(DataField(-1, "k", int_()), DataField(-1, "s", int_()),
                       DataField(-1, "v", string())))),
               st.lists(st.one_of(st.none(), st.fixed_dictionaries({
                   "k": st.one_of(st.none(), st.integers(0, 2)),
                   "s": st.one_of(st.none(), st.integers(0, 2)),
                   "v": st.one_of(st.none(), st.sampled_from(["x", "y"]))})), max_size=3)),
}
VALUE_KINDS = tuple(_VALUES)
_NUMERIC = ("tinyint", "smallint", "int", "bigint", "float", "double", "decimal",
            "decimal_wide")
_ANY_FUNCS = ("last_value", "last_non_null_value", "first_value", "first_non_null_value",
              "first_not_null_value")


def funcs_for(kind: str) -> list[str]:
    """Functions Java accepts on a column of this kind; kind-specific ones weigh more."""
    specific: list[str] = []
    if kind in _NUMERIC:
        specific = ["sum", "product", "max", "min"]
    elif kind == "bool":
        specific = ["bool_and", "bool_or", "max", "min"]
    elif kind == "string":
        specific = ["listagg", "max", "min"]
    elif kind in ("date", "timestamp", "bytes"):
        specific = ["max", "min"]
    elif kind in ("array_int", "array_str", "array_bytes"):
        specific = ["collect"]
    elif kind == "map":
        specific = ["merge_map"]
    elif kind == "map_keytime":
        specific = ["merge_map_with_keytime", "merge_map"]
    elif kind == "nested":
        specific = ["nested_update", "nested_partial_update"]
    return list(_ANY_FUNCS) + specific * 3


FUNCTION_KINDS = {  # for a "focused" case: every aggregated column uses one function
    "sum": _NUMERIC, "product": _NUMERIC,
    "max": _NUMERIC + ("string", "bool", "date", "timestamp", "bytes"),
    "min": _NUMERIC + ("string", "bool", "date", "timestamp", "bytes"),
    "bool_and": ("bool",), "bool_or": ("bool",), "listagg": ("string",),
    "collect": ("array_int", "array_str", "array_bytes"), "merge_map": ("map", "map_keytime"),
    "merge_map_with_keytime": ("map_keytime",),
    "nested_update": ("nested",), "nested_partial_update": ("nested",),
    **{f: VALUE_KINDS for f in _ANY_FUNCS},
}


RETRACT_OK = {"sum", "product", "last_value", "last_non_null_value", "collect", "merge_map",
              "nested_update"}


@st.composite
def func_options(draw, name: str, kind: str, func: str) -> dict[str, str]:
    """Per-function options: distinct, delimiter, nested keys, ..."""
    o: dict[str, str] = {}
    if func in ("collect", "listagg") and draw(st.booleans()):
        o[f"fields.{name}.distinct"] = "true"
    if func == "listagg" and draw(st.booleans()):
        o[f"fields.{name}.list-agg-delimiter"] = draw(st.sampled_from([";", "--", " "]))
    if func == "nested_partial_update" or (func == "nested_update" and draw(st.booleans())):
        o[f"fields.{name}.nested-key"] = "k"
        if draw(st.booleans()):
            o[f"fields.{name}.nested-key-null-strategy"] = draw(
                st.sampled_from(["merge", "ignore", "error"]))
        if func == "nested_update" and draw(st.booleans()):
            o[f"fields.{name}.nested-sequence-field"] = "s"
    if func == "merge_map_with_keytime" and draw(st.booleans()):
        o[f"fields.{name}.ts-field"] = "ts"
    if func == "nested_update" and draw(st.booleans()):
        o[f"fields.{name}.count-limit"] = str(draw(st.integers(1, 3)))
    return o


@st.composite
def column(draw, name: str, kinds=VALUE_KINDS) -> tuple[str, str, DataType]:
    kind = draw(st.sampled_from(kinds))
    factory, _ = _VALUES[kind]
    not_null = draw(st.integers(0, 9)) == 0
    return name, kind, factory(nullable=not not_null)


@st.composite
def key_columns(draw) -> list[tuple[str, str, DataType]]:
    cols = [("k", "key_int", int_(False))]
    if draw(st.booleans()):
        cols.append(("k2", "key_str", string(False)))
    return cols


_KEY_VALUES = {"key_int": st.integers(0, 2), "key_str": st.sampled_from(["x", "y"])}
_ORDER_VALUES = {  # sequence-group ordering fields: few values (ties), many nulls
    "INT": st.one_of(st.none(), st.integers(0, 3)),
    "BIGINT": st.one_of(st.none(), st.integers(0, 3)),
    "VARCHAR": st.one_of(st.none(), st.sampled_from(["", "a", "b", "ab"])),
    "DOUBLE": st.one_of(st.none(), st.sampled_from([0.0, -0.0, 1.5, -1.0, float("nan")])),
}


@st.composite
def history(draw, cols: list[tuple[str, str, DataType]], retract_weight: int,
            null_weight: int = 3, ordering: frozenset = frozenset(), max_size: int = 24
            ) -> list[dict]:
    """Records of a few keys: unique (key, _SEQUENCE_NUMBER, is-add); retracts may share the
    sequence number of an add; NOT NULL value columns get a null now and then."""
    n = draw(st.integers(1, max_size))
    kinds = [INSERT] * 6 + [UPDATE_AFTER] * 2 + [UPDATE_BEFORE] * retract_weight + \
        [DELETE] * retract_weight
    out, seen = [], set()
    for _ in range(n):
        r: dict[str, Any] = {VALUE_KIND: draw(st.sampled_from(kinds)),
                             SEQUENCE_NUMBER: draw(st.integers(0, 3 * max_size))}
        for name, kind, dt in cols:
            if kind in _KEY_VALUES:
                r[name] = draw(_KEY_VALUES[kind])
            elif name in ordering:
                r[name] = draw(_ORDER_VALUES[dt.root])
            else:
                if dt.nullable:
                    is_null = draw(st.integers(0, 9 + null_weight)) < null_weight
                else:
                    is_null = draw(st.integers(0, 24)) == 0
                if is_null:
                    r[name] = None
                else:
                    r[name] = draw(_VALUES[kind][1])
        ident = (tuple(r[c[0]] for c in cols if c[1] in _KEY_VALUES), r[SEQUENCE_NUMBER],
                 r[VALUE_KIND] in (INSERT, UPDATE_AFTER))
        if ident not in seen:
            seen.add(ident)
            out.append(r)
    return out


IGNORE_DELETE_KEYS = ["ignore-delete", "deduplicate.ignore-delete", "first-row.ignore-delete",
                      "partial-update.ignore-delete"]


@st.composite
def sequence_field_option(draw, cols: list, allowed: bool = True) -> dict[str, str]:
    """sequence.field over 1-2 dedicated columns (INT/BIGINT/STRING), either order."""
    if not allowed or not draw(st.booleans()):
        return {}
    n = draw(st.integers(1, 2))
    names = []
    for i in range(n):
        kind = draw(st.sampled_from(["int", "bigint", "string", "double"]))
        name = f"ts{i}"
        factory = {"int": int_, "bigint": bigint, "string": string, "double": double}[kind]
        cols.append((name, "seq_" + kind, factory()))
        names.append(name)
    opts = {"sequence.field": ",".join(names)}
    if draw(st.booleans()):
        opts["sequence.field.sort-order"] = draw(st.sampled_from(["ascending", "descending",
                                                                  "DESCENDING"]))
    return opts


# values of sequence.field columns: few distinct values (ties), nulls come from history()
_VALUES.update({"seq_int": (int_, st.integers(0, 3)), "seq_bigint": (bigint, st.integers(0, 3)),
                "seq_string": (string, st.sampled_from(["", "a", "b", "ab"])),
                "seq_double": (double, st.sampled_from([0.0, -0.0, 1.5, -1.0, float("nan")]))})


def _schema_of(cols, options) -> TableSchema:
    pks = [c[0] for c in cols if c[1] in _KEY_VALUES]
    return make_schema([(n, t) for n, _, t in cols], pks, options)


# -- deduplicate / first-row ------------------------------------------------------------------

@st.composite
def deduplicate_case(draw):
    cols = draw(key_columns())
    cols += [draw(column(f"c{i}")) for i in range(draw(st.integers(1, 3)))]
    options = {"merge-engine": draw(st.sampled_from(["deduplicate", "DEDUPLICATE"]))}
    if draw(st.booleans()):
        options[draw(st.sampled_from(IGNORE_DELETE_KEYS))] = draw(st.sampled_from(["true",
                                                                                   "false"]))
    options.update(draw(sequence_field_option(cols)))
    records = draw(history(cols, retract_weight=draw(st.sampled_from([0, 2, 4])),
                           null_weight=3))
    return _schema_of(cols, options), records


@st.composite
def first_row_case(draw):
    cols = draw(key_columns())
    cols += [draw(column(f"c{i}")) for i in range(draw(st.integers(1, 3)))]
    options = {"merge-engine": "first-row"}
    ignore = draw(st.booleans())
    if ignore:
        options[draw(st.sampled_from(IGNORE_DELETE_KEYS))] = "true"
    records = draw(history(cols, retract_weight=draw(st.sampled_from([0, 1, 3] if ignore
                                                                     else [0, 0, 1]))))
    return _schema_of(cols, options), records


# -- partial-update ----------------------------------------------------------------------------

@st.composite
def partial_update_plain_case(draw):
    cols = draw(key_columns())
    cols += [draw(column(f"c{i}")) for i in range(draw(st.integers(1, 4)))]
    options = {"merge-engine": "partial-update"}
    mode = draw(st.sampled_from(["none", "ignore-delete", "remove-record-on-delete"]))
    if mode == "ignore-delete":
        options[draw(st.sampled_from(IGNORE_DELETE_KEYS))] = "true"
    elif mode == "remove-record-on-delete":
        options["partial-update.remove-record-on-delete"] = "true"
    if draw(st.booleans()):  # last_non_null_value is allowed outside sequence groups
        name = draw(st.sampled_from([c[0] for c in cols if c[1] not in _KEY_VALUES]))
        options[f"fields.{name}.aggregate-function"] = "last_non_null_value"
    options.update(draw(sequence_field_option(cols)))
    weight = draw(st.sampled_from([0, 0, 1] if mode == "none" else [0, 2, 4]))
    records = draw(history(cols, retract_weight=weight))
    return _schema_of(cols, options), records


@st.composite
def partial_update_groups_case(draw):
    cols = draw(key_columns())
    options: dict[str, str] = {"merge-engine": "partial-update"}
    n_groups = draw(st.integers(1, 3))
    ordering: list[str] = []
    protected: list[str] = []
    free: list[str] = []
    with_aggs = draw(st.booleans())
    focus = draw(st.one_of(st.none(), st.sampled_from(sorted(FUNCTION_KINDS)))) if with_aggs \
        else None
    for g in range(n_groups):
        o_names = [f"g{g}o{j}" for j in range(draw(st.integers(1, 2)))]
        for o in o_names:
            cols.append((o, "ordering", draw(st.sampled_from([int_(), bigint(), int_(),
                                                              string(), double()]))))
        p_names = []
        for j in range(draw(st.integers(1, 3))):
            name = f"g{g}p{j}"
            if with_aggs and draw(st.integers(0, 2)) > 0:
                col, opts = draw(aggregated_column(name, focus, True, True))
                options.update(opts)
            else:
                col = draw(column(name))
            cols.append(col)
            p_names.append(name)
        options[f"fields.{','.join(o_names)}.sequence-group"] = ",".join(p_names)
        ordering += o_names
        protected += p_names
    for j in range(draw(st.integers(0, 2))):
        name, kind, dt = draw(column(f"free{j}"))
        cols.append((name, kind, dt))
        free.append(name)
        if draw(st.booleans()):
            options[f"fields.{name}.aggregate-function"] = "last_non_null_value"
    default = draw(st.sampled_from([None, None, *_ANY_FUNCS]))
    use_seq = True
    if default is not None:
        options["fields.default-aggregate-function"] = default
        if default != "last_non_null_value":
            for name in free:  # a non-lnnv default needs every column in a group
                options[f"fields.{name}.aggregate-function"] = "last_non_null_value"
            use_seq = False  # sequence.field columns cannot take an explicit function
    delete_mode = draw(st.sampled_from(["none", "ignore-delete", "remove-on-group"]))
    if delete_mode == "ignore-delete":
        options[draw(st.sampled_from(IGNORE_DELETE_KEYS))] = "true"
    elif delete_mode == "remove-on-group":
        chosen = draw(st.lists(st.sampled_from(ordering), min_size=1, max_size=2, unique=True))
        options["partial-update.remove-record-on-sequence-group"] = ",".join(chosen)
    options.update(draw(sequence_field_option(cols, allowed=use_seq)))
    records = draw(history(cols, retract_weight=draw(st.sampled_from([0, 1, 3])),
                           ordering=frozenset(ordering)))
    return _schema_of(cols, options), records


# -- aggregation -------------------------------------------------------------------------------

@st.composite
def aggregated_column(draw, name: str, focus: str | None, retracts: bool,
                      allow_ignore_retract: bool) -> tuple[tuple[str, str, DataType], dict]:
    """A column with a function Java accepts for its type, plus that function's options."""
    if focus is None:
        col = draw(column(name))
        func = draw(st.sampled_from(funcs_for(col[1])))
    else:
        col = draw(column(name, kinds=FUNCTION_KINDS[focus]))
        func = focus
    options = {f"fields.{name}.aggregate-function": func}
    options.update(draw(func_options(name, col[1], func)))
    if allow_ignore_retract:
        # without ignore-retract a retract into max/min/... throws, which ends the comparison
        odds = 3 if (retracts and func not in RETRACT_OK) else 1
        if draw(st.integers(0, 4)) < odds:
            options[f"fields.{name}.ignore-retract"] = "true"
    return col, options


@st.composite
def aggregation_case(draw):
    cols = draw(key_columns())
    options: dict[str, str] = {"merge-engine": "aggregation"}
    retract_weight = draw(st.sampled_from([0, 1, 3]))
    remove_on_delete = draw(st.integers(0, 3)) == 0
    if remove_on_delete:
        options["aggregation.remove-record-on-delete"] = "true"
    focus = draw(st.one_of(st.none(), st.sampled_from(sorted(FUNCTION_KINDS))))
    plain: list[str] = []
    for i in range(draw(st.integers(1, 5))):
        if focus is None and draw(st.integers(0, 4)) == 0:
            col = draw(column(f"c{i}"))  # no function: the default or last_non_null_value
            cols.append(col)
            plain.append(col[0])
            continue
        col, opts = draw(aggregated_column(f"c{i}", focus, retract_weight > 0,
                                           not remove_on_delete))
        cols.append(col)
        options.update(opts)
    if plain and draw(st.booleans()):
        options["fields.default-aggregate-function"] = draw(st.sampled_from(_ANY_FUNCS))
    options.update(draw(sequence_field_option(cols)))
    records = draw(history(cols, retract_weight=retract_weight))
    return _schema_of(cols, options), records


# =============================================================================================
# 3. the property tests
# =============================================================================================

@PROPERTY
@given(case=deduplicate_case())
def test_deduplicate_matches_model(case):
    compare_with_model(*case)


@PROPERTY
@given(case=first_row_case())
def test_first_row_matches_model(case):
    compare_with_model(*case)


@PROPERTY
@given(case=partial_update_plain_case())
def test_partial_update_plain_matches_model(case):
    compare_with_model(*case)


@PROPERTY
@given(case=partial_update_groups_case())
def test_partial_update_sequence_groups_match_model(case):
    compare_with_model(*case)


@PROPERTY
@given(case=aggregation_case())
def test_aggregation_matches_model(case):
    compare_with_model(*case)


# =============================================================================================
# 4. option sets Java refuses
# =============================================================================================

_BASE = [("k", int_()), ("a", string()), ("b", int_()), ("c", bigint()), ("s", bigint()),
         ("t", bigint())]

INVALID = [
    ("column in two sequence groups", {"merge-engine": "partial-update",
                                       "fields.s.sequence-group": "a,b",
                                       "fields.t.sequence-group": "b"}, InvalidOptionError),
    ("primary key protected by a group", {"merge-engine": "partial-update",
                                          "fields.s.sequence-group": "k,a"}, InvalidOptionError),
    ("primary key as a group's ordering field", {"merge-engine": "partial-update",
                                                 "fields.k.sequence-group": "a"},
     InvalidOptionError),
    ("sequence.field with first-row", {"merge-engine": "first-row", "sequence.field": "s"},
     InvalidOptionError),
    ("ignore-delete with remove-record-on-delete", {
        "merge-engine": "partial-update", "ignore-delete": "true",
        "partial-update.remove-record-on-delete": "true"}, InvalidOptionError),
    ("fallback ignore-delete key with remove-record-on-delete", {
        "merge-engine": "partial-update", "partial-update.ignore-delete": "true",
        "partial-update.remove-record-on-delete": "true"}, InvalidOptionError),
    ("ignore-delete with remove-record-on-sequence-group", {
        "merge-engine": "partial-update", "ignore-delete": "true",
        "fields.s.sequence-group": "a", "partial-update.remove-record-on-sequence-group": "s"},
     InvalidOptionError),
    ("remove-record-on-delete with sequence groups", {
        "merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true",
        "fields.s.sequence-group": "a"}, InvalidOptionError),
    ("remove-record-on-sequence-group naming a protected field", {
        "merge-engine": "partial-update", "fields.s.sequence-group": "a",
        "partial-update.remove-record-on-sequence-group": "a"}, InvalidOptionError),
    ("aggregate function outside any sequence group", {
        "merge-engine": "partial-update", "fields.s.sequence-group": "a",
        "fields.b.aggregate-function": "sum"}, InvalidOptionError),
    ("default aggregate function with an ungrouped column", {
        "merge-engine": "partial-update", "fields.s.sequence-group": "a,b",
        "fields.default-aggregate-function": "first_value"}, InvalidOptionError),
    ("sequence group naming an unknown column", {"merge-engine": "partial-update",
                                                 "fields.s.sequence-group": "zzz"},
     InvalidOptionError),
    ("sum on a STRING", {"merge-engine": "aggregation", "fields.a.aggregate-function": "sum"},
     InvalidOptionError),
    ("bool_and on an INT", {"merge-engine": "aggregation",
                            "fields.b.aggregate-function": "bool_and"}, InvalidOptionError),
    ("collect on a BIGINT", {"merge-engine": "aggregation",
                             "fields.c.aggregate-function": "collect"}, InvalidOptionError),
    ("aggregation on a sequence field", {"merge-engine": "aggregation", "sequence.field": "s",
                                         "fields.s.aggregate-function": "sum"},
     InvalidOptionError),
    ("remove-record-on-delete with ignore-retract", {
        "merge-engine": "aggregation", "aggregation.remove-record-on-delete": "true",
        "fields.b.aggregate-function": "sum", "fields.b.ignore-retract": "true"},
     InvalidOptionError),
    ("nested_partial_update without nested-key", {
        "merge-engine": "aggregation", "fields.b.aggregate-function": "nested_partial_update"},
     InvalidOptionError),
    ("sketch function", {"merge-engine": "aggregation",
                         "fields.a.aggregate-function": "hll_sketch"}, UnsupportedError),
]


@pytest.mark.parametrize("what,options,error", INVALID, ids=[x[0] for x in INVALID])
def test_java_refuses_the_option_set(what, options, error):
    schema = make_schema(_BASE, ["k"], options)
    with pytest.raises(M.ModelConfigError):  # the model agrees with Java
        M.engine_setup(schema)
    with pytest.raises(error):
        merge_engine(schema)


def test_listagg_refuses_bounded_varchar():
    schema = make_schema([("k", int_()), ("v", varchar(10))], ["k"],
                         {"merge-engine": "aggregation", "fields.v.aggregate-function": "listagg"})
    with pytest.raises(M.ModelConfigError):
        M.engine_setup(schema)
    with pytest.raises(InvalidOptionError):
        merge_engine(schema)


def test_unknown_aggregate_function_is_refused():
    schema = make_schema(_BASE, ["k"], {"merge-engine": "aggregation",
                                        "fields.b.aggregate-function": "median"})
    with pytest.raises(LakeformatError, match="median"):
        merge_engine(schema)


# =============================================================================================
# 5. targeted cases (each is a Java fact the random search may reach only rarely)
# =============================================================================================

def test_aggregation_lone_record_is_returned_unchanged_like_java():
    """Java master wraps EVERY merge function, aggregation included, in
    ReducerMergeFunctionWrapper (MergeFileSplitRead, MergeTreeCompactRewriter,
    SortBufferWriteBuffer): a key's only record is returned as is, kind included, and the
    aggregators never see it. So a lone -U stays -U (readers drop it) instead of becoming
    `sum = -v`, and a lone `collect` with distinct keeps its duplicates."""
    arr = DataType("ARRAY", element=int_())
    schema = make_schema([("k", int_()), ("v", int_()), ("xs", arr)], ["k"], {
        "merge-engine": "aggregation", "fields.v.aggregate-function": "sum",
        "fields.xs.aggregate-function": "collect", "fields.xs.distinct": "true"})
    records = [rec(UPDATE_BEFORE, 0, k=1, v=5, xs=None), rec(INSERT, 1, k=2, v=3, xs=[1, 1, 2])]
    compare_with_model(schema, records, aggregation_merges_lone_records=False)


@pytest.mark.parametrize("order", ["ascending", "descending"])
def test_sequence_field_negative_zero_orders_below_zero(order):
    """Double.compare puts -0.0 below 0.0 (the codegen comparator uses it), so with
    sequence.field on a DOUBLE these two records are NOT a tie broken by _SEQUENCE_NUMBER."""
    schema = make_schema([("k", int_()), ("t", double()), ("v", string())], ["k"],
                         {"sequence.field": "t", "sequence.field.sort-order": order})
    compare_with_model(schema, [rec(INSERT, 0, k=1, t=0.0, v="plus"),
                                rec(INSERT, 1, k=1, t=-0.0, v="minus")])


def test_partial_update_group_with_all_null_ordering_is_skipped_only_when_merging():
    schema = make_schema([("k", int_()), ("a", string()), ("g", bigint()), ("b", int_())], ["k"],
                         {"merge-engine": "partial-update", "fields.g.sequence-group": "a"})
    compare_with_model(schema, [rec(INSERT, 0, k=1, a="lone", g=None, b=1),
                                rec(INSERT, 0, k=2, a="x", g=None, b=1),
                                rec(INSERT, 1, k=2, a="y", g=None, b=None)])


def test_partial_update_older_group_update_uses_agg_reversed():
    schema = make_schema([("k", int_()), ("a", int_()), ("f", int_()), ("g", int_())], ["k"], {
        "merge-engine": "partial-update", "fields.g.sequence-group": "a,f",
        "fields.a.aggregate-function": "sum", "fields.f.aggregate-function": "first_value"})
    compare_with_model(schema, [rec(INSERT, 0, k=1, a=1, f=10, g=5),
                                rec(INSERT, 1, k=1, a=2, f=20, g=3),
                                rec(INSERT, 2, k=1, a=4, f=40, g=3)])


def test_partial_update_first_retract_initialises_row_even_when_ignored():
    schema = make_schema([("k", int_()), ("a", int_()), ("b", int_())], ["k"],
                         {"merge-engine": "partial-update", "ignore-delete": "true"})
    compare_with_model(schema, [rec(DELETE, 0, k=1, a=7, b=8), rec(INSERT, 1, k=1, a=None, b=1),
                                rec(UPDATE_BEFORE, 2, k=1, a=1, b=1)])


def test_partial_update_null_into_not_null_column_throws():
    schema = make_schema([("k", int_()), ("a", int_(False)), ("b", int_())], ["k"],
                         {"merge-engine": "partial-update"})
    compare_with_model(schema, [rec(INSERT, 0, k=1, a=1, b=1), rec(INSERT, 1, k=1, a=None, b=2)])


def test_aggregation_retract_without_support_throws_unless_ignored():
    schema = make_schema([("k", int_()), ("m", int_())], ["k"],
                         {"merge-engine": "aggregation", "fields.m.aggregate-function": "max"})
    records = [rec(INSERT, 0, k=1, m=3), rec(UPDATE_BEFORE, 1, k=1, m=3)]
    compare_with_model(schema, records)
    ignoring = make_schema([("k", int_()), ("m", int_())], ["k"], {
        "merge-engine": "aggregation", "fields.m.aggregate-function": "max",
        "fields.m.ignore-retract": "true"})
    compare_with_model(ignoring, records)


def test_aggregation_sequence_field_is_last_value_and_retract_nulls_it():
    schema = make_schema([("k", int_()), ("ts", bigint()), ("v", int_())], ["k"], {
        "merge-engine": "aggregation", "sequence.field": "ts",
        "fields.default-aggregate-function": "sum"})
    compare_with_model(schema, [rec(INSERT, 0, k=1, ts=5, v=1), rec(INSERT, 1, k=1, ts=9, v=2),
                                rec(UPDATE_BEFORE, 2, k=1, ts=10, v=1)])


def test_aggregation_remove_record_on_delete_keeps_first_value_state():
    schema = make_schema([("k", int_()), ("f", int_()), ("s", int_())], ["k"], {
        "merge-engine": "aggregation", "aggregation.remove-record-on-delete": "true",
        "fields.f.aggregate-function": "first_value", "fields.s.aggregate-function": "sum"})
    compare_with_model(schema, [rec(INSERT, 0, k=1, f=1, s=1), rec(DELETE, 1, k=1, f=7, s=7),
                                rec(INSERT, 2, k=1, f=9, s=2)])


def test_ignore_retract_collect_in_older_group_swaps_arguments():
    """FieldIgnoreRetractAgg does not forward aggReversed, so for an older record the inner
    collect runs agg(input, acc) (input first) instead of collect's own agg(acc, input)."""
    arr = DataType("ARRAY", element=int_())
    schema = make_schema([("k", int_()), ("xs", arr), ("ys", arr), ("g", int_())], ["k"], {
        "merge-engine": "partial-update", "fields.g.sequence-group": "xs,ys",
        "fields.xs.aggregate-function": "collect", "fields.ys.aggregate-function": "collect",
        "fields.ys.ignore-retract": "true"})
    compare_with_model(schema, [rec(INSERT, 0, k=1, xs=[1], ys=[1], g=5),
                                rec(INSERT, 1, k=1, xs=[2], ys=[2], g=3)])


def test_product_retract_truncates_toward_zero():
    schema = make_schema([("k", int_()), ("p", int_())], ["k"], {
        "merge-engine": "aggregation", "fields.p.aggregate-function": "product"})
    compare_with_model(schema, [rec(INSERT, 0, k=1, p=7), rec(UPDATE_BEFORE, 1, k=1, p=-2),
                                rec(INSERT, 0, k=2, p=-7), rec(DELETE, 1, k=2, p=2)])


def test_collect_retract_removes_one_occurrence_per_element():
    arr = DataType("ARRAY", element=int_())
    schema = make_schema([("k", int_()), ("xs", arr)], ["k"], {
        "merge-engine": "aggregation", "fields.xs.aggregate-function": "collect"})
    compare_with_model(schema, [rec(INSERT, 0, k=1, xs=[1, 2, 2, None]),
                                rec(INSERT, 1, k=1, xs=[2, None]),
                                rec(UPDATE_BEFORE, 2, k=1, xs=[2, 2, None, 5])])


def test_listagg_distinct_never_dedups_the_accumulator():
    schema = make_schema([("k", int_()), ("s", string())], ["k"], {
        "merge-engine": "aggregation", "fields.s.aggregate-function": "listagg",
        "fields.s.distinct": "true"})
    compare_with_model(schema, [rec(INSERT, 0, k=1, s="a,a"), rec(INSERT, 1, k=1, s="b,a,b"),
                                rec(INSERT, 2, k=1, s=" ,c")])


def test_nested_update_count_limit_and_sequence():
    row_t = DataType("ROW", fields=(DataField(-1, "k", int_()), DataField(-1, "s", int_()),
                                    DataField(-1, "v", string())))
    arr = DataType("ARRAY", element=row_t)
    rows = [rec(INSERT, 0, k=1, a=[{"k": 1, "s": 1, "v": "a"}, None, {"k": 2, "s": 1, "v": "b"}],
                n=[{"k": 1, "s": 2, "v": "a"}, {"k": 2, "s": 0, "v": "b"}]),
            rec(INSERT, 1, k=1, a=[{"k": 3, "s": 1, "v": "c"}],
                n=[{"k": 1, "s": 1, "v": "old"}, {"k": 3, "s": 5, "v": "new"},
                   {"k": 2, "s": 0, "v": "tie"}])]
    schema = make_schema([("k", int_()), ("a", arr), ("n", arr)], ["k"], {
        "merge-engine": "aggregation", "fields.a.aggregate-function": "nested_update",
        "fields.a.count-limit": "2", "fields.n.aggregate-function": "nested_update",
        "fields.n.nested-key": "k", "fields.n.nested-sequence-field": "s",
        "fields.n.count-limit": "2"})
    compare_with_model(schema, rows)


def test_decimal_product_rounds_half_up_and_overflows_to_null():
    schema = make_schema([("k", int_()), ("d", decimal(10, 2)), ("w", decimal(20, 2))], ["k"], {
        "merge-engine": "aggregation", "fields.d.aggregate-function": "product",
        "fields.w.aggregate-function": "sum"})
    compare_with_model(schema, [
        rec(INSERT, 0, k=1, d=Decimal("-0.05"), w=Decimal("999999999999999999.99")),
        rec(INSERT, 1, k=1, d=Decimal("0.50"), w=Decimal("0.01")),
        rec(INSERT, 0, k=2, d=Decimal("99999.99"), w=None),
        rec(INSERT, 1, k=2, d=Decimal("99999.99"), w=None)])


def test_merge_map_with_keytime_rules():
    row_t = DataType("ROW", fields=(DataField(-1, "v", int_()), DataField(-1, "ts", string())))
    mt = DataType("MAP", key=string(False), value=row_t)
    schema = make_schema([("k", int_()), ("m", mt)], ["k"], {
        "merge-engine": "aggregation", "fields.m.aggregate-function": "merge_map_with_keytime"})
    first = [("a", {"v": 1, "ts": "2024-02"}), ("b", {"v": 2, "ts": None}),
             ("c", {"v": 3, "ts": "2024-01"}), ("d", {"v": 4, "ts": "2024-01"})]
    second = [("a", {"v": 9, "ts": "2024-01"}),  # older: kept a=1
              ("b", {"v": 8, "ts": "2024-01"}),  # the accumulator's time is null: replaced
              ("c", None),  # a null row deletes the key
              ("d", {"v": 7, "ts": "2024-01"}),  # tie keeps the accumulator's row
              ("e", {"v": 6, "ts": None})]  # null time: ignored
    agg = M.MergeMapWithKeyTimeAgg("merge_map_with_keytime", mt, "ts")
    assert dict(agg.agg(first, second)) == {"a": {"v": 1, "ts": "2024-02"},
                                            "b": {"v": 8, "ts": "2024-01"},
                                            "d": {"v": 4, "ts": "2024-01"}}
    compare_with_model(schema, [rec(INSERT, 0, k=1, m=first), rec(INSERT, 1, k=1, m=second)])
