"""deduplicate and plain partial-update: vectorized merge equals a row-at-a-time model."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakeformat.errors import InvalidOptionError, LakeformatError, UnsupportedError
from lakeformat.merge import create_merge_function
from lakeformat.merge.sort import sort_for_merge
from lakeformat.schema.table_schema import new_schema
from lakeformat.schema.types import DataField, bigint, int_, string

FIELDS = [DataField(0, "k", int_(False)), DataField(1, "a", string()), DataField(2, "b", bigint())]


def schema(**options):
    return new_schema(0, FIELDS, [], ["k"], {"bucket": "1", **options}, None)


def kv(records):
    """records: (key, seq, kind, a, b)"""
    return pa.table({
        "_SEQUENCE_NUMBER": pa.array([r[1] for r in records], pa.int64()),
        "_VALUE_KIND": pa.array([r[2] for r in records], pa.int8()),
        "k": pa.array([r[0] for r in records], pa.int32()),
        "a": pa.array([r[3] for r in records], pa.string()),
        "b": pa.array([r[4] for r in records], pa.int64())})


def model(records, engine):
    """Paimon's merge functions, one record at a time, with the reducer rule."""
    out = {}
    by_key: dict[int, list] = {}
    for r in sorted(records, key=lambda r: (r[0], r[1], 0 if r[2] in (1, 3) else 1)):
        by_key.setdefault(r[0], []).append(r)
    for k, recs in by_key.items():
        if len(recs) == 1 or engine == "deduplicate":
            last = recs[-1]
            out[k] = (last[2], last[3], last[4], last[1])
            continue
        a = b = None
        for r in recs:
            if r[2] in (1, 3):
                raise LakeformatError("retract")
            a = r[3] if r[3] is not None else a
            b = r[4] if r[4] is not None else b
        out[k] = (0, a, b, recs[-1][1])
    return out


record = st.tuples(st.integers(0, 5), st.integers(0, 30), st.sampled_from([0, 0, 0, 2, 1, 3]),
                   st.one_of(st.none(), st.sampled_from(["x", "y", "z"])),
                   st.one_of(st.none(), st.integers(-5, 5)))


def unique_seq(records):
    seen, out = set(), []
    for r in records:
        if (r[0], r[1]) not in seen:
            seen.add((r[0], r[1]))
            out.append(r)
    return out


@pytest.mark.parametrize("engine", ["deduplicate", "partial-update"])
@settings(max_examples=200, deadline=None)
@given(records=st.lists(record, max_size=40))
def test_vectorized_merge_equals_model(engine, records):
    records = unique_seq(records)
    merge = create_merge_function(schema(**{"merge-engine": engine}))
    try:
        want = model(records, engine)
    except LakeformatError:
        with pytest.raises(LakeformatError, match="retract"):
            merge(sort_for_merge(kv(records), ["k"]))
        return
    got = merge(sort_for_merge(kv(records), ["k"])).to_pylist()
    assert {r["k"]: (r["_VALUE_KIND"], r["a"], r["b"], r["_SEQUENCE_NUMBER"]) for r in got} == want
    assert len(got) == len(want)


def test_partial_update_single_retract_is_emitted_unchanged():
    merge = create_merge_function(schema(**{"merge-engine": "partial-update"}))
    out = merge(sort_for_merge(kv([(1, 0, 3, "x", None)]), ["k"])).to_pylist()
    assert out[0]["_VALUE_KIND"] == 3


@pytest.mark.parametrize("options,error,match", [
    ({"merge-engine": "no-such-engine"}, UnsupportedError, "merge-engine"),
    ({"deletion-vectors.enabled": "true"}, UnsupportedError, "deletion-vectors.enabled"),
    ({"sequence.field": "zzz"}, InvalidOptionError, "zzz"),
    ({"sequence.field": "b", "merge-engine": "first-row"}, InvalidOptionError, "first-row"),
    ({"sequence.field": "b,b"}, InvalidOptionError, "twice"),
    ({"sequence.field.sort-order": "sideways"}, InvalidOptionError, "sort-order"),
    ({"ignore-delete": "maybe"}, InvalidOptionError, "ignore-delete"),
])
def test_invalid_merge_options_are_named(options, error, match):
    with pytest.raises(error, match=match):
        create_merge_function(schema(**options))


def test_deduplicate_ignore_delete_keeps_last_add():
    merge = create_merge_function(schema(**{"deduplicate.ignore-delete": "true"}))
    out = merge(sort_for_merge(kv([(1, 0, 0, "x", 1), (1, 1, 0, "y", 2), (1, 2, 3, None, None),
                                   (2, 0, 3, None, None), (2, 1, 1, None, None)]), ["k"]))
    rows = {r["k"]: (r["_VALUE_KIND"], r["a"]) for r in out.to_pylist()}
    assert rows[1] == (0, "y") and rows[2][0] == 3  # key 2 has only retracts: gone


def test_first_row_keeps_first_add_and_refuses_retracts():
    merge = create_merge_function(schema(**{"merge-engine": "first-row"}))
    out = merge(sort_for_merge(kv([(1, 5, 0, "late", 1), (1, 2, 0, "early", 2)]), ["k"]))
    assert out.to_pylist()[0]["a"] == "early"
    with pytest.raises(LakeformatError, match="ignore-delete"):
        merge(sort_for_merge(kv([(1, 0, 0, "x", 1), (1, 1, 3, "x", 1)]), ["k"]))
    ignoring = create_merge_function(schema(**{"merge-engine": "first-row",
                                               "ignore-delete": "true"}))
    out = ignoring(sort_for_merge(kv([(1, 0, 3, "x", 1), (1, 1, 0, "y", 1)]), ["k"]))
    assert out.to_pylist()[0]["a"] == "y"
