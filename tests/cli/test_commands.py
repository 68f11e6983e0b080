"""Every table and catalog command of the `lakeformat` CLI, for people (aligned tables with a
header row, ISO times, human sizes) and with --json (one envelope, snake_case keys), --json
accepted before or after the command.

The commands run through `lakeformat.cli.main` in this process (`lakeformat_main`, see
conftest.py): what is checked here is each command's parsing and output, which is the same in
the installed script, whose start-up was most of this module's time. The script itself runs
here for --version and --help, and in test_errors.py, test_argument_errors.py,
test_options.py (exit statuses, one-line errors, environment, warnings), in test_read.py and
test_where.py (its output equals `main`'s), and in README.md's CLI session
(tests/readme/test_readme_blocks.py: create, write, delete, read, describe, alter, tag,
compact, snapshots, history, files, expire, drop through the script).
"""

from __future__ import annotations

import pytest

import lakeformat as lf
from tests.cli.conftest import (
    assert_one_line_error,
    assert_table,
    lakeformat_main,
    make_orders,
    normalize,
    orders,
    run_all,
    run_main,
)


@pytest.fixture(scope="module")
def wh(tmp_path_factory) -> str:
    """A warehouse with db.t: two commits by `loader` over two partitions, and a tag."""
    warehouse = str(tmp_path_factory.mktemp("cmd") / "wh")
    t = make_orders(warehouse, bucket="1")
    t.write(orders(3, "2024-01-01"), commit_user="loader")
    t.write(orders(2, "2024-01-02", start=10), commit_user="loader")
    t.write(orders(1, "2024-01-01", start=20), commit_user="loader")
    t.create_tag("first", 1)
    return warehouse


def test_version_and_help():
    v, h = run_all(["--version"], ["--help"])
    assert v.ok().out == f"lakeformat {lf.__version__}\n"
    assert '"lakeformat_version"' in h.ok().out and "IS [NOT] NULL" in h.out


def test_json_before_or_after_the_command_is_the_same_envelope(wh):
    before, after, plain = run_main(["--json", "--warehouse", wh, "snapshots", "db.t"],
                                   ["--warehouse", wh, "snapshots", "db.t", "--json"],
                                   ["--warehouse", wh, "snapshots", "db.t"])
    assert before.ok().out == after.ok().out
    snaps = before.json()
    assert [s["id"] for s in snaps] == [1, 2, 3]
    first = snaps[0]
    assert first["commit_user"] == "loader" and first["commit_kind"] == "APPEND"
    assert first["total_record_count"] == 3 and isinstance(first["time_millis"], int)
    assert first["time"].endswith("Z") and "T" in first["time"]
    assert all(k == k.lower() and "-" not in k for s in snaps for k in s)
    assert normalize(plain.ok().out) == (
        "ID  KIND    SCHEMA  RECORDS  DELTA  TIME                      COMMIT USER  IDENTIFIER\n"
        " 1  APPEND       0        3      3  2000-01-01T00:00:00.000Z  loader       batch\n"
        " 2  APPEND       0        5      2  2000-01-01T00:00:00.000Z  loader       batch\n"
        " 3  APPEND       0        6      1  2000-01-01T00:00:00.000Z  loader       batch\n")


def test_history_mirrors_table_history(wh):
    """`history` is `Table.history()`: newest first, `--limit`, a table and the JSON envelope
    (its `timestamp` as `time` + `time_millis`, like every instant of the CLI)."""
    full, limited, plain, bad = run_main(
        ["--warehouse", wh, "history", "db.t", "--json"],
        ["--warehouse", wh, "history", "db.t", "--limit", "2", "--json"],
        ["--warehouse", wh, "history", "db.t"],
        ["--warehouse", wh, "history", "db.t", "--limit", "0"])
    entries = full.ok().json()
    want = lf.Catalog(wh).get_table("db.t").history()
    assert [e["version"] for e in entries] == [w["version"] for w in want] == [3, 2, 1]
    for got, lib in zip(entries, want):
        assert got["time_millis"] == int(lib["timestamp"].timestamp() * 1000)
        assert got["time"].endswith("Z")
        assert {k: v for k, v in got.items() if k not in ("time", "time_millis")} == {
            k: v for k, v in lib.items() if k != "timestamp"}
    assert [e["version"] for e in limited.ok().json()] == [3, 2]
    rows = assert_table(plain.ok().out, ["VERSION", "TIME", "OPERATION", "KIND", "RECORDS",
                                         "DELTA", "SCHEMA", "COMMIT USER", "IDENTIFIER"])
    assert [(r[0], r[3], r[4], r[5], r[7], r[8]) for r in rows] == [
        ("3", "APPEND", "6", "1", "loader", "batch"), ("2", "APPEND", "5", "2", "loader", "batch"),
        ("1", "APPEND", "3", "3", "loader", "batch")]
    assert_one_line_error(bad, 2, "--limit")


def test_databases_tables_describe_schemas_tags(wh):
    dbs, dbs_j, tabs, tabs_j, desc, desc_j, sch, sch_j, tags, tags_j = run_main(
        ["--warehouse", wh, "list-databases"], ["--warehouse", wh, "--json", "list-databases"],
        ["--warehouse", wh, "list-tables", "db"], ["--warehouse", wh, "list-tables", "db",
                                                   "--json"],
        ["--warehouse", wh, "describe", "db.t"], ["--warehouse", wh, "describe", "db.t",
                                                  "--json"],
        ["--warehouse", wh, "schemas", "db.t"], ["--warehouse", wh, "schemas", "db.t", "--json"],
        ["--warehouse", wh, "tag", "db.t", "list"], ["--json", "--warehouse", wh, "tag", "db.t",
                                                     "list"])
    assert dbs.ok().out == "DATABASE\ndb\n" and dbs_j.json() == ["db"]
    assert tabs.ok().out == "TABLE\ndb.t\n" and tabs_j.json() == ["t"]

    assert normalize(desc.ok().out, WH=wh).split("\n\n") == [
        "table            db.t\n"
        "path             <WH>/db.db/t\n"
        "comment          -\n"
        "schema           0\n"
        "primary keys     dt, id\n"
        "partition keys   dt\n"
        "bucket           1\n"
        "merge engine     deduplicate\n"
        "latest snapshot  3 (APPEND, 2000-01-01T00:00:00.000Z, 6 records)\n"
        "data files       3 (" + desc.out.split("data files")[1].split("(")[1].split(")")[0]
        + ") in 2 partitions\n"
        "snapshots        3\n"
        "schema files     1\n"
        "tags             1",
        "ID  NAME   TYPE    NULLABLE  COMMENT\n"
        " 0  dt     STRING  no\n"
        " 1  id     BIGINT  no\n"
        " 2  name   STRING  yes\n"
        " 3  price  DOUBLE  yes",
        "OPTION  VALUE\n"
        "bucket  1\n"]
    d = desc_j.json()
    assert d["fields"][1] == {"id": 1, "name": "id", "type": "BIGINT", "nullable": False,
                              "comment": None}
    assert (d["primary_keys"], d["partition_keys"], d["bucket"], d["merge_engine"]) == (
        ["dt", "id"], ["dt"], "1", "deduplicate")
    assert d["latest_snapshot"]["id"] == 3 and d["latest_snapshot"]["total_record_count"] == 6
    assert d["latest_snapshot"]["time"].endswith("Z")
    assert (d["partitions"], d["snapshots"], d["schema_files"], d["tags"]) == (2, 3, 1, 1)
    assert d["data_files"] == 3 and d["data_bytes"] > 0  # two in dt=2024-01-01
    assert "KiB" in desc.out.split("data files")[1].splitlines()[0]

    rows = assert_table(normalize(sch.ok().out), ["ID", "TIME", "COLUMNS", "OPTIONS"])
    assert rows == [["0", "2000-01-01T00:00:00.000Z",
                     "dt STRING NOT NULL, id BIGINT NOT NULL, name STRING, price DOUBLE",
                     "bucket=1"]]
    s = sch_j.json()[0]
    assert s["partition_keys"] == ["dt"] and s["primary_keys"] == ["dt", "id"]
    assert s["highest_field_id"] == 3 and s["options"] == {"bucket": "1"}
    assert s["time"].endswith("Z") and isinstance(s["time_millis"], int)
    assert "partitionKeys" not in s and "timeMillis" not in s

    assert normalize(tags.ok().out) == (
        "NAME   SNAPSHOT  SCHEMA  COMMIT TIME               CREATED                   RETAINED\n"
        "first         1       0  2000-01-01T00:00:00.000Z  2000-01-01T00:00:00.000Z  -\n")
    tag = tags_j.json()[0]
    assert tag["name"] == "first" and tag["snapshot_id"] == 1
    assert tag["commit_time"].endswith("Z") and isinstance(tag["commit_time_millis"], int)


def test_files_worst_bucket_first_with_a_bucket_summary(wh):
    human, summary, js = run_main(["--warehouse", wh, "files", "db.t"],
                                 ["--warehouse", wh, "files", "db.t", "--summary"],
                                 ["--warehouse", wh, "files", "db.t", "--json"])
    listing, tail = human.ok().out.split("\n\n")
    rows = assert_table(normalize(listing), ["PARTITION", "BUCKET", "LEVEL", "ROWS", "SIZE",
                                             "SCHEMA", "CREATED", "FILE"])
    assert len(rows) == 3
    worst = js.json()["buckets"][0]
    assert worst["sorted_runs"] == 2 and worst["partition"] == {"dt": "2024-01-01"}
    assert rows[0][0] == rows[1][0] == "dt=2024-01-01" and rows[2][0] == "dt=2024-01-02"
    assert all(r[4].endswith(("B", "KiB")) for r in rows)
    head, table = tail.split("\n", 1)
    assert head.startswith("3 files, ")
    assert head.endswith("in 2 buckets; buckets by sorted runs:")
    sums = assert_table(table, ["PARTITION", "BUCKET", "SORTED RUNS", "FILES", "LEVEL-0",
                                "ROWS", "SIZE"])
    assert [(r[0], r[2], r[3]) for r in sums] == [("dt=2024-01-01", "2", "2"),
                                                  ("dt=2024-01-02", "1", "1")]
    assert summary.ok().out == table
    files = js.json()["files"]
    assert {f["partition"]["dt"] for f in files} == {"2024-01-01", "2024-01-02"}
    assert files[0]["creation_time"].endswith("Z") and files[0]["creation_time_millis"] > 0


def test_create_write_delete_alter_drop(tmp_path):
    wh = str(tmp_path / "wh")
    base = ["--warehouse", wh]
    out = lakeformat_main(*base, "create-database", "db").ok().out
    assert out == f"created database db in {wh}\n"
    again = lakeformat_main(*base, "create-database", "db", "--if-not-exists", "--json").ok()
    assert again.json() == {"database": "db", "created": False, "warehouse": wh}
    made = lakeformat_main(*base, "create-table", "db.t", "--columns",
                           "id BIGINT, name STRING, price DECIMAL(10, 2)", "--primary-key", "id",
                           "-O", "bucket=1", "--json").ok().json()
    assert made["table"] == "db.t" and made["schema_id"] == 0 and made["created"] is True
    src = tmp_path / "in.csv"
    src.write_text("id,name,price\n1,a,1.50\n2,b,2.00\n3,c,3.25\n")
    keys = tmp_path / "keys.csv"
    keys.write_text("id\n2\n")
    w = lakeformat_main(*base, "write", "db.t", str(src), "--commit-user", "u").ok()
    assert w.out.startswith("db.t: snapshot 1 (APPEND), 3 rows")  # the result's own str
    d = lakeformat_main("--json", *base, "delete", "db.t", str(keys)).ok().json()
    assert d["snapshot_id"] == 2 and d["table"] == "db.t"
    alt = lakeformat_main(*base, "alter", "db.t", "--add-column",
                          "note STRING COMMENT 'free text'",
                          "--set-option", "snapshot.num-retained.min=2").ok()
    assert alt.out == ("db.t: schema 1\n"
                       "ID  NAME   TYPE            NULLABLE  COMMENT\n"
                       " 0  id     BIGINT          no\n"
                       " 1  name   STRING          yes\n"
                       " 2  price  DECIMAL(10, 2)  yes\n"
                       " 3  note   STRING          yes       free text\n")
    alt_j = lakeformat_main(*base, "alter", "db.t", "--rename-column", "note=remark",
                            "--json").ok()
    schema = alt_j.json()
    assert schema["id"] == 2 and schema["fields"][3]["name"] == "remark"
    assert schema["fields"][3]["description"] == "free text"
    assert schema["options"]["snapshot.num-retained.min"] == "2"
    read = lakeformat_main(*base, "read", "db.t").ok()
    assert read.out == ("id  name  price  remark\n"
                        " 1  a      1.50  NULL\n"
                        " 3  c      3.25  NULL\n")
    assert read.err == "(2 rows)\n"
    dropped = lakeformat_main(*base, "drop-table", "db.t").ok()
    assert dropped.out == "dropped table db.t\n"
    gone, missing = run_main([*base, "drop-table", "db.t", "--if-exists", "--json"],
                             [*base, "drop-table", "db.t"])
    assert gone.ok().json() == {"table": "db.t", "dropped": False}
    assert_one_line_error(missing, 1, "db.t", "does not exist", wh)
    assert lakeformat_main(*base, "list-tables", "db", "--json").ok().json() == []


def test_append_table_from_the_cli(tmp_path):
    """Without --primary-key: an append table (no bucket needed); every row kept, compaction
    joins the small files, a delete by key is refused in one line."""
    base = ["--warehouse", str(tmp_path / "wh")]
    lakeformat_main(*base, "create-database", "db").ok()
    lakeformat_main(*base, "create-table", "db.logs", "--columns",
                    "dt STRING, id BIGINT, msg STRING", "--partition-key", "dt").ok()
    described = lakeformat_main(*base, "describe", "db.logs", "--json").ok().json()
    assert described["primary_keys"] == [] and "bucket" not in described["options"]
    src = tmp_path / "in.csv"
    src.write_text("dt,id,msg\nd1,1,a\nd1,1,a\nd2,2,b\n")
    for _ in range(5):
        lakeformat_main(*base, "write", "db.logs", str(src)).ok()
    rows = lakeformat_main(*base, "read", "db.logs", "--json").ok().lines()
    assert len(rows) == 15 and rows.count({"dt": "d1", "id": 1, "msg": "a"}) == 10
    done = lakeformat_main(*base, "compact", "db.logs", "--minor", "--json").ok().json()
    assert done["total"]["files_in"] == 10 and done["total"]["files_out"] == 2
    keys = tmp_path / "keys.csv"
    keys.write_text("id\n1\n")
    refused = lakeformat_main(*base, "delete", "db.logs", str(keys))
    assert_one_line_error(refused, 1, "append table has no primary key")
