"""Key-value records of a small table (k INT key, a STRING, b BIGINT) for the engine
tests."""

from __future__ import annotations

import pyarrow as pa

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
