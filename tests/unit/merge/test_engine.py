"""What every engine shares: option checks by `merge_engine`, and deduplicate and
partial-update against a one-record-at-a-time model."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakeformat.errors import InvalidOptionError, LakeformatError, UnsupportedError
from lakeformat.merge import merge_engine
from lakeformat.merge.sort import sort_for_merge

from .kv_records import (
    kv,
    schema,
)


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
    ({"deletion-vectors.enabled": "true"}, UnsupportedError, "deletion-vectors.enabled"),
    ({"sequence.field": "zzz"}, InvalidOptionError, "zzz"),
    ({"sequence.field": "b", "merge-engine": "first-row"}, InvalidOptionError, "first-row"),
    ({"sequence.field": "b,b"}, InvalidOptionError, "twice"),
    ({"sequence.field.sort-order": "sideways"}, InvalidOptionError, "sort-order"),
    ({"ignore-delete": "maybe"}, InvalidOptionError, "ignore-delete"),
])
def test_invalid_merge_options_are_named(options, error, match):
    with pytest.raises(error, match=match):
        merge_engine(schema(**options))
