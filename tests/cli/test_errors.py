"""A user mistake is one line on stderr naming the thing and the fix, never a traceback:
missing table or database (with the warehouse), a malformed URI, no S3 credentials, a port
nothing listens on, a missing input file. Exit 2 for usage mistakes, 1 otherwise; --debug
shows the traceback."""

from __future__ import annotations

import socket

from tests.cli.conftest import (
    assert_one_line_error,
    cli_env,
    lakeformat,
    make_orders,
    run_all,
)
from tests.support.s3server import s3_options

AWS_VARS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
            "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
            "AWS_WEB_IDENTITY_TOKEN_FILE")


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_local_mistakes_are_one_line(tmp_path):
    wh = str(tmp_path / "wh")
    make_orders(wh)
    base = ["--warehouse", wh]
    no_table, no_db, no_db_list, bad_uri, no_file, no_wh, debug = run_all(
        [*base, "describe", "db.nope"], [*base, "snapshots", "nodb.t"],
        [*base, "list-tables", "nodb"], ["--warehouse", "s3:/bucket/wh", "list-databases"],
        [*base, "write", "db.t", str(tmp_path / "missing.csv")], ["list-databases"],
        ["--debug", *base, "describe", "db.nope"])
    assert_one_line_error(no_table, 1, "table db.nope does not exist", f"warehouse {wh}",
                          "db' are t")
    assert_one_line_error(no_db, 1, "database 'nodb' does not exist", f"warehouse {wh}",
                          "databases are db")
    assert_one_line_error(no_db_list, 1, "'nodb'", f"warehouse {wh}")
    assert_one_line_error(bad_uri, 2, "'s3:/bucket/wh'", "s3://bucket/path")
    assert_one_line_error(no_file, 2, "missing.csv", "does not exist")
    assert_one_line_error(no_wh, 2, "--warehouse")
    assert debug.code == 1 and "Traceback" in debug.err and "TableNotFoundError" in debug.err


def test_no_credentials_against_the_s3_server(s3_server, s3_bucket):
    env = cli_env({"AWS_SHARED_CREDENTIALS_FILE": "/nonexistent", "AWS_CONFIG_FILE":
                   "/nonexistent", "AWS_EC2_METADATA_DISABLED": "true"}, drop=AWS_VARS)
    run = lakeformat("--warehouse", f"s3://{s3_bucket}/wh", "-o", f"s3.endpoint={s3_server}",
                     "-o", "s3.path-style-access=true", "list-databases", env=env)
    assert_one_line_error(run, 1, "no S3 credentials", "s3.access-key", "AWS_ACCESS_KEY_ID")


def test_s3_works_and_a_closed_port_fails_at_once_without_the_secret(s3_server, s3_bucket):
    opts = [x for k, v in s3_options(s3_server).items() for x in ("-o", f"{k}={v}")]
    wh = ["--warehouse", f"s3://{s3_bucket}/wh"]
    made = lakeformat(*wh, *opts, "create-database", "db", "--json").ok().json()
    assert made["created"] is True
    port = closed_port()
    wrong = [x.replace(s3_server, f"http://127.0.0.1:{port}") for x in opts]
    listed, refused = run_all([*wh, *opts, "list-databases", "--json"],
                              [*wh, *wrong, "list-databases"])  # default retries: probe first
    assert listed.ok().json() == ["db"]
    assert_one_line_error(refused, 1, f"cannot reach the S3 endpoint http://127.0.0.1:{port}",
                          "s3.endpoint")
    secret = s3_options(s3_server)["s3.secret-key"]
    assert secret not in refused.err
