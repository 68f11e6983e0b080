"""Errors raised by lakeformat. Every message names the thing at fault."""

from __future__ import annotations


class LakeformatError(Exception):
    """Base class of every error lakeformat raises on purpose. Never raised itself: callers
    branch on the subclasses (see the README's table of which are worth a retry)."""


# -- the caller asked for something that is not there ---------------------------------
class NotFoundError(LakeformatError, LookupError):
    """A database, table, snapshot, tag or column that does not exist."""


class DatabaseNotFoundError(NotFoundError, KeyError):
    pass


class TableNotFoundError(NotFoundError, KeyError):
    pass


class SnapshotNotFoundError(NotFoundError):
    """A snapshot id that was never written or has expired."""


class TagNotFoundError(NotFoundError):
    pass


# -- the caller asked to create something that is there ---------------------------------
class AlreadyExistsError(LakeformatError):
    pass


class DatabaseAlreadyExistsError(AlreadyExistsError):
    pass


class TableAlreadyExistsError(AlreadyExistsError):
    pass


class TagAlreadyExistsError(AlreadyExistsError):
    pass


class DatabaseNotEmptyError(LakeformatError, ValueError):
    """Dropping a database that still holds tables (without `cascade`)."""


# -- the caller's arguments or data are wrong (also ValueError) ----------------------------------
class InvalidArgumentError(LakeformatError, ValueError):
    """An argument the call cannot use: the message names it and what it takes."""


class InvalidIdentifierError(InvalidArgumentError):
    """A database or table name that is empty, has '/', '..' or control characters."""


class InvalidOptionError(InvalidArgumentError):
    """A table option whose value cannot be used; the message names the key."""


class InvalidFilterError(InvalidArgumentError):
    """A read filter naming a column the table lacks, or a value its column cannot take."""


class ColumnNotFoundError(InvalidArgumentError):
    """A requested column the table (or the snapshot read) does not have."""


class SchemaMismatchError(InvalidArgumentError):
    """Input data whose columns, types or values do not fit the table (or its merge engine)."""


class InputFileError(SchemaMismatchError):
    """An input file (CSV, JSON, Parquet) that cannot be read as the table's rows; the message
    names the file and, for a bad value, the line and the column."""


# -- the table is outside what lakeformat handles, or damaged --------------------------------------
class UnsupportedError(LakeformatError):
    """A table option, type or file layout lakeformat does not handle (fail closed)."""


class CorruptFileError(LakeformatError):
    """A metadata or data file that cannot be decoded; the message names the file."""


class CleanupAbortedError(LakeformatError):
    """A cleanup (expiry, orphan files, schema retention, tag deletion) that stopped before
    deleting anything because it could not read something it must check."""


# -- commits ---------------------------------
class CommitError(LakeformatError):
    """Base of the commit outcomes below."""


class CommitConflictError(CommitError):
    """A commit that cannot be retried as is: files it deletes are no longer live, or LSM
    overlap. Nothing of it landed; planning the job again from the latest snapshot is safe."""


class CommitFailedError(CommitError):
    """A commit that gave up after its retries or timeout; nothing of it landed and the files
    it wrote were removed. Running the job again is safe."""


class CommitStateUnknownError(CommitError):
    """Publishing a snapshot failed in a way that leaves open whether it landed (the request
    may have succeeded while its answer was lost). Nothing was deleted: if it landed the table
    is complete, if not its files are orphans that `remove_orphan_files` removes. Run the job
    again with the same `commit_user` and `commit_identifier` (it commits at most once), or
    check `snapshot_id` / `Table.find_commit` first."""

    def __init__(self, message: str, path: str = "", snapshot_id: int | None = None,
                 commit_user: str | None = None):
        super().__init__(message)
        self.path = path
        self.snapshot_id = snapshot_id
        self.commit_user = commit_user


# -- table locks ---------------------------------
class LockError(LakeformatError):
    """Base of the table-lock outcomes below."""


class LockTimeoutError(LockError):
    """The table lock was not acquired within `lock-acquire-timeout`: another job holds it.
    `holder` describes who (owner, host, process, purpose, since when), when it is known.
    Nothing was done to the table; running the job again later is safe."""

    def __init__(self, message: str, holder: object = None):
        super().__init__(message)
        self.holder = holder


class LockLostError(LockError):
    """A job's lease on its table lock ran out or was taken over (a paused or partitioned
    process) before it published: it stopped before committing or deleting anything more.
    What it wrote but did not publish becomes orphan files; running the job again is safe."""


class CorruptLeaseError(CorruptFileError, LockError):
    """A lock's lease object that is not a lakeformat lease: who holds the lock cannot be
    told, so the lock is not taken and nothing is written. A `CorruptFileError` (the message
    names the object and how to free it) and a `LockError` (a commit refused before its
    publish was sent: nothing landed, the job removes the files it wrote); not retryable."""


class StoreUnreachableError(LakeformatError):
    """The object store's endpoint refused the connection, or accepted it and never answered
    within the S3 timeouts (`s3.connection.timeout` per attempt, `s3.retry.timeout` in all).
    The message names the endpoint and what to check. Worth a retry: a store that is
    restarting answers again; nothing was changed by the request that got no answer, or
    (a write) it landed whole."""


class JdbcConnectionError(LakeformatError):
    """The JDBC catalog's database cannot be reached (refused, timed out, bad credentials, a
    SQLite file that cannot be opened). The message names the URL, never its password."""


#: the earlier name of `CommitStateUnknownError`
CommitOutcomeUnknownError = CommitStateUnknownError

#: errors after which running the same call again may succeed (with the same commit user and
#: identifier, a write lands at most once)
class EngineError(LakeformatError):
    """The engine running a job's tasks (Spark) failed without a library error to show: a
    task's result could not be brought back, or the engine lost a unit. Nothing was
    committed; running the job again is safe."""


RETRYABLE_ERRORS: tuple[type[LakeformatError], ...] = (
    CommitConflictError, CommitFailedError, CommitStateUnknownError, LockTimeoutError,
    LockLostError, EngineError, StoreUnreachableError)


_SECRET_WORDS = ("secret", "password", "passwd", "token", "credential")
_SECRET_KEY_SUFFIXES = ("access-key", "access.key", "accesskey", "access_key", "api-key",
                        "api.key", "apikey", "api_key", "private-key", "private.key",
                        "privatekey", "private_key", "secret-key", "session-key")


def is_secret_option(key: str) -> bool:
    """Whether an option's value may be a credential (and must never be echoed)."""
    k = str(key).strip().lower()
    return any(w in k for w in _SECRET_WORDS) or k.endswith(_SECRET_KEY_SUFFIXES)


#: option names of an access key id: never echoed by an option's own error, but no secret —
#: its value is not hidden elsewhere (a key such as "lakeformat" would blank out every bucket,
#: table and DAG name holding the word)
_ACCESS_KEY_IDS = ("access-key", "access.key", "accesskey", "access_key")


def hides_value(key: str) -> bool:
    """Whether an option's value is a secret to hide wherever it appears (in a message under
    another key, in Airflow's task logs): a secret option's, but not an access key id's."""
    k = str(key).strip().lower()
    if k.endswith(_ACCESS_KEY_IDS) and "secret" not in k:
        return False
    return is_secret_option(key)


def shown_value(key: str, value: object) -> str:
    """An option value as an error message may show it: `'***'` for secret-bearing keys."""
    return "'***'" if is_secret_option(key) else repr(value)
