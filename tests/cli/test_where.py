"""`--where` on the command line: the one grammar of read and compact (each operator, IN,
IS NULL, AND/OR, repeated flags ANDed), partition pruning, and errors naming column and value.
The grammar itself is pinned in tests/unit/test_where.py; this checks the CLI wiring.

The operator cases, the errors and delete run through `lakeformat.cli.main` in this process
(`run_main`, see conftest.py); the installed script runs one operator case (its rows equal
`main`'s) and the pruning test, whose unpruned read must fail on a broken file in one line.
"""

from __future__ import annotations

import pytest

import lakeformat as lf
from tests.cli.conftest import assert_one_line_error, make_orders, orders, run_all, run_main


@pytest.fixture(scope="module")
def wh(tmp_path_factory) -> str:
    """db.t with ids 0..9 in dt=2024-01-01 (name null for id 0 and 7) and 10..14 in
    dt=2024-01-02, whose data files are then broken: only a read that prunes them works."""
    warehouse = str(tmp_path_factory.mktemp("where") / "wh")
    t = make_orders(warehouse)
    t.write(orders(10, "2024-01-01"))
    t.write(orders(5, "2024-01-02", start=10))
    return warehouse


def ids(run) -> list[int]:
    return sorted(r["id"] for r in run.ok().lines())


def test_where_operators_on_the_command_line(wh):
    cases = {
        "id = 3": [3], "id == 3": [3], "id != 3 AND id <> 4 AND id < 6": [0, 1, 2, 5],
        "id <= 1 OR id >= 9": [0, 1, 9], "id > 7 AND id < 9": [8],
        "id IN (1, 2, 99)": [1, 2], "id NOT IN (0, 1, 2, 3, 4, 5, 6)": [7, 8, 9],
        "name IS NULL": [0, 7], "name IS NOT NULL AND id BETWEEN 5 AND 8": [5, 6, 8],
        "(id = 1 OR id = 2) AND name = 'n2'": [2], "price >= 4.0 and name = n8": [8],
    }
    base = ["--warehouse", wh, "read", "db.t", "--json", "--where", "dt = '2024-01-01'"]
    runs = run_main(*[[*base, "--where", text] for text in cases])
    for (text, want), run in zip(cases.items(), runs):
        assert ids(run) == want, text
    text = "name IS NOT NULL AND id BETWEEN 5 AND 8"
    script, = run_all([*base, "--where", text])
    assert script.ok().out == runs[list(cases).index(text)].out


def test_partition_terms_prune_and_compact_takes_the_same_grammar(wh, tmp_path):
    t = lf.Catalog(wh).get_table("db.t")
    t.write(orders(3, "2024-01-01", start=100))  # a second sorted run in 2024-01-01
    broken = [f["path"] for f in t.files() if f["partition"]["dt"] == "2024-01-02"]
    saved = {p: t.file_io.read_bytes(p) for p in broken}
    for path in broken:
        t.file_io.write_bytes(path, b"not parquet")
    try:
        pruned, unpruned, compact_bad = run_all(
            ["--warehouse", wh, "read", "db.t", "--json", "--where",
             "dt IN ('2024-01-01') AND id >= 100"],
            ["--warehouse", wh, "read", "db.t", "--json", "--where", "id >= 100"],
            ["--warehouse", wh, "compact", "db.t", "--where", "id = 1"])
    finally:
        for path, data in saved.items():
            t.file_io.write_bytes(path, data)
    assert ids(pruned) == [100, 101, 102]
    assert unpruned.code == 1 and "Traceback" not in unpruned.err  # it opened a broken file
    assert_one_line_error(compact_bad, 2, "partition columns", "'id'")
    done = run_all(["--warehouse", wh, "compact", "db.t", "--json", "--where",
                    "dt >= '2024-01-01' AND dt < '2024-01-02'"])[0].ok().json()
    assert list(done["partitions"]) == ["dt=2024-01-01"] and done["full"] is True


def test_where_errors_name_the_column_value_and_type(wh):
    base = ["--warehouse", wh, "read", "db.t", "--where"]
    bad_col, bad_value, bad_syntax, null_cmp = run_main(
        [*base, "zzz = 1"], [*base, "id = abc"], [*base, "id = 1 AND"], [*base, "name = NULL"])
    assert_one_line_error(bad_col, 2, "unknown column 'zzz'", "db.t", "dt, id, name, price")
    assert_one_line_error(bad_value, 2, "'abc'", "'id'", "BIGINT")
    assert_one_line_error(bad_syntax, 2, "'id = 1 AND'", "expected a column name")
    assert_one_line_error(null_cmp, 2, "IS NULL")


def test_delete_where_drops_partitions_or_deletes_matching_keys(tmp_path):
    wh = str(tmp_path / "wh")
    t = make_orders(wh)
    t.write(orders(10, "2024-01-01"))
    t.write(orders(5, "2024-01-02", start=10))
    base = ["--warehouse", wh, "delete", "db.t"]
    rows, = run_main([*base, "--where", "name IS NULL OR id = 9", "--where", "id < 100",
                      "--json"])
    result = rows.ok().json()
    assert result["rows_deleted"] == 4 and result["commit_kind"] == "APPEND"  # 0, 7, 9, 14
    part, both, neither = run_main([*base, "--where", "dt = '2024-01-02'", "--json"],
                                   [*base, "keys.csv", "--where", "id = 1"], [*base])
    assert part.ok().json()["partitions_dropped"] == ["dt=2024-01-02"]
    assert part.json()["commit_kind"] == "OVERWRITE"
    assert_one_line_error(both, 2, "not both")
    assert_one_line_error(neither, 2, "--where")
    left = lf.Catalog(wh).get_table("db.t").read()
    assert sorted(left["id"].to_pylist()) == [1, 2, 3, 4, 5, 6, 8]
