"""The options a catalog takes, checked once when the catalog is made.

Option names are Paimon's catalog options. A key lakeformat does not read is refused with the
nearest known name, never ignored: a typo in `s3.endpoint` would otherwise send requests to
AWS, and a `lock.*` or `metastore` setting that is not honoured would leave commits unlocked
while their author believes otherwise.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass

from lakeformat.errors import InvalidOptionError, UnsupportedError
from lakeformat.lock.options import LOCK_OPTIONS, LockConfig
from lakeformat.options import parse_memory_size
from lakeformat.storage.fileio import S3_SCHEMES, split_scheme
from lakeformat.storage.metadata_cache import MAX_SIZE_OPTION
from lakeformat.storage.s3 import S3_OPTIONS

__all__ = ["CatalogConfig", "METASTORES", "CATALOG_OPTIONS"]

METASTORES = ("filesystem", "jdbc")
#: options of a JDBC catalog or lock besides `jdbc.*` (driver properties such as `jdbc.user`)
_JDBC_OPTIONS = ("uri", "catalog-key", "lock-key-max-length", "client-pool-size")
CATALOG_OPTIONS: frozenset[str] = frozenset(
    ("warehouse", "metastore", MAX_SIZE_OPTION) + _JDBC_OPTIONS + LOCK_OPTIONS) | S3_OPTIONS
_JDBC_PREFIX = "jdbc."


@dataclass(frozen=True)
class CatalogConfig:
    metastore: str
    lock: LockConfig
    uri: str | None
    catalog_key: str
    #: bytes of parsed metadata each FileIO of the catalog keeps (0: no cache; None: the
    #: storage's default — 64 mb on object stores, none on local disk)
    metadata_cache_bytes: int | None = None

    @property
    def uses_jdbc(self) -> bool:
        return self.metastore == "jdbc" or self.lock.type == "jdbc"


def _refuse_unknown(options: Mapping[str, str]) -> None:
    for key in options:
        if key in CATALOG_OPTIONS or key.startswith(_JDBC_PREFIX):
            continue
        near = difflib.get_close_matches(key, sorted(CATALOG_OPTIONS), n=1, cutoff=0.75)
        hint = f"; did you mean {near[0]!r}?" if near else ""
        raise InvalidOptionError(
            f"unknown catalog option {key!r}{hint} (lakeformat refuses options it does not "
            "read rather than ignore them; table options belong to create_table/alter)")


def check_catalog_options(options: Mapping[str, str], warehouse: str) -> CatalogConfig:
    """The catalog's configuration, or an error naming the first option that is wrong."""
    _refuse_unknown(options)
    metastore = str(options.get("metastore", "filesystem")).strip().lower()
    if metastore not in METASTORES:
        raise UnsupportedError(
            f"catalog option 'metastore' = {options['metastore']!r} is not supported: "
            f"lakeformat implements {' and '.join(METASTORES)}")
    wh = options.get("warehouse")
    if wh is not None and wh.rstrip("/") != warehouse.rstrip("/"):
        raise InvalidOptionError(f"catalog option 'warehouse' = {wh!r} differs from the "
                                 f"catalog's warehouse {warehouse!r}")
    on_object_store = split_scheme(warehouse)[0] in S3_SCHEMES
    lock = LockConfig.from_options(options, "jdbc" if metastore == "jdbc" else "s3",
                                   default_enabled=metastore == "jdbc" and on_object_store)
    uri = options.get("uri")
    if (metastore == "jdbc" or lock.type == "jdbc") and not uri:
        need = "metastore=jdbc" if metastore == "jdbc" else "lock.type=jdbc"
        raise InvalidOptionError(f"{need} needs catalog option 'uri' (the JDBC URL of the "
                                 "catalog database, e.g. jdbc:sqlite:/path/catalog.db or "
                                 "jdbc:postgresql://host:5432/db)")
    key = str(options.get("catalog-key", "jdbc"))
    if not key:
        raise InvalidOptionError("catalog option 'catalog-key' must not be empty")
    raw = options.get(MAX_SIZE_OPTION)
    cache_bytes = None if raw is None else parse_memory_size(str(raw), MAX_SIZE_OPTION)
    return CatalogConfig(metastore, lock, uri, key, cache_bytes)
