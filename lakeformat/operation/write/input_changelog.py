"""`changelog-producer=input`: a primary-key table's writer also writes its input as changelog.

As Java's `MergeTreeWriter` does with `ChangelogProducer.INPUT`: at every flush of a bucket's
write buffer, each record of the buffer — unmerged, -U and -D included, in the buffer's sort
order (by key, then `sequence.field`, then sequence number: a key's records in arrival order) —
goes to a changelog file beside the merged data files. The changelog files are key-value files
of the same columns as data files (`_KEY_*`, `_SEQUENCE_NUMBER`, `_VALUE_KIND`, the values),
level 0, file source APPEND, rolled on `target-file-size` only, named
`<changelog-file.prefix><uuid>-<n>.<format>` (prefix `changelog-` by default) in the bucket
directory [JAVA KeyValueFileWriterFactory.createRollingChangelogFileWriter]. The format,
compression and stats mode are `changelog-file.format`, `changelog-file.compression` and
`changelog-file.stats-mode` when set, else the data files' level-0 ones.

The commit lists them in the APPEND snapshot's `changelogManifestList` with its
`changelogRecordCount` (`FileStoreCommit`, Java's `CommitMessage.newFilesIncrement()
.changelogFiles()`). An overwrite commits no changelog, as Java's `overwritePartition` ignores
it: an overwrite writes none.
"""

from __future__ import annotations

from lakeformat.options import CoreOptions
from lakeformat.schema.table_schema import TableSchema

#: changelog option -> (the data-file option it replaces, that option's per-level override)
_CHANGELOG_KEYS = (
    ("changelog-file.format", "file.format", "file.format.per.level"),
    ("changelog-file.compression", "file.compression", "file.compression.per.level"),
    ("changelog-file.stats-mode", "metadata.stats-mode", "metadata.stats-mode.per.level"),
)


def writes_input_changelog(schema: TableSchema, options: CoreOptions) -> bool:
    """A primary-key table with `changelog-producer=input`."""
    return bool(schema.primary_keys) and options.changelog_producer == "input"


def changelog_file_options(options: CoreOptions) -> CoreOptions:
    """The options a level-0 changelog file is written with: the table's, with the
    changelog file's prefix, and its format, compression and stats mode where set (they win
    over the per-level ones, as Java's writer factory picks them); no row-count roll (Java's
    changelog writer rolls on size only)."""
    raw = dict(options.raw)
    raw["data-file.prefix"] = options.changelog_file_prefix
    raw.pop("target-file-row-num", None)
    for changelog_key, key, per_level in _CHANGELOG_KEYS:
        value = raw.get(changelog_key)
        if value is not None and str(value).strip():
            raw[key] = value
            raw.pop(per_level, None)
    return CoreOptions(raw)
