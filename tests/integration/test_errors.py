"""Errors callers can branch on: each family of failure raises its own class through the
public API (no message parsing), and the CLI keeps its exit statuses (2 usage, 1 other)."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.cli import main


@pytest.fixture()
def table(tmp_path) -> lf.Table:
    catalog = lf.Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    t = catalog.create_table("db.t", pa.schema([("id", pa.int64()), ("v", pa.string())]),
                             primary_keys=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    return t


def test_missing_snapshot_is_a_not_found_error(table):
    with pytest.raises(lf.SnapshotNotFoundError, match="snapshot 999") as info:
        table.read(snapshot_id=999)
    assert isinstance(info.value, lf.NotFoundError)
    assert isinstance(info.value, LookupError)
    with pytest.raises(lf.SnapshotNotFoundError):
        table.create_tag("later", snapshot_id=999)
    with pytest.raises(lf.SnapshotNotFoundError):
        table.rollback_to(999)


def test_missing_tag_is_a_not_found_error(table):
    with pytest.raises(lf.TagNotFoundError, match="'nope'") as info:
        table.read(tag="nope")
    assert isinstance(info.value, lf.NotFoundError)
    with pytest.raises(lf.TagNotFoundError):
        table.delete_tag("nope")
    with pytest.raises(lf.TagNotFoundError):
        table.rollback_to("nope")


def test_unknown_column_is_an_invalid_argument_and_a_value_error(table):
    with pytest.raises(lf.ColumnNotFoundError, match="nope") as info:
        table.read(columns=["id", "nope"])
    assert isinstance(info.value, lf.InvalidArgumentError)
    assert isinstance(info.value, ValueError)
    with pytest.raises(lf.InvalidArgumentError, match="not both"):
        table.read(snapshot_id=1, tag="x")


def test_existing_tag_is_an_already_exists_error(table):
    table.create_tag("t1")
    with pytest.raises(lf.TagAlreadyExistsError, match="t1") as info:
        table.create_tag("t1")
    assert isinstance(info.value, lf.AlreadyExistsError)
    assert [x.name for x in table.list_tags()] == ["t1"]


def test_dropping_a_database_with_tables_needs_cascade(tmp_path, table):
    catalog = lf.Catalog(str(tmp_path / "wh"))
    with pytest.raises(lf.DatabaseNotEmptyError, match="cascade"):
        catalog.drop_database("db")
    assert catalog.list_tables("db") == ["t"]
    catalog.drop_database("db", cascade=True)
    assert catalog.list_databases() == []
    with pytest.raises(lf.DatabaseNotFoundError) as info:
        catalog.drop_database("db")
    assert isinstance(info.value, lf.NotFoundError)


def test_cleanup_that_cannot_read_a_tag_aborts_and_deletes_nothing(table):
    table.write(pa.table({"id": [1], "v": ["c"]}))
    broken = table.file_io.join(table.path, "tag", "tag-broken")
    table.file_io.write_bytes(broken, b"{not json")
    before = {s.path for s in table.file_io.list_recursive(table.path)}
    with pytest.raises(lf.CleanupAbortedError, match="nothing deleted"):
        table.remove_orphan_files()
    with pytest.raises(lf.CleanupAbortedError, match="nothing deleted"):
        table.clean_schemas(retain_min=1, older_than=dt.timedelta(0))
    assert {s.path for s in table.file_io.list_recursive(table.path)} == before


def test_retryable_errors_are_the_commit_lock_engine_and_store_outcomes():
    assert set(lf.RETRYABLE_ERRORS) == {lf.CommitConflictError, lf.CommitFailedError,
                                        lf.CommitStateUnknownError, lf.LockTimeoutError,
                                        lf.LockLostError, lf.EngineError,
                                        lf.StoreUnreachableError}
    assert all(issubclass(e, (lf.CommitError, lf.LockError, lf.EngineError,
                              lf.StoreUnreachableError)) for e in lf.RETRYABLE_ERRORS)
    # a garbage lease is a LockError, but no retry helps it
    assert not issubclass(lf.CorruptLeaseError, lf.RETRYABLE_ERRORS)
    assert lf.CommitOutcomeUnknownError is lf.CommitStateUnknownError


def test_cli_exit_status_is_1_for_not_found_and_2_for_usage(tmp_path, table, capsys):
    wh = str(tmp_path / "wh")
    assert main(["--warehouse", wh, "read", "db.t", "--snapshot", "999"]) == 1
    assert "snapshot 999" in capsys.readouterr().err
    assert main(["--warehouse", wh, "read", "db.t", "--tag", "nope"]) == 1
    assert "'nope'" in capsys.readouterr().err
    assert main(["--warehouse", wh, "read", "db.t", "--where", "nope=1"]) == 2
    assert "nope" in capsys.readouterr().err
