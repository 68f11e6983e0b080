"""Arguments the library refuses reach the CLI's user as one line naming the argument (exit
2): an age beyond the calendar, a name longer than a file system holds, a secret pasted into
an option that is not secret (never echoed)."""

from __future__ import annotations

from tests.cli.conftest import assert_one_line_error, lakeformat, make_orders, run_all


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
    assert lakeformat(*base, "snapshots", "db.t", "--json").ok().json() == []
