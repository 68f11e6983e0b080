"""`lakeformat_maintenance` over five tables of different kinds (primary-key tables with three
merge engines, one of them dynamic-bucket; a bucket-unaware and a bucketed append table; one
more the pattern leaves out):
each compacted to one sorted run per bucket, snapshots expired per the table's own policy,
schema files nothing needs any more deleted; every retained snapshot still reads the same in
lakeformat and in pypaimon 2.1.0 (run in the interop venv)."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

import lakeformat as lf
from tests.support.pypaimon_reader import pypaimon_rows

DAY = dt.datetime(2024, 3, 1, tzinfo=dt.UTC)
SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False),
                    pa.field("id", pa.int64(), nullable=False), ("v", pa.int64())])
#: table -> (options, snapshots the policy keeps after maintenance)
TABLES = {
    # a dynamic-bucket table (bucket=-1, Paimon's default), its index files maintained too
    "db.dedup": ({"bucket": "-1", "dynamic-bucket.target-row-num": "3",
                  "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"}, 1),
    "db.partial": ({"merge-engine": "partial-update", "snapshot.num-retained.min": "2",
                    "snapshot.num-retained.max": "2"}, 2),
    "sales.agg": ({"merge-engine": "aggregation", "fields.v.aggregate-function": "sum",
                   "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"}, 1),
    # append tables (no primary key): every row kept, small files compacted
    "db.logs": ({"bucket": "-1", "snapshot.num-retained.min": "1",
                 "snapshot.num-retained.max": "1"}, 1),
    "sales.events": ({"bucket-key": "id", "snapshot.num-retained.min": "1",
                      "snapshot.num-retained.max": "1"}, 1),
}
APPEND = ("db.logs", "sales.events")
ORDER = [("dt", "ascending"), ("id", "ascending"), ("v", "ascending")]
COMMON = {"bucket": "2", "schema.num-retained.min": "1", "schema.time-retained": "1 ms",
          "snapshot.time-retained": "1 ms"}


def _history(catalog: lf.Catalog, name: str, options: dict[str, str]) -> None:
    """Three writes over two partitions; after the first, two schema changes in a row: schema 1
    is never written with (nothing can need it), schema 2 is the latest."""
    db = name.split(".")[0]
    catalog.create_database(db, exist_ok=True)
    keys = [] if name in APPEND else ["dt", "id"]
    t = catalog.create_table(name, SCHEMA, primary_keys=keys, partition_keys=["dt"],
                             options={**COMMON, **options})
    for i in range(3):
        t.write(pa.table({"dt": ["2024-01-01", "2024-01-02"] * 4,
                          "id": [1, 1, 2, 2, 3, 3, i + 4, i + 4],
                          "v": [i * 10 + k for k in range(8)]}, schema=SCHEMA))
        if i == 0:
            t.alter(lf.SchemaChange.add_column("note", pa.string()))
            t.alter(lf.SchemaChange.update_column_comment("note", "free text"))


def _sorted_runs(table: lf.Table) -> dict[tuple, int]:
    """Sorted runs per (partition, bucket) of the latest snapshot: each level-0 file is a run
    of its own, each non-empty higher level one run."""
    levels: dict[tuple, list[int]] = {}
    for f in table.files():
        levels.setdefault((str(f["partition"]), f["bucket"]), []).append(f["level"])
    return {k: sum(1 for x in v if x == 0) + len({x for x in v if x > 0})
            for k, v in levels.items()}


def _schema_files(table: lf.Table) -> list[int]:
    return [s.id for s in table.schemas()]


@pytest.mark.parametrize("where", ["local", "s3"])
def test_maintenance_dag(where, request, dags):
    if where == "s3":
        uri, options = request.getfixturevalue("s3_conn")
    else:
        uri, options = request.getfixturevalue("local_conn"), {}
    catalog = lf.Catalog(uri, options=options)
    for name, (opts, _) in TABLES.items():
        _history(catalog, name, opts)
    _history(catalog, "other.untouched", {})
    expected = {name: catalog.get_table(name).read().sort_by(ORDER) for name in TABLES}
    untouched = [s.id for s in catalog.get_table("other.untouched").snapshots()]

    dag = dags.load("lakeformat_maintenance.py", "lakeformat_maintenance")
    run = dag.test(logical_date=DAY, run_conf={"tables": "db.*,sales.*",
                                               "partition_idle_time": "0 s"})
    states = dags.states(run)
    assert run.state == "success", states
    assert sorted(dags.xcom(run, "list_tables")) == sorted(TABLES)
    assert sum(1 for k in states if k.startswith("maintain.compact[")) == len(TABLES)
    cleaned = [dags.xcom(run, "maintain.clean_schemas", i) for i in range(len(TABLES))]
    assert [c["schema_files_deleted"] for c in cleaned] == [1] * len(TABLES)

    for name, (_, keep) in TABLES.items():
        table = catalog.get_table(name)
        assert set(_sorted_runs(table).values()) == {1}, name
        snaps = table.snapshots()
        assert len(snaps) == keep, (name, [s.id for s in snaps])
        assert snaps[-1].commit_kind == "COMPACT"
        # schema 1 was never written with: gone. Schema 0 stays: the compaction snapshot's
        # manifests still name the replaced files (DELETE entries), and their schema is kept
        # while any retained manifest names a file written with it (schema_retention.py)
        assert _schema_files(table) == [0, 2], name
        if name == "db.dedup":  # the index files of the expired snapshots went with them
            index_dir = table.file_io.join(table.path, "index")
            left = table.file_io.list_status(index_dir)
            buckets = {(f["partition"], f["bucket"]) for f in table.inspect.files().to_pylist()}
            assert len(left) == len(buckets) > 1, (left, buckets)  # one HASH file per bucket
        for snap in snaps:
            got = table.read(snapshot_id=snap.id).sort_by(ORDER)
            assert got.select(SCHEMA.names).equals(expected[name].select(SCHEMA.names)), name
            if where == "local":
                theirs = pypaimon_rows(uri, name, snapshot_id=snap.id)
                assert "error" not in theirs, theirs
                assert sorted((r["dt"], r["id"], r["v"]) for r in theirs["rows"]) == sorted(
                    zip(*[expected[name][c].to_pylist() for c in ("dt", "id", "v")])), name
    # the pattern left this table alone
    assert [s.id for s in catalog.get_table("other.untouched").snapshots()] == untouched
