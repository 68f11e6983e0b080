"""`lakeformat_maintenance` over ten tables of different kinds (primary-key tables with three
merge engines, one of them dynamic-bucket; a bucket-unaware and a bucketed append table; a
deletion-vector table, a `changelog-producer=lookup` table with deletion vectors, an Avro
table, a cross-partition upsert table and an append table with deletion vectors; one more the
pattern leaves out), with thresholds (`FORCE`) under which each table's history is due work:
each compacted to one sorted run per bucket, snapshots expired per the table's own policy,
schema files nothing needs any more deleted, index files no retained snapshot lists gone;
every retained snapshot still reads the same in lakeformat and in pypaimon 2.1.0 (run in the
interop venv). Which tables have due work at all, and that the others run nothing, is
`test_due_maintenance.py`'s.

On local disk the DAG maintains all ten tables (and pypaimon reads them back). On the moto S3
server it maintains the four whose files differ in what maintenance lists and deletes there:
`db.dedup` (the HASH index files of a dynamic-bucket table), `db.partial` (a policy keeping
two snapshots, so schema 0 stays), `db.lookup` (deletion-vector index files and changelog
files) and `sales.marked` (deletion vectors on an append table, all expired); data files,
manifests, snapshots and schema files go on every one of them. The other six differ from these
in how their rows merge and compact (merge engine, file format, bucket mode), which the store
does not touch: S3 paths and requests are the same for them.
`test_maintenance_retires_old_schema_files` runs on local disk for the same reason: schema
files deleted on S3 are checked here, and per policy in `tests/integration/
test_schema_retention.py` on both stores."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.meta.index_manifest import IndexManifestFile
from lakeformat.operation.scan import FileStoreScan
from tests.support.deletion_vectors import live_entries, mark_deleted
from tests.support.pypaimon_reader import pypaimon_rows_many

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
    # lookup tables: their writes compact before returning, leaving deletion vectors on the
    # rows a lookup compaction replaced (index files under index/), the lookup producer also
    # changelog files
    "db.vectors": ({"deletion-vectors.enabled": "true", "snapshot.num-retained.min": "1",
                    "snapshot.num-retained.max": "1"}, 1),
    "db.lookup": ({"changelog-producer": "lookup", "deletion-vectors.enabled": "true",
                   "snapshot.num-retained.min": "2", "snapshot.num-retained.max": "2"}, 2),
    # data files in Avro
    "sales.avro": ({"file.format": "avro", "snapshot.num-retained.min": "1",
                    "snapshot.num-retained.max": "1"}, 1),
    # cross-partition upsert: the key leaves out `dt`, a key moves to the partition written
    "db.moves": ({"bucket": "-1", "snapshot.num-retained.min": "1",
                  "snapshot.num-retained.max": "1"}, 1),
    # an append table with deletion vectors (marked as Java's DELETE marks them)
    "sales.marked": ({"bucket": "-1", "deletion-vectors.enabled": "true",
                      "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"}, 1),
}
#: the tables the S3 run maintains (module docstring)
ON_S3 = ("db.dedup", "db.partial", "db.lookup", "sales.marked")
APPEND = ("db.logs", "sales.events", "sales.marked")
CROSS_PARTITION = ("db.moves",)
LOOKUP = ("db.vectors", "db.lookup")
#: tables whose history leaves deletion vectors
VECTORS = ("db.vectors", "db.lookup", "sales.marked")
#: thresholds that make every table's compaction due after its history: a full compaction of
#: each bucket written since its last (primary-key tables with a fixed bucket count), every
#: bucket with deletion vectors fully compacted (lookup tables), minor compaction of more than
#: one sorted run (dynamic-bucket tables) and of 3 small files (append tables); expiry and
#: schema cleanup are due by the tables' own retention options
FORCE = {"num-sorted-run.compaction-trigger": "1", "compaction.min.file-num": "3",
         "compaction.delete-ratio-threshold": "0", "full-compaction.delta-commits": "1"}
ORDER = [("dt", "ascending"), ("id", "ascending"), ("v", "ascending")]
COMMON = {"bucket": "2", "schema.num-retained.min": "1", "schema.time-retained": "1 ms",
          "snapshot.time-retained": "1 ms"}


def _history(catalog: lf.Catalog, name: str, options: dict[str, str]) -> None:
    """Three writes over two partitions; after the first, two schema changes in a row: schema 1
    is never written with (nothing can need it), schema 2 is the latest. The first write to a
    lookup table is large: the small writes after it are looked up against it (not merged with
    it), so the rows they replace there get deletion vectors. The append table with deletion
    vectors then has rows of two files deleted."""
    db = name.split(".")[0]
    catalog.create_database(db, exist_ok=True)
    keys = [] if name in APPEND else ["id"] if name in CROSS_PARTITION else ["dt", "id"]
    t = catalog.create_table(name, SCHEMA, primary_keys=keys, partition_keys=["dt"],
                             options={**COMMON, **options})
    for i in range(3):
        n = 4 + (300 if i == 0 and name in LOOKUP else 0)
        t.write(pa.table({"dt": ["2024-01-01", "2024-01-02"] * n,
                          "id": [1, 1, 2, 2, 3, 3, i + 4, i + 4] + list(range(100, 2 * n + 92)),
                          "v": [i * 10 + k for k in range(2 * n)]}, schema=SCHEMA))
        if i == 0:
            t.alter(lf.SchemaChange.add_column("note", pa.string()))
            t.alter(lf.SchemaChange.update_column_comment("note", "free text"))
    if name == "sales.marked":  # as a Java DELETE does it
        t = catalog.get_table(name)
        first, second = sorted(live_entries(t), key=lambda e: e.file.file_name)[:2]
        mark_deleted(t, {first.file.file_name: [0, 2]})
        mark_deleted(catalog.get_table(name), {second.file.file_name: [1]})


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


def _index_files(table: lf.Table) -> set[str]:
    """Names of the files under the table's index/ folder."""
    index_dir = table.file_io.join(table.path, "index")
    return {s.path.rsplit("/", 1)[-1] for s in table.file_io.list_status(index_dir)}


def _listed_index_files(table: lf.Table, snapshots: list | None = None,
                        kind: str | None = None) -> set[str]:
    """Names of the index files (of `kind`, when given) the snapshots (default: all the
    table's) list."""
    index = IndexManifestFile(table.file_io, table.path, table.table_schema.options)
    snapshots = table.snapshots() if snapshots is None else snapshots
    return {e.file_name for s in snapshots for e in index.read(s.index_manifest)
            if kind is None or e.index_type == kind}


def _changelog_files(table: lf.Table, snapshots: list | None = None) -> set[str]:
    """Names of the changelog files on disk, or (with `snapshots`) those they list."""
    if snapshots is None:
        return {name for s in table.file_io.list_recursive(table.path)
                if (name := s.path.rsplit("/", 1)[-1]).startswith("changelog-")}
    scan = FileStoreScan(table.file_io, table.path, table.table_schema)
    return {e.file.file_name for s in snapshots
            for e in scan.read_entries(scan.changelog_manifests(s))}


@pytest.mark.parametrize("where", ["local", "s3"])
def test_maintenance_dag(where, request, dags):
    if where == "s3":
        uri, options = request.getfixturevalue("s3_conn")
        tables = {name: TABLES[name] for name in ON_S3}
    else:
        uri, options = request.getfixturevalue("local_conn"), {}
        tables = TABLES
    catalog = lf.Catalog(uri, options=options)
    for name, (opts, _) in tables.items():
        _history(catalog, name, opts)
    _history(catalog, "other.untouched", {})
    expected = {name: catalog.get_table(name).read().sort_by(ORDER) for name in tables}
    index_before = {name: _index_files(catalog.get_table(name)) for name in tables}
    # the histories left deletion vectors for maintenance to clean up
    for name in (n for n in VECTORS if n in tables):
        vectors = _listed_index_files(catalog.get_table(name), kind="DELETION_VECTORS")
        assert vectors and vectors <= index_before[name], name
    changelog_before = _changelog_files(catalog.get_table("db.lookup"))
    assert changelog_before  # the lookup producer's
    untouched = [s.id for s in catalog.get_table("other.untouched").snapshots()]

    dag = dags.load("lakeformat_maintenance.py", "lakeformat_maintenance")
    run = dag.test(logical_date=DAY, run_conf={"tables": "db.*,sales.*",
                                               "partition_idle_time": "0 s",
                                               "thresholds": FORCE})
    states = dags.states(run)
    assert run.state == "success", states
    # every table's history is due work under these thresholds: one mapped task per table
    assert sorted(w["table"] for w in dags.xcom(run, "due_actions")) == sorted(tables)
    assert sum(1 for k in states if k.startswith("maintain[")) == len(tables)
    results = {r["table"]: r for r in (dags.xcom(run, "maintain", i)
                                       for i in range(len(tables)))}
    ran = {name: [a["action"]["kind"] for a in r["actions"]] for name, r in results.items()}
    schema_results = {name: [a["result"] for a in r["actions"]
                             if a["action"]["kind"] in ("compact-manifests", "clean-schemas")]
                      for name, r in results.items()}
    # schema 1, never written with, goes; schema 0 once the snapshots naming its replaced
    # files expired: this run where the policy keeps one snapshot (expiry runs again after
    # the manifest compaction, and schema cleanup after it)
    assert {n: sum(r["schema_files_deleted"] for r in rs) for n, rs in
            schema_results.items()} == {name: 1 + int(keep == 1)
                                        for name, (_, keep) in tables.items()}, ran
    for name, result in results.items():
        assert "expire-snapshots" in ran[name] and ran[name][-1] == "clean-schemas", ran
        assert result["health_after"] == catalog.get_table(name).health().summary(), name
        assert result["health_after"]["max_sorted_runs"] == 1, result["health_after"]
        assert result["health_after"]["score"] >= result["health_before"]["score"], name
        if tables[name][1] == 2:  # schema 0 stays, named by a kept snapshot: the XCom says so
            assert schema_results[name][-1]["kept_kinds"]["0"] in ("live-file",
                                                                   "deleted-file"), name

    retained: list[tuple[str, int]] = []
    for name, (_, keep) in tables.items():
        table = catalog.get_table(name)
        assert set(_sorted_runs(table).values()) == {1}, name
        snaps = table.snapshots()
        assert len(snaps) == keep, (name, [s.id for s in snaps])
        assert snaps[-1].commit_kind == "COMPACT"
        # schema 1 was never written with: gone. Schema 0 goes with the snapshots that name
        # the files compaction replaced: where the policy keeps two snapshots, one of them
        # stays, and schema 0 with it (a later run)
        assert _schema_files(table) == ([2] if keep == 1 else [0, 2]), name
        if name == "db.dedup":  # the index files of the expired snapshots went with them
            index_dir = table.file_io.join(table.path, "index")
            left = table.file_io.list_status(index_dir)
            buckets = {(f["partition"], f["bucket"]) for f in table.inspect.files().to_pylist()}
            assert len(left) == len(buckets) > 1, (left, buckets)  # one HASH file per bucket
        # every index file left is one a retained snapshot lists: those only expired snapshots
        # listed went with them; a full compaction leaves no deletion vector
        left = _index_files(table)
        assert left == _listed_index_files(table), (name, left)
        assert not _listed_index_files(table, snaps[-1:], "DELETION_VECTORS"), name
        if name in VECTORS and keep == 1:  # the snapshots listing vectors all expired
            assert index_before[name] and not left, name
        if name == "db.lookup":  # the changelog files of the expired snapshots went too
            left = _changelog_files(table)
            assert left == _changelog_files(table, snaps) and changelog_before - left, left
        for snap in snaps:
            retained.append((name, snap.id))
            if name in LOOKUP and snap.commit_kind != "COMPACT":
                # a deletion-vector table's write snapshot shows its rows once its compaction
                # lands (level 0 is not read): compared with pypaimon below, not the final rows
                continue
            got = table.read(snapshot_id=snap.id).sort_by(ORDER)
            assert got.select(SCHEMA.names).equals(expected[name].select(SCHEMA.names)), name
    if where == "local":  # pypaimon reads every retained snapshot the same (one process)
        for (name, snap_id), theirs in zip(retained, pypaimon_rows_many(uri, retained),
                                           strict=True):
            assert "error" not in theirs, (name, snap_id, theirs)
            mine = catalog.get_table(name).read(snapshot_id=snap_id)
            assert sorted((r["dt"], r["id"], r["v"]) for r in theirs["rows"]) == sorted(
                zip(*[mine[c].to_pylist() for c in ("dt", "id", "v")])), (name, snap_id)
    # the pattern left this table alone
    assert [s.id for s in catalog.get_table("other.untouched").snapshots()] == untouched


def test_maintenance_retires_old_schema_files(local_conn, dags):
    """A table written under schema 0, altered and written under schema 1: its own options
    let old snapshots and schemas go. One maintenance run leaves schema 1 alone in schema/,
    and the rows read the same. A table keeping two snapshots loses schema 0 on the next
    day's run, after a day's write. (On local disk: see the module docstring.) The thresholds
    make a full compaction due after every commit and a manifest compaction on every run (the
    old DAG's nightly routine): the manifest compaction of the first run is what drops the
    DELETE entries that would otherwise keep schema 0 named in the second run's snapshots."""
    catalog = lf.Catalog(local_conn)
    catalog.create_database("shop")
    retention = {"bucket": "1", "snapshot.num-retained.min": "1",
                 "snapshot.time-retained": "1 ms", "schema.num-retained.min": "1",
                 "schema.time-retained": "1 ms"}
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    for name, keep in (("shop.orders", "1"), ("shop.slow", "2")):
        t = catalog.create_table(name, schema, primary_keys=["id"],
                                 options={**retention, "snapshot.num-retained.min": keep})
        t.write(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=schema))
        t.alter(lf.SchemaChange.add_column("note", pa.string()))
        t.write(pa.table({"id": [3, 4], "v": ["C", "d"], "note": ["x", None]}))
    rows = {n: catalog.get_table(n).read().sort_by("id") for n in ("shop.orders", "shop.slow")}

    def schema_dir(name: str) -> list[str]:
        t = catalog.get_table(name)
        return sorted(s.path.rsplit("/", 1)[-1]
                      for s in t.file_io.list_status(t.file_io.join(t.path, "schema")))

    assert schema_dir("shop.orders") == schema_dir("shop.slow") == ["schema-0", "schema-1"]
    dag = dags.load("lakeformat_maintenance.py", "lakeformat_maintenance")
    conf = {"tables": "shop.*", "partition_idle_time": "0 s", "engine": "local",
            "thresholds": {"full-compaction.delta-commits": "1",
                           "manifest.merge-min-count": "1"}}
    run = dag.test(logical_date=DAY + dt.timedelta(days=10), run_conf=conf)
    assert run.state == "success", dags.states(run)
    assert schema_dir("shop.orders") == ["schema-1"]
    assert schema_dir("shop.slow") == ["schema-0", "schema-1"]  # its compaction kept
    for name, before in rows.items():
        assert catalog.get_table(name).read().sort_by("id").equals(before), name

    slow = catalog.get_table("shop.slow")
    slow.write(pa.table({"id": [5], "v": ["e"], "note": ["y"]}))
    run = dag.test(logical_date=DAY + dt.timedelta(days=11), run_conf=conf)
    assert run.state == "success", dags.states(run)
    assert schema_dir("shop.slow") == ["schema-1"]
    assert slow.refresh().read().sort_by("id").to_pydict() == {
        "id": [1, 2, 3, 4, 5], "v": ["a", "b", "C", "d", "e"], "note": [None, None, "x", None, "y"]}
