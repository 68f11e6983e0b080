import datetime as dt

import pyarrow as pa
import pyarrow.parquet as pq

import lakeformat as lf


def test_ingest_runs(s3_conn, tmp_path, dags):
    uri, options = s3_conn
    cat = lf.Catalog(uri, options=options)
    cat.create_database("db")
    cat.create_table("db.t", pa.schema([pa.field("id", pa.int64(), nullable=False),
                                        ("v", pa.string())]), primary_keys=["id"],
                     options={"bucket": "2"})
    pq.write_table(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}), tmp_path / "a.parquet")
    dag = dags.load("lf_test_ingest.py", "lf_test_ingest")
    run = dag.test(logical_date=dt.datetime(2024, 1, 2, tzinfo=dt.UTC),
                   run_conf={"table": "db.t", "source": str(tmp_path / "*.parquet")})
    assert run.state == "success", dags.states(run)
    assert cat.get_table("db.t").read().sort_by("id").to_pydict() == {
        "id": [1, 2, 3], "v": ["a", "b", "c"]}
    print(dags.xcom(run, "ingest"))
