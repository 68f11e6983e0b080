"""What each operation refuses, in one table: an option value or table layout lakeformat does
not implement, the operations that refuse it, and why.

Failing closed is the rule (a table we cannot handle gets an error naming the option, never
wrong rows); keeping the refusals in one declarative table lets the README list them from the
same source (`support_table_markdown`) and keeps the operations' checks to one call each.
Merge-engine options are checked by `lakeformat.merge` (they concern every reader).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from lakeformat.errors import UnsupportedError
from lakeformat.options import CoreOptions
from lakeformat.schema.table_schema import TableSchema

READ, WRITE, COMPACT = "read", "write", "compact"
EXPIRE_SNAPSHOTS, EXPIRE_PARTITIONS = "expire-snapshots", "expire-partitions"
REMOVE_ORPHAN_FILES = "remove-orphan-files"
#: `tag.automatic-creation` by writers and compaction, and `expire_tags`
TAG_CREATION, EXPIRE_TAGS = "tag-creation", "expire-tags"

#: what a rule finds in a schema: the refused setting as shown to the user, or None when fine
Finder = Callable[[TableSchema, CoreOptions], str | None]


@dataclass(frozen=True)
class Refusal:
    """One row of the table. `find` is None for what the operation finds on storage while it
    runs (it checks that itself, with this row's wording)."""

    subject: str  # the option key, or the layout, as the README names it
    refused: str  # the refused values, as the README names them
    operations: tuple[str, ...]
    reason: str
    find: Finder | None = None


def _option(key: str, refused: Callable[[str], bool], default: str = "") -> Finder:
    def find(schema: TableSchema, opts: CoreOptions) -> str | None:
        raw = opts.get(key)
        value = (default if raw is None else str(raw)).strip()
        return f"{key}={raw}" if refused(value) else None
    return find


def _is_true(key: str) -> Finder:
    """Set to anything but false (an empty value reads as false, as Java's parseBoolean)."""
    return _option(key, lambda v: v != "" and v.lower() != "false")


def _is_set(key: str) -> Finder:
    return _option(key, lambda v: v != "")


def _bucket(refused: Callable[[int], bool]) -> Finder:
    return lambda schema, opts: f"bucket={opts.bucket}" if refused(opts.bucket) else None


def _producer(refused: tuple[str, ...] | None) -> Finder:
    """changelog-producer in `refused`, or (None) outside the values lakeformat knows."""
    known = ("none", "input", "full-compaction", "lookup")

    def find(schema: TableSchema, opts: CoreOptions) -> str | None:
        p = opts.changelog_producer
        bad = p not in known if refused is None else p in refused
        return f"changelog-producer={p}" if bad else None
    return find


REFUSALS: tuple[Refusal, ...] = (
    Refusal("cross-partition-upsert.index-ttl", "set on a cross-partition upsert table", (WRITE,),
            "a cross-partition upsert table's key index holds every live key (a TTL would let "
            "old keys be written twice)",
            lambda s, o: _is_set("cross-partition-upsert.index-ttl")(s, o)
            if s.primary_keys and o.bucket == -1
            and not set(s.partition_keys) <= set(s.primary_keys) else None),
    Refusal("bucket", "-2 on a table without primary key", (WRITE, COMPACT),
            "postpone buckets exist for primary-key tables only (Paimon refuses the schema)",
            lambda s, o: "bucket=-2 without a primary key"
            if o.bucket == -2 and not s.primary_keys else None),
    Refusal("postpone.merge-on-read", "true", (READ,),
            "postpone records are not merged into reads (they show once compacted)",
            lambda s, o: _is_true("postpone.merge-on-read")(s, o) if o.bucket == -2 else None),
    Refusal("pk-clustering-override", "true", (READ, WRITE, COMPACT),
            "its data files are sorted by clustering.columns, not the primary key, so the "
            "merge of sorted runs would return wrong rows",
            lambda s, o: _is_true("pk-clustering-override")(s, o) if s.primary_keys else None),
    Refusal("bucket", "0, below -2", (WRITE,), "not a bucket count (invalid option)",
            _bucket(lambda b: b == 0 or b < -2)),
    Refusal("bucket-function.type", "anything but default", (WRITE,),
            "only Paimon's default bucket hash is implemented",
            _option("bucket-function.type", lambda v: v.lower() != "default", "default")),
    Refusal("changelog-producer", "any unknown producer", (WRITE, COMPACT),
            "none, input, full-compaction and lookup are handled", _producer(None)),
    Refusal("data-file.external-paths", "set", (WRITE, COMPACT),
            "files outside the table directory are not written",
            _is_set("data-file.external-paths")),
    Refusal("row-tracking.enabled", "true", (WRITE,), "row ids are not assigned",
            _is_true("row-tracking.enabled")),
    Refusal("data-evolution.enabled", "true", (WRITE,), "column files are not written",
            _is_true("data-evolution.enabled")),
    Refusal("file.format", "anything but parquet, orc, avro (e.g. lance, blob)", (WRITE,),
            "only Parquet, ORC and Avro data files are written",
            lambda s, o: None if o.file_format in ("parquet", "orc", "avro")
            else f"file.format={o.file_format}"),
    Refusal("deletion-vectors.bitmap64", "true", (WRITE, COMPACT),
            "only 32-bit deletion vectors are read and written",
            _is_true("deletion-vectors.bitmap64")),
    Refusal("write.sequence-number-init-mode", "anything but scan", (WRITE,),
            "sequence numbers are taken from the latest snapshot",
            _option("write.sequence-number-init-mode", lambda v: v.lower() != "scan", "scan")),
    Refusal("compaction.force-up-level-0", "true", (COMPACT,),
            "compaction picks as Java's universal compaction does",
            _is_true("compaction.force-up-level-0")),
    Refusal("merge-engine", "first-row with deletion-vectors.enabled=true", (WRITE, COMPACT),
            "Paimon refuses this schema: first-row never replaces a row, so it has no deletion "
            "vectors to write (only Paimon's clustering layout, pk-clustering-override, allows "
            "it)",
            lambda s, o: "merge-engine=first-row with deletion-vectors.enabled=true"
            if s.primary_keys and o.merge_engine == "first-row" and o.deletion_vectors_enabled
            else None),
    Refusal("tag.callbacks", "set", (TAG_CREATION, EXPIRE_TAGS),
            "Paimon calls these Java classes on every tag it creates or deletes",
            _is_set("tag.callbacks")),
    Refusal("tag.create-success-file", "true", (TAG_CREATION, EXPIRE_TAGS),
            "the success file Paimon keeps beside each tag is not written or deleted",
            _is_true("tag.create-success-file")),
)


def check_supported(schema: TableSchema, operation: str, table_path: str) -> CoreOptions:
    """Raise UnsupportedError naming the first refused setting of the table for `operation`
    (in table order); return the parsed options for the caller's use."""
    opts = CoreOptions(schema.options)
    for r in REFUSALS:
        if operation in r.operations and r.find is not None:
            found = r.find(schema, opts)
            if found is not None:
                raise UnsupportedError(f"{table_path}: {found} is not supported by {operation}"
                                       f" ({r.reason})")
    return opts


def support_table_markdown() -> str:
    """The table as the README shows it."""
    rows = ["| option or layout | refused | refused by | why |", "|---|---|---|---|"]
    for r in REFUSALS:
        rows.append(f"| `{r.subject}` | {r.refused} | {', '.join(r.operations)} | {r.reason} |")
    return "\n".join(rows)
