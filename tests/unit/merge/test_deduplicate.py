"""merge-engine=deduplicate: the last record of a key wins."""

from __future__ import annotations

from lakeformat.merge import merge_engine
from lakeformat.merge.sort import sort_for_merge

from .kv_records import (
    kv,
    schema,
)


def test_deduplicate_ignore_delete_keeps_last_add():
    merge = merge_engine(schema(**{"deduplicate.ignore-delete": "true"})).merge_sorted
    out = merge(sort_for_merge(kv([(1, 0, 0, "x", 1), (1, 1, 0, "y", 2), (1, 2, 3, None, None),
                                   (2, 0, 3, None, None), (2, 1, 1, None, None)]), ["k"]))
    rows = {r["k"]: (r["_VALUE_KIND"], r["a"]) for r in out.to_pylist()}
    assert rows[1] == (0, "y") and rows[2][0] == 3  # key 2 has only retracts: gone
