"""Type changes Paimon allows but whose stored values may not convert (STRING -> INT, ...):
refused before they are published, naming column, value, cast and file; values that do
convert read as Java reads them; an old-schema file committed after the check fails the read
with the same names instead of a raw Arrow error.

The checks read the stored values and cast them with Arrow; where the files live only
changes how their bytes are fetched, which every S3 read test covers. Local disk only
(`local_only`).
"""

from __future__ import annotations

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.operation.write import write_table

pytestmark = pytest.mark.local_only  # see the module docstring

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("c", pa.string())])


def make(catalog, values: list) -> lf.Table:
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": list(range(len(values))), "c": values}, schema=SCHEMA))
    return t


def state(t: lf.Table) -> tuple:
    return t.refresh().table_schema.id, [s.id for s in t.snapshots()]


@pytest.mark.parametrize("new_type,good,bad", [
    ("INT", ["12", "+7", "-3", "1.9", ".5", "2147483647"], "2147483648"),
    ("INT", ["1"], " 1"),
    ("TINYINT", ["-128"], "128"),
    ("BIGINT", ["9223372036854775807"], "abc"),
    ("DOUBLE", [" 1.5 ", "1e3", "NaN", "-Infinity", "2d"], "0x1p3"),
    ("BOOLEAN", ["TRUE", "yes", "n", "0"], "maybe"),
    ("DATE", ["2024-02-29"], "2024-02-30"),
])
def test_values_that_do_not_convert_refuse_the_alter(catalog, new_type, good, bad):
    t = make(catalog, good + [bad])
    before = state(t)
    with pytest.raises(lf.SchemaMismatchError) as err:
        t.alter([lf.SchemaChange.update_column_type("c", new_type)])
    msg = str(err.value)
    assert "column 'c'" in msg and repr(bad) in msg and f"to {new_type}" in msg
    assert t.files()[0]["file_name"] in msg
    assert state(t) == before
    assert t.read()["c"].to_pylist() == good + [bad]


JAVA_RESULTS = {
    "INT": (["12", "+7", "-3", "1.9", ".5", "-0.9", None], [12, 7, -3, 1, 0, 0, None]),
    "DOUBLE": ([" 1.5 ", "1e3", "-Infinity", "2d"], [1.5, 1000.0, float("-inf"), 2.0]),
    "BOOLEAN": (["TRUE", "yes", "n", "0", "T"], [True, True, False, False, True]),
}


@pytest.mark.parametrize("new_type", sorted(JAVA_RESULTS))
def test_values_that_convert_read_as_java_reads_them(catalog, new_type):
    given, expected = JAVA_RESULTS[new_type]
    t = make(catalog, given)
    t.alter([lf.SchemaChange.update_column_type("c", new_type)])
    assert t.read()["c"].to_pylist() == expected
    t.compact(full=True)  # rewritten under the new type: same values
    assert t.read()["c"].to_pylist() == expected


def test_integer_to_small_decimal_overflow_is_refused(catalog):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("n", pa.int32())])
    t = catalog.create_table("db.dec", schema, primary_keys=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1, 2], "n": [999, 1000]}, schema=schema))
    with pytest.raises(lf.SchemaMismatchError, match="1000.*INT to DECIMAL\\(3, 0\\)"):
        t.alter([lf.SchemaChange.update_column_type("n", "DECIMAL(3, 0)")])
    assert t.refresh().table_schema.id == 0


def test_old_schema_file_committed_after_the_check_fails_clearly(catalog):
    t = make(catalog, ["1", "2"])
    old = t.table_schema
    t.alter([lf.SchemaChange.update_column_type("c", "INT")])
    # a writer that still holds the old schema commits a value the new type cannot take
    write_table(t.file_io, t.path, old, pa.table({"id": [5], "c": ["x5"]}, schema=SCHEMA))
    late = [f["file_name"] for f in t.files() if f["schema_id"] == old.id][-1]
    pattern = f"column 'c': stored value 'x5' cannot be converted from STRING to INT.*{late}"
    with pytest.raises(lf.SchemaMismatchError, match=pattern):
        t.read()
    with pytest.raises(lf.SchemaMismatchError, match=pattern):
        t.compact(full=True)


def test_integer_to_a_decimal_wide_enough_never_fails(local_catalog):
    """BIGINT fits DECIMAL(38, 0) (and INT fits DECIMAL(12, 2)) whatever the values: no check
    and no overflow inside the check itself."""
    import pyarrow as pa

    from lakeformat import SchemaChange as SC

    s = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.int64()), ("w", pa.int32())])
    t = local_catalog.create_table("db.wide", s, primary_keys=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1, 2], "v": [5, -(2**63)], "w": [7, None]}, schema=s))
    t.alter([SC.update_column_type("v", "DECIMAL(38, 0)"),
             SC.update_column_type("w", "DECIMAL(12, 2)")])
    rows = sorted(t.read().to_pylist(), key=lambda r: r["id"])
    assert [(str(r["v"]), None if r["w"] is None else str(r["w"])) for r in rows] == [
        ("5", "7.00"), (str(-(2**63)), None)]
