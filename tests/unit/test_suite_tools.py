"""The machinery `make test` stands on: the closing report adds both suites up and fails when
either failed (`tests/support/suite_report.py`), the depth knobs (`tests/support/depth.py`)
refuse a depth they do not know, and a `local_only` module's `catalog` tests run on local
disk only while every other module keeps both stores (`tests/conftest.py`). Real pytest runs
in child processes, as `make test` runs them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PASSING = '''
import pytest
def test_a(): pass
def test_b(): pass
@pytest.mark.skip(reason="shown as skipped")
def test_c(): pass
'''
FAILING = '''
def test_ok(): pass
def test_broken(): assert 1 == 2
'''


def run_suite(folder: Path, source: str) -> tuple[int, Path]:
    """A one-file suite run by pytest with a JUnit report, as `make test` runs a suite."""
    folder.mkdir()
    (folder / "test_it.py").write_text(source)
    xml = folder / "report.xml"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           f"--junitxml={xml}", str(folder / "test_it.py")],
                          cwd=folder, capture_output=True, text=True)
    return done.returncode, xml


@pytest.fixture(scope="module")
def suites(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, Path]]:
    """One passing and one failing suite, each run once for the module: the report only reads
    their exit status and JUnit file, so a test may hand the same suite in twice."""
    root = tmp_path_factory.mktemp("suites")
    return {"passing": run_suite(root / "passing", PASSING),
            "failing": run_suite(root / "failing", FAILING)}


def report(*args: str | int | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tests.support.suite_report",
                           *map(str, args)], cwd=ROOT, capture_output=True, text=True)


def test_the_report_adds_both_suites_up_and_passes_when_both_passed(suites):
    status, xml = suites["passing"]
    done = report("main", status, xml, "interop", status, xml)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1] == "total: 4 passed, 0 failed, 2 skipped"
    assert "main suite: exit status 0, 2 passed, 0 failed, 1 skipped" in lines


@pytest.mark.parametrize("failing", ["main", "interop"])
def test_the_report_fails_when_either_suite_failed(suites, failing):
    (ok_status, ok_xml), (bad_status, bad_xml) = suites["passing"], suites["failing"]
    assert bad_status == 1
    suites = {"main": (ok_status, ok_xml), "interop": (ok_status, ok_xml)}
    suites[failing] = (bad_status, bad_xml)
    done = report(*[x for name, (s, xml) in suites.items() for x in (name, s, xml)])
    assert done.returncode == 1
    assert done.stdout.splitlines()[-1] == "total: 3 passed, 1 failed, 1 skipped"


def test_a_suite_that_crashed_without_a_report_fails_the_run(suites, tmp_path):
    ok_status, ok_xml = suites["passing"]
    done = report("main", ok_status, ok_xml, "interop", 4, tmp_path / "missing.xml")
    assert done.returncode == 1
    assert "interop suite: exit status 4, no report at" in done.stdout
    assert done.stdout.splitlines()[-1] == "total: 2 passed, 1 failed, 1 skipped"


def test_an_unknown_depth_is_refused_by_name():
    env = {**os.environ, "TEST_DEPTH": "deeep"}
    done = subprocess.run([sys.executable, "-c", "import tests.support.depth"], cwd=ROOT,
                          env=env, capture_output=True, text=True)
    assert done.returncode != 0
    assert "TEST_DEPTH='deeep' is not a depth" in done.stderr


@pytest.mark.parametrize("depth, own, want", [("", None, 3), ("deep", None, 9),
                                              ("default", "7", 7), ("deep", "7", 7)])
def test_examples_follow_the_depth_and_a_tests_own_variable_wins(depth, own, want):
    env = {k: v for k, v in os.environ.items() if k not in ("TEST_DEPTH", "SOME_EXAMPLES")}
    env["TEST_DEPTH"] = depth
    if own is not None:
        env["SOME_EXAMPLES"] = own
    code = "from tests.support.depth import examples; print(examples(3, 9, 'SOME_EXAMPLES'))"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) == want


def test_local_only_modules_run_catalog_tests_on_local_disk_only():
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                           "-p", "no:cacheprovider", "tests/integration/test_float_keys.py",
                           "tests/integration/test_table.py"],
                          cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:]
    ids = [line for line in done.stdout.splitlines() if "::" in line]
    marked = [i for i in ids if "test_float_keys.py" in i]
    both = [i for i in ids if "test_table.py::test_write_then_read_returns_rows" in i]
    assert any("[local" in i for i in marked)
    assert not [i for i in marked if "s3" in i]
    assert sorted(both) == [
        "tests/integration/test_table.py::test_write_then_read_returns_rows[local]",
        "tests/integration/test_table.py::test_write_then_read_returns_rows[s3]"]


# A plugin for the nested run below: every test's call is a no-op, so the run schedules the
# real module's tests over real workers without running their CLI commands (scheduling is by
# node id only; what the tests assert is their own module's business).
CALLS_DO_NOTHING = '''
def pytest_collection_modifyitems(items):
    for item in items:
        item.runtest = lambda: None
'''


def test_a_group_of_tests_runs_on_one_xdist_worker(tmp_path):
    """The CLI `where` tests share a module-scoped warehouse, so tests/conftest.py groups them
    (XDIST_GROUPS): over two workers they all run on one. (xdist's own `xdist_group` mark did
    not do this under pytest 9: the tests were spread over both workers.)"""
    (tmp_path / "calls_do_nothing.py").write_text(CALLS_DO_NOTHING)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(tmp_path), os.environ.get("PYTHONPATH", "")) if p)}
    done = subprocess.run([sys.executable, "-m", "pytest", "-v", "-n", "2", "--dist",
                           "loadgroup", "-p", "no:cacheprovider", "-p", "calls_do_nothing",
                           "tests/cli/test_where.py"],
                          cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:]
    passed = [line for line in done.stdout.splitlines()
              if line.startswith("[gw") and " PASSED " in line]
    assert len(passed) >= 2, done.stdout[-3000:]  # a group of one would prove nothing
    workers = {line.split("]", 1)[0] for line in passed}
    assert len(workers) == 1, done.stdout[-3000:]
