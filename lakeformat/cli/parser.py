"""The command line: global flags, one sub-command per verb, and the help text."""

from __future__ import annotations

import argparse
import os
from typing import Any

from lakeformat.cli.errors import DEBUG_ENV
from lakeformat.cli.schema_args import ALTER_FLAGS, change_parser
from lakeformat.version import __version__

DESCRIPTION = "lakeformat --warehouse URI [-o key=value ...] COMMAND: the library's verbs."

EPILOG = f"""\
output:
  People get aligned tables with a header row, times in ISO-8601 UTC and sizes such as
  1.2 MiB; notes and progress go to stderr. --json (before or after the command) prints one
  JSON object per command:
    {{"lakeformat_version": "{__version__}", "command": "snapshots", "result": ...}}
  with snake_case keys and each instant as ISO text plus its epoch millis (time, time_millis).
  `read` streams rows instead: --json as JSON Lines (one object per row), --csv as CSV, or
  --parquet FILE; all rows unless --limit N. Without those, `read` prints a table of at most
  50 rows (--limit N for more) and says on stderr when rows were left out.

--where (read, delete, compact; repeated flags are ANDed):
  dt = '2024-01-01' AND (id < 10 OR name IS NULL); ops = == != <> < <= > >=,
  IN (...), NOT IN (...), IS [NOT] NULL, [NOT] BETWEEN x AND y, AND, OR, parentheses.
  Text in single quotes ('it''s'); numbers, TRUE/FALSE and bare words (2024-01-01) too.

errors:
  One line on stderr, `lakeformat: error: ...`. Exit 2 when the command cannot run as given
  (usage, names, values, --where, malformed URI, input file), 1 when the operation failed
  (missing table, storage, conflicts), 130 interrupted. --debug or {DEBUG_ENV}=1 adds the
  traceback.
"""


def _add_commit_identity(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--commit-user", help="commitUser of the snapshot (default: a random one)")
    sp.add_argument("--commit-identifier", type=int, metavar="N",
                    help="with --commit-user: a run with a pair that already landed commits "
                         "nothing again (e.g. the logical date as yyyymmdd)")


def _where(sp: argparse.ArgumentParser, text: str) -> None:
    sp.add_argument("--where", action="append", metavar="CONDITION", help=text)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="lakeformat", description=DESCRIPTION, epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"lakeformat {__version__}")
    p.add_argument("--warehouse", default=os.environ.get("LAKEFORMAT_WAREHOUSE"),
                   help="warehouse URI: a path, file:///path, or s3://bucket/prefix "
                        "(default: $LAKEFORMAT_WAREHOUSE)")
    p.add_argument("-o", "--catalog-option", action="append", metavar="KEY=VALUE",
                   help="catalog option such as s3.endpoint=http://127.0.0.1:9000")
    p.add_argument("--json", action="store_true", default=False,
                   help="print JSON (the envelope below); also accepted after the command")
    p.add_argument("--debug", action="store_true",
                   help=f"print the traceback of any error (also: {DEBUG_ENV}=1)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, help: str, table: bool = True) -> argparse.ArgumentParser:
        sp = sub.add_parser(name, help=help, description=help)
        if table:
            sp.add_argument("table", help="database.table")
        # SUPPRESS: a --json given before the command is not reset by the sub-parser
        sp.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                        help="print JSON")
        return sp

    add("list-databases", "list the databases of the warehouse", table=False)
    sp = add("create-database", "create a database", table=False)
    sp.add_argument("database")
    sp.add_argument("--if-not-exists", action="store_true")
    add("list-tables", "list the tables of a database", table=False).add_argument("database")
    sp = add("create-table", "create a table (an append table without --primary-key)")
    sp.add_argument("--columns", required=True,
                    help="'id BIGINT, dt STRING, name STRING' (Paimon type names)")
    sp.add_argument("--primary-key", default="",
                    help="comma list; left out: an append table (no primary key)")
    sp.add_argument("--partition-key", default="", help="comma list")
    sp.add_argument("-O", "--option", action="append", metavar="KEY=VALUE",
                    help="table option, e.g. bucket=4")
    sp.add_argument("--comment")
    sp.add_argument("--if-not-exists", action="store_true")
    sp = add("drop-table", "drop a table and its files")
    sp.add_argument("--if-exists", action="store_true", help="no error when it is missing")
    add("describe", "schema, options, keys, latest snapshot and sizes of a table")
    for name, help in (("write", "write rows from a Parquet/CSV/JSON file"),
                       ("delete", "delete rows by primary key (keys from a file) or by --where")):
        sp = add(name, help)
        if name == "write":
            sp.add_argument("input")
        else:
            sp.add_argument("input", nargs="?", help="file of primary keys (or give --where)")
            _where(sp, "rows to delete (the read grammar); on partition columns only, the "
                       "partitions are dropped whole as one OVERWRITE snapshot")
        sp.add_argument("--format", choices=["parquet", "csv", "json"])
        if name == "write":
            sp.add_argument("--overwrite", action="store_true",
                            help="replace the partitions written to")
            sp.add_argument("--merge-schema", action="store_true",
                            help="add the input's new columns to the table and widen types "
                                 "(write.merge-schema)")
            sp.add_argument("-W", "--write-option", action="append", metavar="KEY=VALUE",
                            help="write option, e.g. write.merge-schema.explicit-cast=true")
        _add_commit_identity(sp)
    _add_read(add)
    sp = add("alter", "change the schema: options and columns, applied in the order given")
    for flag, meta, text in ALTER_FLAGS:
        sp.add_argument(flag, dest="changes", action="append", metavar=meta,
                        type=change_parser(flag), help=text)
    _add_maintenance(add)
    sp = add("snapshots", "list snapshots")
    sp.add_argument("--commit-user", help="only the snapshots of this commit user ...")
    sp.add_argument("--commit-identifier", type=int, metavar="N",
                    help="... and identifier: did a commit land?")
    sp = add("history", "the commit log, newest first: operation, kind, records, commit user "
                        "(Table.history)")
    sp.add_argument("--limit", type=int, metavar="N", help="only the N newest commits")
    add("schemas", "list schema versions")
    sp = add("files", "list live data files, worst bucket (most sorted runs) first, and a "
                      "per-bucket summary")
    sp.add_argument("--snapshot", type=int)
    sp.add_argument("--tag")
    sp.add_argument("--summary", action="store_true", help="only the per-bucket summary")
    _add_compact(add)
    _add_health(add)
    return p


def _add_health(add: Any) -> None:
    sp = add("health", "a table's health from its metadata: score and its components, "
                       "snapshots, schema files, manifests, worst buckets first")
    sp.add_argument("--partition", action="append", metavar="K=V[,K2=V2]",
                    help="only the buckets of this partition (repeatable)")
    sp.add_argument("--buckets", type=int, default=20, metavar="N",
                    help="list at most N buckets (default 20; JSON lists all)")
    sp.add_argument("--orphans", action="store_true",
                    help="also count orphan files (lists the table directory)")
    sp = add("due", "the maintenance due now and the rule behind each action, most "
                    "valuable first; 'nothing due' with its reasons", table=False)
    sp.add_argument("table", nargs="?", help="database.table (or --all)")
    sp.add_argument("--all", action="store_true", help="every table of the warehouse")
    sp.add_argument("-T", "--threshold", action="append", metavar="KEY=VALUE",
                    help="override a rule's Paimon option, e.g. "
                         "num-sorted-run.compaction-trigger=3")
    sp.add_argument("--max-actions", type=int, metavar="N", help="at most N actions")
    sp.add_argument("--max-bytes", metavar="SIZE",
                    help="at most this much work (bytes read), e.g. '10 gb'")
    sp.add_argument("--orphans", action="store_true",
                    help="also look for orphan files (lists each table directory)")


def _add_read(add: Any) -> None:
    sp = add("read", "read rows (merge-on-read); streams every row with --json, --csv or "
                     "--parquet")
    sp.add_argument("--columns", help="comma list")
    _where(sp, "filter such as \"dt = '2024-01-01' AND id IN (1, 2)\" (see below); terms on "
               "partition keys prune partitions")
    sp.add_argument("--snapshot", type=int)
    sp.add_argument("--tag")
    sp.add_argument("--limit", type=int, metavar="N",
                    help="at most N rows (default: all rows when streaming, 50 in a table)")
    out = sp.add_mutually_exclusive_group()
    out.add_argument("--csv", action="store_true", help="CSV with a header row on stdout")
    out.add_argument("--parquet", metavar="FILE", help="write a Parquet file")
    out.add_argument("--output", metavar="FILE",
                     help="write a file by its extension: .parquet, .csv, .json/.jsonl")


def _add_maintenance(add: Any) -> None:
    sp = add("expire-snapshots", "expire old snapshots and the files only they used")
    sp.add_argument("--retain-min", type=int, help="default: snapshot.num-retained.min (10)")
    sp.add_argument("--retain-max", type=int, help="default: snapshot.num-retained.max")
    sp.add_argument("--older-than", help="age such as '1 h' (default snapshot.time-retained) "
                                         "or an ISO time as the cut-off")
    sp.add_argument("--max-deletes", type=int, help="default: snapshot.expire.limit (10)")
    sp.add_argument("--dry-run", action="store_true", help="list what would be deleted")
    sp = add("clean-schemas", "delete schema files nothing can need any more")
    sp.add_argument("--retain-min", type=int, help="default: schema.num-retained.min (10)")
    sp.add_argument("--older-than", help="default: schema.time-retained (1 d)")
    sp.add_argument("--compact-manifests", action="store_true",
                    help="first rewrite the latest snapshot's manifests without DELETE "
                         "entries (a COMPACT snapshot), when only those hold old schemas")
    sp.add_argument("--dry-run", action="store_true")
    sp = add("remove-orphan-files", "delete files no snapshot, tag or consumer references")
    sp.add_argument("--older-than", help="default 1 d; at least 1 h (see the next flag)")
    sp.add_argument("--no-enforce-retention-duration", dest="enforce_retention_duration",
                    action="store_false",
                    help="accept any past --older-than, '0 s' too: on-call cleanup after a "
                         "crash, only while no writer is running")
    sp.add_argument("--dry-run", action="store_true")
    sp = add("expire-partitions", "drop partitions older than partition.expiration-time")
    sp.add_argument("--expiration-time", help="default: partition.expiration-time")
    sp.add_argument("--dry-run", action="store_true")
    sp = add("expire-tags", "delete tags past their retention (and the files only they held)")
    sp.add_argument("--older-than", help="also expire every tag created before this: an age "
                                         "such as '7 d' or an ISO time as the cut-off")
    sp.add_argument("--dry-run", action="store_true", help="list what would be deleted")
    sp = add("tag", "create, delete or list tags")
    sp.add_argument("action", choices=["create", "delete", "list"])
    sp.add_argument("name", nargs="?")
    sp.add_argument("--snapshot", type=int, help="snapshot to tag (default: latest)")
    sp.add_argument("--time-retained", help="expire the tag after this long, e.g. '7 d'")
    sp.add_argument("--dry-run", action="store_true")
    sp = add("rollback", "make a snapshot or tag the latest state")
    sp.add_argument("target", help="snapshot id or tag name")


def _add_compact(add: Any) -> None:
    sp = add("compact", "compact buckets (full by default) as COMPACT snapshots")
    mode = sp.add_mutually_exclusive_group()
    mode.add_argument("--full", dest="full", action="store_true", default=True,
                      help="merge every sorted run into the top level (default)")
    mode.add_argument("--minor", dest="full", action="store_false",
                      help="Paimon's universal compaction picks instead of a full compaction")
    sp.add_argument("--partition", action="append", metavar="K=V[,K2=V2]",
                    help="compact only this partition (repeatable)")
    _where(sp, "partition filter such as \"dt >= '2024-01-01'\" (partition columns only; "
               "same grammar as read --where)")
    sp.add_argument("--partition-idle-time", metavar="DURATION",
                    help="only partitions not written for this long, e.g. '1 d'")
    sp.add_argument("--memory-budget", metavar="SIZE",
                    help="memory of the whole job, e.g. '512 mb' (default write-buffer-size)")
    sp.add_argument("--workers", type=int, help="parallel buckets (default: CPU count)")
    _add_commit_identity(sp)
