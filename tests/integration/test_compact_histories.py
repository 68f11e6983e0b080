"""Full compaction over random histories, for every merge engine and option set of the merge
engine property tests (tests/unit/merge/test_engines_property.py draws them).

A drawn history is cut into commits (arrival order = the drawn sequence numbers) and written
through the write path; then, repeatedly, a full compaction runs and more commits follow.
Each compaction must leave the rows a reader sees unchanged, every touched bucket one sorted
run at the top level, and no retract record in any data file. Where the merge itself throws
(retracts into first-row, ...), the compaction must throw too and leave the table untouched.
Small target-file-size values make compaction roll files and move large files up without
rewriting them; a small memory budget makes it merge in several key-range slices.
"""

from __future__ import annotations

import uuid

import numpy as np
import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lakeformat as lf
from lakeformat.data.kv_read import read_kv_file
from lakeformat.errors import LakeformatError
from lakeformat.operation.write import write_table
from lakeformat.schema.table_schema import VALUE_KIND
from tests.support.depth import examples
from tests.unit.merge import test_engines_property as P

EXAMPLES = examples(25, 50, "COMPACT_PROPERTY_EXAMPLES")  # tests/support/depth.py
HISTORY = settings(max_examples=EXAMPLES, deadline=None,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                          HealthCheck.filter_too_much,
                                          HealthCheck.function_scoped_fixture])
TOP = 5  # num-levels 6 by default


def canonical_rows(table: pa.Table, schema) -> list:
    rows = table.to_pylist()
    unordered = P.unordered_columns(schema)
    out = [tuple((n, P.canonical(r[n], unordered.get(n))) for n in schema.field_names)
           for r in rows]
    return sorted(out, key=repr)


def safe_read(t: lf.Table):
    try:
        return canonical_rows(t.read(), t.table_schema), None
    except LakeformatError as e:
        return None, e


def check_layout(t: lf.Table, touched: set) -> None:
    by_bucket: dict = {}
    for f in t.files():
        by_bucket.setdefault((str(f["partition"]), f["bucket"]), []).append(f)
    for key in touched:
        files = by_bucket.get(key, [])
        assert all(f["level"] == TOP for f in files), [(f["file_name"], f["level"])
                                                        for f in files]
    for files in by_bucket.values():
        for f in files:
            kinds = read_kv_file(t.file_io, f["path"], f["path"].rsplit(".", 1)[-1],
                                 columns=[])[VALUE_KIND].to_numpy()
            if f["level"] == TOP:
                assert not np.isin(kinds, [1, 3]).any(), f"retract rows left in {f['path']}"


def run_history(tmp_path, case, cuts, target, budget, rounds) -> None:
    schema_def, records = case
    cat = lf.Catalog(str(tmp_path / f"wh{uuid.uuid4().hex}"))
    cat.create_database("db", exist_ok=True)
    options = {k: v for k, v in schema_def.options.items()}
    options["bucket"] = "2"
    if target:
        options["target-file-size"] = target
    arrow = pa.schema([pa.field(f.name, P.to_arrow(f.type), f.type.nullable)
                       for f in schema_def.fields])
    t = cat.create_table("db.t", arrow, primary_keys=list(schema_def.primary_keys),
                         options=options)
    records = sorted(records, key=lambda r: r[P.SEQUENCE_NUMBER])
    bounds = sorted({min(c, len(records)) for c in cuts} | {len(records)})
    chunks, lo = [], 0
    for hi in bounds:
        if hi > lo:
            chunks.append(records[lo:hi])
            lo = hi
    per_round = max(1, len(chunks) // rounds)
    for start in range(0, len(chunks), per_round):
        for chunk in chunks[start:start + per_round]:
            data = pa.Table.from_pylist([{n: r[n] for n in arrow.names} for r in chunk],
                                        schema=arrow)
            kinds = np.array([r[P.VALUE_KIND] for r in chunk], dtype=np.int8)
            try:
                write_table(t.file_io, t.path, t.table_schema, data, kinds)
            except LakeformatError:
                return  # the write path's own merge refused the commit (as Java's would)
        before, error = safe_read(t)
        files_before = sorted(f["file_name"] for f in t.files())
        snapshots_before = len(t.snapshots())
        touched = {(str(f["partition"]), f["bucket"]) for f in t.files()}
        if error is not None:
            # the merge throws when reading: it throws when compacting, and nothing changes
            on_disk = sorted(p.name for p in tmp_path.rglob("data-*"))
            try:
                t.compact(full=True, memory_budget=budget, workers=2)
            except LakeformatError:
                pass
            else:
                raise AssertionError(f"compaction merged what reading refuses: {error}")
            assert len(t.snapshots()) == snapshots_before
            assert sorted(f["file_name"] for f in t.files()) == files_before
            assert sorted(p.name for p in tmp_path.rglob("data-*")) == on_disk
            return
        t.compact(full=True, memory_budget=budget, workers=2)
        after, error = safe_read(t)
        assert error is None, error
        assert after == before, P.describe(schema_def, records)
        check_layout(t, touched)


def compaction_params():
    return st.tuples(
        st.lists(st.integers(1, 24), max_size=5),  # commit boundaries
        st.sampled_from([None, None, "1 kb", "4 kb"]),  # target-file-size
        st.sampled_from([64 << 10, 1 << 20]),  # memory budget
        st.integers(1, 3))  # compaction rounds


@HISTORY
@given(case=P.deduplicate_case(), params=compaction_params())
def test_deduplicate_history(tmp_path, case, params):
    run_history(tmp_path, case, *params)


@HISTORY
@given(case=P.first_row_case(), params=compaction_params())
def test_first_row_history(tmp_path, case, params):
    run_history(tmp_path, case, *params)


@HISTORY
@given(case=P.partial_update_plain_case(), params=compaction_params())
def test_partial_update_history(tmp_path, case, params):
    run_history(tmp_path, case, *params)


@HISTORY
@given(case=P.partial_update_groups_case(), params=compaction_params())
def test_partial_update_sequence_groups_history(tmp_path, case, params):
    run_history(tmp_path, case, *params)


@HISTORY
@given(case=P.aggregation_case(), params=compaction_params())
def test_aggregation_history(tmp_path, case, params):
    run_history(tmp_path, case, *params)
