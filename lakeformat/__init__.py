"""lakeformat: Apache Paimon primary-key tables in Python, on local disk and S3.

`import lakeformat` stays cheap (no pyarrow, no numpy): Airflow parses DAG files every few
seconds. The errors and the version load at once; `Catalog`, `Table` and the other classes load
on first use (PEP 562), so `lakeformat.Catalog` and `from lakeformat import Table` work as usual.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from lakeformat.errors import (
    RETRYABLE_ERRORS,
    AlreadyExistsError,
    CleanupAbortedError,
    ColumnNotFoundError,
    CommitConflictError,
    CommitError,
    CommitFailedError,
    CommitOutcomeUnknownError,
    CommitStateUnknownError,
    CorruptFileError,
    CorruptLeaseError,
    DatabaseAlreadyExistsError,
    DatabaseNotEmptyError,
    DatabaseNotFoundError,
    EngineError,
    InputFileError,
    InvalidArgumentError,
    InvalidFilterError,
    InvalidIdentifierError,
    InvalidOptionError,
    JdbcConnectionError,
    LakeformatError,
    LockError,
    LockLostError,
    LockTimeoutError,
    NotFoundError,
    SchemaMismatchError,
    SnapshotNotFoundError,
    StoreUnreachableError,
    TableAlreadyExistsError,
    TableNotFoundError,
    TagAlreadyExistsError,
    TagNotFoundError,
    UnsupportedError,
)
from lakeformat.version import __version__

if TYPE_CHECKING:  # what the lazy names below resolve to, for type checkers and IDEs
    from lakeformat.catalog import Catalog
    from lakeformat.health import DueAction, DueReport, TableHealth
    from lakeformat.identifier import Identifier
    from lakeformat.operation.read import SnapshotWatch, TableInspect, snapshot_info
    from lakeformat.results import (
        BranchInfo,
        CommitResult,
        CompactResult,
        CompactStats,
        MaintenanceResult,
        TagInfo,
    )
    from lakeformat.schema.option_names import OptionNameWarning
    from lakeformat.schema.schema_change import Move, SchemaChange
    from lakeformat.table import Table

#: public name -> the module defining it, imported on first access
_LAZY = {
    "Catalog": "lakeformat.catalog",
    "Identifier": "lakeformat.identifier",
    "Table": "lakeformat.table",
    "CommitResult": "lakeformat.results",
    "TagInfo": "lakeformat.results",
    "BranchInfo": "lakeformat.results",
    "MaintenanceResult": "lakeformat.results",
    "CompactResult": "lakeformat.results",
    "CompactStats": "lakeformat.results",
    "TableInspect": "lakeformat.operation.read",
    "SnapshotWatch": "lakeformat.operation.read",
    "snapshot_info": "lakeformat.operation.read",
    "SchemaChange": "lakeformat.schema.schema_change",
    "Move": "lakeformat.schema.schema_change",
    "OptionNameWarning": "lakeformat.schema.option_names",
    "TableHealth": "lakeformat.health",
    "DueAction": "lakeformat.health",
    "DueReport": "lakeformat.health",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        # `lakeformat.storage`, `lakeformat.table`, ...: submodules stay reachable as
        # attributes, as when the package imported them eagerly
        try:
            return import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as missing:
            if missing.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module 'lakeformat' has no attribute {name!r}") from None
    value = getattr(import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "Catalog", "Identifier", "Table", "CommitResult", "TagInfo", "BranchInfo", "SchemaChange",
    "Move",
    "MaintenanceResult", "CompactResult", "CompactStats", "TableInspect", "OptionNameWarning",
    "SnapshotWatch", "snapshot_info", "TableHealth", "DueAction", "DueReport",
    "LakeformatError", "UnsupportedError",
    "SchemaMismatchError", "CorruptFileError", "CorruptLeaseError", "CommitConflictError",
    "CommitFailedError", "CommitOutcomeUnknownError",
    "InvalidIdentifierError", "InvalidOptionError", "InvalidFilterError", "InputFileError",
    "DatabaseNotFoundError",
    "DatabaseAlreadyExistsError", "TableNotFoundError", "TableAlreadyExistsError",
    "__version__",
    # the rest of the error taxonomy (errors.py)
    "NotFoundError", "SnapshotNotFoundError", "TagNotFoundError", "AlreadyExistsError",
    "TagAlreadyExistsError", "DatabaseNotEmptyError", "InvalidArgumentError",
    "ColumnNotFoundError", "CleanupAbortedError", "CommitError", "CommitStateUnknownError",
    "RETRYABLE_ERRORS", "LockError", "LockTimeoutError", "LockLostError",
    "EngineError", "StoreUnreachableError",
    "JdbcConnectionError",
]
