"""merge-engine=aggregation: Java's AggregateMergeFunctionTest and the engine's
rules, against a row-at-a-time model."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakeformat.errors import InvalidOptionError, LakeformatError, UnsupportedError
from lakeformat.merge import aggregate, merge_engine
from lakeformat.schema.table_schema import new_schema
from lakeformat.schema.types import (
    DataField,
    bigint,
    int_,
    string,
    to_arrow,
)

from .aggregation_model import RefSum

INSERT_K, UB_K, UA_K, DELETE_K = 0, 1, 2, 3


def engine_schema(types, options, pk=("k",)):
    fields = [DataField(i, n, t) for i, (n, t) in enumerate(types.items())]
    return new_schema(0, fields, [], list(pk), {"merge-engine": "aggregation", **options}, None)


def run_engine(schema, records):
    """records: (kind, {column: value}); sequence numbers in order of the list."""
    cols = {"_SEQUENCE_NUMBER": pa.array(range(len(records)), pa.int64()),
            "_VALUE_KIND": pa.array([k for k, _ in records], pa.int8())}
    for f in schema.fields:
        cols[f.name] = pa.array([rec.get(f.name) for _, rec in records], to_arrow(f.type))
    engine = merge_engine(schema)
    out = engine.merge_sorted(engine.sort(pa.table(cols)))
    return out.to_pylist()


def _row(**kw):
    return kw


def test_engine_default_aggregate_function():
    schema = engine_schema({"k": int_(), "a": int_(), "b": int_(), "c": int_(), "d": int_()},
                           {"fields.default-aggregate-function": "first_non_null_value",
                            "fields.b.aggregate-function": "sum"})
    rows = [(1, None, 1, 1, 1), (1, 2, None, 2, 2), (1, 3, 3, None, 3), (1, 4, 4, 4, None),
            (1, 5, 5, 5, 5)]
    out = run_engine(schema, [(INSERT_K, dict(zip("kabcd", r))) for r in rows])
    assert [(o["k"], o["a"], o["b"], o["c"], o["d"]) for o in out] == [(1, 2, 13, 1, 1)]
    assert out[0]["_VALUE_KIND"] == INSERT_K and out[0]["_SEQUENCE_NUMBER"] == 4


def test_engine_listagg_delimiters():
    schema = engine_schema({"k": int_(), "a": string(), "b": string(), "c": int_(),
                            "d": string()},
                           {"fields.a.aggregate-function": "listagg",
                            "fields.b.aggregate-function": "listagg",
                            "fields.b.list-agg-delimiter": "-",
                            "fields.d.aggregate-function": "listagg",
                            "fields.d.list-agg-delimiter": "/"})
    rows = [(INSERT_K, {"k": 1, "a": str(i), "b": str(i), "c": i, "d": str(i)})
            for i in range(1, 6)]
    out = run_engine(schema, rows)[0]
    assert (out["a"], out["b"], out["c"], out["d"]) == ("1,2,3,4,5", "1-2-3-4-5", 5, "1/2/3/4/5")


def test_engine_remove_record_on_delete_reinitialises_the_row():
    schema = engine_schema({"k": int_(False), "a": int_(False), "b": int_(), "c": int_()},
                           {"fields.default-aggregate-function": "sum",
                            "aggregation.remove-record-on-delete": "true"})
    out = run_engine(schema, [(INSERT_K, _row(k=1, a=0, b=0, c=5)),
                              (DELETE_K, _row(k=1, a=2, b=2, c=None))])
    assert [(o["a"], o["b"], o["c"], o["_VALUE_KIND"]) for o in out] == [(2, 2, None, DELETE_K)]
    # records after the -D keep aggregating onto the delete record's values
    out = run_engine(schema, [(INSERT_K, _row(k=1, a=5, b=5, c=5)),
                              (DELETE_K, _row(k=1, a=3, b=3, c=3)),
                              (INSERT_K, _row(k=1, a=2, b=2, c=None))])
    assert [(o["a"], o["b"], o["c"], o["_VALUE_KIND"]) for o in out] == [(5, 5, 3, INSERT_K)]
    # a -U still retracts
    out = run_engine(schema, [(INSERT_K, _row(k=1, a=5, b=5, c=5)),
                              (UB_K, _row(k=1, a=1, b=1, c=1))])
    assert [(o["a"], o["_VALUE_KIND"]) for o in out] == [(4, INSERT_K)]
    # Java's initRow: a -D may not carry null in a NOT NULL column
    with pytest.raises(LakeformatError, match="NOT NULL"):
        run_engine(schema, [(INSERT_K, _row(k=1, a=1, b=1, c=1)),
                            (DELETE_K, _row(k=1, a=None, b=1, c=1))])


def test_engine_retracts_and_ignore_retract():
    schema = engine_schema({"k": int_(), "s": bigint(), "m": int_(), "x": string()},
                           {"fields.s.aggregate-function": "sum",
                            "fields.m.aggregate-function": "max",
                            "fields.m.ignore-retract": "true"})
    out = run_engine(schema, [(INSERT_K, _row(k=1, s=10, m=3, x="a")),
                              (UB_K, _row(k=1, s=4, m=9, x="a")),
                              (UA_K, _row(k=1, s=6, m=5, x=None))])
    # last_non_null_value (the default) retracting a non-null value -> null
    assert [(o["s"], o["m"], o["x"]) for o in out] == [(12, 5, None)]
    schema = engine_schema({"k": int_(), "m": int_()}, {"fields.m.aggregate-function": "max"})
    with pytest.raises(LakeformatError, match="'max' does not support retraction"):
        run_engine(schema, [(INSERT_K, _row(k=1, m=1)), (DELETE_K, _row(k=1, m=1))])


def test_engine_returns_a_lone_record_unchanged():
    # Java's ReducerMergeFunctionWrapper: a single record is not merged at all
    schema = engine_schema({"k": int_(), "s": int_(), "m": int_()},
                           {"fields.s.aggregate-function": "sum",
                            "fields.m.aggregate-function": "max"})
    out = run_engine(schema, [(DELETE_K, _row(k=1, s=7, m=1)), (INSERT_K, _row(k=2, s=1, m=1)),
                              (INSERT_K, _row(k=3, s=1, m=1)), (INSERT_K, _row(k=3, s=2, m=5))])
    assert [(o["k"], o["s"], o["m"], o["_VALUE_KIND"]) for o in out] == [
        (1, 7, 1, DELETE_K), (2, 1, 1, INSERT_K), (3, 3, 5, INSERT_K)]


def test_engine_can_aggregate_lone_records(monkeypatch):
    monkeypatch.setattr(aggregate, "AGGREGATE_LONE_RECORDS", True)
    schema = engine_schema({"k": int_(), "s": int_()}, {"fields.s.aggregate-function": "sum"})
    out = run_engine(schema, [(DELETE_K, _row(k=1, s=7)), (INSERT_K, _row(k=2, s=1))])
    assert [(o["k"], o["s"], o["_VALUE_KIND"]) for o in out] == [(1, -7, INSERT_K),
                                                                 (2, 1, INSERT_K)]


def test_engine_sequence_field_uses_last_value():
    schema = engine_schema({"k": int_(), "ts": bigint(), "s": int_()},
                           {"sequence.field": "ts", "fields.s.aggregate-function": "sum"})
    out = run_engine(schema, [(INSERT_K, _row(k=1, ts=5, s=1)), (INSERT_K, _row(k=1, ts=3, s=2)),
                              (INSERT_K, _row(k=1, ts=None, s=4))])
    assert [(o["ts"], o["s"]) for o in out] == [(5, 7)]
    # last_value retracts to null
    out = run_engine(schema, [(INSERT_K, _row(k=1, ts=5, s=1)), (UB_K, _row(k=1, ts=6, s=1))])
    assert [(o["ts"], o["s"]) for o in out] == [(None, 0)]


def test_engine_keeps_a_retracted_null_in_a_not_null_column():
    # Java's merge returns it; writing it fails (Paimon's file writers refuse the null)
    schema = engine_schema({"k": int_(), "v": int_(False)},
                           {"fields.v.aggregate-function": "last_value"})
    out = run_engine(schema, [(INSERT_K, _row(k=1, v=1)), (UB_K, _row(k=1, v=1))])
    assert [(o["v"], o["_VALUE_KIND"]) for o in out] == [(None, INSERT_K)]


@pytest.mark.parametrize("options,error,match", [
    ({"fields.v.aggregate-function": "summ"}, UnsupportedError, "fields.v.aggregate-function"),
    ({"fields.default-aggregate-function": "rbm32"}, UnsupportedError, "rbm32"),
    ({"fields.k.aggregate-function": "nope"}, UnsupportedError, "fields.k.aggregate-function"),
    ({"fields.s.aggregate-function": "sum"}, InvalidOptionError, "fields.s.aggregate-function"),
    ({"fields.v.aggregate-function": "bool_or"}, InvalidOptionError, "bool_or"),
    ({"sequence.field": "v", "fields.v.aggregate-function": "max"}, InvalidOptionError,
     "sequence field"),
    ({"sequence.field": "zz"}, InvalidOptionError, "sequence.field"),
    ({"aggregation.remove-record-on-delete": "true", "fields.v.ignore-retract": "true"},
     InvalidOptionError, "conflicting"),
    ({"fields.zz.aggregate-function": "sum"}, InvalidOptionError, "zz"),
    ({"fields.v.ignore-retract": "yes"}, InvalidOptionError, "fields.v.ignore-retract"),
    ({"fields.s.aggregate-function": "listagg", "fields.s.distinct": "maybe"},
     InvalidOptionError, "fields.s.distinct"),
])
def test_engine_validation(options, error, match):
    schema = engine_schema({"k": int_(), "v": int_(), "s": string()}, options)
    with pytest.raises(error, match=match):
        aggregate.validate(schema)


def test_engine_validation_accepts_primary_key_function_names():
    # a primary-key column keeps its key whatever function is configured, as in Java
    schema = engine_schema({"k": int_(), "v": int_()}, {"fields.k.aggregate-function": "sum",
                                                        "fields.default-aggregate-function":
                                                            "max"})
    aggregate.validate(schema)

ENGINE_RECORD = st.tuples(st.sampled_from([INSERT_K, INSERT_K, UA_K, UB_K, DELETE_K]),
                          st.integers(0, 3), st.one_of(st.none(), st.integers(-9, 9)),
                          st.one_of(st.none(), st.sampled_from(["a", "b"])))


@pytest.mark.parametrize("remove_on_delete", [False, True])
@settings(max_examples=100, deadline=None)
@given(records=st.lists(ENGINE_RECORD, max_size=30))
def test_engine_matches_a_row_at_a_time_model(remove_on_delete, records):
    options = {"fields.s.aggregate-function": "sum", "fields.x.aggregate-function": "last_value"}
    if remove_on_delete:
        options["aggregation.remove-record-on-delete"] = "true"
    schema = engine_schema({"k": int_(), "s": bigint(), "x": string()}, options)
    want = {}
    seq = {}
    count = {}
    for _, k, _, _ in records:
        count[k] = count.get(k, 0) + 1
    for n, (kind, k, s, x) in enumerate(records):
        if count[k] == 1:  # a lone record is returned unchanged
            want[k] = {"s": s, "x": x, "kind": kind}
            seq[k] = n
            continue
        acc = want.get(k, {"s": None, "x": None, "kind": INSERT_K})
        if remove_on_delete and kind == DELETE_K:
            acc = {"s": s, "x": x, "kind": DELETE_K}
        elif kind in (UB_K, DELETE_K):
            acc = {"s": RefSum(bigint(), {}).retract(acc["s"], s), "x": None, "kind": INSERT_K}
        else:
            acc = {"s": RefSum(bigint(), {}).agg(acc["s"], s), "x": x, "kind": INSERT_K}
        want[k] = acc
        seq[k] = n
    got = run_engine(schema, [(kind, _row(k=k, s=s, x=x)) for kind, k, s, x in records])
    assert {o["k"]: {"s": o["s"], "x": o["x"], "kind": o["_VALUE_KIND"]} for o in got} == want
    assert {o["k"]: o["_SEQUENCE_NUMBER"] for o in got} == seq
