"""Every operator in one DAG run against the moto S3 server (`lf_test_ops`): the rows, files,
snapshots, schemas and tags a user sees afterwards, the result dicts in XCom, the rendered
templates — and the S3 secret nowhere in XCom, rendered fields or the task logs."""

from __future__ import annotations

import datetime as dt
import io
import json
import logging

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lakeformat as lf
from tests.support.s3server import boto3_client

DAY = dt.datetime(2024, 6, 1, tzinfo=dt.UTC)
SECRET = "lf-secret-5b1e0c9d7a"  # moto takes any secret; a distinctive one to search for


@pytest.fixture()
def secret_conn(s3_warehouse, monkeypatch, dags):
    """`lakeformat_default` on a fresh S3 warehouse, with SECRET as its secret key."""
    uri, options = s3_warehouse
    extra = {k: v for k, v in options.items() if k not in ("s3.access-key", "s3.secret-key")}
    monkeypatch.setenv("AIRFLOW_CONN_LAKEFORMAT_DEFAULT", dags.conn_json(
        "lakeformat", uri, options["s3.access-key"], SECRET, extra))
    return uri, {**options, "s3.secret-key": SECRET}


def _put_parquet(options, bucket, key, table):
    buf = io.BytesIO()
    pq.write_table(table, buf)
    boto3_client(options["s3.endpoint"]).put_object(Bucket=bucket, Key=key, Body=buf.getvalue())


def _rendered(run, task_id):
    from airflow.models.renderedtifields import RenderedTaskInstanceFields as Rtif
    from airflow.utils.session import create_session

    with create_session() as session:
        row = session.query(Rtif).filter_by(dag_id=run.dag_id, run_id=run.run_id,
                                            task_id=task_id).one()
        return row.rendered_fields


def _all_xcom(run):
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        return [str(r.value) for r in session.query(XComModel).filter_by(
            dag_id=run.dag_id, run_id=run.run_id)]


def _asset_events(run) -> dict[str, int]:
    from airflow.models.asset import AssetEvent, AssetModel
    from airflow.utils.session import create_session

    with create_session() as session:
        rows = session.query(AssetModel.uri).join(
            AssetEvent, AssetEvent.asset_id == AssetModel.id).filter(
            AssetEvent.source_dag_id == run.dag_id, AssetEvent.source_run_id == run.run_id)
        counts: dict[str, int] = {}
        for (uri,) in rows:
            counts[uri] = counts.get(uri, 0) + 1
        return counts


def test_every_operator_in_one_run(secret_conn, dags, caplog, capsys):
    uri, options = secret_conn
    bucket = uri.split("/")[2]
    schema = pa.schema([pa.field("dt", pa.string(), nullable=False),
                        pa.field("id", pa.int64(), nullable=False), ("v", pa.int64())])
    _put_parquet(options, bucket, "landing/2024-06-01/a.parquet", pa.table(
        {"dt": ["2024-06-01"] * 3, "id": [1, 2, 3], "v": [10, 20, 30]}, schema=schema))
    _put_parquet(options, bucket, "landing/2024-06-01/b.parquet", pa.table(
        {"dt": ["2019-01-01", "2024-06-01"], "id": [9, 1], "v": [90, 11]}, schema=schema))
    dag = dags.load("lf_test_ops.py", "lf_test_ops")
    caplog.set_level(logging.INFO)
    run = dag.test(logical_date=DAY, run_conf={
        "table": "db.events", "source": f"s3://{bucket}/landing/2024-06-01/*.parquet",
        "keep": f"{(dt.date.today() - dt.date(2020, 1, 1)).days} d"})  # cut-off 2020-01-01
    states = dags.states(run)
    assert run.state == "success", states
    catalog = lf.Catalog(uri, options=options)
    t = catalog.get_table("db.events")

    created = dags.xcom(run, "create_table")
    assert created["created"] is True and created["table"] == "db.events"
    altered = dags.xcom(run, "alter_table")
    assert (altered["schema_id_before"], altered["schema_id"]) == (0, 1)
    assert altered["columns"] == ["dt", "id", "v", "note"]
    ingested = dags.xcom(run, "ingest")
    assert ingested["rows_written"] == 5 and ingested["commit_kind"] == "APPEND"
    assert ingested["commit_user"] == "airflow:lf_test_ops.ingest"
    assert ingested["commit_identifier"] == int(DAY.timestamp() * 1000)
    compacted = dags.xcom(run, "compact")
    assert compacted["total"]["sorted_runs_after"] == compacted["total"]["buckets_compacted"]
    tag = dags.xcom(run, "create_tag")
    assert tag["name"] == "daily-2024-06-01" and tag["snapshot_id"] == compacted[
        "snapshot_ids"][-1]
    expired = dags.xcom(run, "expire_snapshots")
    assert expired["snapshots_deleted"] == [ingested["snapshot_id"]]
    schemas = dags.xcom(run, "clean_schemas")
    assert schemas["schema_files_deleted"] == 1  # schema 0 never had a file written with it
    orphans = dags.xcom(run, "remove_orphan_files")
    assert orphans["dry_run"] is True
    dropped = dags.xcom(run, "expire_partitions")
    assert dropped["partitions_expired"] == ["dt=2019-01-01"]
    rollback = dags.xcom(run, "rollback")
    assert rollback["dry_run"] is True
    assert rollback["snapshots_deleted"] == [t.latest_snapshot().id]

    # what a user sees: the rows (1 updated by the later file, 2019 partition dropped), the
    # latest snapshot still the partition drop (the rollback was a dry run), one schema file
    rows = t.read().sort_by("id").to_pydict()
    assert rows == {"dt": ["2024-06-01"] * 3, "id": [1, 2, 3], "v": [11, 20, 30],
                    "note": [None] * 3}
    assert t.latest_snapshot().commit_kind == "OVERWRITE"
    assert [s.id for s in t.schemas()] == [1]
    assert [g.name for g in t.list_tags()] == ["daily-2024-06-01"]

    # commits announced as events of the table's Asset, through the connection's alias
    assert _asset_events(run) == {f"paimon://{bucket}/wh/db/events": 3}  # ingest, compact,
    # partition drop; not the dry runs

    # templates rendered; the secret in no rendered field, XCom value or log line
    assert _rendered(run, "ingest")["source"] == f"s3://{bucket}/landing/2024-06-01/*.parquet"
    assert _rendered(run, "create_tag")["tag"] == "daily-2024-06-01"
    for task_id in states:
        assert SECRET not in json.dumps(_rendered(run, task_id), default=str)
    assert all(SECRET not in v for v in _all_xcom(run))
    assert SECRET not in caplog.text and SECRET not in capsys.readouterr().out


def test_mapped_ingests_each_commit(secret_conn, dags, tmp_path):
    """Mapped instances of one ingest task commit on their own (the map index is part of the
    commit user), and a re-run of the date lands none of them twice."""
    uri, options = secret_conn
    catalog = lf.Catalog(uri, options=options)
    catalog.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    t = catalog.create_table("db.m", schema, primary_keys=["id"], options={"bucket": "2"})
    for name, ids in (("a", [1, 2]), ("b", [3])):
        pq.write_table(pa.table({"id": ids, "v": [name] * len(ids)}, schema=schema),
                       tmp_path / f"{name}.parquet")
    dag = dags.load("lf_test_ingest.py", "lf_test_ingest_mapped")
    conf = {"table": "db.m", "a": str(tmp_path / "a.parquet"), "b": str(tmp_path / "b.parquet")}
    for _ in range(2):
        run = dag.test(logical_date=DAY, run_conf=conf)
        assert run.state == "success", dags.states(run)
    assert t.read().sort_by("id").to_pydict() == {"id": [1, 2, 3], "v": ["a", "a", "b"]}
    # one snapshot per mapped instance, in whichever order they ran
    assert sorted(s.commit_user for s in t.snapshots()) == [
        "airflow:lf_test_ingest_mapped.ingest[0]", "airflow:lf_test_ingest_mapped.ingest[1]"]


def test_ingest_rerun_of_a_date_lands_once(secret_conn, dags, tmp_path):
    """A retry or backfill of the same logical date leaves the same rows and no new
    snapshot; another date (the same files) commits again, without doubling a key."""
    uri, options = secret_conn
    catalog = lf.Catalog(uri, options=options)
    catalog.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    catalog.create_table("db.t", schema, primary_keys=["id"], options={"bucket": "2"})
    pq.write_table(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=schema),
                   tmp_path / "x.parquet")
    dag = dags.load("lf_test_ingest.py", "lf_test_ingest")
    conf = {"table": "db.t", "source": str(tmp_path / "*.parquet")}
    first = dag.test(logical_date=DAY, run_conf=conf)
    again = dag.test(logical_date=DAY, run_conf=conf)
    assert first.state == again.state == "success"
    assert dags.xcom(again, "ingest")["already_committed"] is True
    t = catalog.get_table("db.t")
    assert [s.id for s in t.snapshots()] == [1]
    other = dag.test(logical_date=DAY + dt.timedelta(days=1), run_conf=conf)
    assert other.state == "success"
    assert [s.id for s in t.snapshots()] == [1, 2]
    assert t.read().sort_by("id").to_pydict() == {"id": [1, 2], "v": ["a", "b"]}


def test_clean_schemas_operator_compacts_manifests_first(s3_conn):
    """`compact_manifests=True` reaches the library: a COMPACT snapshot of the same rows, and
    the XCom says which snapshot and why each schema is kept."""
    from types import SimpleNamespace

    from lakeformat_airflow.operators import LakeformatCleanSchemasOperator

    uri, options = s3_conn
    catalog = lf.Catalog(uri, options=options)
    catalog.create_database("db", exist_ok=True)
    t = catalog.create_table("db.t", pa.schema([pa.field("id", pa.int64(), nullable=False),
                                                ("v", pa.int64())]),
                             primary_keys=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1, 2], "v": [1, 2]}))
    t.alter(lf.SchemaChange.add_column("w", pa.int64()))
    t.write(pa.table({"id": [2, 3], "v": [3, 4], "w": [5, 6]}))
    t.compact(full=True)
    t.expire_snapshots(retain_min=1, older_than="0 s")
    rows = t.read().sort_by("id")
    context = {"ti": SimpleNamespace(dag_id="d", task_id="t", map_index=-1),
               "logical_date": DAY}
    op = LakeformatCleanSchemasOperator(task_id="x", table="db.t", retain_min=1,
                                        older_than="1 ms", compact_manifests=True)
    out = json.loads(json.dumps(op.execute(context)))  # as XCom stores it
    latest = t.refresh().latest_snapshot()
    assert out["manifest_compaction_snapshot"] == latest.id == 4
    assert latest.commit_kind == "COMPACT" and t.read().sort_by("id").equals(rows)
    assert out["kept_kinds"] == {"0": "deleted-file", "1": "latest"}
    with pytest.raises(ValueError):
        LakeformatCleanSchemasOperator(task_id="y", table="db.t", compact_manifests="yes")


# -- templated arguments --------------------------------------------------------------------------
def _five_snapshots(uri, options) -> lf.Table:
    catalog = lf.Catalog(uri, options=options)
    catalog.create_database("db", exist_ok=True)
    t = catalog.create_table("db.t", pa.schema([pa.field("id", pa.int64(), nullable=False),
                                                ("v", pa.int64())]),
                             primary_keys=["id"], options={"bucket": "1"})
    for i in range(5):
        t.write(pa.table({"id": [i], "v": [i]}))
    return t


@pytest.mark.parametrize("dag_id", ["lf_test_templated_expire",
                                    "lf_test_templated_expire_native"])
def test_templated_retention_expires_the_right_snapshots(s3_conn, dags, dag_id):
    """`retain_min="{{ params.n }}"` (and the other counts, the age, the flag) rendered as
    text or as native values: converted to what expiry takes, and obeyed."""
    uri, options = s3_conn
    t = _five_snapshots(uri, options)
    dag = dags.load("lf_test_templated.py", dag_id)
    # every param in every run_conf: dag.test() keeps a param the last run_conf set
    conf = {"table": "db.t", "n": 2, "max": None, "older_than": "1 ms", "max_deletes": None,
            "dry_run": False}
    dry = dag.test(logical_date=DAY, run_conf={**conf, "dry_run": True})
    assert dry.state == "success", dags.states(dry)
    assert dags.xcom(dry, "expire_snapshots")["dry_run"] is True
    assert [s.id for s in t.snapshots()] == [1, 2, 3, 4, 5]
    first = dag.test(logical_date=DAY + dt.timedelta(days=1),
                     run_conf={**conf, "max_deletes": 1})  # one snapshot per run
    assert first.state == "success", dags.states(first)
    assert dags.xcom(first, "expire_snapshots")["snapshots_deleted"] == [1]
    second = dag.test(logical_date=DAY + dt.timedelta(days=2), run_conf=conf)
    assert second.state == "success", dags.states(second)
    assert dags.xcom(second, "expire_snapshots")["snapshots_deleted"] == [2, 3]
    assert [s.id for s in t.refresh().snapshots()] == [4, 5]  # retain_min 2
    third = dag.test(logical_date=DAY + dt.timedelta(days=3),
                     run_conf={**conf, "n": "1", "max": "1"})  # digits as text, both modes
    assert third.state == "success", dags.states(third)
    assert [s.id for s in t.refresh().snapshots()] == [5]
    assert t.read().sort_by("id").to_pydict() == {"id": [0, 1, 2, 3, 4], "v": [0, 1, 2, 3, 4]}


@pytest.mark.parametrize("dag_id", ["lf_test_templated_ops", "lf_test_templated_ops_native"])
def test_every_operator_argument_templated(local_conn, dags, tmp_path, dag_id):
    """Every operator with all its arguments from params — lists, dicts, ints, booleans, None —
    as text (Airflow's default) and as native values: the same table as literal arguments give."""
    schema = pa.schema([pa.field("dt", pa.string(), nullable=False),
                        pa.field("id", pa.int64(), nullable=False), ("v", pa.int64())])
    pq.write_table(pa.table({"dt": ["2024-06-01"] * 3 + ["2019-01-01"], "id": [1, 2, 3, 9],
                             "v": [10, 20, 30, 90]}, schema=schema), tmp_path / "a.parquet")
    age = f"{(dt.date.today() - dt.date(2020, 1, 1)).days} d"  # cut-off 2020-01-01
    run = dags.load("lf_test_templated.py", dag_id).test(logical_date=DAY, run_conf={
        "table": "db.all", "columns": "dt STRING NOT NULL, id BIGINT NOT NULL, v BIGINT",
        "pk": ["dt", "id"], "partition_keys": "dt",
        "options": {"bucket": 1, "partition.timestamp-formatter": "yyyy-MM-dd",
                    "snapshot.num-retained.min": 1, "schema.num-retained.min": 1},
        "changes": [{"action": "add_column", "field_name": "note", "data_type": "STRING"}],
        "source": str(tmp_path / "*.parquet"), "format": "parquet", "budget": 64 << 20,
        "partitions": [{"dt": "2024-06-01"}], "idle": "0 s", "per_commit": "4",
        "n": 1, "older_than": "1 ms", "max_deletes": 10, "orphans_older_than": "0 s",
        "enforce": False, "partition_age": age})
    states = dags.states(run)
    assert run.state == "success", states
    t = lf.Catalog(local_conn).get_table("db.all")
    assert (t.primary_keys, t.partition_keys) == (["dt", "id"], ["dt"])
    assert t.options["bucket"] == "1" and t.schema.names == ["dt", "id", "v", "note"]
    assert dags.xcom(run, "ingest")["rows_written"] == 4
    compacted = dags.xcom(run, "compact")
    assert compacted["total"]["buckets_compacted"] == 1  # the one partition named
    assert dags.xcom(run, "create_tag")["snapshot_id"] == compacted["snapshot_ids"][-1]
    assert dags.xcom(run, "expire_snapshots")["snapshots_deleted"] == [1]
    assert dags.xcom(run, "clean_schemas")["schema_files_deleted"] == 1
    assert dags.xcom(run, "remove_orphan_files")["dry_run"] is True
    assert dags.xcom(run, "expire_partitions")["partitions_expired"] == ["dt=2019-01-01"]
    rollback = dags.xcom(run, "rollback")
    assert rollback["dry_run"] is True and rollback["snapshots_deleted"] == [3]
    assert t.read().sort_by("id").to_pydict() == {
        "dt": ["2024-06-01"] * 3, "id": [1, 2, 3], "v": [10, 20, 30], "note": [None] * 3}
    assert [s.id for s in t.schemas()] == [1] and [s.id for s in t.snapshots()] == [2, 3]
