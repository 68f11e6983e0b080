"""Concurrent writers never lose an update, and compaction never changes what readers see.

Two writers prepared on one snapshot would number their records alike in a bucket; the later
commit must be renumbered (`WriteJob.commit`) so that reads equal a model of "each commit
applied in commit order" before and after any number of compactions, for every engine, on local
disk and on the moto S3 server. Ties written by writers outside lakeformat (simulated by
committing without the sequence check) are broken by one rule everywhere: reads before and
after full and minor compaction, and the full-compaction changelog, agree.

The steps are driven one by one (prepare -> execute -> commit, and plan -> execute -> commit
for compaction), so every interleaving is deterministic.

Which runs go to S3: the engine decides how tied or renumbered records merge, and that is the
same code whatever the store; the store decides how a commit publishes (a conditional create
of the snapshot on S3), what a listing and a read return, and which files cleanup deletes.
So the engine x interleaving matrices run in full on local disk, and on the moto S3 server
every interleaving (and every tie shape) runs once, the engines taking turns (`s3_cases`) so
that each engine also commits, compacts and reads on S3. The tests without an engine matrix
run on both stores.
"""

from __future__ import annotations

import sys

import pyarrow as pa
import pytest

import lakeformat as lf
from lakeformat.operation.compact import CompactJob
from lakeformat.operation.write import WriteJob

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("a", pa.int64()),
                    ("b", pa.string())])

ENGINES = {
    "deduplicate": {},
    # first-row writers compact after each commit (lookup-wait): off here, so the compactions
    # of these interleavings have level-0 files to race with
    "first-row": {"merge-engine": "first-row", "lookup-wait": "false"},
    "partial-update": {"merge-engine": "partial-update"},
    "aggregation": {"merge-engine": "aggregation", "fields.a.aggregate-function": "sum"},
}


def apply(engine: str, state: dict[int, dict], rows: list[dict]) -> None:
    """The model: one commit's rows applied to the table state, by engine."""
    for r in rows:
        old = state.get(r["id"])
        if old is None or engine == "deduplicate":
            state[r["id"]] = dict(r)
        elif engine == "first-row":
            continue
        elif engine == "partial-update":
            state[r["id"]] = {k: (v if v is not None else old[k]) for k, v in r.items()}
        else:  # aggregation: sum(a), last_non_null_value(b)
            a = r["a"] if old["a"] is None else (old["a"] if r["a"] is None else old["a"] + r["a"])
            state[r["id"]] = {"id": r["id"], "a": a, "b": r["b"] if r["b"] is not None
                              else old["b"]}


def batch(ids: range, a: int | None, b: str | None) -> list[dict]:
    return [{"id": i, "a": a, "b": b} for i in ids]


def rows_of(t: lf.Table) -> list[dict]:
    return sorted(t.read().to_pylist(), key=lambda r: r["id"])


def expected(state: dict[int, dict]) -> list[dict]:
    return [state[k] for k in sorted(state)]


def job(t: lf.Table, rows: list[dict]) -> WriteJob:
    t.refresh()
    return WriteJob(t.file_io, t.path, t.table_schema, pa.Table.from_pylist(rows, SCHEMA))


class SteppedCompaction:
    """A compaction whose plan, execution and commit happen when the test says (the public
    job steps of `CompactJob`)."""

    def __init__(self, t: lf.Table, full: bool = True):
        self.t = t.refresh()
        self.job = CompactJob(t.file_io, t.path, self.t.table_schema, t.name, full=full,
                              memory_budget=64 << 20, workers=1)
        self.tasks = [task for group in self.job.plan() for task in group]
        self.outcomes: list = []
        self.failed: dict[str, str] = {}

    def execute(self) -> SteppedCompaction:
        self.outcomes = self.job.execute(self.tasks)
        return self

    def commit(self) -> list[int]:
        _, ids = self.job.commit(self.outcomes, self.failed)
        return ids


def compact_full(t: lf.Table) -> None:
    r = t.compact()
    assert not r.failed, r.failed


def make_table(catalog: lf.Catalog, engine: str, extra: dict | None = None) -> lf.Table:
    options = {"bucket": "2", **ENGINES[engine], **(extra or {})}
    return catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options=options)


INTERLEAVINGS = {
    # name: steps after W0; "A"/"B" commit the two writers prepared on the same snapshot,
    # "full"/"minor" compact in one go, "plan"/"land" split a full compaction around commits
    "A,B": ["A", "B"],
    "B,A": ["B", "A"],
    "A,full,B": ["A", "full", "B"],
    "A,minor,B": ["A", "minor", "B"],
    "plan,A,land,B": ["plan", "A", "land", "B"],
    "A,plan,B,land": ["A", "plan", "B", "land"],
    "A,B,full": ["A", "B", "full"],
}


def s3_cases(names: str, *variants: tuple, first: int = 0) -> pytest.MarkDecorator:
    """Parametrize `catalog` and `names` ("engine" first): every engine with every variant on
    local disk; on S3 each variant once, with the engines taking turns from engine number
    `first` (the module docstring says why)."""
    engines = list(ENGINES)
    cases = [pytest.param("local", e, *v, id="-".join(["local", e, *v]))
             for v in variants for e in engines]
    for i, v in enumerate(variants):
        e = engines[(first + i) % len(engines)]
        cases.append(pytest.param("s3", e, *v, id="-".join(["s3", e, *v])))
    return pytest.mark.parametrize(f"catalog,{names}", cases, indirect=["catalog"])


@s3_cases("engine,steps", *[(name,) for name in INTERLEAVINGS])
def test_two_writers_on_one_snapshot_and_compactions_equal_commit_order(catalog, engine,
                                                                        steps):
    t = make_table(catalog, engine)
    state: dict[int, dict] = {}
    w0 = batch(range(0, 10), 1, "w0")
    t.write(pa.Table.from_pylist(w0, SCHEMA))
    apply(engine, state, w0)
    rows = {"A": batch(range(0, 6), 10, None), "B": batch(range(3, 10), 100, "B")}
    jobs = {name: job(t, r) for name, r in rows.items()}
    for j in jobs.values():
        j.plan()
    for j in jobs.values():
        j.execute()
    pending = None
    committed: list[str] = []
    for step in INTERLEAVINGS[steps]:
        if step in jobs:
            outcome = jobs[step].commit()
            assert outcome.snapshot_id is not None
            apply(engine, state, rows[step])
            # the second writer numbered its records after a base the first one changed (for
            # first-row a compaction in between may have dropped every later record: no clash)
            want = {1} if committed else {0}
            assert outcome.rewrites in (want | {0} if engine == "first-row" else want)
            committed.append(step)
        elif step == "full":
            compact_full(t)
        elif step == "minor":
            t.compact(full=False)
        elif step == "plan":
            pending = SteppedCompaction(t).execute()
        elif step == "land":
            assert pending is not None
            assert pending.commit(), pending.failed
        assert rows_of(t) == expected(state), f"after {step}"
    compact_full(t)
    assert rows_of(t) == expected(state), "after the final full compaction"
    more = batch(range(0, 10, 3), 7, "C")
    t.write(pa.Table.from_pylist(more, SCHEMA))
    apply(engine, state, more)
    assert rows_of(t) == expected(state)
    compact_full(t)
    assert rows_of(t) == expected(state)


def test_many_writers_on_one_snapshot_land_in_commit_order(catalog):
    t = make_table(catalog, "partial-update")
    t.write(pa.Table.from_pylist(batch(range(20), 0, "w0"), SCHEMA))
    jobs = [job(t, batch(range(20), n, f"w{n}")) for n in range(1, 6)]
    for j in jobs:
        j.plan()
        j.execute()
    outcomes = [j.commit() for j in jobs]
    assert [o.rewrites for o in outcomes] == [0, 1, 1, 1, 1]
    assert rows_of(t) == batch(range(20), 5, "w5")
    by_bucket: dict[int, list[tuple[int, int]]] = {}
    for f in t.files():
        by_bucket.setdefault(f["bucket"], []).append(
            (f["min_sequence_number"], f["max_sequence_number"]))
    for ranges in by_bucket.values():  # no two files of a bucket share a sequence number
        ranges.sort()
        assert len(ranges) == 6
        assert all(hi < lo2 for (_, hi), (lo2, _) in zip(ranges, ranges[1:])), ranges


def test_renumbering_is_bounded_by_commit_retries(local_catalog):
    t = make_table(local_catalog, "deduplicate", {"commit.max-retries": "0"})
    a, b = job(t, batch(range(5), 1, "a")), job(t, batch(range(5), 2, "b"))
    for j in (a, b):
        j.plan()
        j.execute()
    a.commit()
    with pytest.raises(lf.CommitFailedError, match="renumbering"):
        b.commit()
    assert rows_of(t) == batch(range(5), 1, "a")
    live = {f["file_name"] for f in t.files()}
    written = {f.file_name for m in b.messages for f in m.new_files}
    assert not written & live and not b.messages  # the loser's files are gone


def test_write_to_other_buckets_is_not_renumbered(local_catalog):
    t = local_catalog.create_table("db.t", SCHEMA, primary_keys=["id"],
                                   options={"bucket": "8"})
    t.write(pa.Table.from_pylist(batch(range(100), 0, "w0"), SCHEMA))
    by_bucket: dict[int, list[int]] = {}
    for i in range(100):
        j = job(t, batch([i], 1, "x"))
        j.plan()
        by_bucket.setdefault(j.units[0].bucket, []).append(i)
    (b1, ids1), (b2, ids2) = list(by_bucket.items())[:2]
    a, b = job(t, batch(ids1, 1, "a")), job(t, batch(ids2, 2, "b"))
    for j in (a, b):
        j.plan()
        j.execute()
    assert a.commit().rewrites == 0
    assert b.commit().rewrites == 0


# -- ties written by writers outside lakeformat --------------------------------------------------
def foreign_commit(j: WriteJob) -> None:
    """Commit as a writer that does not renumber (Java and pypaimon writers do not)."""
    assert j.committer.commit(j.messages) is not None


def tied_table(catalog: lf.Catalog, engine: str, extra: dict | None = None,
               a_ids: range = range(0, 6), b_ids: range = range(3, 10)):
    """W0, then two writers prepared on one snapshot commit without renumbering: their records
    number alike, so a key both write at the same position in a bucket ties."""
    t = make_table(catalog, engine, extra)
    t.write(pa.Table.from_pylist(batch(range(0, 10), 1, "w0"), SCHEMA))
    a = job(t, batch(a_ids, 10, "A"))
    b = job(t, batch(b_ids, 100, "B"))
    for j in (a, b):
        j.plan()
        j.execute()
    return t, a, b


@s3_cases("engine,tie", ("some-keys-tie",), ("all-keys-tie",), first=3)
def test_foreign_ties_read_the_same_before_and_after_compactions(catalog, engine, tie):
    ids = {"a_ids": range(10), "b_ids": range(10)} if tie == "all-keys-tie" else {}
    t, a, b = tied_table(catalog, engine, **ids)
    foreign_commit(a)
    foreign_commit(b)
    files = t.files()
    seq_a = {(f["min_sequence_number"], f["max_sequence_number"]) for f in files
             if f["level"] == 0}
    assert len(files) >= 3 and len(seq_a) < len([f for f in files if f["level"] == 0])
    before = rows_of(t)
    t.compact(full=False)
    assert rows_of(t) == before
    compact_full(t)
    assert rows_of(t) == before


@s3_cases("engine", (), first=2)
def test_level_zero_wins_a_tie_with_a_compacted_record(catalog, engine):
    """A lands and is compacted to the top level; B, tied with A, lands afterwards: B is the
    later commit and level 0 beats the top level for every reader."""
    t, a, b = tied_table(catalog, engine, a_ids=range(10), b_ids=range(10))
    foreign_commit(a)
    compact_full(t)
    foreign_commit(b)
    state: dict[int, dict] = {}
    for rows in (batch(range(0, 10), 1, "w0"), batch(range(10), 10, "A"),
                 batch(range(10), 100, "B")):
        apply(engine, state, rows)
    assert rows_of(t) == expected(state)
    compact_full(t)
    assert rows_of(t) == expected(state)


def test_compaction_refuses_a_tied_file_that_landed_during_it(catalog):
    t, a, b = tied_table(catalog, "deduplicate", a_ids=range(10), b_ids=range(10))
    foreign_commit(a)
    pending = SteppedCompaction(t).execute()
    foreign_commit(b)
    before = rows_of(t)
    assert pending.commit() == []
    assert list(pending.failed.values())[0].count("overlapping its inputs") == 1
    assert rows_of(t) == before
    compact_full(t)  # run again: now it takes both files
    assert rows_of(t) == before


def test_full_compaction_changelog_agrees_with_reads_under_ties(catalog):
    t, a, b = tied_table(catalog, "partial-update", {"changelog-producer": "full-compaction"})
    foreign_commit(a)
    foreign_commit(b)
    before = rows_of(t)
    compact_full(t)
    assert rows_of(t) == before
    snap = t.latest_snapshot()
    from lakeformat.data.file_read import read_data_file
    from lakeformat.operation.paths import PathFactory
    from lakeformat.operation.scan import FileStoreScan

    schema = t.table_schema
    scan = FileStoreScan(t.file_io, t.path, schema)
    paths = PathFactory(t.file_io, t.path, schema)
    entries = scan.read_entries(scan.manifest_list.read(snap.changelog_manifest_list))
    log = []
    for e in entries:
        path = paths.data_file((), e.bucket, e.file)
        log += read_data_file(t.file_io, path, e.file, schema, t.schema_manager,
                              schema.field_names).to_pylist()
    final = {r["id"]: {k: r[k] for k in ("id", "a", "b")}
             for r in log if r["_VALUE_KIND"] in (0, 2)}  # +I / +U: the new rows
    assert [final[k] for k in sorted(final)] == before


def test_write_prepared_before_a_rollback_still_lands_last(catalog):
    """B prepares on snapshot 2; the table is rolled back to 1 and C commits a new snapshot 2
    numbering more records; B's base id equals the latest id, but it is another snapshot, so
    B is checked (and renumbered): B, the last commit, wins."""
    t = make_table(catalog, "deduplicate", {"bucket": "1"})
    t.write(pa.Table.from_pylist(batch(range(10), 0, "w0"), SCHEMA))
    t.write(pa.Table.from_pylist(batch(range(5), 1, "a"), SCHEMA))
    b = job(t, batch([9], 3, "b"))
    b.plan()
    b.execute()
    t.rollback_to(1)
    t.write(pa.Table.from_pylist(batch(range(10), 2, "c"), SCHEMA))
    assert t.latest_snapshot().id == 2
    assert b.commit().rewrites == 1
    assert rows_of(t) == batch(range(9), 2, "c") + batch([9], 3, "b")


def test_commit_landing_in_another_bucket_during_the_back_off_is_checked(catalog, monkeypatch):
    """A conflicts in bucket X (B wrote there); while A backs off, C writes to A's other
    bucket Y. A's renumbering must cover Y too, or A's records there tie with C's and A —
    the last commit — loses."""
    t = make_table(catalog, "deduplicate")
    t.write(pa.Table.from_pylist(batch(range(20), 0, "w0"), SCHEMA))
    bucket_of = {}
    for i in range(20):
        j = job(t, batch([i], 0, "probe"))
        j.plan()
        bucket_of[i] = j.units[0].bucket
    x = [i for i in range(20) if bucket_of[i] == 0]
    y = [i for i in range(20) if bucket_of[i] == 1]
    a_ids = sorted(x + y[:1])  # one key in Y: C's file there outnumbers A's
    a = job(t, batch(a_ids, 1, "a"))
    a.plan()
    a.execute()
    t.write(pa.Table.from_pylist(batch(x, 2, "b"), SCHEMA))  # B: bucket X only
    import lakeformat.operation.write.job as write_module

    real_sleep = write_module.time.sleep
    c_rows = batch(y, 3, "c")

    def sleep_while_c_commits(seconds: float) -> None:
        # time.sleep is patched for everyone (S3 request retries sleep too): C lands only in
        # the commit back-off of a write job, as the scenario says, never inside a request
        caller = sys._getframe(1).f_code
        if c_rows and caller.co_filename == write_module.__file__:
            rows = list(c_rows)
            c_rows.clear()
            t.write(pa.Table.from_pylist(rows, SCHEMA))  # C: bucket Y, during A's back-off
        real_sleep(seconds)

    monkeypatch.setattr(write_module.time, "sleep", sleep_while_c_commits)
    assert a.commit().snapshot_id is not None
    assert not c_rows  # C did land during the back-off
    want = sorted(batch(a_ids, 1, "a") + batch(y[1:], 3, "c"), key=lambda r: r["id"])
    assert rows_of(t) == want
    compact_full(t)
    assert rows_of(t) == want
