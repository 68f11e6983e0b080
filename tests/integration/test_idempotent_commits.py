"""Idempotent commits and the job model's runner seam, through the public API.

A job given a `commit_user` and `commit_identifier` whose pair already landed commits nothing
again (an Airflow retry, a backfill re-run, a Spark driver that lost its commit's answer). The
tables use the aggregation engine with `sum`, so a doubled write would show in the rows.

Local disk and S3 (the `catalog` fixture) where the store takes part: publishing a snapshot
whose answer is lost, two duplicates racing to publish, a loser's or a failed job's files
deleted, job units (and their S3 FileIO) pickled across the runner seam. The tests of which
pair belongs to which commit (other identifiers and users, a pair of another kind of call, a
merge-schema write or a compaction run again) only read snapshots back and compare them, the
same code on every store: they run on local disk (`local_catalog`), and the S3 runs above
read the same snapshots through the same `find_commit`.
"""

from __future__ import annotations

import json
import pickle

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.errors import CommitStateUnknownError, InvalidArgumentError
from lakeformat.operation.runner import UnitFailure
from lakeformat.operation.write import WriteJob

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("n", pa.int64())])
USER = "ingest.orders"


def make(catalog: lf.Catalog, name: str = "db.counts", bucket: str = "2") -> lf.Table:
    catalog.create_database("db", exist_ok=True)
    return catalog.create_table(name, SCHEMA, primary_keys=["id"],
                                options={"bucket": bucket, "merge-engine": "aggregation",
                                         "fields.n.aggregate-function": "sum"})


def batch(ids, n: int = 1) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": pa.array(ids, pa.int64()), "n": pa.array([n] * len(ids), pa.int64())})


def totals(t: lf.Table) -> dict[int, int]:
    return {r["id"]: r["n"] for r in t.read().to_pylist()}


def data_files(t: lf.Table) -> set[str]:
    return {s.path.rsplit("/", 1)[-1] for s in t.file_io.list_recursive(t.path)
            if s.path.rsplit("/", 1)[-1].startswith("data-")}


def test_a_retried_write_commits_once(catalog):
    t = make(catalog)
    first = t.write(batch(range(10)), commit_user=USER, commit_identifier=20240101)
    again = t.write(batch(range(10)), commit_user=USER, commit_identifier=20240101)
    assert not first.already_committed and again.already_committed
    assert again.snapshot_id == first.snapshot_id
    assert (again.files_added, again.bytes_added) == (first.files_added, first.bytes_added)
    assert [s.id for s in t.snapshots()] == [first.snapshot_id]
    assert totals(t) == {i: 1 for i in range(10)}
    snap = t.snapshots()[-1]
    assert (snap.commit_user, snap.commit_identifier) == (USER, 20240101)
    assert [s.id for s in t.find_commit(USER, 20240101)] == [first.snapshot_id]
    assert t.find_commit(USER, 20240102) == []
    assert again.to_dict()["already_committed"] is True


def test_another_identifier_or_user_commits_again(local_catalog):
    t = make(local_catalog)
    t.write(batch(range(5)), commit_user=USER, commit_identifier=2)
    t.write(batch(range(5)), commit_user=USER, commit_identifier=1)  # a backfill of an older date
    t.write(batch(range(5)), commit_user="other", commit_identifier=2)
    t.write(batch(range(5)))  # no identity: always commits
    t.write(batch(range(5)))
    assert totals(t) == {i: 5 for i in range(5)}


def test_a_retried_delete_commits_once(catalog):
    t = make(catalog)
    t.write(batch(range(4)))
    first = t.delete(pa.table({"id": pa.array([1, 2], pa.int64())}), commit_user=USER,
                     commit_identifier=7)
    again = t.delete(pa.table({"id": pa.array([1, 2], pa.int64())}), commit_user=USER,
                     commit_identifier=7)
    assert again.already_committed and again.snapshot_id == first.snapshot_id
    assert len(t.snapshots()) == 2


def test_retry_after_an_unknown_outcome_lands_once(catalog, monkeypatch):
    """The publish lands but its answer is lost and the snapshot cannot be read back: the
    write ends with CommitStateUnknownError; running it again with the same pair finds the
    commit instead of doubling it."""
    t = make(catalog)
    t.write(batch(range(3)))
    fio = type(t.file_io)
    real_put, real_read = fio.write_if_absent, fio.read_bytes
    broken: set[str] = set()

    def put_then_fail(self, path, data):
        landed = real_put(self, path, data)
        if "/snapshot/snapshot-" in path:
            broken.add(path)
            raise OSError("connection reset after the request was sent")
        return landed

    def read(self, path, *args, **kwargs):
        if path in broken:
            raise OSError("timed out")
        return real_read(self, path, *args, **kwargs)

    monkeypatch.setattr(fio, "write_if_absent", put_then_fail)
    monkeypatch.setattr(fio, "read_bytes", read)
    with pytest.raises(CommitStateUnknownError) as err:
        t.write(batch(range(3)), commit_user=USER, commit_identifier=5)
    monkeypatch.undo()
    assert err.value.snapshot_id == 2 and err.value.commit_user == USER
    retry = t.write(batch(range(3)), commit_user=USER, commit_identifier=5)
    assert retry.already_committed and retry.snapshot_id == 2
    assert totals(t) == {0: 2, 1: 2, 2: 2}
    assert len(t.snapshots()) == 2


def test_a_duplicate_running_at_the_same_time_lands_once_and_leaves_no_files(catalog):
    t = make(catalog)
    t.write(batch(range(8)))
    before = data_files(t)
    jobs = [WriteJob(t.file_io, t.path, t.table_schema, batch(range(8)), commit_user=USER,
                     commit_identifier=9) for _ in range(2)]
    for j in jobs:
        j.plan()
        j.execute()
    first, second = jobs[0].commit(), jobs[1].commit()
    assert not first.already_committed and second.already_committed
    assert second.snapshot_id == first.snapshot_id
    assert totals(t) == {i: 2 for i in range(8)}
    assert data_files(t) == {f["file_name"] for f in t.files()}  # the duplicate's files are gone
    assert data_files(t) > before


def test_a_retried_merge_schema_write_commits_once(local_catalog):
    t = make(local_catalog)
    t.write(batch(range(2)))
    wide = batch(range(2)).append_column("c", pa.array(["x", "y"]))
    first = t.write(wide, merge_schema=True, commit_user=USER, commit_identifier=3)
    again = t.write(wide, merge_schema=True, commit_user=USER, commit_identifier=3)
    assert again.already_committed and again.snapshot_id == first.snapshot_id
    assert [s.id for s in t.schemas()] == [0, 1]
    assert sorted(t.read().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 0, "n": 2, "c": "x"}, {"id": 1, "n": 2, "c": "y"}]


def test_compaction_marks_its_snapshots_and_a_rerun_reports_them(local_catalog):
    t = make(local_catalog, bucket="1")
    for i in range(3):
        t.write(batch(range(i, 10 + i)))
    expected = totals(t)
    first = t.compact(commit_user="maintenance", commit_identifier=11)
    assert first.snapshot_ids and first.earlier_snapshot_ids == []
    assert [s.id for s in t.find_commit("maintenance", 11)] == first.snapshot_ids
    rerun = t.compact(commit_user="maintenance", commit_identifier=11)
    assert rerun.snapshot_ids == [] and rerun.earlier_snapshot_ids == first.snapshot_ids
    assert "already committed" in str(rerun)
    assert totals(t) == expected


@pytest.mark.parametrize("user, identifier", [(None, 1), ("u", True), ("u", "1"), ("", 1),
                                              ("u", 1 << 63)])
def test_bad_commit_identity_is_refused_before_anything_is_written(local_catalog, user,
                                                                   identifier):
    t = make(local_catalog)
    with pytest.raises(InvalidArgumentError, match="commit_"):
        t.write(batch(range(2)), commit_user=user, commit_identifier=identifier)
    with pytest.raises(ValueError):
        t.compact(commit_user=user, commit_identifier=identifier)
    assert t.snapshots() == [] and data_files(t) == set()


class PicklingRunner:
    """Runs every unit as a remote engine would: the unit and the function's result cross a
    pickle boundary (what Spark does), and the runner records what it ran."""

    def __init__(self) -> None:
        self.units: list = []

    def map(self, fn, units):
        out = []
        for unit in units:
            copy = pickle.loads(pickle.dumps(unit))
            self.units.append(copy)
            out.append(pickle.loads(pickle.dumps(fn(copy))))
        return out


def test_jobs_run_their_execute_step_through_a_runner(catalog):
    t = make(catalog, bucket="4")
    runner = PicklingRunner()
    big = batch(range(1000))
    result = t.write(big, runner=runner)
    assert len(runner.units) == 4  # one unit per bucket, each with only its own rows
    assert sum(u.rows.num_rows for u in runner.units) == 1000
    assert max(len(pickle.dumps(u)) for u in runner.units) < len(pickle.dumps(big))
    assert result.files_added == 4 and totals(t) == {i: 1 for i in range(1000)}
    t.write(batch(range(500)), runner=runner)
    runner.units.clear()
    compacted = t.compact(runner=runner)
    assert len(runner.units) == 4 and compacted.total.buckets_compacted == 4
    assert totals(t) == {i: 2 if i < 500 else 1 for i in range(1000)}


class FailingRunner:
    """Runs units in order and fails the last one, as a lost executor would."""

    def map(self, fn, units):
        results = [fn(u) for u in units[:-1]]
        return results + [_failure(units[-1])]


def _failure(unit):
    return UnitFailure(RuntimeError(f"executor lost running bucket {unit.bucket}"))


def test_a_failed_unit_leaves_no_files_and_no_snapshot(catalog):
    t = make(catalog, bucket="4")
    t.write(batch(range(100)))
    before, snaps = data_files(t), len(t.snapshots())
    with pytest.raises(RuntimeError, match="executor lost"):
        t.write(batch(range(100)), runner=FailingRunner())
    assert data_files(t) == before and len(t.snapshots()) == snaps
    t.write(batch(range(100)))
    before, snaps = data_files(t), len(t.snapshots())
    with pytest.raises(RuntimeError, match="executor lost"):
        t.compact(runner=FailingRunner())
    assert data_files(t) == before and len(t.snapshots()) == snaps


def test_cli_write_with_a_commit_identity_commits_once(local_catalog, tmp_path, capsys):
    from lakeformat.cli import main

    make(local_catalog)
    src = tmp_path / "in.json"
    src.write_text("\n".join(json.dumps({"id": i, "n": 1}) for i in range(3)))
    args = ["--warehouse", local_catalog.warehouse, "write", "db.counts", str(src), "--json",
            "--commit-user", USER, "--commit-identifier", "42"]
    assert main(args) == 0
    first = json.loads(capsys.readouterr().out)["result"]
    assert main(args) == 0
    again = json.loads(capsys.readouterr().out)["result"]
    assert again["already_committed"] and again["snapshot_id"] == first["snapshot_id"]
    assert totals(local_catalog.get_table("db.counts")) == {0: 1, 1: 1, 2: 1}


def test_two_jobs_of_one_commit_user_never_take_each_others_snapshot(local_catalog):
    """B's first publish loses its snapshot id to A (same user, no identifier): B must not
    mistake A's snapshot for its own landed attempt — both rows land."""
    t = make(local_catalog, bucket="1")
    a, b = (WriteJob(t.file_io, t.path, t.table_schema, batch([i]), commit_user="dag.load")
            for i in (1, 2))
    for j in (a, b):
        j.plan()
        j.execute()
    real = b.committer._try_commit
    calls = []

    def a_commits_first(*args, **kwargs):
        if not calls:
            calls.append(a.commit())  # A takes the id B is about to publish
        return real(*args, **kwargs)

    b.committer._try_commit = a_commits_first
    result = b.commit()
    assert result.snapshot_id == 2 and calls[0].snapshot_id == 1
    assert totals(t) == {1: 1, 2: 1}
    assert data_files(t) == {f["file_name"] for f in t.files()}


def test_a_twin_landing_while_a_duplicate_retries_is_seen(local_catalog):
    """Twin runs of one pair: B passes its pre-commit check, then A lands; B's commit attempt
    (which would renumber and land again) finds A's snapshot instead."""
    t = make(local_catalog)
    t.write(batch(range(8)))
    a, b = (WriteJob(t.file_io, t.path, t.table_schema, batch(range(8)), commit_user=USER,
                     commit_identifier=9) for _ in range(2))
    for j in (a, b):
        j.plan()
        j.execute()
    real = b.committer.commit
    landed = []

    def a_lands_first(*args, **kwargs):
        if not landed:
            landed.append(a.commit())
        return real(*args, **kwargs)

    b.committer.commit = a_lands_first
    result = b.commit()
    assert result.already_committed and result.snapshot_id == landed[0].snapshot_id == 2
    assert totals(t) == {i: 2 for i in range(8)}
    assert [s.id for s in t.find_commit(USER, 9)] == [2]
    assert data_files(t) == {f["file_name"] for f in t.files()}


def test_a_pair_belongs_to_one_kind_of_call(local_catalog):
    t = make(local_catalog, bucket="1")
    t.write(batch(range(4)))
    t.write(batch(range(4)))
    t.compact(commit_user=USER, commit_identifier=1)
    snaps = len(t.snapshots())
    with pytest.raises(InvalidArgumentError, match=r"\(COMPACT\), not a write"):
        t.write(batch(range(4)), commit_user=USER, commit_identifier=1)
    t.delete(pa.table({"id": pa.array([0], pa.int64())}), commit_user=USER, commit_identifier=3)
    with pytest.raises(InvalidArgumentError, match=r"\(delete\), not a write"):
        t.write(batch(range(4)), commit_user=USER, commit_identifier=3)
    t.write(batch([9]), commit_user=USER, commit_identifier=4)
    with pytest.raises(InvalidArgumentError, match=r"\(write\), not a delete"):
        t.delete(pa.table({"id": pa.array([1], pa.int64())}), commit_user=USER,
                 commit_identifier=4)
    assert len(t.snapshots()) == snaps + 2
    assert totals(t) == {0: 2, 1: 2, 2: 2, 3: 2, 9: 1}  # (a -D with a null n retracts 0)
    # the Java pattern: a write then a compaction under one pair; the task retried as a whole
    t.write(batch(range(4)), commit_user=USER, commit_identifier=2)
    assert t.compact(commit_user=USER, commit_identifier=2).snapshot_ids
    again = t.write(batch(range(4)), commit_user=USER, commit_identifier=2)
    assert again.already_committed and again.commit_kind == "APPEND"
    assert t.compact(commit_user=USER, commit_identifier=2).earlier_snapshot_ids


def test_a_doubtful_publish_settled_in_one_group_does_not_stop_the_next(local_catalog,
                                                                       monkeypatch):
    """Group 1's first publish fails before reaching storage and its retry lands; group 2 then
    meets an ordinary conflict: that partition is reported failed, not 'outcome unknown'."""
    schema = pa.schema([pa.field("id", pa.int64(), False), pa.field("p", pa.int64(), False),
                        ("n", pa.int64())])
    local_catalog.create_database("db", exist_ok=True)
    t = local_catalog.create_table("db.parts", schema, primary_keys=["p", "id"],
                                   partition_keys=["p"], options={"bucket": "1"})
    for i in range(3):
        t.write(pa.table({"id": pa.array(range(10), pa.int64()),
                          "p": pa.array([0] * 5 + [1] * 5, pa.int64()),
                          "n": pa.array([i] * 10, pa.int64())}))
    expected = sorted(t.read().to_pylist(), key=lambda r: (r["p"], r["id"]))
    fio = type(t.file_io)
    real = fio.write_if_absent
    failed = []

    def first_publish_fails(self, path, data):
        if "/snapshot/snapshot-" in path and not failed:
            failed.append(path)
            raise OSError("503 slow down (the request never reached storage)")
        return real(self, path, data)

    monkeypatch.setattr(fio, "write_if_absent", first_publish_fails)
    # a compaction that does not take lakeformat's maintenance lock (a Java Paimon job)
    other = lf.Table("db.parts", t.path, local_catalog.file_io)
    interfered = []

    def progress(msg: str) -> None:
        if "group 1/" in msg and not interfered:
            interfered.append(other.compact(partitions=[{"p": 1}]).snapshot_ids)

    result = t.compact(partitions_per_commit=1, progress=progress)
    assert failed and interfered == [[5]]
    assert result.snapshot_ids == [4] and list(result.failed) == ["p=1"]
    assert sorted(t.read().to_pylist(), key=lambda r: (r["p"], r["id"])) == expected


def test_database_not_empty_is_still_a_value_error(local_catalog):
    make(local_catalog)
    with pytest.raises(ValueError):
        local_catalog.drop_database("db")
    with pytest.raises(lf.DatabaseNotEmptyError):
        local_catalog.drop_database("db")
