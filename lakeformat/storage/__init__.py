"""Storage layer: one FileIO interface over local disks and S3-compatible object stores.

Import from here (``from lakeformat.storage import FileIO, get_file_io``). botocore itself is
only imported when an S3FileIO first talks to a store, so local-only use does not need it.
Importing the implementations here registers their URI schemes with `get_file_io`; a new
storage registers its own with `register_file_io` (see `fileio.py`).
"""

from __future__ import annotations

from lakeformat.storage.fileio import (
    LOCAL_SCHEMES,
    S3_SCHEMES,
    FileIO,
    FileStatus,
    PendingFiles,
    StorageError,
    Versioned,
    get_file_io,
    register_file_io,
    registered_schemes,
    split_scheme,
)
from lakeformat.storage.local import LocalFileIO
from lakeformat.storage.s3 import S3FileIO

__all__ = [
    "FileIO",
    "FileStatus",
    "LocalFileIO",
    "PendingFiles",
    "S3FileIO",
    "StorageError",
    "Versioned",
    "get_file_io",
    "register_file_io",
    "registered_schemes",
    "split_scheme",
    "LOCAL_SCHEMES",
    "S3_SCHEMES",
]
