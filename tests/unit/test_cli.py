"""The `lakeformat` CLI mirrors the API: create, write, delete, read, snapshots, schemas, files."""

from __future__ import annotations

import json
import socket
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakeformat.catalog import Catalog
from lakeformat.cli import main
from lakeformat.table import Table


def result(out: str):
    """The `result` of the CLI's JSON envelope."""
    doc = json.loads(out)
    assert set(doc) == {"lakeformat_version", "command", "result"}, doc
    return doc["result"]


def rows(out: str) -> list[dict]:
    """Rows `read --json` streams as JSON Lines."""
    return [json.loads(line) for line in out.splitlines()]


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
    assert code == 0 and result(out)["schema_id"] == 0
    csv = tmp_path / "in.csv"
    csv.write_text("dt,id,price,name\n2024-01-01,1,1.50,a\n2024-01-01,2,2.25,b\n"
                   "2024-01-02,1,3.00,c\n")
    code, out, _ = run(capsys, "--warehouse", wh, "write", "db.t", str(csv), "--json")
    assert code == 0 and result(out)["snapshot_id"] == 1
    keys = tmp_path / "keys.csv"
    keys.write_text("dt,id\n2024-01-01,2\n")
    assert run(capsys, "--warehouse", wh, "delete", "db.t", str(keys))[0] == 0
    code, out, _ = run(capsys, "--warehouse", wh, "read", "db.t", "--where", "dt=2024-01-01",
                       "--json")
    assert code == 0
    assert [(r["id"], r["name"]) for r in rows(out)] == [(1, "a")]
    dest = tmp_path / "out.parquet"
    assert run(capsys, "--warehouse", wh, "read", "db.t", "--output", str(dest))[0] == 0
    assert sorted(pq.read_table(dest)["name"].to_pylist()) == ["a", "c"]
    code, out, _ = run(capsys, "--warehouse", wh, "snapshots", "db.t", "--json")
    assert [s["commit_kind"] for s in result(out)] == ["APPEND", "APPEND"]
    code, out, _ = run(capsys, "--warehouse", wh, "schemas", "db.t", "--json")
    assert result(out)[0]["fields"][3]["type"] == "VARCHAR(20)"
    code, out, _ = run(capsys, "--warehouse", wh, "files", "db.t", "--json")
    assert {f["partition"]["dt"] for f in result(out)["files"]} == {"2024-01-01", "2024-01-02"}
    code, out, _ = run(capsys, "--warehouse", wh, "read", "db.t", "--snapshot", "1", "--json")
    assert len(rows(out)) == 3


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
    assert code == 2 and "zzz" in err and "Traceback" not in err


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
    assert code == 2  # a column the table lacks, without --merge-schema
    code, out, _ = run(capsys, *base, "write", "db.t", str(src), "--merge-schema", "--json")
    assert code == 0 and result(out)["snapshot_id"] == 1
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
    schema = result(out)
    assert schema["id"] == 2 and schema["comment"] == "wide table"
    assert [f["name"] for f in schema["fields"]] == ["extra", "id", "c", "full_name", "r"]
    fields = {f["name"]: f for f in schema["fields"]}
    assert fields["c"]["description"] == "money" and fields["c"]["type"] == "DECIMAL(10, 2)"
    assert fields["extra"]["type"] == "BIGINT" and fields["id"]["description"] == "the key"
    assert [f["name"] for f in fields["r"]["type"]["fields"]] == ["x", "y"]
    assert schema["options"]["snapshot.num-retained.min"] == "2"
    code, out, _ = run(capsys, *base, "read", "db.t", "--json")
    assert rows(out) == [{"extra": 2, "id": 1, "c": None, "full_name": "a",
                                "r": None}]
    code, _, err = run(capsys, *base, "alter", "db.t", "--drop-column", "id")
    assert code == 1 and "primary-key column 'id'" in err
    code, out, _ = run(capsys, *base, "schemas", "db.t", "--json")
    assert [s["id"] for s in result(out)] == [0, 1, 2]


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
    assert code == 0 and result(out)["snapshot_id"] == 2
    code, out, _ = run(capsys, *base, "expire-snapshots", "db.t", "--retain-min", "1",
                       "--older-than", "0 s", "--dry-run", "--json")
    dry = result(out)
    assert code == 0 and dry["dry_run"] and dry["snapshots_deleted"] == [1, 2, 3]
    code, out, _ = run(capsys, *base, "expire-snapshots", "db.t", "--retain-min", "1",
                       "--older-than", "0 s", "--json")
    real = result(out)
    assert real["deleted"] == dry["deleted"] and real["earliest_snapshot"] == 4
    code, out, _ = run(capsys, *base, "rollback", "db.t", "t2", "--json")
    assert code == 0 and result(out)["latest_snapshot"] == 2
    code, out, _ = run(capsys, *base, "read", "db.t", "--json")
    assert sorted(r["id"] for r in rows(out)) == [0, 1]
    code, out, _ = run(capsys, *base, "tag", "db.t", "list", "--json")
    assert [t["name"] for t in result(out)] == ["t2"]
    code, out, err = run(capsys, *base, "rollback", "db.t", "9")
    assert code == 1 and "does not exist" in err


def make_cli_table(tmp_path, capsys) -> list[str]:
    base = ["--warehouse", str(tmp_path / "wh")]
    assert run(capsys, *base, "create-database", "db")[0] == 0
    assert run(capsys, *base, "create-table", "db.t", "--columns",
               "dt STRING, id BIGINT, code STRING, price DECIMAL(10, 2), day DATE",
               "--primary-key", "dt,id", "--partition-key", "dt", "-O", "bucket=1")[0] == 0
    return base


def assert_clean_error(code: int, err: str, status: int, *names: str) -> None:
    assert code == status, err
    assert err.startswith("lakeformat: error: ") and "Traceback" not in err, err
    for name in names:
        assert name in err, (name, err)


@pytest.mark.parametrize("name", ["junk.parquet", "junk.csv", "junk.json"])
def test_cli_garbage_input_file_is_an_input_error(tmp_path, capsys, name):
    base = make_cli_table(tmp_path, capsys)
    junk = tmp_path / name
    junk.write_bytes(bytes(range(256)) * 16)
    code, _, err = run(capsys, *base, "write", "db.t", str(junk))
    assert_clean_error(code, err, 2, name)
    code, _, err = run(capsys, *base, "write", "db.t", str(tmp_path / "missing.csv"))
    assert_clean_error(code, err, 2, "missing.csv", "does not exist")
    code, _, err = run(capsys, *base, "write", "db.t", str(tmp_path / "in.xlsx"))
    assert_clean_error(code, err, 2, "xlsx")


def test_cli_write_csv_and_json_keep_the_table_types(tmp_path, capsys):
    base = make_cli_table(tmp_path, capsys)
    csv = tmp_path / "in.csv"
    csv.write_text("dt,id,code,price,day\n2024-01-02,1,01234,1.50,2024-01-02\n"
                   "2024-01-02,2,1.50,0.10,\n")
    assert run(capsys, *base, "write", "db.t", str(csv))[0] == 0
    src = tmp_path / "in.json"
    src.write_text('{"dt": "2024-01-03", "id": 3, "code": "2024-01-02", "price": 2.00, '
                   '"day": null}\n')
    assert run(capsys, *base, "write", "db.t", str(src))[0] == 0
    code, out, _ = run(capsys, *base, "read", "db.t", "--json")
    got = sorted(rows(out), key=lambda r: r["id"])
    assert [(r["dt"], r["code"], r["price"], r["day"]) for r in got] == [
        ("2024-01-02", "01234", "1.50", "2024-01-02"), ("2024-01-02", "1.50", "0.10", None),
        ("2024-01-03", "2024-01-02", "2.00", None)]
    bad = tmp_path / "bad.csv"
    bad.write_text("dt,id,price\n2024-01-04,9,1.00\n2024-01-04,10,ten\n")
    code, _, err = run(capsys, *base, "write", "db.t", str(bad))
    assert_clean_error(code, err, 2, "bad.csv", "line 3", "column 'price'", "'ten'")
    code, out, _ = run(capsys, *base, "snapshots", "db.t", "--json")
    assert len(result(out)) == 2


def test_cli_where_value_or_column_that_does_not_fit_is_a_usage_error(tmp_path, capsys):
    base = make_cli_table(tmp_path, capsys)
    code, _, err = run(capsys, *base, "read", "db.t", "--where", "id=abc")
    assert_clean_error(code, err, 2, "'abc'", "'id'", "BIGINT")
    code, _, err = run(capsys, *base, "read", "db.t", "--where", "zzz=1")
    assert_clean_error(code, err, 2, "'zzz'")
    code, _, err = run(capsys, *base, "read", "db.t", "--where", "id")
    assert_clean_error(code, err, 2, "'id'", "expected an operator")
    code, _, err = run(capsys, *base, "read", "db.../x")
    assert_clean_error(code, err, 2, "db.../x")
    code, _, err = run(capsys, *base, "compact", "db.t", "--workers", "0")
    assert_clean_error(code, err, 2, "workers")


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_cli_unreachable_endpoint_is_reported_without_secrets(capsys):
    base = ["--warehouse", "s3://bucket/wh", "-o", f"s3.endpoint=http://127.0.0.1:{closed_port()}",
            "-o", "s3.access-key=AKIDEXAMPLE", "-o", "s3.secret-key=TopSecretValue",
            "-o", "s3.attempts.maximum=1"]  # one attempt: boto's backoff would only add time
    code, _, err = run(capsys, *base, "snapshots", "db.t")
    assert_clean_error(code, err, 1, "cannot reach the S3 endpoint", "127.0.0.1")
    assert "TopSecretValue" not in err
    code, _, err = run(capsys, "--warehouse", "s3://bucket/wh", "-o",
                       "s3.secret-key TopSecretValue", "snapshots", "db.t")
    assert_clean_error(code, err, 2, "must be key=value")
    assert "TopSecretValue" not in err


def test_cli_missing_credentials_are_reported(monkeypatch, tmp_path, capsys):
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                "AWS_WEB_IDENTITY_TOKEN_FILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # no instance-metadata lookup
    code, _, err = run(capsys, "--warehouse", "s3://bucket/wh", "-o",
                       f"s3.endpoint=http://127.0.0.1:{closed_port()}", "snapshots", "db.t")
    assert_clean_error(code, err, 1, "no S3 credentials", "s3.access-key")


def test_cli_internal_errors_hint_at_debug_which_shows_the_traceback(tmp_path, capsys,
                                                                      monkeypatch):
    base = make_cli_table(tmp_path, capsys)

    def broken(self):
        raise RuntimeError("boom")

    monkeypatch.setattr(Table, "snapshots", broken)
    code, _, err = run(capsys, *base, "snapshots", "db.t")
    assert_clean_error(code, err, 1, "internal error: RuntimeError: boom", "--debug")
    code, _, err = run(capsys, "--debug", *base, "snapshots", "db.t")
    assert code == 1 and "Traceback" in err and "lakeformat: error: internal error" in err
    monkeypatch.setenv("LAKEFORMAT_DEBUG", "1")
    assert "Traceback" in run(capsys, *base, "snapshots", "db.t")[2]


def test_cli_remove_orphan_files_override(tmp_path, capsys):
    base = make_cli_table(tmp_path, capsys)
    src = tmp_path / "in.csv"
    src.write_text("dt,id,code,price,day\n2024-01-02,1,a,1,2024-01-02\n")
    assert run(capsys, *base, "write", "db.t", str(src))[0] == 0
    t = Catalog(str(tmp_path / "wh")).get_table("db.t")
    stray = t.file_io.join(t.path, "dt=2024-01-02", "bucket-0", "data-crashed-0.parquet")
    t.file_io.write_bytes(stray, b"left by a crashed writer")
    time.sleep(0.05)
    code, _, err = run(capsys, *base, "remove-orphan-files", "db.t", "--older-than", "0 s")
    assert_clean_error(code, err, 2, "1 hour", "--no-enforce-retention-duration")
    assert t.file_io.exists(stray)
    code, out, err = run(capsys, *base, "remove-orphan-files", "db.t", "--older-than", "0 s",
                         "--no-enforce-retention-duration", "--json")
    assert code == 0, err
    assert result(out)["deleted"] == [stray] and not t.file_io.exists(stray)
    code, out, _ = run(capsys, *base, "read", "db.t", "--json")
    assert [r["id"] for r in rows(out)] == [1]


def test_cli_usage_errors_exit_2_like_argparse(capsys):
    assert main(["--warehouse", "x", "no-such-command"]) == 2
    assert "usage:" in capsys.readouterr().err
