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
