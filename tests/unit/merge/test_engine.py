"""What every engine shares: option checks by `merge_engine`, one answer from its three merge
entry points, the write-time retract check, and deduplicate and partial-update against a
one-record-at-a-time model."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakeformat.errors import (
    InvalidOptionError,
    LakeformatError,
    SchemaMismatchError,
    UnsupportedError,
)
from lakeformat.merge import ENGINES, merge_engine
from lakeformat.merge.sort import key_groups, merge_permutation, sort_for_merge

from .kv_records import kv, schema


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
    merge = merge_engine(schema(**{"merge-engine": engine})).merge_sorted
    try:
        want = model(records, engine)
    except LakeformatError:
        with pytest.raises(LakeformatError, match="retract"):
            merge(sort_for_merge(kv(records), ["k"]))
        return
    got = merge(sort_for_merge(kv(records), ["k"])).to_pylist()
    assert {r["k"]: (r["_VALUE_KIND"], r["a"], r["b"], r["_SEQUENCE_NUMBER"]) for r in got} == want
    assert len(got) == len(want)


@pytest.mark.parametrize("options,error,match", [
    ({"merge-engine": "no-such-engine"}, UnsupportedError, "merge-engine"),
    ({"data-evolution.enabled": "true"}, UnsupportedError, "data-evolution.enabled"),
    ({"sequence.field": "zzz"}, InvalidOptionError, "zzz"),
    ({"sequence.field": "b", "merge-engine": "first-row"}, InvalidOptionError, "first-row"),
    ({"sequence.field": "b,b"}, InvalidOptionError, "twice"),
    ({"sequence.field.sort-order": "sideways"}, InvalidOptionError, "sort-order"),
    ({"ignore-delete": "maybe"}, InvalidOptionError, "ignore-delete"),
])
def test_invalid_merge_options_are_named(options, error, match):
    with pytest.raises(error, match=match):
        merge_engine(schema(**options))


ENGINE_OPTIONS = {
    "deduplicate": {},
    "first-row": {"ignore-delete": "true"},
    "partial-update": {"ignore-delete": "true"},
    "aggregation": {"fields.b.aggregate-function": "sum",
                    "fields.a.aggregate-function": "max", "fields.a.ignore-retract": "true"},
}


@pytest.mark.parametrize("engine", sorted(ENGINE_OPTIONS))
def test_merge_engine_is_the_class_the_option_names(engine):
    built = merge_engine(schema(**{"merge-engine": engine}, **ENGINE_OPTIONS[engine]))
    assert type(built) is ENGINES[engine] and built.name == engine


@pytest.mark.parametrize("engine", sorted(ENGINE_OPTIONS))
@settings(max_examples=60, deadline=None)
@given(records=st.lists(record, max_size=40), seed=st.integers(0, 2**32 - 1))
def test_the_three_merge_entry_points_agree(engine, records, seed):
    """`merge` (any order), `merge_sorted` (merge order) and `merge_sorted` with a permutation
    and key groups give the same rows for the same records."""
    records = unique_seq(records)
    e = merge_engine(schema(**{"merge-engine": engine}, **ENGINE_OPTIONS[engine]))
    shuffled = kv(records).take(pa.array(np.random.default_rng(seed).permutation(len(records)),
                                         type=pa.int64()))
    perm = merge_permutation(shuffled, ["k"]).to_numpy()
    groups = key_groups(shuffled.take(pa.array(perm)), ["k"])

    def rows(table):
        return sorted(table.to_pylist(), key=lambda r: r["k"])

    want = rows(e.merge_sorted(e.sort(shuffled)))
    assert rows(e.merge(shuffled)) == want
    assert rows(e.merge_sorted(shuffled, perm, groups)) == want


def test_check_retracts_refuses_only_retracts_the_engine_cannot_merge():
    first_row = merge_engine(schema(**{"merge-engine": "first-row"}))
    adds = kv([(1, 0, 0, "x", 1), (2, 1, 2, "y", 2)])
    first_row.check_retracts(adds, np.array([0, 2], dtype=np.int8), "db.t")
    mixed = kv([(1, 0, 0, "x", 1), (2, 1, 3, "y", 2)])
    with pytest.raises(SchemaMismatchError, match=r"db\.t: refused 1 -D records: first-row"):
        first_row.check_retracts(mixed, np.array([0, 3], dtype=np.int8), "db.t")
    ignoring = merge_engine(schema(**{"merge-engine": "first-row", "ignore-delete": "true"}))
    ignoring.check_retracts(mixed, np.array([0, 3], dtype=np.int8), "db.t")
    merge_engine(schema()).check_retracts(mixed, np.array([0, 3], dtype=np.int8), "db.t")
