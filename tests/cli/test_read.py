"""`read` streams every row with --json (JSON Lines), --csv and --parquet FILE, cut only by an
explicit --limit; the table for people shows 50 rows and says so on stderr.

The reads run through `lakeformat.cli.main` in this process (`run_main`, see conftest.py);
the installed script streams --csv (bytes on its stdout) and --json once each, and its output
must equal `main`'s.
"""

from __future__ import annotations

import csv
import io
import json

import pyarrow.parquet as pq
import pytest

from tests.cli.conftest import assert_table, make_orders, orders, run_all, run_main

ROWS = 130  # more than the 50 a table for people shows


@pytest.fixture(scope="module")
def wh(tmp_path_factory) -> str:
    warehouse = str(tmp_path_factory.mktemp("read") / "wh")
    t = make_orders(warehouse, bucket="1")  # one sorted bucket per partition: a fixed order
    t.write(orders(ROWS - 30, "2024-01-01"))
    t.write(orders(30, "2024-01-02", start=1000))
    return warehouse


def test_every_format_streams_all_rows_unless_limited(wh, tmp_path):
    base = ["--warehouse", wh, "read", "db.t"]
    pq_all, pq_few = tmp_path / "all.parquet", tmp_path / "few.parquet"
    legacy = tmp_path / "out.jsonl"
    (js, js_lim, js_before, cs, cs_lim, par, par_lim, out_file, human, human_lim) = run_main(
        [*base, "--json"], [*base, "--json", "--limit", "7"], ["--json", *base[:2], *base[2:]],
        [*base, "--csv"], [*base, "--csv", "--limit", "60"],
        [*base, "--parquet", str(pq_all)], [*base, "--parquet", str(pq_few), "--limit", "5",
                                             "--json"],
        [*base, "--output", str(legacy), "--columns", "id,name"],
        base, [*base, "--limit", "3", "--columns", "id,price", "--where", "id < 3"])

    script_js, script_cs = run_all([*base, "--json"], [*base, "--csv"])  # partitions: any order
    assert sorted(script_js.ok().out.splitlines()) == sorted(js.ok().out.splitlines())
    head, *body = script_cs.ok().out.splitlines()
    assert [head, *sorted(body)] == [cs.ok().out.splitlines()[0],
                                     *sorted(cs.out.splitlines()[1:])]

    rows = js.ok().lines()
    assert len(rows) == ROWS and len({r["id"] for r in rows}) == ROWS
    assert set(rows[0]) == {"dt", "id", "name", "price"}
    assert any(r["name"] is None for r in rows)
    assert len(js_lim.ok().lines()) == 7
    assert sorted(js_before.ok().out.splitlines()) == sorted(js.out.splitlines())

    table = list(csv.DictReader(io.StringIO(cs.ok().out)))
    assert len(table) == ROWS and list(table[0]) == ["dt", "id", "name", "price"]
    assert len(list(csv.DictReader(io.StringIO(cs_lim.ok().out)))) == 60

    par.ok()
    assert pq.read_table(pq_all).num_rows == ROWS
    assert par.out == f"wrote {ROWS} rows of db.t to {pq_all} (parquet)\n"
    summary = par_lim.ok().json()
    assert summary == {"table": "db.t", "rows": 5, "output": str(pq_few), "format": "parquet"}
    assert pq.read_table(pq_few).num_rows == 5

    out_file.ok()
    lines = [json.loads(x) for x in legacy.read_text().splitlines()]
    assert len(lines) == ROWS and set(lines[0]) == {"id", "name"}

    text_rows = assert_table(human.ok().out, ["dt", "id", "name", "price"])
    assert len(text_rows) == 50
    assert human.err == ("(50 rows shown, more not read; --limit N for more, --json, --csv "
                         "or --parquet FILE for all)\n")
    assert human_lim.ok().out == ("id  price\n"
                                  " 0    0.0\n"
                                  " 1    0.5\n"
                                  " 2    1.0\n")
    assert human_lim.err == "(3 rows)\n"


def test_read_time_travel_and_bad_output_flags(wh):
    snap1, both, neg = run_main(
        ["--warehouse", wh, "read", "db.t", "--snapshot", "1", "--json", "--columns", "dt"],
        ["--warehouse", wh, "read", "db.t", "--csv", "--json"],
        ["--warehouse", wh, "read", "db.t", "--limit", "-1"])
    assert {r["dt"] for r in snap1.ok().lines()} == {"2024-01-01"}
    assert both.code == 2 and "--csv and --json" in both.err
    assert neg.code == 2 and "--limit" in neg.err
