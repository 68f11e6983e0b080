"""The `lakeformat` CLI mirrors the API: create, write, delete, read, snapshots, schemas, files."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq

from lakeformat.cli import main


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_round_trip(tmp_path, capsys):
    wh = str(tmp_path / "wh")
    assert run(capsys, "--warehouse", wh, "create-database", "db")[0] == 0
    code, out, _ = run(capsys, "--warehouse", wh, "create-table", "db.t", "--columns",
                       "dt STRING, id BIGINT, price DECIMAL(10, 2), name VARCHAR(20)",
                       "--primary-key", "dt,id", "--partition-key", "dt", "-O", "bucket=2",
                       "--json")
    assert code == 0 and json.loads(out)["schema_id"] == 0
    csv = tmp_path / "in.csv"
    csv.write_text("dt,id,price,name\n2024-01-01,1,1.50,a\n2024-01-01,2,2.25,b\n"
                   "2024-01-02,1,3.00,c\n")
    code, out, _ = run(capsys, "--warehouse", wh, "write", "db.t", str(csv), "--json")
    assert code == 0 and json.loads(out)["snapshot_id"] == 1
    keys = tmp_path / "keys.csv"
    keys.write_text("dt,id\n2024-01-01,2\n")
    assert run(capsys, "--warehouse", wh, "delete", "db.t", str(keys))[0] == 0
    code, out, _ = run(capsys, "--warehouse", wh, "read", "db.t", "--where", "dt=2024-01-01",
                       "--json")
    assert code == 0
    assert [(r["id"], r["name"]) for r in json.loads(out)] == [(1, "a")]
    dest = tmp_path / "out.parquet"
    assert run(capsys, "--warehouse", wh, "read", "db.t", "--output", str(dest))[0] == 0
    assert sorted(pq.read_table(dest)["name"].to_pylist()) == ["a", "c"]
    code, out, _ = run(capsys, "--warehouse", wh, "snapshots", "db.t", "--json")
    assert [s["commit_kind"] for s in json.loads(out)] == ["APPEND", "APPEND"]
    code, out, _ = run(capsys, "--warehouse", wh, "schemas", "db.t", "--json")
    assert json.loads(out)[0]["fields"][3]["type"] == "VARCHAR(20)"
    code, out, _ = run(capsys, "--warehouse", wh, "files", "db.t", "--json")
    assert {f["partition"]["dt"] for f in json.loads(out)} == {"2024-01-01", "2024-01-02"}
    code, out, _ = run(capsys, "--warehouse", wh, "read", "db.t", "--snapshot", "1", "--json")
    assert len(json.loads(out)) == 3


def test_cli_errors_are_reported_not_raised(tmp_path, capsys):
    wh = str(tmp_path / "wh")
    code, _, err = run(capsys, "--warehouse", wh, "snapshots", "db.missing")
    assert code == 1 and "db" in err
    run(capsys, "--warehouse", wh, "create-database", "db")
    run(capsys, "--warehouse", wh, "create-table", "db.t", "--columns", "id BIGINT, v INT",
        "--primary-key", "id", "-O", "bucket=1")
    bad = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"id": [1], "zzz": [2]}), bad)
    code, _, err = run(capsys, "--warehouse", wh, "write", "db.t", str(bad))
    assert code == 1 and "zzz" in err


def test_cli_alter_and_merge_schema_write(tmp_path, capsys):
    wh = str(tmp_path / "wh")
    base = ["--warehouse", wh]
    assert run(capsys, *base, "create-database", "db")[0] == 0
    assert run(capsys, *base, "create-table", "db.t", "--columns",
               "id BIGINT, name STRING, r ROW<x INT>", "--primary-key", "id",
               "-O", "bucket=1")[0] == 0
    src = tmp_path / "in.json"
    src.write_text('{"id": 1, "name": "a", "extra": 2}\n')
    code, out, _ = run(capsys, *base, "write", "db.t", str(src), "--json")
    assert code == 1  # a column the table lacks, without --merge-schema
    code, out, _ = run(capsys, *base, "write", "db.t", str(src), "--merge-schema", "--json")
    assert code == 0 and json.loads(out)["snapshot_id"] == 1
    code, out, err = run(capsys, *base, "alter", "db.t",
                         "--add-column", "c DECIMAL(10, 2) COMMENT 'money' AFTER id",
                         "--rename-column", "name=full_name",
                         "--add-column", "r.y STRING",
                         "--update-column-position", "extra FIRST",
                         "--update-column-type", "extra BIGINT",
                         "--update-column-comment", "id=the key",
                         "--set-option", "snapshot.num-retained.min=2",
                         "--comment", "wide table", "--json")
    assert code == 0, err
    schema = json.loads(out)
    assert schema["id"] == 2 and schema["comment"] == "wide table"
    assert [f["name"] for f in schema["fields"]] == ["extra", "id", "c", "full_name", "r"]
    fields = {f["name"]: f for f in schema["fields"]}
    assert fields["c"]["description"] == "money" and fields["c"]["type"] == "DECIMAL(10, 2)"
    assert fields["extra"]["type"] == "BIGINT" and fields["id"]["description"] == "the key"
    assert [f["name"] for f in fields["r"]["type"]["fields"]] == ["x", "y"]
    assert schema["options"]["snapshot.num-retained.min"] == "2"
    code, out, _ = run(capsys, *base, "read", "db.t", "--json")
    assert json.loads(out) == [{"extra": 2, "id": 1, "c": None, "full_name": "a",
                                "r": None}]
    code, _, err = run(capsys, *base, "alter", "db.t", "--drop-column", "id")
    assert code == 1 and "primary-key column 'id'" in err
    code, out, _ = run(capsys, *base, "schemas", "db.t", "--json")
    assert [s["id"] for s in json.loads(out)] == [0, 1, 2]


def test_cli_expire_tag_rollback(tmp_path, capsys):
    wh = str(tmp_path / "wh")
    base = ["--warehouse", wh]
    run(capsys, *base, "create-database", "db")
    run(capsys, *base, "create-table", "db.t", "--columns", "id BIGINT, v BIGINT",
        "--primary-key", "id", "-O", "bucket=1")
    src = tmp_path / "in.json"
    for i in range(4):
        src.write_text(f'{{"id": {i}, "v": {i}}}\n')
        assert run(capsys, *base, "write", "db.t", str(src))[0] == 0
    code, out, _ = run(capsys, *base, "tag", "db.t", "create", "t2", "--snapshot", "2",
                       "--json")
    assert code == 0 and json.loads(out)["snapshot_id"] == 2
    code, out, _ = run(capsys, *base, "expire-snapshots", "db.t", "--retain-min", "1",
                       "--older-than", "0 s", "--dry-run", "--json")
    dry = json.loads(out)
    assert code == 0 and dry["dry_run"] and dry["snapshots_deleted"] == [1, 2, 3]
    code, out, _ = run(capsys, *base, "expire-snapshots", "db.t", "--retain-min", "1",
                       "--older-than", "0 s", "--json")
    real = json.loads(out)
    assert real["deleted"] == dry["deleted"] and real["earliest_snapshot"] == 4
    code, out, _ = run(capsys, *base, "rollback", "db.t", "t2", "--json")
    assert code == 0 and json.loads(out)["latest_snapshot"] == 2
    code, out, _ = run(capsys, *base, "read", "db.t", "--json")
    assert sorted(r["id"] for r in json.loads(out)) == [0, 1]
    code, out, _ = run(capsys, *base, "tag", "db.t", "list", "--json")
    assert [t["name"] for t in json.loads(out)] == ["t2"]
    code, out, err = run(capsys, *base, "rollback", "db.t", "9")
    assert code == 1 and "does not exist" in err
