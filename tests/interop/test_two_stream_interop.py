"""pypaimon 2.1.0 reads the two-stream partial-update table lakeformat wrote, each stream
writing only its own columns, before and after compaction.

pypaimon 2.1.0 refuses to read any partial-update table with `fields.*.sequence-group`
(NotImplementedError from its merge-engine support check, compacted or not), so for the
sequence-group table it is asserted to refuse (never to return other rows) before and after
compaction. The plain partial-update form of the scenario (no groups: null = no change), which
pypaimon supports, is asserted to read the same rows in both libraries, before and after.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from tests.support.pypaimon_helpers import paimon_read
from tests.support.two_streams import COLUMNS, STEPS, TWO_STREAMS


def rows_by_id(table: pa.Table) -> dict[int, tuple]:
    return {r["id"]: tuple(r[c] for c in COLUMNS[1:]) for r in table.to_pylist()}


def test_pypaimon_reads_two_stream_table_with_sequence_groups(lake: Any, paimon: Any) -> None:
    t = lake.create_table("db.two", TWO_STREAMS, primary_keys=["id"], options={
        "bucket": "1", "merge-engine": "partial-update",
        "fields.a_ts.sequence-group": "a,b", "fields.c_ts.sequence-group": "c,d"})
    for stream, rows, _ in STEPS:
        t.write(stream(rows))
    expected = STEPS[-1][2]
    assert rows_by_id(t.read()) == expected
    with pytest.raises(NotImplementedError, match="sequence-group"):
        paimon_read(paimon.get_table("db.two"))
    assert t.compact(full=True).snapshot_ids
    assert rows_by_id(t.read()) == expected
    with pytest.raises(NotImplementedError, match="sequence-group"):
        paimon_read(paimon.get_table("db.two"))


def test_pypaimon_reads_plain_two_stream_table(lake: Any, paimon: Any) -> None:
    t = lake.create_table("db.plain", TWO_STREAMS, primary_keys=["id"], options={
        "bucket": "1", "merge-engine": "partial-update"})
    for stream, rows, _ in STEPS[:2]:
        t.write(stream(rows))
    # no groups: a later non-null value always wins, so the ordering columns do not matter
    t.write(STEPS[2][0]([(1, "a1b", None, 3)]))
    expected = {1: ("a1b", 1, 3, "c1", 1, 5), 2: ("a2", 2, 10, None, None, None),
                3: (None, None, None, "c3", 3, 5)}
    assert rows_by_id(t.read()) == expected
    assert rows_by_id(paimon_read(paimon.get_table("db.plain"))) == expected
    assert t.compact(full=True).snapshot_ids
    assert rows_by_id(paimon_read(paimon.get_table("db.plain"))) == expected
