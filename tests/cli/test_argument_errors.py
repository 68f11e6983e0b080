"""Arguments the library refuses reach the CLI's user as one line naming the argument (exit
2): an age beyond the calendar, a name longer than a file system holds, a secret pasted into
an option that is not secret (never echoed)."""

from __future__ import annotations

from tests.cli.conftest import (
    assert_one_line_error,
    cli_env,
    lakeformat,
    lakeformat_main,
    make_orders,
    run_all,
)


def test_an_age_beyond_the_calendar_is_one_line_naming_it(tmp_path):
    wh = str(tmp_path / "wh")
    make_orders(wh)
    base = ["--warehouse", wh]
    expire, schemas, orphans = run_all(
        [*base, "expire-snapshots", "db.t", "--older-than", "99999999999 d"],
        [*base, "clean-schemas", "db.t", "--older-than", "99999999999 d"],
        [*base, "remove-orphan-files", "db.t", "--older-than", "99999999999 d"])
    for run in (expire, schemas, orphans):
        assert_one_line_error(run, 2, "'older_than'", "'99999999999 d'", "too long")
    assert lakeformat_main(*base, "snapshots", "db.t", "--json").ok().json() == []


def test_a_name_too_long_for_the_file_system_is_one_line_naming_it(tmp_path):
    wh = str(tmp_path / "wh")
    make_orders(wh)
    base = ["--warehouse", wh]
    long = "t" * 300
    describe, create, snapshots, database = run_all(
        [*base, "describe", f"db.{long}"],
        [*base, "create-table", f"db.{long}", "--columns", "id BIGINT"],
        [*base, "snapshots", f"db.{long}"], [*base, "create-database", "d" * 300])
    for run in (describe, create, snapshots):
        assert_one_line_error(run, 2, "invalid table name", "300 bytes", "at most 255")
    assert_one_line_error(database, 2, "invalid database name", "at most 252")
    assert lakeformat_main(*base, "list-tables", "db", "--json").ok().json() == ["t"]


def test_a_secret_pasted_into_another_option_is_not_echoed(tmp_path):
    secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzzSECRET"
    env = cli_env({"AWS_ACCESS_KEY_ID": "AKIAEXAMPLEACCESS", "AWS_SECRET_ACCESS_KEY": secret})
    common = ["--warehouse", "s3://bucket/wh", "-o", "s3.endpoint=http://127.0.0.1:9"]
    given, pasted_only = (
        lakeformat(*common, "-o", "s3.access-key=AKIAEXAMPLEACCESS", "-o",
                   f"s3.secret-key={secret}", "-o", f"s3.path-style-access={secret}",
                   "list-databases"),
        lakeformat(*common, "-o", f"lock.lease-duration={secret}", "list-databases",
                   env=env))  # the secret known from the AWS variables only
    assert_one_line_error(given, 2, "'s3.path-style-access'", "***")
    assert_one_line_error(pasted_only, 2, "'lock.lease-duration'", "***")
    assert secret not in given.err + pasted_only.err
