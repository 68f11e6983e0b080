"""merge-engine=first-row: the first add record of a key wins."""

from __future__ import annotations

import pytest

from lakeformat.errors import LakeformatError
from lakeformat.merge import merge_engine
from lakeformat.merge.sort import sort_for_merge

from .kv_records import (
    kv,
    schema,
)


def test_first_row_keeps_first_add_and_refuses_retracts():
    merge = merge_engine(schema(**{"merge-engine": "first-row"})).merge_sorted
    out = merge(sort_for_merge(kv([(1, 5, 0, "late", 1), (1, 2, 0, "early", 2)]), ["k"]))
    assert out.to_pylist()[0]["a"] == "early"
    with pytest.raises(LakeformatError, match="ignore-delete"):
        merge(sort_for_merge(kv([(1, 0, 0, "x", 1), (1, 1, 3, "x", 1)]), ["k"]))
    ignoring = merge_engine(schema(**{"merge-engine": "first-row",
                                      "ignore-delete": "true"})).merge_sorted
    out = ignoring(sort_for_merge(kv([(1, 0, 3, "x", 1), (1, 1, 0, "y", 1)]), ["k"]))
    assert out.to_pylist()[0]["a"] == "y"
