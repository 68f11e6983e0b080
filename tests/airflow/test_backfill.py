"""The on-call backfill DAG through `dag.test()` against the moto S3 server: days land in date
order, a failed day stops the days after it and a re-run resumes there, a new run of a range
skips the days that landed, `reingest` lands them again, an earlier day is refused once a later
one landed on a table merged in commit order, and the form's checks."""

from __future__ import annotations

import datetime as dt
import io
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from airflow.sdk.exceptions import AirflowFailException

import lakeformat as lf
from lakeformat_airflow.operators.backfill import LakeformatBackfillOperator, day_identifier
from tests.support.s3server import boto3_client

ROOT = Path(__file__).resolve().parents[2]
DAG_FILE, DAG_ID = "lakeformat_backfill.py", "lakeformat_backfill"
RUN_DAY = dt.datetime(2025, 3, 1, tzinfo=dt.UTC)
_RUNS = iter(range(1000))
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()),
                    ("dt", pa.string())])


def _run_date() -> dt.datetime:
    """A logical date no other run of the backfill DAG in this module has."""
    return RUN_DAY + dt.timedelta(days=next(_RUNS))


class Lake:
    """A warehouse on the moto server with a landing folder beside it."""

    def __init__(self, s3_conn: tuple[str, dict[str, str]]):
        self.uri, self.options = s3_conn
        self.bucket = self.uri.split("/")[2]
        self.s3 = boto3_client(self.options["s3.endpoint"])
        self.catalog = lf.Catalog(self.uri, options=self.options)
        self.catalog.create_database("db", exist_ok=True)
        self.source = f"s3://{self.bucket}/landing/dt={{date}}/*.parquet"

    def land(self, day: str, ids: list[int], v: str) -> None:
        buf = io.BytesIO()
        pq.write_table(pa.table({"id": ids, "v": [v] * len(ids), "dt": [day] * len(ids)}),
                       buf)
        self.s3.put_object(Bucket=self.bucket, Key=f"landing/dt={day}/part-0.parquet",
                           Body=buf.getvalue())

    def conf(self, table: str, start: str, end: str, **more: object) -> dict[str, object]:
        return {"table": table, "source": self.source, "start": start, "end": end,
                "mode": "append", "format": "", "merge_schema": False, "reingest": False,
                **more}

    def rows(self, table: str) -> list[tuple]:
        t = self.catalog.get_table(table)
        return sorted((r["id"], r["v"], r["dt"]) for r in t.read().to_pylist())

    def landed(self, table: str) -> list[tuple[str, str]]:
        """(day, commit kind) of every snapshot, oldest first."""
        return [(_day_of(s.commit_identifier) if s.commit_user.startswith("airflow:") else "-",
                 s.commit_kind) for s in self.catalog.get_table(table).snapshots()]


def _day_of(identifier: int) -> str:
    return dt.datetime.fromtimestamp(identifier / 1000, dt.UTC).date().isoformat()


def _tries(run) -> dict[str, tuple[str, int]]:
    from airflow.utils.session import create_session

    with create_session() as session:
        return {t.task_id: (str(t.state), t.try_number)
                for t in run.get_task_instances(session=session)}


@pytest.fixture()
def lake(s3_conn) -> Lake:
    return Lake(s3_conn)


def _keyed(lake: Lake, name: str = "db.keyed", **options: str) -> lf.Table:
    """A deduplicate table keyed by id alone: a later day's row must win a key."""
    return lake.catalog.create_table(name, SCHEMA, primary_keys=["id"],
                                     options={"bucket": "1", **options})


def test_missing_middle_day_stops_the_later_days_and_a_rerun_resumes_there(lake, dags):
    _keyed(lake)
    lake.land("2024-05-01", [1, 2], "day1")
    lake.land("2024-05-03", [2, 3], "day3")  # day 2 is missing
    dag = dags.load(DAG_FILE, DAG_ID)
    when, conf = _run_date(), lake.conf("db.keyed", "2024-05-01", "2024-05-03")

    run = dag.test(logical_date=when, run_after=when, run_conf=conf)
    assert run.state == "failed"
    assert lake.landed("db.keyed") == [("2024-05-01", "APPEND")]  # day 3 did not run
    assert _tries(run)["ingest"] == ("failed", 1)  # a missing file is not worth a retry
    assert lake.rows("db.keyed") == [(1, "day1", "2024-05-01"), (2, "day1", "2024-05-01")]
    with pytest.raises(AirflowFailException) as failed:
        _execute(lake, "db.keyed", "2024-05-01", "2024-05-03")
    assert "day 2024-05-02" in str(failed.value) and "(2024-05-03)" in str(failed.value)
    assert "resumes at 2024-05-02" in str(failed.value)

    lake.land("2024-05-02", [2, 3], "day2")
    # the same run (same run id), its task cleared and run again
    run = dag.test(logical_date=when, run_after=when, run_conf=conf)
    assert run.state == "success", dags.states(run)
    assert lake.landed("db.keyed") == [("2024-05-01", "APPEND"), ("2024-05-02", "APPEND"),
                                       ("2024-05-03", "APPEND")]
    # day 3 landed after day 2: its rows win ids 2 and 3
    assert lake.rows("db.keyed") == [(1, "day1", "2024-05-01"), (2, "day3", "2024-05-03"),
                                     (3, "day3", "2024-05-03")]
    result = dags.xcom(run, "ingest")
    assert [(d["day"], d["status"]) for d in result["days"]] == [
        ("2024-05-01", "skipped"), ("2024-05-02", "landed"), ("2024-05-03", "landed")]
    assert result["landed"] == ["2024-05-02", "2024-05-03"]
    assert result["skipped"] == ["2024-05-01"]


def test_an_earlier_day_after_a_later_one_landed_is_refused(lake, dags):
    t = _keyed(lake)
    for day, v in (("2024-05-02", "day2"), ("2024-05-03", "day3")):
        lake.land(day, [1, 2], v)
    dag = dags.load(DAG_FILE, DAG_ID)
    run = dag.test(logical_date=_run_date(),
                   run_conf=lake.conf("db.keyed", "2024-05-03", "2024-05-03"))
    assert run.state == "success", dags.states(run)
    before = (lake.landed("db.keyed"), lake.rows("db.keyed"), sorted(
        f["file_name"] for f in t.refresh().files()))

    # a later fill-in of day 2 (day 3 is skipped: it landed) would make day 2's rows win
    run = dag.test(logical_date=_run_date(),
                   run_conf=lake.conf("db.keyed", "2024-05-02", "2024-05-03"))
    assert run.state == "failed"
    assert _tries(run)["ingest"] == ("failed", 1)  # refused, not retried
    assert (lake.landed("db.keyed"), lake.rows("db.keyed"), sorted(
        f["file_name"] for f in t.refresh().files())) == before

    with pytest.raises(AirflowFailException) as refused:
        _execute(lake, "db.keyed", "2024-05-02", "2024-05-03")
    message = str(refused.value)
    assert "2024-05-03 already landed" in message
    assert "reingest" in message and "sequence.field" in message
    assert "Re-run the range from 2024-05-02" in message

    # the first way out: re-run the range with reingest, day 3 lands again after day 2
    run = dag.test(logical_date=_run_date(), run_conf=lake.conf(
        "db.keyed", "2024-05-02", "2024-05-03", reingest=True))
    assert run.state == "success", dags.states(run)
    assert lake.landed("db.keyed") == [("2024-05-03", "APPEND"), ("2024-05-02", "APPEND"),
                                       ("2024-05-03", "APPEND")]
    assert lake.rows("db.keyed") == [(1, "day3", "2024-05-03"), (2, "day3", "2024-05-03")]


def test_a_sequence_field_lets_an_earlier_day_land_later(lake, dags):
    _keyed(lake, "db.ordered", **{"sequence.field": "dt"})
    for day, v in (("2024-05-02", "day2"), ("2024-05-03", "day3")):
        lake.land(day, [1], v)
    dag = dags.load(DAG_FILE, DAG_ID)
    for start in ("2024-05-03", "2024-05-02"):
        run = dag.test(logical_date=_run_date(),
                       run_conf=lake.conf("db.ordered", start, "2024-05-03"))
        assert run.state == "success", dags.states(run)
    assert lake.landed("db.ordered") == [("2024-05-03", "APPEND"), ("2024-05-02", "APPEND")]
    assert lake.rows("db.ordered") == [(1, "day3", "2024-05-03")]  # the data decides


def test_a_new_run_skips_landed_days_and_reingest_lands_them_again(lake, dags):
    lake.catalog.create_table("db.events", SCHEMA)  # append table
    lake.land("2024-05-01", [1, 2], "day1")
    lake.land("2024-05-02", [3], "day2")
    dag = dags.load(DAG_FILE, DAG_ID)
    conf = lake.conf("db.events", "2024-05-01", "2024-05-02")
    first = dag.test(logical_date=_run_date(), run_conf=conf)
    assert first.state == "success", dags.states(first)
    rows = lake.rows("db.events")
    assert rows == [(1, "day1", "2024-05-01"), (2, "day1", "2024-05-01"),
                    (3, "day2", "2024-05-02")]

    again = dag.test(logical_date=_run_date(), run_conf=conf)  # a new run of the same range
    assert again.state == "success", dags.states(again)
    assert lake.rows("db.events") == rows  # no row twice
    assert len(lake.landed("db.events")) == 2
    result = dags.xcom(again, "ingest")
    assert result["skipped"] == ["2024-05-01", "2024-05-02"] and result["landed"] == []
    landed_first = dags.xcom(first, "ingest")["days"]
    assert [d["snapshot_id"] for d in result["days"]] == [d["snapshot_id"] for d in landed_first]

    # reingest (the source was corrected) lands each day again, and once per run
    lake.land("2024-05-02", [4], "day2-fixed")
    when = _run_date()
    reingest = lake.conf("db.events", "2024-05-02", "2024-05-02", reingest=True)
    fixed = dag.test(logical_date=when, run_after=when, run_conf=reingest)
    assert fixed.state == "success", dags.states(fixed)
    assert lake.landed("db.events")[-1] == ("2024-05-02", "APPEND")
    assert (4, "day2-fixed", "2024-05-02") in lake.rows("db.events")
    retried = dag.test(logical_date=when, run_after=when, run_conf=reingest)
    assert retried.state == "success", dags.states(retried)
    assert len(lake.landed("db.events")) == 3  # the same run's retry found its commit
    assert dags.xcom(retried, "ingest")["skipped"] == ["2024-05-02"]
    # a later reingest run (corrected once more) lands the day again
    later = _run_date()
    again = dag.test(logical_date=later, run_after=later, run_conf=reingest)
    assert again.state == "success", dags.states(again)
    assert dags.xcom(again, "ingest")["landed"] == ["2024-05-02"]
    assert len(lake.landed("db.events")) == 4


def test_each_stream_of_a_widened_table_has_its_own_landed_days(lake, dags):
    """A partial-update table widened by two streams: backfilling one stream's days does not
    make the other stream's days look landed, and each stream's days land once."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("amount", pa.int64()),
                        ("paid", pa.int64())])
    lake.catalog.create_table("db.wide", schema, primary_keys=["id"],
                              options={"bucket": "1", "merge-engine": "partial-update"})
    for stream, column in (("orders", "amount"), ("payments", "paid")):
        for day, value in (("2024-05-01", 10), ("2024-05-02", 20)):
            buf = io.BytesIO()
            pq.write_table(pa.table({"id": [1], column: [value]}), buf)
            lake.s3.put_object(Bucket=lake.bucket, Key=f"landing/{stream}/dt={day}/p.parquet",
                               Body=buf.getvalue())
    dag = dags.load(DAG_FILE, DAG_ID)
    for stream in ("orders", "payments", "orders"):  # orders twice: the second run skips
        source = f"s3://{lake.bucket}/landing/{stream}/dt={{date}}/*.parquet"
        run = dag.test(logical_date=_run_date(), run_conf=lake.conf(
            "db.wide", "2024-05-01", "2024-05-02", source=source))
        assert run.state == "success", dags.states(run)
    result = dags.xcom(run, "ingest")
    assert result["landed"] == [] and result["skipped"] == ["2024-05-01", "2024-05-02"]
    assert len(lake.landed("db.wide")) == 4  # two days of each stream, each once
    rows = lake.catalog.get_table("db.wide").read().to_pylist()
    assert rows == [{"id": 1, "amount": 20, "paid": 20}]


def test_expired_history_on_an_append_table_fails_closed(lake, dags):
    t = lake.catalog.create_table("db.sums", SCHEMA)
    for i in range(3):
        t.write(pa.table({"id": [i], "v": ["old"], "dt": ["2024-04-01"]}, schema=SCHEMA))
    t.expire_snapshots(retain_min=1, retain_max=1)
    lake.land("2024-05-01", [1], "day1")
    before = lake.rows("db.sums")
    with pytest.raises(AirflowFailException, match="snapshots before 3 were expired"):
        _execute(lake, "db.sums", "2024-05-01", "2024-05-01")
    assert lake.rows("db.sums") == before
    # once checked, reingest ingests the day
    result = _execute(lake, "db.sums", "2024-05-01", "2024-05-01", reingest=True)
    assert result["landed"] == ["2024-05-01"]
    assert lake.rows("db.sums") == [*before[:1], (1, "day1", "2024-05-01"), *before[1:]]


def test_source_defaults_from_the_landing_environment(monkeypatch):
    from airflow.dag_processing.dagbag import DagBag

    monkeypatch.setenv("LAKEFORMAT_LANDING", "s3://elsewhere/landed/")
    bag = DagBag(dag_folder=ROOT / "dags" / DAG_FILE, safe_mode=False)
    assert not bag.import_errors, bag.import_errors
    assert bag.dags[DAG_ID].params["source"] == "s3://elsewhere/landed/orders/dt={date}/*.parquet"
    monkeypatch.delenv("LAKEFORMAT_LANDING")
    bag = DagBag(dag_folder=ROOT / "dags" / DAG_FILE, safe_mode=False)
    assert bag.dags[DAG_ID].params["source"] == \
        "s3://lakeformat/landing/orders/dt={date}/*.parquet"


def test_overwrite_replaces_each_days_partition(lake, dags):
    t = lake.catalog.create_table("db.orders", SCHEMA, primary_keys=["dt", "id"],
                                  partition_keys=["dt"], options={"bucket": "2"})
    t.write(pa.table({"id": [1, 2, 3], "v": ["stale"] * 3, "dt": ["2024-05-02"] * 3},
                     schema=SCHEMA))
    for day, ids in (("2024-05-01", [1, 2]), ("2024-05-02", [1]), ("2024-05-03", [4])):
        lake.land(day, ids, "fixed")
    dag = dags.load(DAG_FILE, DAG_ID)
    run = dag.test(logical_date=_run_date(), run_conf=lake.conf(
        "db.orders", "2024-05-01", "2024-05-03", mode="overwrite"))
    assert run.state == "success", dags.states(run)
    # overwrite replaced day 2's stale partition with its file: ids 2 and 3 are gone
    assert lake.rows("db.orders") == [(1, "fixed", "2024-05-01"), (1, "fixed", "2024-05-02"),
                                      (2, "fixed", "2024-05-01"), (4, "fixed", "2024-05-03")]
    result = dags.xcom(run, "ingest")
    assert [d["commit_identifier"] for d in result["days"]] == [
        day_identifier(dt.date(2024, 5, d)) for d in (1, 2, 3)]
    assert lake.landed("db.orders") == [("-", "APPEND"), ("2024-05-01", "OVERWRITE"),
                                           ("2024-05-02", "OVERWRITE"),
                                           ("2024-05-03", "OVERWRITE")]


@pytest.mark.parametrize("conf", [
    {"start": "2024-05-03", "end": "2024-05-01"},
    {"start": "2023-01-01", "end": "2024-05-01"},
    {"start": "2024-05-01", "end": "2024-05-01", "source": "landing/no-placeholder.parquet"},
    {"start": "2024-05-01", "end": "2024-05-01", "mode": "overwrite", "table": "db.wide"},
    {"start": "2024-05-01", "end": "2024-05-01", "mode": "overwrite", "table": "db.flat"},
], ids=["reversed", "too-long", "no-placeholder", "overwrite-partial-update",
        "overwrite-unpartitioned"])
def test_the_form_is_checked_before_anything_is_written(lake, dags, conf):
    lake.catalog.create_table("db.wide", SCHEMA, primary_keys=["dt", "id"],
                              partition_keys=["dt"],
                              options={"bucket": "1", "merge-engine": "partial-update"})
    lake.catalog.create_table("db.flat", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    lake.land("2024-05-01", [1], "day1")
    dag = dags.load(DAG_FILE, DAG_ID)
    run = dag.test(logical_date=_run_date(), run_conf={**lake.conf("db.wide", "", ""), **conf})
    assert run.state == "failed"
    assert _tries(run)["ingest"] == ("failed", 1)
    for name in ("db.wide", "db.flat"):
        assert lake.catalog.get_table(name).snapshots() == []


def _execute(lake: Lake, table: str, start: str, end: str, reingest: bool = False) -> dict:
    """The DAG's operator run once outside a DAG run, for the text of its refusals."""
    op = LakeformatBackfillOperator(task_id="ingest", table=table, source=lake.source,
                                    start=start, end=end, reingest=reingest)
    context = {"ti": SimpleNamespace(dag_id=DAG_ID, task_id="ingest", map_index=-1),
               "run_id": "manual__direct", "dag_run": SimpleNamespace(run_after=RUN_DAY)}
    return op.execute(context)
