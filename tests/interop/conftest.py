"""Fixtures of the pypaimon interop suite: one warehouse per test, opened by both libraries.

The suite runs in its own venv beside pypaimon 2.1.0 (`make test-interop`). In a venv
without pypaimon the pypaimon-driven modules are not collected at all.

lakeformat's local storage writes here without fsync (`no_fsync` below): what this suite
checks is the bytes each library reads of the other's files, and an fsync only decides whether
they survive a power cut (the main suite runs the storage with fsync, as users do). On a busy
disk the fsyncs were a third of the suite's time (~5 per commit, 20 ms each).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

if importlib.util.find_spec("pypaimon") is None:  # pragma: no cover - main venv
    collect_ignore = [
        "test_read_pypaimon_tables.py",
        "test_pypaimon_reads_lakeformat.py",
        "test_alternating_writers.py",
        "test_compact_interop.py",
        "test_two_stream_interop.py",
        "test_append_interop.py",
        "test_dynamic_bucket_interop.py",
        "test_cross_partition_interop.py",
        "test_avro_interop.py",
        "test_lookup_interop.py",
        "test_changelog_interop.py",
        "test_input_changelog_interop.py",
        "test_tag_lifecycle_interop.py",
        "test_first_row_lookup_interop.py",
        "test_record_level_expire_interop.py",
    ]


@pytest.fixture(autouse=True)
def no_fsync(monkeypatch: pytest.MonkeyPatch) -> None:
    """`LocalFileIO()`, as every lakeformat catalog on a local path opens it, skips fsync."""
    from lakeformat.storage.local import LocalFileIO

    # the constructor's one default is `fsync=True`; a changed signature must not have this
    # fixture silently turn another default off
    assert LocalFileIO.__init__.__code__.co_varnames[1:2] == ("fsync",)
    assert LocalFileIO.__init__.__defaults__ == (True,)
    monkeypatch.setattr(LocalFileIO.__init__, "__defaults__", (False,))


@pytest.fixture()
def warehouse(tmp_path: Path) -> str:
    """Path of a fresh, empty warehouse directory."""
    path = tmp_path / "warehouse"
    path.mkdir()
    return str(path)


@pytest.fixture()
def paimon(warehouse: str) -> Any:
    """pypaimon filesystem catalog over the warehouse, with database `db`."""
    from tests.support.pypaimon_helpers import paimon_catalog

    return paimon_catalog(warehouse)


@pytest.fixture()
def lake(warehouse: str) -> Any:
    """lakeformat catalog over the same warehouse, with database `db`."""
    import lakeformat as lf

    catalog = lf.Catalog(warehouse)
    catalog.create_database("db", exist_ok=True)
    return catalog
