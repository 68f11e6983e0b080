"""Fixtures and collection rules every suite shares: the `advancing_clock` below, the
`local_only` module mark (a module's `catalog` tests on local disk only) and the pytest-xdist
groups `make test` keeps on one worker (both further down).

`advancing_clock`: the library reads one wall clock (`lakeformat.clock.now_millis`). On a fast
machine a commit and the expiry that follows it can fall in the same millisecond, and an age
rule such as `older_than=0` ("every snapshot committed before this call is old") then depends
on timing. The fixture makes each reading strictly later than the one before — real time when
it has moved on, one millisecond more when it has not — so such a test asserts Paimon's rule,
not the machine's speed.
"""

from __future__ import annotations

import threading
import time

import pytest

import lakeformat.clock


@pytest.fixture(autouse=True)
def advancing_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    guard = threading.Lock()
    last = [0]

    def now_millis() -> int:
        with guard:
            last[0] = max(time.time_ns() // 1_000_000, last[0] + 1)
            return last[0]

    monkeypatch.setattr(lakeformat.clock, "now_millis", now_millis)


# --- how the suite splits over pytest-xdist workers (`make test` runs `-n`) -----------------
#
# `make test` passes `--dist loadgroup`: tests are handed out one by one, except that the tests
# of a group below all go to one worker. A group is given here (not per test) to the tests that
# share something costly to start in one process: a second worker would start it again. Paths
# are relative to the repository root; the first match wins.
#
# xdist's own `xdist_group` mark does not group anything under pytest 9 (xdist renames the
# node id, which pytest 9 no longer reads), so the scheduler below groups by path itself.
XDIST_GROUPS: tuple[tuple[str, str], ...] = (
    # one local[2] Spark session (~10 s) per process; its JVM also serves Spark Connect
    ("tests/spark/", "spark"),
    # the session's PostgreSQL server (initdb and start-up)
    ("tests/integration/test_jdbc_catalog.py", "postgres"),
    ("tests/integration/test_jdbc_lock.py", "postgres"),
    # module-scoped fixtures a second worker would build again: every README python block run
    # in one child process (~35 s), the CLI suites' warehouses, a large bucket, the compose copy
    ("tests/readme/test_readme_blocks.py", "readme"),
    ("tests/cli/test_read.py", "cli-read"),
    ("tests/cli/test_where.py", "cli-where"),
    ("tests/cli/test_commands.py", "cli-commands"),
    ("tests/integration/test_read_memory.py", "read-memory"),
    ("tests/integration/test_inspect.py", "inspect"),
    ("tests/airflow/test_compose.py", "compose"),
    ("tests/airflow/test_dags.py", "dag-parse"),  # the DAG files parsed once in a child process
    # one `airflow api-server` child process and one headless chromium for the module
    ("tests/airflow/test_lake_view_browser.py", "lake-view-browser"),
)


def xdist_group_of(nodeid: str) -> str | None:
    """The group of XDIST_GROUPS a test belongs to (None: it may go to any worker)."""
    path = nodeid.split("::", 1)[0]
    for prefix, group in XDIST_GROUPS:
        if path.startswith(prefix):
            return group
    return None


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist (absent from the interop venv)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    if config.getoption("dist", None) != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class PathGroupScheduling(LoadScopeScheduling):
        """xdist's scheduler of whole scopes, where a scope is a group of XDIST_GROUPS or,
        for any other test, the test alone."""

        def _split_scope(self, nodeid: str) -> str:
            return xdist_group_of(nodeid) or nodeid

    return PathGroupScheduling(config, log)


# --- `local_only`: a module's tests of the `catalog` fixture on local disk only --------------
#
# The shared `catalog` fixture (tests/support/catalogs.py) runs a test on local disk and on the
# moto S3 server. A module whose tests never reach what differs between the two stores marks
# itself `pytestmark = pytest.mark.local_only` and says why in its docstring; its `catalog`
# tests then run once, as `[local]`. Implemented as a `parametrize` mark added before pytest
# expands fixture params, which pytest lets take precedence over the fixture's own params.
@pytest.hookimpl(tryfirst=True)
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if ("catalog" in metafunc.fixturenames
            and metafunc.definition.get_closest_marker("local_only") is not None):
        metafunc.definition.add_marker(  # first, so test ids still read [local-...]
            pytest.mark.parametrize("catalog", ["local"], indirect=True), append=False)
