"""Concurrent schema evolution on S3 (moto server over HTTP on 127.0.0.1).

Two processes merge different new columns into one table at the same moment, round after
round; two threads race `Table.alter`. Every change must land as its own schema id (0..N, no
gaps, no lost column), every row keeps its values, and a merge-schema write whose types cannot
merge must leave the bucket exactly as it was.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import threading
import traceback
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

import lakeformat as lf
from tests.support.s3server import boto3_client

ROUNDS = 3
ROWS = 40
SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])


def new_column(proc: int, rnd: int) -> tuple[str, pa.DataType]:
    """The column process/thread `proc` adds in round `rnd` (types differ by writer); in the
    extra last round of the process test both writers add the same column."""
    if rnd == ROUNDS:
        return "shared", pa.int64()
    return f"c{proc}_r{rnd}", pa.int64() if proc == 0 else pa.string()


def keys_of(proc: int, rnd: int) -> list[int]:
    return [proc * 100_000 + rnd * 1_000 + j for j in range(ROWS)]


def merge_batch(proc: int, rnd: int) -> tuple[pa.Table, list[dict[str, Any]]]:
    """Rows (k, v, own new column) and the same rows as dicts."""
    name, typ = new_column(proc, rnd)
    keys = keys_of(proc, rnd)
    vals = [k * 7 if typ == pa.int64() else f"s{k}" for k in keys]
    table = pa.table({"k": pa.array(keys, pa.int64()), "v": [f"p{proc}r{rnd}-{k}" for k in keys],
                      name: pa.array(vals, typ)})
    return table, table.to_pylist()


def merge_worker(uri: str, options: dict[str, str], proc: int, barrier: Any, errors: Any) -> None:
    """Child process: each round, wait for the other writer, then merge-schema write."""
    try:
        table = lf.Catalog(uri, options=options).get_table("db.t")
        for rnd in range(ROUNDS + 1):
            data, _ = merge_batch(proc, rnd)
            barrier.wait(timeout=120)
            res = table.write(data, merge_schema=True)
            assert res.snapshot_id is not None and res.rows_written == ROWS
    except BaseException:
        errors.put(f"writer {proc}: {traceback.format_exc()}")
        barrier.abort()
        raise


def make_catalog(s3_warehouse: tuple[str, dict[str, str]]) -> lf.Catalog:
    uri, options = s3_warehouse
    catalog = lf.Catalog(uri, options=options)
    catalog.create_database("db")
    return catalog


def assert_schema_chain(table: lf.Table, n_changes: int) -> None:
    """Schema ids 0..n with no gap; each file is valid JSON that lakeformat parses; each version
    keeps every field (same id, name) of the one before and adds exactly one new field id."""
    schemas = table.schemas()
    assert [s.id for s in schemas] == list(range(n_changes + 1))
    for s in schemas:
        raw = json.loads(table.file_io.read_bytes(table.schema_manager.schema_path(s.id)))
        assert raw["id"] == s.id
        ids = [f["id"] for f in raw["fields"]]
        assert len(set(ids)) == len(ids) and raw["highestFieldId"] == max(ids)
    for prev, nxt in zip(schemas, schemas[1:]):
        before = {(f.id, f.name) for f in prev.fields}
        after = {(f.id, f.name) for f in nxt.fields}
        assert before < after and len(after - before) == 1, (prev.id, nxt.id)


def expected_rows(columns: list[str], written: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(({c: r.get(c) for c in columns} for r in written), key=lambda r: r["k"])


def test_two_processes_merge_different_columns_at_once(s3_warehouse) -> None:
    catalog = make_catalog(s3_warehouse)
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "2"})
    ctx = mp.get_context("spawn")
    barrier, errors = ctx.Barrier(2), ctx.Queue()
    uri, options = s3_warehouse
    procs = [ctx.Process(target=merge_worker, args=(uri, options, p, barrier, errors))
             for p in (0, 1)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
    failures = [errors.get() for _ in range(errors.qsize())] if not errors.empty() else []
    assert [p.exitcode for p in procs] == [0, 0], "\n".join(failures)

    table = catalog.get_table("db.t")
    added = {new_column(p, r)[0] for p in (0, 1) for r in range(ROUNDS + 1)}
    assert set(table.schema.names) == {"k", "v"} | added
    changes = 2 * ROUNDS + 1  # the shared column is added once, by whichever writer won
    assert_schema_chain(table, changes)
    snapshots = table.snapshots()
    assert [s.id for s in snapshots] == list(range(1, 2 * (ROUNDS + 1) + 1))
    assert all(0 < s.schema_id <= changes for s in snapshots)
    written = [row for p in (0, 1) for r in range(ROUNDS + 1) for row in merge_batch(p, r)[1]]
    got = table.read()
    assert got.column_names == table.schema.names
    assert sorted(got.to_pylist(), key=lambda r: r["k"]) == expected_rows(got.column_names,
                                                                          written)
    assert got.schema.field("c0_r0").type == pa.int64()
    assert got.schema.field("c1_r0").type == pa.string()


def test_threads_racing_alter_add_columns_all_land(s3_warehouse) -> None:
    catalog = make_catalog(s3_warehouse)
    catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "2"})
    barrier = threading.Barrier(2)
    errors: list[str] = []

    def alter_worker(proc: int) -> None:
        table = catalog.get_table("db.t")  # own Table object, stale schema after round 0
        try:
            for rnd in range(ROUNDS):
                name, typ = new_column(proc, rnd)
                barrier.wait(timeout=60)
                table.alter([lf.SchemaChange.add_column(name, typ)])
        except BaseException:
            errors.append(traceback.format_exc())
            barrier.abort()

    threads = [threading.Thread(target=alter_worker, args=(p,)) for p in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, "\n".join(errors)
    table = catalog.get_table("db.t")
    assert_schema_chain(table, 2 * ROUNDS)
    added = [new_column(p, r)[0] for p in (0, 1) for r in range(ROUNDS)]
    assert table.schema.names[:2] == ["k", "v"] and sorted(table.schema.names[2:]) == added
    # each writer's columns stay in its own order (add appends at the end)
    for p in (0, 1):
        own = [n for n in table.schema.names if n.startswith(f"c{p}_")]
        assert own == [new_column(p, r)[0] for r in range(ROUNDS)]
    row = {"k": 1, "v": "x", **{n: (5 if n.startswith("c0_") else "y") for n in added}}
    table.write(pa.Table.from_pylist([row], schema=pa.schema(
        [(f.name, f.type) for f in table.schema])))
    assert table.read().to_pylist() == [{n: row[n] for n in table.schema.names}]


def bucket_objects(endpoint: str, bucket: str) -> dict[str, bytes]:
    """Every object in the bucket with its bytes (the table is the bucket's only content)."""
    client = boto3_client(endpoint)
    out = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for obj in page.get("Contents", []):
            out[obj["Key"]] = client.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read()
    return out


NO_WIDENING = {"write.merge-schema.type-widening": "false"}


@pytest.mark.parametrize("table_type,data_type,data,data_text,write_options", [
    (pa.int64(), pa.string(), "seven", "STRING", None),
    (pa.decimal128(10, 2), pa.decimal128(10, 3), Decimal("1.234"), "DECIMAL(10, 3)", None),
    # without widening the data is cast to the table's type, and that cast is refused
    (pa.int64(), pa.string(), "seven", "STRING", NO_WIDENING),
    # an allowed explicit cast whose value does not convert
    (pa.int64(), pa.string(), "seven", "string",
     {**NO_WIDENING, "write.merge-schema.explicit-cast": "true"}),
], ids=["bigint-string", "decimal-scale", "no-widening", "explicit-cast-bad-value"])
def test_unmergeable_merge_write_leaves_bucket_unchanged(
        s3_server, s3_bucket, s3_warehouse, table_type, data_type, data, data_text,
        write_options) -> None:
    catalog = make_catalog(s3_warehouse)
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("x", table_type)])
    table = catalog.create_table("db.t", schema, primary_keys=["k"], options={"bucket": "2"})
    table.write(pa.table({"k": [1, 2], "x": pa.array([None, None], table_type)}, schema=schema))
    before = bucket_objects(s3_server, s3_bucket)
    assert any("/snapshot/" in k for k in before) and any("/bucket-" in k for k in before)

    # the data also adds a column, so a partial commit would show up as a schema file
    bad = pa.table({"k": pa.array([3], pa.int64()), "x": pa.array([data], data_type),
                    "extra": pa.array([1.5], pa.float64())})
    with pytest.raises(lf.SchemaMismatchError) as err:
        table.write(bad, merge_schema=True, options=write_options)
    msg = str(err.value)
    table_text = str(table.table_schema.field("x").type)
    assert "'x'" in msg and table_text in msg and data_text in msg, msg

    assert bucket_objects(s3_server, s3_bucket) == before
    fresh = catalog.get_table("db.t")
    assert [s.id for s in fresh.schemas()] == [0] and [s.id for s in fresh.snapshots()] == [1]
    assert fresh.read().to_pylist() == [{"k": 1, "x": None}, {"k": 2, "x": None}]
