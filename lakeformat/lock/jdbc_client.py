"""The connection to the relational database behind a JDBC catalog (Paimon's `JdbcClientPool`).

A Java Paimon catalog names its database with a JDBC URL (`uri`) and passes driver properties
as catalog options prefixed `jdbc.` (`jdbc.user`, `jdbc.password`). `JdbcClient` takes the same
options and turns them into a SQLAlchemy engine:

    jdbc:sqlite:/path/cat.db                    -> SQLite (the embedded default)
    jdbc:postgresql://127.0.0.1:5432/db?user=u  -> PostgreSQL through psycopg 3
    jdbc:mysql://host:3306/db                   -> MySQL through PyMySQL (extra `mysql`)

SQLAlchemy URLs work as well (`sqlite:///...`, `postgresql://...`, `postgresql+psycopg://...`,
`mysql+pymysql://...`). Like a JDBC connection in Paimon, every statement runs in autocommit:
the lock's delete-if-expired and its insert are two statements, as in Java's dialects.

Credentials never leave this object: the URL in messages and `repr` has its password masked,
and a driver error is reduced to its first line with the password blanked out. SQLAlchemy is
imported when a client is built, never by `import lakeformat`.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import parse_qsl

from lakeformat.errors import (
    InvalidOptionError,
    JdbcConnectionError,
    UnsupportedError,
    shown_value,
)

__all__ = ["JdbcClient", "JdbcConnectionError", "DIALECTS", "mask_url"]

DIALECTS = ("sqlite", "postgresql", "mysql")
#: catalog options prefixed so are handed to the driver (Paimon's `JdbcCatalog.PROPERTY_PREFIX`)
PROPERTY_PREFIX = "jdbc."
_DEFAULT_LOCK_KEY_MAX_LENGTH = 255
_SQLITE_BUSY_TIMEOUT_S = 60.0  # a writer waits this long for another process's write
_CONNECT_TIMEOUT_S = 10  # a server that does not answer fails in this long, not forever

_SQLALCHEMY_DRIVERS = {"sqlite": "sqlite", "postgresql": "postgresql+psycopg",
                       "postgres": "postgresql+psycopg", "mysql": "mysql+pymysql"}
# driver properties (URL query parameters or `jdbc.*` options) each dialect understands, and
# the connect argument of the Python driver each becomes
_PG_PROPERTIES = {"user": "user", "password": "password", "sslmode": "sslmode",
                  "sslrootcert": "sslrootcert", "sslcert": "sslcert", "sslkey": "sslkey",
                  "connectTimeout": "connect_timeout", "connect_timeout": "connect_timeout",
                  "ApplicationName": "application_name",
                  "application_name": "application_name", "currentSchema": "options"}
_MYSQL_PROPERTIES = {"user": "user", "password": "password", "connectTimeout": "connect_timeout",
                     "connect_timeout": "connect_timeout"}
_SQLITE_PROPERTIES = {"busy_timeout": "timeout"}
# PyMySQL's error codes of a server that cannot be reached or refuses the login
_MYSQL_UNREACHABLE = {1040, 1044, 1045, 1049, 2002, 2003, 2005, 2006, 2013}


def mask_url(url: str) -> str:
    """`url` with the password of its user part and of its query parameters replaced by ***.

    A password may hold '/', '?', '#' or '@' (SQLAlchemy reads up to the last '@' before the
    host), so the user part runs to the last '@' followed by a host; when in doubt, more is
    hidden, never less."""
    url = re.sub(r"(//[^/@:?#]*:).*@(?=[^@/?#]*(?:[/?#]|$))", r"\1***@", url, count=1)
    return re.sub(r"(?i)([?&;](?:password|passwd|pwd)=)[^&;]*", r"\1***", url)


def _dialect_of(scheme: str, uri: str) -> str:
    """`postgresql+psycopg` -> `postgresql`; anything but the three dialects is refused."""
    base = scheme.split("+", 1)[0].lower()
    base = "postgresql" if base == "postgres" else base
    if base not in DIALECTS:
        raise UnsupportedError(
            f"JDBC catalog database {base!r} (uri {mask_url(uri)}) is not supported: lakeformat "
            f"speaks the dialects of Paimon's distributed lock, {', '.join(DIALECTS)}")
    return base


def _split(uri: str) -> tuple[str, str, str]:
    """(dialect, SQLAlchemy URL text without query, query text) of a JDBC or SQLAlchemy URL."""
    text = uri.strip()
    if text.lower().startswith("jdbc:"):
        m = re.match(r"(?i)jdbc:([a-z0-9]+):(.*)$", text)
        if not m:
            raise InvalidOptionError(f"option 'uri': {mask_url(uri)} is not a JDBC URL "
                                     "(jdbc:<database>:<address>)")
        dialect = _dialect_of(m.group(1), uri)
        rest, _, query = m.group(2).partition("?")
        if dialect == "sqlite":
            path = rest[len("file:"):] if rest.startswith("file:") else rest
            if path in ("", ":memory:"):
                return dialect, "sqlite://", query
            return dialect, "sqlite:///" + path, query
        if not rest.startswith("//"):  # jdbc:postgresql:db -> the local server
            rest = "///" + rest.lstrip("/")
        return dialect, f"{_SQLALCHEMY_DRIVERS[dialect]}:{rest}", query
    m = re.match(r"(?i)([a-z0-9]+)(\+[a-z0-9_]+)?://", text)
    if not m:
        raise InvalidOptionError(
            f"option 'uri': {mask_url(uri)} is neither a JDBC URL (jdbc:postgresql://h:5432/db) "
            "nor a SQLAlchemy URL (postgresql://h:5432/db)")
    dialect = _dialect_of(m.group(1), uri)
    driver = m.group(0)[:-3] if m.group(2) else _SQLALCHEMY_DRIVERS[dialect]
    rest, _, query = text[m.end():].partition("?")
    return dialect, f"{driver}://{rest}", query


def _connect_args(dialect: str, uri: str, properties: Mapping[str, str]) -> dict[str, Any]:
    """The driver's connect arguments from the URL's query and the `jdbc.*` properties (the
    URL wins, as in JDBC); a property the dialect does not know is refused by name."""
    known = {"sqlite": _SQLITE_PROPERTIES, "postgresql": _PG_PROPERTIES,
             "mysql": _MYSQL_PROPERTIES}[dialect]
    args: dict[str, Any] = {}
    for key, value in properties.items():
        if dialect == "sqlite" and key in ("user", "password"):
            continue  # a SQLite file has no users; Java's driver ignores them too
        if key not in known:
            # a name that is no identifier may be the tail of a password holding '?'
            shown = repr(key) if re.fullmatch(r"[A-Za-z_][\w.-]*", key) else "(not shown)"
            raise UnsupportedError(
                f"JDBC property {shown} (option 'jdbc.<name>' or a query parameter of "
                f"{mask_url(uri)}) is not supported for {dialect}: lakeformat passes "
                f"{', '.join(sorted(known))}")
        name = known[key]
        if name == "options":  # currentSchema: the schema the catalog tables live in
            args[name] = f"-c search_path={value}"
        elif name == "timeout":
            args[name] = float(value) / 1000  # sqlite-jdbc's busy_timeout is in millis
        elif name == "connect_timeout" and dialect == "mysql":
            args[name] = max(1, int(float(value) / 1000))  # Connector/J: millis
        else:
            args[name] = value
    return args


def _positive(options: Mapping[str, str], key: str, default: int) -> int:
    raw = options.get(key, default)
    try:
        value = int(raw)
    except (TypeError, ValueError):
        value = 0
    if value <= 0:
        raise InvalidOptionError(f"option {key!r} must be a positive integer, "
                                 f"got {shown_value(key, raw)}")
    return value


class JdbcClient:
    """A pool of connections to one JDBC catalog database (Paimon's `JdbcClientPool`).

    `dialect` is "sqlite", "postgresql" or "mysql"; `url` the URL as shown in messages (no
    password). Built, it has connected once: an unreachable database fails here with
    `JdbcConnectionError`. `lock_key_max_length` is Paimon's `lock-key-max-length` option.
    """

    def __init__(self, uri: str, properties: Mapping[str, str] | None = None, *,
                 lock_key_max_length: int = _DEFAULT_LOCK_KEY_MAX_LENGTH, pool_size: int = 2):
        import sqlalchemy as sa

        if not uri or not str(uri).strip():
            raise InvalidOptionError("a JDBC catalog needs option 'uri' (e.g. "
                                     "jdbc:sqlite:/path/catalog.db)")
        self.dialect, base, query = _split(str(uri))
        self.url = mask_url(str(uri).strip())
        self.lock_key_max_length = lock_key_max_length
        props = dict(properties or {})
        props.update(parse_qsl(query.replace(";", "&"), keep_blank_values=True))
        self._secret = str(props.get("password") or "")
        args = _connect_args(self.dialect, self.url, props)
        url = sa.engine.make_url(base)
        if url.password is not None:
            self._secret = self._secret or str(url.password)
        if self.dialect == "sqlite":
            args.setdefault("timeout", _SQLITE_BUSY_TIMEOUT_S)
            args["check_same_thread"] = False  # the lease keeper renews from its own thread
            engine_kw: dict[str, Any] = {}
        else:
            args.setdefault("connect_timeout", _CONNECT_TIMEOUT_S)
            engine_kw = {"pool_size": pool_size, "max_overflow": 4, "pool_pre_ping": True}
        self._sa = sa
        self.engine = sa.create_engine(url, connect_args=args, isolation_level="AUTOCOMMIT",
                                       **engine_kw)
        self._ensured: set[str] = set()
        self._guard = threading.Lock()
        try:  # connect now: whatever fails here means the database cannot be used at all
            self._run(lambda c: c.exec_driver_sql("SELECT 1").all(), reached=False)
        except BaseException:
            self.engine.dispose()
            raise

    @staticmethod
    def from_options(options: Mapping[str, str]) -> JdbcClient:
        """From catalog options: `uri`, `jdbc.*` driver properties, `lock-key-max-length`
        (255) and `client-pool-size` (2), as Paimon's `JdbcCatalog` reads them."""
        props = {k[len(PROPERTY_PREFIX):]: str(v) for k, v in options.items()
                 if k.startswith(PROPERTY_PREFIX)}
        return JdbcClient(str(options.get("uri") or ""), props,
                          lock_key_max_length=_positive(options, "lock-key-max-length",
                                                        _DEFAULT_LOCK_KEY_MAX_LENGTH),
                          pool_size=_positive(options, "client-pool-size", 2))

    def __repr__(self) -> str:
        return f"JdbcClient({self.url!r})"

    # -- statements -----------------------------------------------------------------------
    def _reason(self, e: BaseException) -> str:
        orig = getattr(e, "orig", None) or e
        text = (str(orig).strip().splitlines() or [orig.__class__.__name__])[0]
        return text.replace(self._secret, "***") if self._secret else text

    def _is_unreachable(self, e: BaseException) -> bool:
        exc = self._sa.exc
        if isinstance(e, exc.DBAPIError) and e.connection_invalidated:
            return True
        if isinstance(e, exc.InterfaceError):
            return True
        if not isinstance(e, exc.OperationalError):
            return False
        orig = e.orig
        if self.dialect == "sqlite":
            return "unable to open" in str(orig).lower()
        if self.dialect == "postgresql":  # no SQLSTATE: the client lost the connection
            state = getattr(orig, "sqlstate", None) or ""
            return not state or state[:2] in ("08", "28", "53") or state.startswith("57P")
        code = orig.args[0] if getattr(orig, "args", ()) else None
        return code in _MYSQL_UNREACHABLE

    def _run(self, fn: Callable[[Any], Any], reached: bool = True) -> Any:
        try:
            with self.engine.connect() as conn:
                return fn(conn)
        except self._sa.exc.DBAPIError as e:
            if not reached or self._is_unreachable(e):
                raise JdbcConnectionError(f"cannot reach the JDBC catalog database at "
                                          f"{self.url}: {self._reason(e)}") from None
            raise

    def query(self, sql: str, params: Mapping[str, Any] | None = None) -> list[tuple]:
        """Rows of a SELECT (`:name` placeholders)."""
        return self._run(lambda c: [tuple(r) for r in c.execute(self._sa.text(sql),
                                                                 dict(params or {}))])

    def execute(self, sql: str, params: Mapping[str, Any] | Sequence[Mapping[str, Any]]
                | None = None) -> int:
        """Run one statement (or one per parameter set); the number of rows it touched."""
        def run(conn: Any) -> int:
            result = conn.execute(self._sa.text(sql), params if params is not None else {})
            return max(result.rowcount, 0)
        return self._run(run)

    def insert_new(self, sql: str, params: Mapping[str, Any]) -> bool:
        """Run an INSERT; False when a row with the same primary key is there already (any
        other failure is raised)."""
        try:
            return self.execute(sql, params) > 0
        except self._sa.exc.IntegrityError as e:
            if self.is_duplicate(e):
                return False
            raise

    def is_duplicate(self, e: BaseException) -> bool:
        """Whether `e` is a primary-key clash (the codes Paimon's dialects check)."""
        if not isinstance(e, self._sa.exc.IntegrityError):
            return False
        orig = e.orig
        if getattr(orig, "sqlstate", None) == "23505":  # PostgreSQL unique_violation
            return True
        args = getattr(orig, "args", ())
        if args and args[0] == 1062:  # MySQL ER_DUP_ENTRY
            return True
        return "UNIQUE constraint failed" in str(orig)  # SQLite

    # -- schema -----------------------------------------------------------------------------
    def has_table(self, name: str) -> bool:
        return self._run(lambda c: self._sa.inspect(c).has_table(name))

    def columns(self, table: str) -> list[dict[str, Any]]:
        """The columns of `table` as SQLAlchemy's inspector describes them."""
        return self._run(lambda c: self._sa.inspect(c).get_columns(table))

    def ensure_table(self, name: str, ddl: str,
                     upgrade: Callable[[], None] | None = None) -> None:
        """Create table `name` with `ddl` unless it exists (once per client), then run
        `upgrade` (adds what older versions lack). A concurrent creator is tolerated."""
        with self._guard:
            if name in self._ensured:
                return
            if not self.has_table(name):
                try:
                    self.execute(ddl)
                except self._sa.exc.DBAPIError as e:
                    if self._is_unreachable(e) or not self.has_table(name):
                        raise
            if upgrade is not None:
                upgrade()
            self._ensured.add(name)

    def close(self) -> None:
        self.engine.dispose()
