"""`stable_int_order` is numpy's stable argsort, whatever the values' width, sign and span;
`stable_int_groups` also finds the groups `key_groups` finds in the sorted values, and
`stable_int_sort` the sorted values themselves."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakeformat.merge.sort import (
    key_groups,
    stable_int_groups,
    stable_int_order,
    stable_int_sort,
)

I64 = st.integers(-(1 << 63), (1 << 63) - 1)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(I64, st.integers(-3, 3)), max_size=300),
       st.sampled_from(["int8", "int16", "int32", "int64"]))
def test_same_order_as_a_stable_argsort(values: list[int], dtype: str) -> None:
    info = np.iinfo(dtype)
    arr = np.array([min(max(v, info.min), info.max) for v in values], dtype=dtype)
    got = stable_int_order(arr)
    assert got.dtype == np.int64
    assert got.tolist() == np.argsort(arr, kind="stable").tolist()


@pytest.mark.parametrize("span", [1, 1 << 20, 1 << 44, 1 << 62])
def test_ties_keep_arrival_order_at_any_span(span: int) -> None:
    """Narrow spans take the packed sort, the widest one the argsort: both stable."""
    rng = np.random.default_rng(span % 997)
    base = rng.integers(-span // 2, span // 2, 5_000, dtype=np.int64)
    values = np.concatenate([base, base[::-1], base[:100]])  # every value at least twice
    got = stable_int_order(values)
    assert got.tolist() == np.argsort(values, kind="stable").tolist()
    ordered = values[got]
    assert (ordered[1:] >= ordered[:-1]).all()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(I64, st.integers(-3, 3)), max_size=300),
       st.sampled_from(["int8", "int32", "int64"]))
def test_groups_are_the_key_groups_of_the_order(values: list[int], dtype: str) -> None:
    info = np.iinfo(dtype)
    arr = np.array([min(max(v, info.min), info.max) for v in values], dtype=dtype)
    order, groups = stable_int_groups(arr)
    assert order.tolist() == np.argsort(arr, kind="stable").tolist()
    expected = key_groups(pa.table({"k": arr[order]}), ["k"])
    assert groups.starts.dtype == groups.ends.dtype == np.int64
    assert groups.starts.tolist() == expected.starts.tolist()
    assert groups.ends.tolist() == expected.ends.tolist()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(I64, st.integers(-3, 3), st.integers(1 << 40, (1 << 40) + 9)),
                max_size=300),
       st.sampled_from(["int8", "int16", "int32", "int64"]))
def test_sorted_values_are_the_values_in_that_order(values: list[int], dtype: str) -> None:
    info = np.iinfo(dtype)
    arr = np.array([min(max(v, info.min), info.max) for v in values], dtype=dtype)
    order, ordered, groups = stable_int_sort(arr)
    assert order.tolist() == np.argsort(arr, kind="stable").tolist()
    assert ordered.dtype == arr.dtype
    assert ordered.tolist() == arr[order].tolist()
    assert groups.starts.tolist() == stable_int_groups(arr)[1].starts.tolist()
