"""Errors of the CLI: one line on stderr naming the thing and the fix, and the exit status.

0 done; 2 the command cannot run as given: usage, names, option values, filters, a malformed
URI, an input file that is missing or does not fit the table; 1 anything else (missing table
or database, storage, conflicts, internal errors); 130 interrupted.
"""

from __future__ import annotations

import os
import re
import sys
import traceback
from collections.abc import Sequence

from lakeformat.errors import (
    InvalidArgumentError,
    LakeformatError,
    StoreUnreachableError,
    is_secret_option,
)

DEBUG_ENV = "LAKEFORMAT_DEBUG"


class UsageError(LakeformatError):
    """A command line that cannot run as given (exit status 2, as argparse's own errors)."""


class TablesFailed(LakeformatError):
    """Some tables of a many-table command could not be read; its output names each with its
    error (exit status 1, after the output)."""


#: errors in what the caller asked (arguments, names, options, filters, input rows): exit 2
USAGE_ERRORS = (UsageError, InvalidArgumentError)

_CREDENTIAL_CODES = {"InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied",
                     "InvalidToken", "ExpiredToken", "AuthorizationHeaderMalformed"}


def debug_enabled(flag: bool) -> bool:
    return flag or os.environ.get(DEBUG_ENV, "").lower() in ("1", "true", "yes")


def kv(items: Sequence[str] | None, what: str) -> dict[str, str]:
    """KEY=VALUE arguments as a dict; a malformed one is named (a secret one is not shown)."""
    out = {}
    for item in items or []:
        if "=" not in item:
            secret = any(is_secret_option(part) for part in re.split(r"[\s:]+", item) if part)
            shown = "'***'" if secret else repr(item)
            raise UsageError(f"{what} {shown} must be key=value")
        k, v = item.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def _message(e: BaseException) -> str:
    if isinstance(e, KeyError) and len(e.args) == 1 and isinstance(e.args[0], str):
        return e.args[0]  # str() of a KeyError quotes its message
    return str(e) or type(e).__name__


def _storage_error(e: BaseException) -> str | None:
    """A readable message for boto errors (unreachable endpoint, no or bad credentials)."""
    try:
        from botocore.exceptions import (
            BotoCoreError,
            ClientError,
            ConnectTimeoutError,
            EndpointConnectionError,
            NoCredentialsError,
            PartialCredentialsError,
        )
    except ImportError:
        return None
    if isinstance(e, (NoCredentialsError, PartialCredentialsError)):
        return ("no S3 credentials: give -o s3.access-key=... -o s3.secret-key=... or set "
                "AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY")
    if isinstance(e, (EndpointConnectionError, ConnectTimeoutError)):
        from lakeformat.storage.s3_unreachable import unreachable_message

        return unreachable_message(e)  # the library's words, as an Airflow task shows them
    if isinstance(e, ClientError):
        err = e.response.get("Error", {})
        code = str(err.get("Code", ""))
        bucket = err.get("BucketName")
        if code == "NoSuchBucket":
            named = f"S3 bucket {bucket!r}" if bucket else "the S3 bucket"
            return (f"{named} does not exist at this endpoint: check the bucket of the "
                    "warehouse URI s3://bucket/path")
        if code in _CREDENTIAL_CODES:
            return (f"S3 refused the credentials ({code}): check -o s3.access-key / "
                    "-o s3.secret-key (or AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY)")
        return f"S3 request failed: {e}"
    if isinstance(e, BotoCoreError):
        return f"S3 request failed: {e}"
    return None


def storage_unreachable(e: BaseException) -> bool:
    """Is `e` (or what it wraps) a refused or timed-out connection, or missing credentials?"""
    try:
        from botocore.exceptions import (
            ConnectTimeoutError,
            EndpointConnectionError,
            NoCredentialsError,
            PartialCredentialsError,
        )
    except ImportError:
        return False
    kinds = (ConnectTimeoutError, EndpointConnectionError, NoCredentialsError,
             PartialCredentialsError)
    cur: BaseException | None = e
    for _ in range(5):
        if cur is None:
            return False
        if isinstance(cur, (*kinds, StoreUnreachableError)):
            return True
        cur = cur.__cause__ or cur.__context__
    return False


def _cause_storage_error(e: BaseException) -> str | None:
    """The storage message of `e` or of the error it wraps (retry layers re-raise)."""
    seen = 0
    cur: BaseException | None = e
    while cur is not None and seen < 5:
        text = _storage_error(cur)
        if text is not None:
            return text
        cur = cur.__cause__ or cur.__context__
        seen += 1
    return None


def secrets(argv: Sequence[str]) -> list[str]:
    """Values of secret-bearing KEY=VALUE arguments, so no message echoes one."""
    out = []
    for item in argv:
        key, eq, value = str(item).partition("=")
        if eq and value.strip() and is_secret_option(key):
            out.append(value.strip())
    return out


def report(e: BaseException, debug: bool, hidden: Sequence[str]) -> int:
    """Print `e` as one line on stderr (and its traceback with `debug`); the exit status."""
    # a StoreUnreachableError already says what the CLI would (the library's message)
    plain = isinstance(e, (*USAGE_ERRORS, StoreUnreachableError))
    storage = _cause_storage_error(e) if not plain else None
    if storage is not None:
        text, code = storage, 1
    elif isinstance(e, LakeformatError):
        text, code = _message(e), 2 if isinstance(e, USAGE_ERRORS) else 1
    elif isinstance(e, FileNotFoundError) and e.filename:
        text, code = f"{e.filename} does not exist", 1
    elif isinstance(e, OSError):
        text, code = _message(e), 1
    else:
        text, code = f"internal error: {type(e).__name__}: {_message(e)}", 1
        if not debug:
            text += f" (run with --debug or {DEBUG_ENV}=1 for the traceback)"
    if debug:
        traceback.print_exception(e, file=sys.stderr)
    text = " ".join(text.split())  # one line, whatever the message held
    for secret in sorted(hidden, key=len, reverse=True):
        # whole values only: a short secret must not blank out letters of other words
        text = re.sub(rf"(?<![A-Za-z0-9]){re.escape(secret)}(?![A-Za-z0-9])", "***", text)
    print(f"lakeformat: error: {text}", file=sys.stderr)
    return code
