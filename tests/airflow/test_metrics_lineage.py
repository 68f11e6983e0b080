"""The operators' metrics and lineage, through real Airflow parts.

Metrics: a StatsD server of the test (a UDP socket on 127.0.0.1) receives what Airflow's
`Stats` sends when the operators run — Airflow configured by `[metrics]` variables and
initialized as a task process does — with the `table` tag (`statsd_influxdb_enabled`), and the
values equal the operators' results. A metrics backend that fails does not fail the task.

Lineage: with the OpenLineage provider installed, the provider's extractor finds the
operators' methods and gets the datasets (namespace the warehouse without credentials, name
`db.table`, the schema's fields), with no I/O at completion; with the provider made
unimportable, the operators run and import nothing of it.

The metrics tests run on local disk (the store adds nothing to what `Stats` is sent); the
lineage test runs on the moto S3 server, whose warehouse URI and credentials are what the
namespace must get right.
"""

from __future__ import annotations

import datetime as dt
import importlib.abc
import json
import re
import socket
import sys
import time
from types import SimpleNamespace

import pyarrow as pa
import pytest

import lakeformat as lf

DAY = dt.datetime(2024, 6, 1, tzinfo=dt.UTC)
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
#: a StatsD line as Airflow's InfluxDB-style tagging writes it: name[,tag=value...]:value|type
LINE = re.compile(r"^(?P<name>[A-Za-z0-9_.-]+)(?P<tags>(,[^,=:]+=[^,=:]+)*):(?P<value>[-0-9.e]+)"
                  r"\|(?P<type>c|g|ms)$")


def _context(task_id: str = "t") -> dict:
    pushed: dict = {}
    ti = SimpleNamespace(dag_id="lf_metrics", task_id=task_id, map_index=-1,
                         xcom_push=lambda key, value: pushed.__setitem__(key, value))
    return {"ti": ti, "logical_date": DAY}


def _table(uri: str, options: dict | None = None, writes: int = 3) -> lf.Table:
    catalog = lf.Catalog(uri, options=options)
    catalog.create_database("db", exist_ok=True)
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    for i in range(writes):
        t.write(pa.table({"id": [i, i + 1], "v": [f"a{i}", f"b{i}"]}, schema=SCHEMA))
    return t


class StatsdServer:
    """What a StatsD server on 127.0.0.1 received: (name, tags, value, type) per line."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.lines: list[str] = []

    def receive(self, until: set[str], timeout: float = 5.0) -> dict[str, list[tuple]]:
        """Every line received until each name of `until` came (or `timeout`), by name."""
        deadline = time.monotonic() + timeout
        while not until <= {self._name(x) for x in self.lines}:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(65536)
            except TimeoutError:
                break
            self.lines += data.decode().splitlines()
        out: dict[str, list[tuple]] = {}
        for line in self.lines:
            m = LINE.match(line)
            assert m, f"not a StatsD line with valid name and tags: {line!r}"
            tags = dict(t.split("=", 1) for t in m["tags"].split(",") if t)
            out.setdefault(m["name"], []).append((tags, float(m["value"]), m["type"]))
        self.lines = []
        return out

    @staticmethod
    def _name(line: str) -> str:
        return re.split(r"[,:]", line, maxsplit=1)[0]


@pytest.fixture()
def statsd(monkeypatch):
    """Airflow's Stats sending to a StatsD server of the test, tags InfluxDB-style."""
    from airflow.sdk._shared.observability.metrics import stats as backend
    from airflow.sdk.observability import stats
    from airflow.sdk.observability.metrics import stats_utils

    server = StatsdServer()
    for key, value in {"STATSD_ON": "True", "STATSD_HOST": "127.0.0.1",
                       "STATSD_PORT": str(server.port), "STATSD_PREFIX": "airflow",
                       "STATSD_INFLUXDB_ENABLED": "True"}.items():
        monkeypatch.setenv(f"AIRFLOW__METRICS__{key}", value)
    for name in ("_factory", "_backend", "_export_legacy_names"):  # restored afterwards
        monkeypatch.setattr(backend, name, getattr(backend, name))
    # what a task process does at start (`task_runner.main`)
    stats.initialize(factory=stats_utils.get_stats_factory(), export_legacy_names=False)
    yield server
    server.sock.close()


def _one(received: dict, name: str, table: str = "db.t") -> float:
    values = [v for tags, v, _ in received.get(f"airflow.lakeformat.{name}", [])
              if tags.get("table") == table]
    assert len(values) == 1, (name, received.get(f"airflow.lakeformat.{name}"), sorted(received))
    return values[0]


def test_compaction_and_expiry_metrics_reach_statsd(statsd, local_conn):
    """A full compaction and a snapshot expiry: files and bytes compacted, written, deleted,
    snapshots expired and durations arrive tagged with the table, equal to the results."""
    from lakeformat_airflow.operators import (
        LakeformatCompactOperator,
        LakeformatExpireSnapshotsOperator,
    )

    _table(local_conn)
    compacted = LakeformatCompactOperator(task_id="compact", table="db.t").execute(_context())
    got = statsd.receive({"airflow.lakeformat.compact.duration"})
    total = compacted["total"]
    assert total["files_in"] == 3 and compacted["snapshot_ids"]
    assert _one(got, "compact.files_compacted") == 3
    assert _one(got, "compact.bytes_compacted") == total["bytes_in"] > 0
    assert _one(got, "compact.files_written") == total["files_out"] == 1
    assert _one(got, "compact.bytes_written") == total["bytes_out"] > 0
    assert _one(got, "compact.rows_written") == total["rows_out"] == 4
    assert _one(got, "compact.snapshots_committed") == 1
    assert _one(got, "compact.duration") >= 0
    assert got["airflow.lakeformat.compact.files_compacted"][0][2] == "c"
    assert got["airflow.lakeformat.compact.duration"][0][2] == "ms"

    expired = LakeformatExpireSnapshotsOperator(
        task_id="expire", table="db.t", retain_min=1, older_than="1 ms").execute(_context())
    got = statsd.receive({"airflow.lakeformat.expire_snapshots.duration"})
    assert expired["snapshots_deleted"] == [1, 2, 3]
    assert _one(got, "expire_snapshots.snapshots_expired") == 3
    assert _one(got, "expire_snapshots.files_deleted") == len(expired["deleted"]) > 3
    assert _one(got, "expire_snapshots.data_files_deleted") == 3
    assert _one(got, "expire_snapshots.bytes_deleted") == expired["bytes_deleted"] > 0
    assert _one(got, "expire_snapshots.duration") >= 0

    # a dry run deletes nothing and counts nothing but its time
    LakeformatExpireSnapshotsOperator(task_id="dry", table="db.t", retain_min=1,
                                      dry_run=True).execute(_context())
    got = statsd.receive({"airflow.lakeformat.expire_snapshots.duration"})
    assert sorted(got) == ["airflow.lakeformat.expire_snapshots.duration"]


def test_due_maintenance_metrics_health_before_and_after(statsd, local_conn):
    """What is due sets each table's health score; the due-actions runner sends the score
    before and after, and its compaction's and expiry's figures under their own names."""
    from lakeformat_airflow.operators import (
        LakeformatDueActionsOperator,
        LakeformatRunDueActionsOperator,
    )

    t = _table(local_conn, writes=4)
    thresholds = {"num-sorted-run.compaction-trigger": "2", "snapshot.num-retained.min": "1",
                  "snapshot.num-retained.max": "1"}
    due = LakeformatDueActionsOperator(task_id="due", thresholds=thresholds).execute(_context())
    got = statsd.receive({"airflow.lakeformat.due_actions.duration"})
    report = t.maintenance_due(thresholds)
    assert _one(got, "health.score") == report.score
    assert _one(got, "health.actions_due") == len(report.actions) >= 2
    [work] = due
    result = LakeformatRunDueActionsOperator(
        task_id="run", table="db.t", actions=work["actions"], engine="local",
        thresholds=thresholds).execute(_context())
    got = statsd.receive({"airflow.lakeformat.run_due_actions.duration"})
    before, after = result["health_before"]["score"], result["health_after"]["score"]
    assert before < after
    assert _one(got, "health.score_before") == before
    assert _one(got, "health.score_after") == after
    ran = [a["action"]["kind"] for a in result["actions"]]
    assert "expire-snapshots" in ran and {"compact", "full-compact"} & set(ran), ran
    assert _one(got, "run_due_actions.actions_run") == len(ran)
    assert _one(got, "compact.files_compacted") == 4
    assert _one(got, "expire_snapshots.snapshots_expired") > 0
    assert _one(got, "compact.duration") >= 0


def test_metrics_that_fail_never_fail_the_task(local_conn, monkeypatch, capsys):
    """A metrics backend that raises: the task returns its result, a warning says why."""
    from lakeformat_airflow.operators import LakeformatCompactOperator, metrics

    def broken(items):
        raise OSError("statsd host unreachable")

    monkeypatch.setattr(metrics, "send", broken)
    _table(local_conn)
    out = LakeformatCompactOperator(task_id="compact", table="db.t").execute(_context())
    assert out["total"]["files_in"] == 3
    logged = capsys.readouterr().out  # the task's structured log
    assert "metrics of compact on db.t not sent: OSError: statsd host unreachable" in logged


def test_every_metric_name_is_valid_for_statsd():
    """Names of every result shape stay within StatsD's `[A-Za-z0-9_.-]`, table tags too."""
    from lakeformat_airflow.operators import LakeformatExpirePartitionsOperator, metrics

    cleanup = {"table": "db.t", "operation": "expire-partitions", "deleted": ["a"],
               "dry_run": False, "partitions_expired": ["dt=2024-01-01"],
               "data_files_dropped": 2, "bytes_dropped": 9, "snapshots_deleted": [4]}
    commit = {"table": "db.t", "snapshot_id": 3, "files_added": 2, "rows_written": 5,
              "bytes_added": 10, "files_deleted": 1, "already_committed": False}
    found = metrics.measures("ingest", commit) + metrics.measures("odd op/x", cleanup)
    assert {m.name for m in metrics.measures("ingest", commit)} == {
        f"lakeformat.ingest.{n}" for n in ("files_written", "bytes_written", "rows_written",
                                           "files_replaced", "snapshots_committed")}
    assert metrics.measures("ingest", {**commit, "already_committed": True}) == []
    backfill = {"table": "db.t", "landed": ["2024-06-01"], "skipped": ["2024-06-02"],
                "days": [{"status": "landed", "rows_written": 7, "snapshot_id": 4},
                         {"status": "skipped", "rows_written": 0, "snapshot_id": None}]}
    assert {m.name.rsplit(".", 1)[1]: m.value for m in metrics.measures("backfill", backfill)
            } == {"days_landed": 1, "days_skipped": 1, "rows_written": 7,
                  "snapshots_committed": 1}
    assert all(re.fullmatch(r"[A-Za-z0-9_.-]+", m.name) for m in found), found
    assert metrics.operation_name(LakeformatExpirePartitionsOperator(
        task_id="x", table="db.t")) == "expire_partitions"


# -- lineage --------------------------------------------------------------------------------------
def _fields(dataset) -> list[tuple[str, str]]:
    return [(f.name, f.type) for f in dataset.facets["schema"].fields]


def test_lineage_names_the_tables_through_the_provider(s3_conn, monkeypatch):
    """The provider's extractor finds the operators' methods: a compaction has the table as
    input and output, the schema's fields in its facet, the namespace the warehouse without
    credentials; an alter reports the schema after it; what is due and a listing have inputs
    only. Completion reads neither the connection nor the store."""
    from airflow.providers.openlineage.extractors.manager import ExtractorManager
    from airflow.sdk import DAG
    from airflow.utils.state import TaskInstanceState
    from openlineage.client.serde import Serde

    from lakeformat_airflow.hooks.lakeformat import LakeformatHook
    from lakeformat_airflow.operators import (
        LakeformatAlterTableOperator,
        LakeformatCompactOperator,
        LakeformatDueActionsOperator,
        LakeformatListTablesOperator,
    )

    uri, options = s3_conn
    _table(uri, options)
    with DAG("lf_lineage", schedule=None):
        compact = LakeformatCompactOperator(task_id="compact", table="db.t")
        alter = LakeformatAlterTableOperator(task_id="alter", table="db.t", changes=[
            {"action": "add_column", "field_name": "w", "data_type": "INT"}])
        due = LakeformatDueActionsOperator(task_id="due", pattern="db.*")
        listed = LakeformatListTablesOperator(task_id="list", pattern="db.*")
    manager, run = ExtractorManager(), SimpleNamespace(run_id="r1")

    start = manager.extract_metadata(run, compact, TaskInstanceState.RUNNING, None)
    assert [(d.namespace, d.name, d.facets) for d in start.inputs] == [(uri, "db.t", {})]
    for op in (compact, alter, due, listed):
        op.execute(_context(op.task_id))

    def no_io(*args, **kwargs):
        raise AssertionError("I/O at completion")

    monkeypatch.setattr(LakeformatHook, "get_connection", no_io)
    monkeypatch.setattr(lf.Catalog, "get_table", no_io)
    done = manager.extract_metadata(run, compact, TaskInstanceState.SUCCESS, None)
    [inp], [out] = done.inputs, done.outputs
    assert (inp.namespace, inp.name) == (out.namespace, out.name) == (uri, "db.t")
    assert uri.startswith("s3://") and "@" not in uri
    assert _fields(inp) == _fields(out) == [("id", "BIGINT NOT NULL"), ("v", "STRING")]
    event = Serde.to_json(done.outputs[0])
    assert json.loads(event)["facets"]["schema"]["fields"][0]["name"] == "id"
    assert options["s3.secret-key"] not in event and options["s3.access-key"] not in event

    altered = manager.extract_metadata(run, alter, TaskInstanceState.SUCCESS, None)
    assert _fields(altered.outputs[0]) == [("id", "BIGINT NOT NULL"), ("v", "STRING"),
                                           ("w", "INT")]
    reads = manager.extract_metadata(run, due, TaskInstanceState.SUCCESS, None)
    assert [(d.namespace, d.name) for d in reads.inputs] == [(uri, "db.t")]
    assert reads.outputs == [] and [f for f, _ in _fields(reads.inputs[0])] == ["id", "v", "w"]
    listing = manager.extract_metadata(run, listed, TaskInstanceState.SUCCESS, None)
    assert [(d.namespace, d.name) for d in listing.inputs] == [(uri, "db.t")]
    assert listing.outputs == []


def test_namespace_leaves_credentials_out():
    from lakeformat_airflow.operators.lineage import namespace

    assert namespace("s3://AKIA:secret@bucket/wh/?x=1#f") == "s3://bucket/wh"
    assert namespace("/data/wh/") == "file:///data/wh"
    assert namespace("file:///data/wh") == "file:///data/wh"


class _Blocker(importlib.abc.MetaPathFinder):
    """Refuses (and records) every import of the OpenLineage provider or client."""

    PREFIXES = ("airflow.providers.openlineage", "airflow.providers.common.compat.openlineage",
                "openlineage")

    def __init__(self) -> None:
        self.tried: list[str] = []

    def find_spec(self, name, path=None, target=None):
        if name.startswith(self.PREFIXES):
            self.tried.append(name)
            raise ImportError(f"{name} is not installed (test)")
        return None


def test_without_the_provider_operators_run_and_import_nothing(local_conn, monkeypatch):
    """With the provider unimportable the operators run as before, and not one of them tries
    to import it; its methods then answer nothing."""
    from lakeformat_airflow.operators import (
        LakeformatCompactOperator,
        LakeformatDueActionsOperator,
        LakeformatExpireSnapshotsOperator,
    )

    blocker = _Blocker()
    for name in [n for n in sys.modules if n.startswith(_Blocker.PREFIXES)]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "meta_path", [blocker, *sys.meta_path])
    _table(local_conn)
    ops = [LakeformatCompactOperator(task_id="compact", table="db.t"),
           LakeformatExpireSnapshotsOperator(task_id="expire", table="db.t", retain_min=1,
                                             older_than="1 ms"),
           LakeformatDueActionsOperator(task_id="due")]
    results = [op.execute(_context(op.task_id)) for op in ops]
    assert results[0]["total"]["files_in"] == 3 and results[1]["snapshots_deleted"]
    assert blocker.tried == []
    assert ops[0].get_openlineage_facets_on_complete(None) is None
    assert blocker.tried  # only a caller of the method tries, and gets nothing
