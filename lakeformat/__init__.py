"""lakeformat: Apache Paimon primary-key tables in Python, on local disk and S3."""

from __future__ import annotations

__version__ = "0.1.0"

from lakeformat.catalog import Catalog, Identifier  # noqa: E402
from lakeformat.errors import (  # noqa: E402
    CommitConflictError,
    CommitFailedError,
    CommitOutcomeUnknownError,
    CorruptFileError,
    DatabaseAlreadyExistsError,
    DatabaseNotFoundError,
    InputFileError,
    InvalidFilterError,
    InvalidIdentifierError,
    InvalidOptionError,
    LakeformatError,
    SchemaMismatchError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedError,
)
from lakeformat.results import CommitResult  # noqa: E402
from lakeformat.schema.schema_change import Move, SchemaChange  # noqa: E402
from lakeformat.table import Table  # noqa: E402

__all__ = [
    "Catalog", "Identifier", "Table", "CommitResult", "SchemaChange", "Move",
    "LakeformatError", "UnsupportedError",
    "SchemaMismatchError", "CorruptFileError", "CommitConflictError", "CommitFailedError",
    "CommitOutcomeUnknownError",
    "InvalidIdentifierError", "InvalidOptionError", "InvalidFilterError", "InputFileError",
    "DatabaseNotFoundError",
    "DatabaseAlreadyExistsError", "TableNotFoundError", "TableAlreadyExistsError",
    "__version__",
]
