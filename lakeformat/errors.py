"""Errors raised by lakeformat. Every message names the thing at fault."""

from __future__ import annotations


class LakeformatError(Exception):
    """Base class of every error lakeformat raises on purpose."""


class UnsupportedError(LakeformatError):
    """A table option, type or file layout lakeformat does not handle (fail closed)."""


class SchemaMismatchError(LakeformatError, ValueError):
    """Input data whose columns or types do not match the table."""


class InvalidIdentifierError(LakeformatError, ValueError):
    """A database or table name that is empty, has '/', '..' or control characters."""


class DatabaseNotFoundError(LakeformatError, KeyError):
    pass


class DatabaseAlreadyExistsError(LakeformatError):
    pass


class TableNotFoundError(LakeformatError, KeyError):
    pass


class TableAlreadyExistsError(LakeformatError):
    pass


class CorruptFileError(LakeformatError):
    """A metadata or data file that cannot be decoded; the message names the file."""


class CommitConflictError(LakeformatError):
    """A commit that cannot be retried: files it deletes are no longer live, or LSM overlap."""


class CommitFailedError(LakeformatError):
    """A commit that gave up after its retries or timeout; nothing of it landed and the files
    it wrote were removed. Running the job again is safe."""


class CommitOutcomeUnknownError(LakeformatError):
    """Publishing a snapshot failed in a way that leaves open whether it landed (the request
    may have succeeded while its answer was lost). Nothing was deleted: if it landed the table
    is complete, if not its files are orphans that `remove_orphan_files` removes. Check
    `snapshot_id` (or the table's latest snapshot) before running the job again."""

    def __init__(self, message: str, path: str = "", snapshot_id: int | None = None,
                 commit_user: str | None = None):
        super().__init__(message)
        self.path = path
        self.snapshot_id = snapshot_id
        self.commit_user = commit_user


class InvalidOptionError(LakeformatError, ValueError):
    """A table option whose value cannot be used; the message names the key."""


class InvalidFilterError(LakeformatError, ValueError):
    """A read filter naming a column the table lacks, or a value its column cannot take."""


class InputFileError(SchemaMismatchError):
    """An input file (CSV, JSON, Parquet) that cannot be read as the table's rows; the message
    names the file and, for a bad value, the line and the column."""


_SECRET_WORDS = ("secret", "password", "passwd", "token", "credential")
_SECRET_KEY_SUFFIXES = ("access-key", "access.key", "accesskey", "access_key", "api-key",
                        "api.key", "apikey", "api_key", "private-key", "private.key",
                        "privatekey", "private_key", "secret-key", "session-key")


def is_secret_option(key: str) -> bool:
    """Whether an option's value may be a credential (and must never be echoed)."""
    k = str(key).strip().lower()
    return any(w in k for w in _SECRET_WORDS) or k.endswith(_SECRET_KEY_SUFFIXES)


def shown_value(key: str, value: object) -> str:
    """An option value as an error message may show it: `'***'` for secret-bearing keys."""
    return "'***'" if is_secret_option(key) else repr(value)
