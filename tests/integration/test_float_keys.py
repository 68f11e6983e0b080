"""FLOAT/DOUBLE primary keys compare as Java Paimon compares them (`Double.compare` /
`Float.compare` in its generated key comparator, Paimon >= 2.0): every NaN is one key, and
-0.0 and 0.0 are two keys. Buckets hash the raw bits, as Java's BinaryRow does.

Key order and bucket hashes are computed on Arrow columns before any file exists: local
disk only (`local_only`); the store adds nothing to a comparison.
"""

from __future__ import annotations

import math
import struct

import pyarrow as pa
import pytest

from lakeformat.meta.bucket import bucket_ids
from lakeformat.schema.types import from_arrow

pytestmark = pytest.mark.local_only  # see the module docstring

NAN = float("nan")


def key_repr(v: float) -> str:
    return "nan" if math.isnan(v) else repr(v)  # repr keeps the sign of -0.0


def rows_by_key(t) -> dict[str, object]:
    return {key_repr(r["k"]): r["v"] for r in t.read().to_pylist()}


@pytest.mark.parametrize("arrow_type", [pa.float64(), pa.float32()], ids=["DOUBLE", "FLOAT"])
@pytest.mark.parametrize("buckets", ["1", "4"])
def test_nan_is_one_key_and_signed_zeros_are_two(catalog, arrow_type, buckets):
    schema = pa.schema([pa.field("k", arrow_type, nullable=False), ("v", pa.string())])
    t = catalog.create_table("db.t", schema, primary_keys=["k"], options={"bucket": buckets})

    def write(keys: list[float], values: list[str]) -> None:
        t.write(pa.table({"k": pa.array(keys, arrow_type), "v": values}, schema=schema))

    write([NAN, 0.0, 1.5, NAN], ["nan-1", "zero-1", "x", "nan-2"])  # two NaNs in one batch
    assert rows_by_key(t) == {"nan": "nan-2", "0.0": "zero-1", "1.5": "x"}
    write([-0.0, NAN], ["negzero-1", "nan-3"])
    write([0.0], ["zero-2"])
    expected = {"nan": "nan-3", "0.0": "zero-2", "-0.0": "negzero-1", "1.5": "x"}
    assert rows_by_key(t) == expected
    r = t.compact()
    assert not r.failed
    assert rows_by_key(t) == expected
    write([NAN, -0.0], ["nan-4", "negzero-2"])
    t.compact(full=False)
    assert rows_by_key(t) == {**expected, "nan": "nan-4", "-0.0": "negzero-2"}


def test_float_keys_read_in_java_key_order(local_catalog):
    schema = pa.schema([pa.field("k", pa.float64(), nullable=False), ("v", pa.int64())])
    t = local_catalog.create_table("db.t", schema, primary_keys=["k"], options={"bucket": "1"})
    keys = [NAN, 2.0, -0.0, float("-inf"), 0.0, float("inf"), -1.0]
    t.write(pa.table({"k": keys, "v": list(range(len(keys)))}, schema=schema))
    t.compact()
    files = t.files()
    assert len(files) == 1 and files[0]["row_count"] == 7
    got = [key_repr(k) for k in t.read()["k"].to_pylist()]
    assert got == ["-inf", "-1.0", "-0.0", "0.0", "2.0", "inf", "nan"]


def test_bucket_of_a_float_key_hashes_its_raw_bits():
    """-0.0 and 0.0 are different BinaryRow bytes, so Java may put them in different buckets;
    lakeformat computes the bucket from the same bytes."""
    dt = from_arrow(pa.float64(), False)
    zeros = bucket_ids([pa.chunked_array([pa.array([0.0, -0.0] * 2)])], [dt], 1 << 20)
    assert zeros[0] == zeros[2] and zeros[1] == zeros[3]
    assert zeros[0] != zeros[1]
    assert struct.pack("<d", -0.0) != struct.pack("<d", 0.0)
