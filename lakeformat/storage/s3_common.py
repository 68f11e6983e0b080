"""What the S3 modules share: key arithmetic, reading botocore's errors, and the options.

No botocore import at module level: the options are checked when a catalog is made, long
before (and even without) any request.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lakeformat.errors import InvalidOptionError, shown_value
from lakeformat.options import secrets_hidden

__all__ = [
    "S3Settings", "make_client", "uri", "dir_prefix", "parent_key",
    "error_code", "is_not_found", "is_precondition_failed", "is_conflict", "is_not_implemented",
]

# Each option may be spelled Paimon's way ("s3.access-key") or Hadoop's ("s3.access.key"),
# since Paimon itself accepts both and users copy configs between the two.
_OPT_NAMES: dict[str, tuple[str, ...]] = {
    "endpoint": ("s3.endpoint",),
    "access_key": ("s3.access-key", "s3.access.key"),
    "secret_key": ("s3.secret-key", "s3.secret.key"),
    "session_token": ("s3.session-token", "s3.session.token"),
    "region": ("s3.region", "s3.endpoint.region"),
    "path_style": ("s3.path-style-access", "s3.path.style.access"),
    "ssl": ("s3.connection.ssl.enabled",),
    "attempts": ("s3.attempts.maximum",),
    "max_connections": ("s3.connection.maximum",),
    "timeout": ("s3.connection.timeout",),
    "retry_timeout": ("s3.retry.timeout",),
    "paging": ("s3.paging.maximum",),
}
#: every `s3.*` option S3FileIO reads (a catalog refuses other `s3.*` keys as typos)
S3_OPTIONS: frozenset[str] = frozenset(k for names in _OPT_NAMES.values() for k in names)

#: attempts per request (the first one included) unless ``s3.attempts.maximum`` says otherwise:
#: at a 20 % fault rate, ten attempts all failing is a one-in-ten-million event
DEFAULT_ATTEMPTS = 10
DEFAULT_MAX_CONNECTIONS = 32
#: `s3.connection.timeout`: the longest one attempt waits on a silent socket (an answer that
#: does not start, a send that does not move). A healthy upload keeps the socket busy, so this
#: bounds stalls, never the length of a transfer
DEFAULT_READ_TIMEOUT_S = 20.0
CONNECT_TIMEOUT_S = 10.0
#: `s3.retry.timeout`: how long a request that gets no answer at all (refused, connect or
#: read timeout) is retried, counted from its first attempt; a store that answers, even with
#: 503s, keeps every attempt of `s3.attempts.maximum`
DEFAULT_RETRY_TIMEOUT_S = 15.0
DEFAULT_PAGE_SIZE = 1000  # S3's own maximum of keys per listing page


def uri(scheme: str, bucket: str, key: str) -> str:
    """Inverse of :func:`split_s3_path`."""
    return f"{scheme}://{bucket}/{key}" if key else f"{scheme}://{bucket}"


def dir_prefix(key: str) -> str:
    """Listing prefix of a directory key: "" for the bucket root, else "key/"."""
    return key + "/" if key else ""


def parent_key(key: str) -> str:
    """The directory key holding ``key`` ("" at the bucket root)."""
    return key.rpartition("/")[0]


# ------------------------------------------------------------------ botocore's errors

def error_code(e: BaseException) -> tuple[str, int | None]:
    """(S3 error code, HTTP status) of a botocore ClientError; ("", None) for anything else."""
    resp = getattr(e, "response", None)
    if not isinstance(resp, dict):
        return "", None
    code = str(resp.get("Error", {}).get("Code", ""))
    status = resp.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return code, status


def is_not_found(e: BaseException) -> bool:
    code, status = error_code(e)
    return status == 404 or code in ("NoSuchKey", "NotFound", "404", "NoSuchBucket")


def is_precondition_failed(e: BaseException) -> bool:
    """412: an ``If-None-Match``/``If-Match`` condition did not hold."""
    code, status = error_code(e)
    return status == 412 or code == "PreconditionFailed"


def is_conflict(e: BaseException) -> bool:
    """409: another conditional write on the same key is in flight (S3 asks to retry)."""
    code, status = error_code(e)
    return status == 409 or code == "ConditionalRequestConflict"


def is_not_implemented(e: BaseException) -> bool:
    """501 or ``NotImplemented``: a store that refuses conditional headers outright."""
    code, status = error_code(e)
    return status == 501 or code == "NotImplemented"


# ------------------------------------------------------------------ options

def _parse_bool(key: str, value: str) -> bool:
    v = value.strip().lower()
    if v in ("true", "1", "yes"):
        return True
    if v in ("false", "0", "no"):
        return False
    raise InvalidOptionError(f"option {key!r} must be 'true' or 'false', "
                             f"got {shown_value(key, value)}")


def _parse_int(key: str, value: str) -> int:
    n = int(value) if value.strip().isdigit() else 0
    if n <= 0:
        raise InvalidOptionError(f"option {key!r} must be a positive integer, "
                                 f"got {shown_value(key, value)}")
    return n


def _parse_duration_s(key: str, value: str) -> float:
    """Hadoop's durations: a bare number is milliseconds; "ms", "s", "m" suffixes allowed."""
    v = value.strip().lower()
    for suffix, scale in (("ms", 0.001), ("s", 1.0), ("m", 60.0), ("", 0.001)):
        number = v[: len(v) - len(suffix)] if suffix else v
        if v.endswith(suffix) and number.strip().isdigit() and int(number) > 0:
            return int(number) * scale
    raise InvalidOptionError(f"option {key!r} must be a positive duration such as '5000' "
                             f"(milliseconds) or '30s', got {shown_value(key, value)}")


@dataclass(frozen=True)
class S3Settings:
    """The S3 options of a catalog, checked and with their defaults filled in."""

    endpoint: str | None
    access_key: str | None
    secret_key: str | None
    session_token: str | None
    region: str | None
    path_style: bool | None
    attempts: int
    max_connections: int
    read_timeout_s: float
    page_size: int
    retry_timeout_s: float = DEFAULT_RETRY_TIMEOUT_S

    @classmethod
    def from_options(cls, options: dict[str, Any] | None) -> S3Settings:
        """Validate now, so a typo fails at catalog creation rather than in a task; no error
        shows a credential's value, even one pasted under another option."""
        with secrets_hidden(options or {}):
            return cls._from_options(options)

    @classmethod
    def _from_options(cls, options: dict[str, Any] | None) -> S3Settings:
        opts = {k: str(v) for k, v in (options or {}).items() if k.startswith("s3.")}

        def get(name: str) -> str | None:
            for key in _OPT_NAMES[name]:
                v = opts.get(key)
                if v is not None and v != "":
                    return v
            return None

        endpoint = get("endpoint")
        if endpoint is not None and "://" not in endpoint:
            # Hadoop-style endpoints may omit the scheme; then ``s3.connection.ssl.enabled``
            # (default true) chooses https or http.
            ssl = get("ssl")
            secure = _parse_bool("s3.connection.ssl.enabled", ssl) if ssl is not None else True
            endpoint = ("https://" if secure else "http://") + endpoint
        access_key, secret_key = get("access_key"), get("secret_key")
        if (access_key is None) != (secret_key is None):
            raise InvalidOptionError(
                "options 's3.access-key' and 's3.secret-key' must be given together"
            )
        ps = get("path_style")
        att, mc, to, pg = get("attempts"), get("max_connections"), get("timeout"), get("paging")
        rt = get("retry_timeout")
        return cls(
            endpoint=endpoint,
            access_key=access_key,
            secret_key=secret_key,
            session_token=get("session_token"),
            region=get("region") or ("us-east-1" if endpoint else None),
            path_style=(_parse_bool("s3.path-style-access", ps) if ps is not None
                        else (True if endpoint else None)),
            attempts=_parse_int("s3.attempts.maximum", att) if att else DEFAULT_ATTEMPTS,
            max_connections=(_parse_int("s3.connection.maximum", mc) if mc
                             else DEFAULT_MAX_CONNECTIONS),
            read_timeout_s=(_parse_duration_s("s3.connection.timeout", to) if to
                            else DEFAULT_READ_TIMEOUT_S),
            page_size=min(_parse_int("s3.paging.maximum", pg), DEFAULT_PAGE_SIZE) if pg
            else DEFAULT_PAGE_SIZE,
            retry_timeout_s=(_parse_duration_s("s3.retry.timeout", rt) if rt
                             else DEFAULT_RETRY_TIMEOUT_S),
        )

    @property
    def store_id(self) -> str:
        """Names the store for the probe cache: its endpoint, or AWS in a region."""
        return self.endpoint or f"aws:{self.region or 'default'}"


def make_client(st: S3Settings) -> Any:
    """A botocore S3 client for ``st`` whose own retries are off: the caller installs a
    ``RetryPolicy`` (botocore is imported here, on first use, not with lakeformat).

    Each client gets a session of its own (its own credentials chain), but every session of
    the process reads the service models through one loader (`_shared_loader`)."""
    import botocore.session
    from botocore.config import Config

    cfg: dict[str, Any] = {
        # botocore's retry handler gets one attempt (so never retries): see s3_retry
        "retries": {"mode": "standard", "total_max_attempts": 1},
        "connect_timeout": CONNECT_TIMEOUT_S,
        "read_timeout": st.read_timeout_s,
        "max_pool_connections": st.max_connections,
    }
    if st.path_style is not None:
        cfg["s3"] = {"addressing_style": "path" if st.path_style else "virtual"}
    if st.endpoint:
        # Non-AWS stores (MinIO, Ceph, older gateways) often reject the CRC trailers
        # botocore >= 1.36 sends by default; only send checksums where S3 demands them.
        cfg["request_checksum_calculation"] = "when_required"
        cfg["response_checksum_validation"] = "when_required"
    try:
        config = Config(**cfg)
    except TypeError:  # older botocore without the checksum settings
        cfg.pop("request_checksum_calculation", None)
        cfg.pop("response_checksum_validation", None)
        config = Config(**cfg)
    session = botocore.session.get_session()
    session.register_component("data_loader", _shared_loader(session))
    return session.create_client(
        "s3", region_name=st.region, endpoint_url=st.endpoint, config=config,
        aws_access_key_id=st.access_key, aws_secret_access_key=st.secret_key,
        aws_session_token=st.session_token)


#: botocore's model loaders by extra search path (AWS_DATA_PATH), one each per process
_LOADERS: dict[str | None, Any] = {}


def _shared_loader(session: Any) -> Any:
    """botocore's reader of service models (the S3 API and endpoint JSON), shared by the
    clients of this process.

    A fresh session parses those files again for its first client: ~0.14 s of CPU, paid by
    every table opened on S3 in every Airflow task, CLI command and Spark task. The loader
    only caches what it parsed from botocore's data files (and the user's AWS_DATA_PATH, which
    keys it), so sharing it shares nothing of a client's settings or credentials. No lock:
    two threads may each build one the first time, and one of them is kept."""
    from botocore.loaders import create_loader

    data_path = session.get_config_variable("data_path")
    loader = _LOADERS.get(data_path)
    if loader is None:
        loader = _LOADERS.setdefault(data_path, create_loader(data_path))
    return loader
