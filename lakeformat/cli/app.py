"""`main`: parse, open the catalog, run one command, report an error as one line."""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from lakeformat.cli.errors import (
    UsageError,
    debug_enabled,
    kv,
    report,
    secrets,
    storage_unreachable,
)
from lakeformat.cli.parser import build_parser
from lakeformat.storage import S3_SCHEMES, get_file_io, split_scheme

if TYPE_CHECKING:
    from lakeformat.cli.commands import Context

def commands() -> dict[str, Callable[[Context], None]]:
    """Sub-command -> what runs it (imported on use: --help and --version stay quick)."""
    from lakeformat.cli import commands, health, inspect, read

    return {
        "list-databases": commands.list_databases,
        "create-database": commands.create_database,
        "list-tables": commands.list_tables,
        "create-table": commands.create_table,
        "drop-table": commands.drop_table,
        "describe": inspect.describe,
        "write": commands.write_or_delete,
        "delete": commands.write_or_delete,
        "read": read.read,
        "alter": commands.alter,
        **{name: commands.maintenance for name in commands.MAINTENANCE},
        "tag": commands.tag,
        "snapshots": inspect.snapshots,
        "history": inspect.history,
        "schemas": inspect.schemas,
        "files": inspect.files,
        "compact": commands.compact,
        "health": health.health,
        "due": health.due,
    }


def run(args: argparse.Namespace) -> int:
    if not args.warehouse:
        raise UsageError("--warehouse (or $LAKEFORMAT_WAREHOUSE) is required, e.g. "
                         "--warehouse s3://bucket/path or --warehouse /data/wh")
    from lakeformat.catalog import Catalog
    from lakeformat.cli.commands import Context

    options = kv(args.catalog_option, "catalog option")
    catalog = Catalog(args.warehouse, options)
    check_store(args.warehouse, options)
    try:
        commands()[args.command](Context(args, catalog))
    finally:
        catalog.close()
    return 0


def check_store(warehouse: str, options: dict[str, str]) -> None:
    """One request with a single attempt before an S3 command: an endpoint that refuses
    connections or missing credentials fail at once, instead of after the store's retries
    (`s3.attempts.maximum`, 10 by default, with backoff). Any other answer, an error too, is
    left to the command itself."""
    if split_scheme(warehouse)[0] not in S3_SCHEMES or options.get("s3.attempts.maximum"):
        return
    probe = get_file_io(warehouse, {**options, "s3.attempts.maximum": "1"})
    try:
        probe.exists(warehouse)
    except Exception as e:
        if storage_unreachable(e):
            raise
    finally:
        close = getattr(probe, "close", None)
        if callable(close):
            close()


def _one_line_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Warnings (e.g. a table option that looks like a typo) as one line, like errors."""
    print(f"lakeformat: warning: {message}", file=sys.stderr)


def _quiet_broken_pipe() -> None:
    """The reader of our stdout went away (`| head`): stop without a second error at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit status (errors are one line on stderr)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:  # argparse has printed usage and its error (status 2), or help
        return e.code if isinstance(e.code, int) else 2
    debug = debug_enabled(args.debug)
    if not debug:
        warnings.showwarning = _one_line_warning
    try:
        return run(args)
    except KeyboardInterrupt:
        print("lakeformat: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        _quiet_broken_pipe()
        return 0
    except Exception as e:
        return report(e, debug, secrets(argv))
