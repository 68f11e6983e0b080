"""Due maintenance through Airflow: `lakeformat_maintenance` over a warehouse of six tables of
which two carry debt (only their actions run; the others run nothing, their reasons logged and
in the `tables` XCom; the health after equals a fresh `Table.health()`), a broken table beside
a healthy one, a bad threshold, `lakeformat_on_debt` run as `dag.test()` runs it (tables from
the run's conf), the tables a run takes from its triggering events, and `engine="auto"`.

All on the moto S3 server: the actions list, rewrite and delete files there (compaction,
expiry), which is what differs between stores."""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace

import pyarrow as pa
import pytest

import lakeformat as lf

DAY = dt.datetime(2024, 5, 1, tzinfo=dt.UTC)
SCHEMA = pa.schema([pa.field("dt", pa.string(), nullable=False),
                    pa.field("id", pa.int64(), nullable=False), ("v", pa.int64())])
#: expiry is due on a table keeping one snapshot of any age
KEEP_ONE = {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1",
            "snapshot.time-retained": "1 ms"}


def _table(catalog: lf.Catalog, name: str, writes: int, options: dict[str, str] | None = None,
           append: bool = False) -> lf.Table:
    """`name` with `writes` small commits to one partition and bucket: each is a sorted run."""
    catalog.create_database(name.split(".")[0], exist_ok=True)
    t = catalog.create_table(name, SCHEMA, primary_keys=[] if append else ["dt", "id"],
                             partition_keys=["dt"],
                             options={"bucket": "1", **({"bucket-key": "id"} if append else {}),
                                      **(options or {})})
    for i in range(writes):
        t.write(pa.table({"dt": ["2024-01-01"] * 3, "id": [i, i + 1, 100 + i],
                          "v": [i, i, i]}, schema=SCHEMA))
    return t


def _snapshot_ids(table: lf.Table) -> list[int]:
    return [s.id for s in table.snapshots()]


def _by_table(dags, run, count: int) -> dict[str, dict]:
    results = [dags.xcom(run, "maintain", i) for i in range(count)]
    return {r["table"]: r for r in results}


def test_maintenance_runs_only_the_due_work(s3_conn, dags):
    uri, options = s3_conn
    catalog = lf.Catalog(uri, options=options)
    # two tables carry debt: 6 sorted runs in a bucket (> num-sorted-run.compaction-trigger
    # 5), and 3 snapshots where the table keeps one
    hot = _table(catalog, "db.hot", 6)
    old = _table(catalog, "sales.old", 3, KEEP_ONE)
    # four have nothing due: few runs, snapshots the policy keeps, one schema, few manifests
    calm = {"db.calm": _table(catalog, "db.calm", 2),
            "db.logs": _table(catalog, "db.logs", 2, append=True),
            "sales.calm": _table(catalog, "sales.calm", 1),
            "other.t": _table(catalog, "other.t", 3)}
    assert {t.name for t in (hot, old)} == {n for n in ("db.hot", "sales.old")}
    rows = hot.read().sort_by([("id", "ascending")])
    untouched = {name: (_snapshot_ids(t), sorted(f["file_name"] for f in t.files()))
                 for name, t in calm.items()}

    dag = dags.load("lakeformat_maintenance.py", "lakeformat_maintenance")
    run = dag.test(logical_date=DAY, run_conf={"tables": "*.*", "partition_idle_time": "0 s",
                                               "engine": "auto"})
    states = dags.states(run)
    assert run.state == "success", states
    # one mapped task per table with due work, none for the others
    assert sorted(k for k in states if k.startswith("maintain")) == ["maintain[0]",
                                                                      "maintain[1]"], states
    due = dags.xcom(run, "due_actions")
    assert sorted(w["table"] for w in due) == ["db.hot", "sales.old"]
    kinds = {w["table"]: [a["kind"] for a in w["actions"]] for w in due}
    assert "compact" in kinds["db.hot"] and "expire-snapshots" in kinds["sales.old"], kinds
    examined = dags.xcom(run, "due_actions", key="tables")
    assert sorted(examined) == sorted(["db.hot", "sales.old", *calm])
    for name in calm:  # nothing due, and why: each rule's reason
        assert examined[name]["due"] == [] and examined[name]["errors"] == [], examined[name]
        assert examined[name]["not_due"], name

    from airflow.utils.session import create_session

    with create_session() as session:  # each mapped task is labelled with its table
        labels = {ti.rendered_map_index for ti in run.get_task_instances(session=session)
                  if ti.task_id == "maintain"}
    assert labels == {"db.hot", "sales.old"}
    results = _by_table(dags, run, 2)
    compact = next(a for a in results["db.hot"]["actions"] if a["action"]["kind"] == "compact")
    assert compact["engine"] == "local"  # a few KiB: far below the Spark threshold
    assert compact["health_before"]["max_sorted_runs"] == 6
    assert compact["health_after"]["max_sorted_runs"] < 6
    assert compact["result"]["snapshot_ids"], compact["result"]
    expire = next(a for a in results["sales.old"]["actions"]
                  if a["action"]["kind"] == "expire-snapshots")
    assert (expire["health_before"]["snapshots"], expire["health_after"]["snapshots"]) == (3, 1)
    for name, result in results.items():
        fresh = catalog.get_table(name).health()
        assert result["health_after"] == fresh.summary(), name  # what a fresh health() says
        assert result["health_after"]["score"] >= result["health_before"]["score"], result
        assert result["skipped"] == [], result
    assert catalog.get_table("db.hot").read().sort_by([("id", "ascending")]).equals(rows)
    assert len(catalog.get_table("sales.old").snapshots()) == 1
    for name, before in untouched.items():  # nothing ran on them
        t = catalog.get_table(name)
        assert (_snapshot_ids(t), sorted(f["file_name"] for f in t.files())) == before, name

    # the next night: nothing is due any more, so nothing runs
    run = dag.test(logical_date=DAY + dt.timedelta(days=1),
                   run_conf={"tables": "db.hot,sales.old", "partition_idle_time": "0 s",
                             "engine": "auto"})
    states = dags.states(run)
    assert run.state == "success", states
    assert dags.xcom(run, "due_actions") == []
    assert states.get("maintain") in (None, "skipped"), states


def test_a_broken_table_is_reported_and_the_others_maintained(s3_conn, dags):
    uri, options = s3_conn
    catalog = lf.Catalog(uri, options=options)
    _table(catalog, "db.hot", 6)
    broken = _table(catalog, "db.broken", 2)
    manifests = broken.file_io.join(broken.path, "manifest")
    for status in broken.file_io.list_status(manifests):  # every manifest unreadable
        broken.file_io.delete(status.path)

    dag = dags.load("lakeformat_maintenance.py", "lakeformat_maintenance")
    run = dag.test(logical_date=DAY + dt.timedelta(days=5),
                   run_conf={"tables": "db.*", "partition_idle_time": "0 s", "engine": "local"})
    states = dags.states(run)
    assert run.state == "success", states
    assert [w["table"] for w in dags.xcom(run, "due_actions")] == ["db.hot"]
    examined = dags.xcom(run, "due_actions", key="tables")
    assert examined.get("db.broken") is None or examined["db.broken"]["errors"], examined
    assert dags.xcom(run, "maintain", 0)["table"] == "db.hot"
    assert catalog.get_table("db.hot").health().max_sorted_runs < 6


def test_maintenance_expires_tags_past_their_retention(s3_conn, dags):
    """Tag expiry is a due action (rule `tag-expiry`): the tags past their `time_retained` go
    before snapshot expiry, as Java's commits run them; a tag without retention stays."""
    uri, options = s3_conn
    catalog = lf.Catalog(uri, options=options)
    t = _table(catalog, "tagged.t", 2, KEEP_ONE)
    t.create_tag("hourly", 1, time_retained="1 ms")
    t.create_tag("keep", 2)
    kept_rows = t.read(tag="keep").sort_by([("id", "ascending")])
    dag = dags.load("lakeformat_maintenance.py", "lakeformat_maintenance")
    run = dag.test(logical_date=DAY + dt.timedelta(days=7),
                   run_conf={"tables": "tagged.*", "partition_idle_time": "0 s",
                             "engine": "local"})
    assert run.state == "success", dags.states(run)
    [due] = dags.xcom(run, "due_actions")
    kinds = [a["kind"] for a in due["actions"]]
    assert kinds.index("expire-tags") < kinds.index("expire-snapshots"), kinds
    done = {a["action"]["kind"]: a for a in dags.xcom(run, "maintain", 0)["actions"]}
    assert done["expire-tags"]["result"]["tags_deleted"] == ["hourly"]
    assert done["expire-tags"]["action"]["rule"] == "tag-expiry"
    t = catalog.get_table("tagged.t")
    assert [x.name for x in t.list_tags()] == ["keep"] and _snapshot_ids(t) == [2]
    assert t.read(tag="keep").sort_by([("id", "ascending")]).equals(kept_rows)
    examined = dags.xcom(run, "due_actions", key="tables")["tagged.t"]
    assert "expire-tags" in examined["due"]


def test_an_unknown_threshold_fails_the_task_naming_it(s3_conn, dags):
    uri, options = s3_conn
    _table(lf.Catalog(uri, options=options), "db.hot", 2)
    dag = dags.load("lakeformat_maintenance.py", "lakeformat_maintenance")
    run = dag.test(logical_date=DAY + dt.timedelta(days=6),
                   run_conf={"tables": "db.*", "partition_idle_time": "0 s", "engine": "local",
                             "thresholds": {"num-sorted-run.trigger": 3}})
    assert run.state == "failed"
    assert dags.states(run)["due_actions"] == "failed"

    from airflow.sdk.exceptions import AirflowFailException

    from lakeformat_airflow.operators import LakeformatDueActionsOperator

    op = LakeformatDueActionsOperator(task_id="due", pattern="db.*",
                                      thresholds={"num-sorted-run.trigger": 3})
    with pytest.raises(AirflowFailException, match="num-sorted-run.trigger"):
        op.execute({})
    with pytest.raises(lf.errors.InvalidArgumentError, match="thresholds"):
        LakeformatDueActionsOperator(task_id="due", thresholds=["not", "a", "dict"])


def test_on_debt_dag_compacts_the_tables_of_its_conf(s3_conn, dags):
    """`dag.test()` runs have no triggering events: the tables come from the run's conf."""
    uri, options = s3_conn
    catalog = lf.Catalog(uri, options=options)
    hot = _table(catalog, "db.hot", 7)
    other = _table(catalog, "db.other", 7)  # in debt too, but not this run's
    rows = hot.read().sort_by([("id", "ascending")])
    other_snapshots = _snapshot_ids(other)

    dag = dags.load("lakeformat_on_debt.py", "lakeformat_on_debt")
    run = dag.test(logical_date=DAY, run_conf={"tables": "db.hot"})
    states = dags.states(run)
    assert run.state == "success", states
    assert [w["table"] for w in dags.xcom(run, "due_actions")] == ["db.hot"]
    result = dags.xcom(run, "maintain", 0)
    kinds = [a["action"]["kind"] for a in result["actions"]]
    assert "compact" in kinds or "full-compact" in kinds, result
    assert result["health_before"]["max_sorted_runs"] == 7
    after = catalog.get_table("db.hot")
    assert after.latest_snapshot().commit_kind == "COMPACT"
    assert after.health().max_sorted_runs < 7 and result["health_after"] == after.health().summary()
    assert after.read().sort_by([("id", "ascending")]).equals(rows)
    assert _snapshot_ids(catalog.get_table("db.other")) == other_snapshots


def test_a_run_reads_every_triggering_event():
    from lakeformat_airflow.operators.due import event_tables

    def event(payload):
        return SimpleNamespace(extra={"from_trigger": True, "payload": payload})

    events = {"lakeformat_debt": [event({"table": "db.a"}), event({"table": "db.b"}),
                                  event({"table": "db.a"})],
              "other": [event({"table": "shop.c"}), event({"no": "table"}),
                        SimpleNamespace(extra={})]}
    assert event_tables({"triggering_asset_events": events}) == ["db.a", "db.b", "shop.c"]
    assert event_tables({}) == []


def test_engine_auto_picks_spark_above_the_threshold(s3_conn, monkeypatch, dags):
    from lakeformat.health import DueAction
    from lakeformat_airflow.operators import LakeformatRunDueActionsOperator

    def op(**kwargs):
        return LakeformatRunDueActionsOperator(task_id="m", table="db.t",
                                               actions=[{"kind": "compact"}], **kwargs)

    def action(kind: str, size: int, engine: str = "local") -> DueAction:
        return DueAction(table="db.t", kind=kind, rule="r", reason="why", work_bytes=size,
                         engine=engine)

    # by default the table's lakeformat.compaction.spark-threshold (2 GiB) decides: the
    # library's due compaction says where it should run
    uri, options = s3_conn
    catalog = lf.Catalog(uri, options=options)
    big = _table(catalog, "db.big", 6, {"lakeformat.compaction.spark-threshold": "1 kb"})
    small = _table(catalog, "db.small", 6)
    [due_big] = [a for a in big.maintenance_due().actions if a.kind == "compact"]
    [due_small] = [a for a in small.maintenance_due().actions if a.kind == "compact"]
    auto = op()
    assert auto.engine == "auto" and auto.spark_threshold is None
    assert auto.engine_for(due_small) == "local"
    # no spark_default connection: in the task's process, with a warning
    assert auto.engine_for(due_big) == "local"
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", dags.conn_json("spark", "local[1]"))
    assert auto.engine_for(due_big) == "spark" and auto.engine_for(due_small) == "local"
    gib = 1024 ** 3
    assert auto.engine_for(action("full-compact", 2 * gib, "spark")) == "spark"
    assert auto.engine_for(action("expire-snapshots", 5 * gib, "spark")) == "local"
    # the operator's spark_threshold, when given, decides instead
    mib10 = op(spark_threshold="10 mb")
    assert mib10.engine_for(action("compact", 10 * 1024 ** 2)) == "spark"
    assert mib10.engine_for(action("compact", 10 * 1024 ** 2 - 1, "spark")) == "local"
    assert op(engine="spark").engine_for(action("compact", 1)) == "spark"
    assert op(engine="local").engine_for(action("compact", 5 * gib, "spark")) == "local"
    with pytest.raises(lf.errors.InvalidArgumentError, match="engine"):
        op(engine="gpu")
    with pytest.raises(lf.errors.InvalidArgumentError, match="spark_threshold"):
        op(spark_threshold="lots")
    with pytest.raises(lf.errors.InvalidArgumentError, match="actions"):
        LakeformatRunDueActionsOperator(task_id="m", table="db.t", actions=[{"no": "kind"}])


def test_an_action_a_writer_already_did_is_skipped_with_the_reason(s3_conn):
    """The runner checks each action again before running it: a compaction listed at the
    night's start that a writer's own compaction did first is not run again."""
    from lakeformat_airflow.operators import LakeformatRunDueActionsOperator

    uri, options = s3_conn
    hot = _table(lf.Catalog(uri, options=options), "db.hot", 6)
    listed = [a.to_dict() for a in hot.maintenance_due().actions]
    assert [a["kind"] for a in listed] == ["compact"]
    hot.compact(full=True)  # the writer's
    op = LakeformatRunDueActionsOperator(task_id="maintain", table="db.hot", actions=listed)
    ti = SimpleNamespace(dag_id="d", task_id="maintain", map_index=0)
    result = op.execute({"ti": ti, "logical_date": DAY})
    assert result["actions"] == [] and [s["kind"] for s in result["skipped"]] == ["compact"]
    assert result["skipped"][0]["reason"].startswith(
        "no longer due: num-sorted-run.compaction-trigger: "), result["skipped"]
    assert result["health_before"] == result["health_after"] == hot.health().summary()
