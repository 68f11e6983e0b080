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
    """A commit that gave up after its retries or timeout."""


class InvalidOptionError(LakeformatError, ValueError):
    """A table option whose value cannot be used; the message names the key."""
