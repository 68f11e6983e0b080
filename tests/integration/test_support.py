"""What each operation refuses: one table (`operation/support.py`), the errors name the option
and the operation, nothing is written, and the README lists the same table."""

from __future__ import annotations

import json
import os
import re

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.operation.support import support_table_markdown

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64())])
README = os.path.join(os.path.dirname(__file__), "..", "..", "README.md")


@pytest.fixture()
def catalog(tmp_path) -> lf.Catalog:
    cat = lf.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    return cat


def data_files(t: lf.Table) -> list[str]:
    return [s.path for s in t.file_io.list_recursive(t.path) if "/bucket-" in s.path]


@pytest.mark.parametrize("options, operation, named", [
    ({"row-tracking.enabled": "true"}, "write", "row-tracking.enabled=true"),
    ({"data-file.external-paths": "s3://elsewhere/x"}, "write", "data-file.external-paths="),
    ({"bucket-function.type": "mod"}, "write", "bucket-function.type=mod"),
    ({"write.sequence-number-init-mode": "zero"}, "write", "write.sequence-number-init-mode"),
    ({"deletion-vectors.bitmap64": "true"}, "write", "deletion-vectors.bitmap64=true"),
])
def test_write_refusals_name_option_and_operation_and_write_nothing(catalog, options, operation,
                                                                    named):
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"],
                             options={"bucket": "1", **options})
    with pytest.raises(lf.UnsupportedError, match=re.escape(named) + ".*by " + operation):
        t.write(pa.table({"id": [1], "v": [1]}))
    assert data_files(t) == [] and t.snapshots() == []


@pytest.mark.parametrize("key, value", [("deletion-vectors.bitmap64", "true"),
                                        ("compaction.force-up-level-0", "true")])
def test_compaction_refusals_keep_the_table_as_it_was(catalog, key, value):
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    for i in range(2):
        t.write(pa.table({"id": [i], "v": [i]}))
    t.alter([lf.SchemaChange.set_option(key, value)])
    before = data_files(t)
    with pytest.raises(lf.UnsupportedError, match=re.escape(f"{key}={value}") + ".*by compact"):
        t.compact()
    assert data_files(t) == before and len(t.snapshots()) == 2
    assert t.read().sort_by("id").to_pylist() == [{"id": 0, "v": 0}, {"id": 1, "v": 1}]


def test_a_primary_key_table_clustered_by_other_columns_is_refused_by_read_and_compact(catalog):
    """Java's `pk-clustering-override` sorts a primary-key table's files by
    `clustering.columns`: merging them by key would return wrong rows."""
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [2, 1], "v": [1, 2]}))
    # the option is immutable: a table Java created with it (its schema file says so)
    schema_file = t.file_io.join(t.path, "schema", "schema-0")
    stored = json.loads(t.file_io.read_bytes(schema_file))
    stored["options"]["pk-clustering-override"] = "true"
    t.file_io.delete(schema_file)
    t.file_io.write_bytes(schema_file, json.dumps(stored).encode())
    t = catalog.get_table("db.t")
    before = data_files(t)
    for verb in (t.read, t.compact, lambda: t.write(pa.table({"id": [3], "v": [3]}))):
        with pytest.raises(lf.UnsupportedError, match="pk-clustering-override=true"):
            verb()
    assert data_files(t) == before and len(t.snapshots()) == 1


def test_readme_lists_the_refusal_table():
    with open(README, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"<!-- support-table:start -->\n(.*?)\n<!-- support-table:end -->", text, re.S)
    assert m is not None, "README lost its support-table markers"
    assert m.group(1) == support_table_markdown()
