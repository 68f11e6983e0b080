"""Bad input through the provider: the task fails with a message naming the problem, the table
is exactly as it was, and only errors worth a retry (a held lock, an unreachable store) are
retried — a bad argument fails at once (one try although the task has retries)."""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace

import pyarrow as pa
import pytest
from airflow.sdk.exceptions import AirflowFailException

import lakeformat as lf
from lakeformat_airflow.hooks import LakeformatHook
from lakeformat_airflow.operators import (
    LakeformatCleanSchemasOperator,
    LakeformatCompactOperator,
    LakeformatCreateTagOperator,
    LakeformatExpireSnapshotsOperator,
    LakeformatIngestOperator,
    LakeformatRemoveOrphanFilesOperator,
    LakeformatRollbackOperator,
)

DAY = dt.datetime(2024, 2, 1, tzinfo=dt.UTC)
_DAYS = iter(range(1000))


def _day() -> dt.datetime:
    """A logical date no other test of this module runs `lf_test_expire` for."""
    return DAY + dt.timedelta(days=next(_DAYS))


def _tries(run) -> dict[str, tuple[str, int]]:
    from airflow.utils.session import create_session

    with create_session() as session:
        return {t.task_id: (str(t.state), t.try_number)
                for t in run.get_task_instances(session=session)}


def _context():
    ti = SimpleNamespace(dag_id="d", task_id="t", map_index=-1)
    return {"ti": ti, "logical_date": DAY}


def _table(uri, options) -> lf.Table:
    catalog = lf.Catalog(uri, options=options)
    catalog.create_database("db", exist_ok=True)
    t = catalog.create_table("db.t", pa.schema([pa.field("id", pa.int64(), nullable=False),
                                                ("v", pa.int64())]),
                             primary_keys=["id"], options={"bucket": "1"})
    for i in range(3):
        t.write(pa.table({"id": [1, 2], "v": [i, i]}))
    return t


def _state(t: lf.Table) -> tuple:
    """What a user sees of a table: snapshots, schema files, files, rows."""
    t = t.refresh()
    return ([s.id for s in t.snapshots()], [s.id for s in t.schemas()],
            sorted(f["file_name"] for f in t.files()), t.read().sort_by("id").to_pydict())


@pytest.mark.parametrize("make", [
    lambda: LakeformatIngestOperator(task_id="x", table="db.t", source="a.csv", mode="upsert"),
    lambda: LakeformatIngestOperator(task_id="x", table="db.t", source="a.csv", engine="flink"),
    lambda: LakeformatIngestOperator(task_id="x", table="db.t", source="a.csv", format="xls"),
    lambda: LakeformatIngestOperator(task_id="x", table="no_database", source="a.csv"),
    lambda: LakeformatIngestOperator(task_id="x", table="db.t", source=""),
    lambda: LakeformatExpireSnapshotsOperator(task_id="x", table="db.t", retain_min=0),
    lambda: LakeformatExpireSnapshotsOperator(task_id="x", table="db.t", retain_min=5,
                                              retain_max=2),
    lambda: LakeformatExpireSnapshotsOperator(task_id="x", table="db.t", older_than="2 weeks"),
    lambda: LakeformatCleanSchemasOperator(task_id="x", table="db.t", retain_min=-1),
    lambda: LakeformatRemoveOrphanFilesOperator(task_id="x", table="db.t", dry_run="yes"),
    lambda: LakeformatCompactOperator(task_id="x", table="db.t", partitions=[{"dt": "a"}],
                                      where=[("dt", "=", "a")]),
    lambda: LakeformatCompactOperator(task_id="x", table="db.t", partition_idle_time="soon"),
    lambda: LakeformatCreateTagOperator(task_id="x", table="db.t", tag=""),
    lambda: LakeformatRollbackOperator(task_id="x", table="db.t", to=0),
])
def test_bad_arguments_fail_when_the_dag_is_parsed(make):
    with pytest.raises(ValueError):
        make()


def test_unknown_table_fails_at_once_naming_it(s3_conn, dags):
    uri, options = s3_conn
    lf.Catalog(uri, options=options).create_database("db")
    with pytest.raises(AirflowFailException, match=r"db\.missing"):
        LakeformatExpireSnapshotsOperator(task_id="x", table="db.missing").execute(_context())
    run = dags.load("lf_test_ops.py", "lf_test_expire").test(
        logical_date=_day(), run_conf={"table": "db.missing"})
    assert run.state == "failed"
    assert _tries(run)["expire_snapshots"] == ("failed", 1)  # retries=1, not used


def test_invalid_retention_fails_and_leaves_the_table(s3_conn, dags):
    uri, options = s3_conn
    t = _table(uri, options)
    before = _state(t)
    run = dags.load("lf_test_ops.py", "lf_test_expire").test(
        logical_date=_day(), run_conf={"table": "db.t", "older_than": "3 fortnights"})
    assert run.state == "failed"
    assert _tries(run)["expire_snapshots"] == ("failed", 1)
    op = LakeformatExpireSnapshotsOperator(task_id="x", table="db.t",
                                           older_than="{{ params.older_than }}")
    op.older_than = "3 fortnights"  # as rendered
    with pytest.raises(AirflowFailException, match="older_than.*3 fortnights"):
        op.execute(_context())
    assert _state(t) == before


def test_connection_without_warehouse(monkeypatch, dags):
    monkeypatch.setenv("AIRFLOW_CONN_LAKEFORMAT_DEFAULT", dags.conn_json("lakeformat", ""))
    with pytest.raises(AirflowFailException, match="names no warehouse.*host"):
        LakeformatExpireSnapshotsOperator(task_id="x", table="db.t").execute(_context())
    ok, message = LakeformatHook().test_connection()
    assert not ok and "no warehouse" in message


def test_missing_connection_fails_at_once(monkeypatch):
    with pytest.raises(AirflowFailException, match="lf_nowhere"):
        LakeformatExpireSnapshotsOperator(task_id="x", table="db.t",
                                          lakeformat_conn_id="lf_nowhere").execute(_context())


def test_wrong_endpoint_is_a_store_fault_retried(s3_warehouse, monkeypatch, dags):
    uri, options = s3_warehouse
    extra = {**{k: v for k, v in options.items() if not k.endswith("-key")},
             "s3.endpoint": "http://127.0.0.1:9", "s3.attempts.maximum": "1"}
    monkeypatch.setenv("AIRFLOW_CONN_LAKEFORMAT_DEFAULT", dags.conn_json(
        "lakeformat", uri, options["s3.access-key"], options["s3.secret-key"], extra))
    ok, message = LakeformatHook().test_connection()
    assert not ok and "127.0.0.1:9" in message
    run = dags.load("lf_test_ops.py", "lf_test_expire").test(
        logical_date=_day(), run_conf={"table": "db.t", "older_than": "1 ms"})
    assert run.state == "failed"
    assert _tries(run)["expire_snapshots"] == ("failed", 2)  # a store fault: retried once


def test_held_maintenance_lease_is_retried_and_changes_nothing(s3_warehouse, monkeypatch,
                                                               dags):
    """Another job maintaining the table: `LockTimeoutError` is worth a retry."""
    uri, options = s3_warehouse
    extra = {**{k: v for k, v in options.items() if not k.endswith("-key")},
             "lock-acquire-timeout": "200 ms"}
    monkeypatch.setenv("AIRFLOW_CONN_LAKEFORMAT_DEFAULT", dags.conn_json(
        "lakeformat", uri, options["s3.access-key"], options["s3.secret-key"], extra))
    t = _table(uri, options)
    before = _state(t)
    holder = lf.Catalog(uri, options=options).table_locks("db.t").maintenance
    with holder.acquire("test holds the table"):
        run = dags.load("lf_test_ops.py", "lf_test_expire").test(
            logical_date=_day(), run_conf={"table": "db.t", "older_than": "1 ms"})
    assert run.state == "failed"
    assert _tries(run)["expire_snapshots"] == ("failed", 2)
    assert _state(t) == before
    # and once the holder is gone the same run expires
    run = dags.load("lf_test_ops.py", "lf_test_expire").test(
        logical_date=_day(), run_conf={"table": "db.t", "older_than": "1 ms"})
    assert run.state == "success"
    assert [s.id for s in t.refresh().snapshots()] == [3]


def test_bad_values_after_rendering_fail_at_once(s3_conn, dags, tmp_path):
    """A table name or an engine that is only wrong once rendered: the task fails on its
    first try with the argument named, and nothing is read or written."""
    uri, options = s3_conn
    t = _table(uri, options)
    before = _state(t)
    run = dags.load("lf_test_ops.py", "lf_test_expire").test(
        logical_date=_day(), run_conf={"table": "nodot", "older_than": "1 ms"})
    assert run.state == "failed"
    assert _tries(run)["expire_snapshots"] == ("failed", 1)
    op = LakeformatIngestOperator(task_id="x", table="db.t", source="a.parquet",
                                  engine="{{ params.engine }}")
    op.engine = "flink"  # as rendered
    with pytest.raises(AirflowFailException, match="engine.*flink"):
        op.execute(_context())
    op.engine, op.source = "local", str(tmp_path / "missing.parquet")
    with pytest.raises(AirflowFailException, match="missing.parquet does not exist"):
        op.execute(_context())
    assert _state(t) == before


@pytest.mark.parametrize(("dag_id", "n"), [("lf_test_templated_expire", "two"),
                                           ("lf_test_templated_expire_native", 0)])
def test_bad_rendered_retention_fails_at_once_naming_it(s3_conn, dags, capsys, dag_id, n):
    """`retain_min="{{ params.n }}"` rendering to a value expiry cannot take: the first try
    fails (retries=2 unused) with InvalidArgumentError naming the argument and the value,
    and the table is as it was."""
    uri, options = s3_conn
    t = _table(uri, options)
    before = _state(t)
    run = dags.load("lf_test_templated.py", dag_id).test(
        logical_date=_day(), run_conf={"table": "db.t", "n": n, "max": None,
                                       "older_than": "1 ms", "max_deletes": None,
                                       "dry_run": False})
    assert run.state == "failed"
    assert _tries(run)["expire_snapshots"] == ("failed", 1)
    assert f"InvalidArgumentError: retain_min must be a whole number >= 1 (or empty for the " \
           f"default), got {n!r}" in capsys.readouterr().out  # the task's log
    assert _state(t) == before


def _every_operator() -> list[type]:
    import lakeformat_airflow.operators as ops

    # the backfill operator converts its own arguments (operators/backfill.py)
    return [getattr(ops, name) for name in ops.__all__
            if issubclass(getattr(ops, name), ops.LakeformatBaseOperator)
            and name not in ("LakeformatBaseOperator", "LakeformatBackfillOperator")]


def _required(cls: type) -> dict:
    """The arguments an operator cannot be built without (literal, valid)."""
    return {"LakeformatIngestOperator": {"source": "a.csv"},
            "LakeformatCreateTableOperator": {"columns": "id BIGINT"},
            "LakeformatAlterTableOperator": {"changes": []},
            "LakeformatCreateTagOperator": {"tag": "t"},
            "LakeformatRollbackOperator": {"to": 1},
            "LakeformatRunDueActionsOperator": {"actions": [{"kind": "compact"}]},
            }.get(cls.__name__, {})


#: a rendered value each argument cannot take (default "<no such value>"); text arguments
#: that take any text (a commit user, a comment) have none
BAD = {"where": "[<no such value>", "source": " ", "columns": " ", "primary_keys": "[1, 2]",
       "partition_keys": "[1, 2]", "tag": " ", "to": " "}
ANY_TEXT = ("commit_user", "comment")


@pytest.mark.parametrize("cls", _every_operator(), ids=lambda c: c.__name__)
def test_every_argument_is_a_template_field_checked_once_rendered(cls):
    """Each converted argument renders (it is a template field), passes the parse-time check
    as a template, and a rendered value the argument cannot take fails the task at once with
    InvalidArgumentError naming it."""
    assert cls.arguments, cls
    assert set(cls.arguments) <= set(cls.template_fields), cls
    for name in cls.arguments:
        op = cls(task_id="x", table="db.t", **{**_required(cls), name: "{{ params.x }}"})
        if name in ANY_TEXT:
            continue
        bad = BAD.get(name, "<no such value>")
        op.render_template_fields({"params": {"x": bad}})
        with pytest.raises(AirflowFailException, match=f"^InvalidArgumentError: {name} "):
            op.execute(_context())


def test_rendered_text_becomes_the_value_the_library_takes():
    op = LakeformatExpireSnapshotsOperator(
        task_id="x", table="db.t", retain_min="{{ params.n }}", retain_max="{{ params.m }}",
        older_than="{{ params.age }}", max_deletes="{{ params.d }}",
        dry_run="{{ params.dry }}")
    op.render_template_fields({"params": {"n": 3, "m": "null", "age": "", "d": " 7 ",
                                          "dry": "True"}})
    op.convert_arguments(rendered=True)
    assert (op.retain_min, op.retain_max, op.older_than, op.max_deletes, op.dry_run) == (
        3, None, None, 7, True)
    op = LakeformatCompactOperator(task_id="x", table="db.t", full="{{ params.full }}",
                                   partitions="{{ params.p }}", where="{{ params.w }}",
                                   memory_budget="{{ params.b }}", engine="{{ params.e }}")
    op.render_template_fields({"params": {"full": False, "p": [{"dt": "2024-06-01"}],
                                          "w": None, "b": "512 mb", "e": "Spark"}})
    op.convert_arguments(rendered=True)
    assert (op.full, op.partitions, op.where, op.memory_budget, op.engine) == (
        False, [{"dt": "2024-06-01"}], None, "512 mb", "spark")
    op = LakeformatRollbackOperator(task_id="x", table="db.t", to="{{ params.to }}")
    op.render_template_fields({"params": {"to": "12"}})
    op.convert_arguments(rendered=True)
    assert op.to == 12
    with pytest.raises(ValueError, match="retain_max \\(1\\) must be >= retain_min \\(2\\)"):
        op = LakeformatExpireSnapshotsOperator(task_id="x", table="db.t", retain_min="2",
                                               retain_max="{{ params.m }}")
        op.retain_max = "1"  # as rendered
        op.convert_arguments(rendered=True)
