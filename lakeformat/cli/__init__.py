"""`lakeformat --warehouse URI [-o key=value ...] COMMAND`: the library's verbs on the shell.

One module per concept: `parser` (the command line and its help), `commands` (verbs that
change things), `inspect` (snapshots, schemas, files, describe), `read` (streamed rows),
`render` (tables for people, the JSON envelope for scripts), `schema_args` (column and
`alter` text), `errors` (one-line messages and exit statuses), `app` (`main`). The `--where`
grammar lives in the library: `lakeformat.expressions.where`.
"""

from __future__ import annotations

from lakeformat.cli.app import main, run
from lakeformat.cli.errors import DEBUG_ENV, USAGE_ERRORS, UsageError
from lakeformat.cli.parser import build_parser
from lakeformat.cli.schema_args import parse_columns

__all__ = ["main", "run", "build_parser", "UsageError", "USAGE_ERRORS", "DEBUG_ENV",
           "parse_columns"]
