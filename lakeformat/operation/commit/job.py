"""The driver every data job uses: plan → execute → commit (the architecture's one job model).

A data job (a write, a delete, a compaction, ...) is a `DataJob`:

* `plan()` (driver) → units: reads the latest snapshot once and splits the work into small
  serializable units; plans nothing when this job's commit identity already landed;
* `execute(units, runner)` (anywhere) → commit messages: a pure function of each unit, run
  through a `Runner` (a thread pool in-process, Spark tasks on a cluster); when one unit fails,
  the files of every unit are removed and its error raised;
* `commit(messages)` (driver) → the job's result: snapshot(s) through `FileStoreCommit`, with
  its conflict checks and retries; what cannot commit is removed (`abort`).

Written here once, for every job: the commit identity (`check_commit_identity`; a job's
committer carries its user and identifier), "already landed" (`landed_commits`: snapshots an
earlier run of this identity made; `landed_after`: the snapshot a commit that looked failed
published anyway), and `run()`. A job overrides `plan`, `execute`, `commit` and `abort`.
"""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Integral
from typing import Generic, TypeVar

from lakeformat.errors import CommitStateUnknownError, InvalidArgumentError
from lakeformat.meta.snapshot import Snapshot
from lakeformat.operation.commit.file_store_commit import FileStoreCommit
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

    #: the job's name in messages ("write", "delete", "compaction", ...)
    operation: str = "job"
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

    # -- "already landed" ----------------------------------------------------------------------
    def landed_commits(self, since: int | None = None) -> list[Snapshot]:
        """The retained snapshots after `since` (oldest first) that a run of this job's
        (user, identifier) committed; [] for a job without an identifier."""
        if self.commit_identifier is None:
            return []
        return self.committer.snapshots.find_commit(self.commit_user, self.commit_identifier,
                                                    since)

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
