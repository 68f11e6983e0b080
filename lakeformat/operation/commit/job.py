"""The driver every data job uses: plan → execute → commit (the architecture's one job model).

A data job (a write, a delete, a compaction, a partition drop, ...) is a `DataJob`:

* `plan()` (driver) → units: reads the latest snapshot once and splits the work into small
  serializable units; plans nothing when this job's commit identity already landed;
* `execute(units, runner)` (anywhere) → commit messages: a pure function of each unit, run
  through a `Runner` (a thread pool in-process, Spark tasks on a cluster); when one unit fails,
  the files of every unit are removed and its error raised. A job that writes no data file
  (`metadata_jobs`) has nothing to execute: its units are its messages;
* `commit(messages)` (driver) → the job's result: snapshot(s) through `FileStoreCommit`, with
  its conflict checks and retries; what cannot commit is removed (`abort`).

Written here once, for every job: the commit identity (`check_commit_identity`; a job's
committer carries its user and identifier, and `operation_properties` the snapshot property
naming the call that made a commit), "already landed" (`landed_commits`: the snapshots an
earlier run of this identity made that are this kind of job's commits — `commit_kinds` and the
operation property — refusing an identity another kind of call used when
`refuses_other_calls`; `find_landed`: the first of them, kept as `landed`; `landed_after`: the
snapshot a commit that looked failed published anyway), and `run()`. A job overrides `plan`,
`execute`, `commit` and `abort`, and sets `operation`, `commit_kinds` and
`refuses_other_calls` when the defaults (a write's) are not its own.

Retries are not a loop here: a taken snapshot id is retried inside `FileStoreCommit.commit`
(`commit.min-retry-wait` doubling to `commit.max-retry-wait`, `commit.max-retries`,
`commit.timeout`) for every job alike; what a job does on a conflict differs by job and stays
in it (a write renumbers its buckets after its own back-off, the one job-level wait; a
compaction retries partition by partition at once; a partition drop has nothing to redo).
"""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Integral
from typing import Generic, TypeVar

from lakeformat.errors import CommitStateUnknownError, InvalidArgumentError
from lakeformat.meta.snapshot import OPERATION_PROPERTY, Snapshot, operation_of
from lakeformat.operation.commit.file_store_commit import WRITE_KINDS, FileStoreCommit
from lakeformat.operation.runner import Runner
from lakeformat.schema.table_schema import TableSchema
from lakeformat.storage import FileIO

__all__ = ["DataJob", "check_commit_identity"]

UnitT = TypeVar("UnitT")
MessageT = TypeVar("MessageT")
ResultT = TypeVar("ResultT")

_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1


def check_commit_identity(commit_user: str | None, commit_identifier: int | None) -> None:
    """A commit identifier only means something with the user it belongs to."""
    if commit_user is not None and (not isinstance(commit_user, str) or not commit_user):
        raise InvalidArgumentError(f"commit_user must be a non-empty string, got {commit_user!r}")
    if commit_identifier is None:
        return
    if (isinstance(commit_identifier, bool) or not isinstance(commit_identifier, Integral)
            or not _LONG_MIN <= commit_identifier <= _LONG_MAX):
        raise InvalidArgumentError(f"commit_identifier must be an integer (a Java long), got "
                                   f"{commit_identifier!r}")
    if commit_user is None:
        raise InvalidArgumentError("commit_identifier needs a commit_user: the pair identifies "
                                   "a commit (e.g. user 'dag.task', identifier the run's date)")


class DataJob(Generic[UnitT, MessageT, ResultT]):
    """One data job of one table (see the module docstring).

    Subclasses set `operation` (what the job is called in messages and in the snapshot
    property of a write), check what they refuse, then call `open_committer` (so a table the
    job refuses is named before anything reads its metadata), and implement `plan`, `execute`,
    `commit` and `abort`; `run()` is the three steps in one process.
    """

    #: the job's name in messages and in the operation property ("write", "delete", ...)
    operation: str = "job"
    #: the snapshot kinds this job commits: what "already landed" looks for
    commit_kinds: tuple[str, ...] = WRITE_KINDS
    #: whether an identity that made only other kinds of commits is refused ("already landed"
    #: would otherwise silently skip this job's work)
    refuses_other_calls: bool = True
    committer: FileStoreCommit

    def __init__(self, file_io: FileIO, table_path: str, schema: TableSchema,
                 table_name: str | None = None, *, commit_user: str | None = None,
                 commit_identifier: int | None = None, runner: Runner | None = None):
        check_commit_identity(commit_user, commit_identifier)
        self.file_io = file_io
        self.table_path = table_path
        self.table_name = table_name or table_path
        self.schema = schema
        self.runner = runner
        self.commit_identifier = commit_identifier
        self._commit_user = commit_user
        #: the snapshot an earlier run of this (user, identifier) committed (`find_landed`)
        self.landed: Snapshot | None = None

    def open_committer(self, schema: TableSchema | None = None,
                       properties: dict[str, str] | None = None) -> FileStoreCommit:
        """The job's committer, carrying its commit identity (a job without a user gets a
        fresh one, kept when the committer is opened again for an evolved `schema`)."""
        if schema is not None:
            self.schema = schema
        user = self.committer.commit_user if hasattr(self, "committer") else self._commit_user
        self.committer = FileStoreCommit(self.file_io, self.table_path, self.schema, user,
                                         self.commit_identifier, properties)
        return self.committer

    @property
    def commit_user(self) -> str:
        return self.committer.commit_user

    def operation_properties(self) -> dict[str, str] | None:
        """The snapshot properties of a commit with an identifier: which call made it (a
        write, a delete), so a re-run finds its own commit and not another call's; None (no
        properties, as Java writes) without an identifier."""
        return None if self.commit_identifier is None else {OPERATION_PROPERTY: self.operation}

    # -- "already landed" ----------------------------------------------------------------------
    def is_own_commit(self, snapshot: Snapshot) -> bool:
        """Whether `snapshot` (made with this job's identity) is this kind of job's commit: one
        of `commit_kinds`, with this job's operation property (a snapshot without one — Java's,
        or one committed without an identifier — counts as this job's)."""
        return snapshot.commit_kind in self.commit_kinds and (snapshot.properties or {}).get(
            OPERATION_PROPERTY, self.operation) == self.operation

    def landed_commits(self, since: int | None = None) -> list[Snapshot]:
        """The retained snapshots after `since` (oldest first) that a run of this job's
        (user, identifier) committed as this kind of job (`is_own_commit`); [] for a job
        without an identifier. When that pair made only other kinds of commits (a compaction,
        a delete for a write) and the job `refuses_other_calls`, `InvalidArgumentError`: its
        work would otherwise be silently skipped."""
        if self.commit_identifier is None:
            return []
        found = self.committer.snapshots.find_commit(self.commit_user, self.commit_identifier,
                                                     since)
        mine = [s for s in found if self.is_own_commit(s)]
        if found and not mine and self.refuses_other_calls:
            raise InvalidArgumentError(
                f"{self.table_name}: commit_user {self.commit_user!r} with commit_identifier "
                f"{self.commit_identifier} already made snapshot {found[0].id} "
                f"({operation_of(found[0])}), not a {self.operation}; give each "
                f"{self.operation} its own identifier")
        return mine

    def find_landed(self) -> Snapshot | None:
        """The snapshot an earlier run of this job's (user, identifier) committed, if any,
        kept as `landed`; found without planning (nothing is read but snapshot files). `plan`
        then plans nothing and `commit` reports it."""
        mine = self.landed_commits()
        if mine:
            self.landed = mine[0]
        return self.landed

    def landed_after(self, since: int | None, kind: str, error: BaseException
                     ) -> Snapshot | None:
        """The `kind` snapshot this job's committer published after `since` although its
        commit looked failed (with `error`), or None; `CommitStateUnknownError` when the
        snapshots cannot be read (then the job's files must be kept)."""
        try:
            latest = self.committer.snapshots.latest_snapshot()
            return self.committer.find_landed(since, latest, kind)
        except Exception as unreadable:
            raise CommitStateUnknownError(
                f"{self.operation} commit of {self.table_path} stopped ({error}) and whether it "
                f"landed cannot be read ({unreadable}); its files were kept",
                path=self.table_path, commit_user=self.commit_user) from unreadable

    # -- the three steps -----------------------------------------------------------------------
    def plan(self) -> list[UnitT]:
        """Read the latest snapshot once; the units of work (driver)."""
        raise NotImplementedError

    def execute(self, units: Sequence[UnitT] | None = None, runner: Runner | None = None
                ) -> list[MessageT]:
        """The units' files through `runner` (the job's, else a thread pool); nothing is
        committed. When a unit fails, every unit's files are removed and its error raised."""
        raise NotImplementedError

    def commit(self, messages: Sequence[MessageT] | None = None) -> ResultT:
        """Publish the executed units as snapshot(s) (driver); what cannot commit is
        removed."""
        raise NotImplementedError

    def abort(self) -> None:
        """Remove the files this job wrote (they will not be committed)."""
        raise NotImplementedError

    def run(self) -> ResultT:
        """plan → execute → commit, in this process."""
        units = self.plan()
        return self.commit(self.execute(units))
