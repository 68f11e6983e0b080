"""Where every file of a table lives, as Paimon lays it out: one place for every directory
and file-name rule.

A leaf module (it imports nothing from lakeformat) so that every layer may use it: `schema/`
needs the schema directory and sits below `meta/` and `operation/`, which need the rest. It
only joins names; reading and writing stay with the managers (`SnapshotManager`, ...). The data
file rule (`<k=v>/.../bucket-<b>/<file>`) needs the partition encoding of `meta/`, so
`operation/paths.PathFactory` composes it from `bucket_dir_name` here.

```
<table>/snapshot/snapshot-<id>, LATEST, EARLIEST    <table>/schema/schema-<id>
<table>/manifest/manifest-*, manifest-list-*, index-manifest-*
<table>/tag/tag-<name>     <table>/changelog/changelog-<id>    <table>/consumer/consumer-<id>
<table>/statistics/*       <table>/index/*                     <table>/branch/branch-<name>/...
<table>/<k=v>/.../bucket-<b>/data-*, changelog-*  (bucket-postpone for bucket -2)
```
"""

from __future__ import annotations

import re
from typing import Protocol

SNAPSHOT_DIR = "snapshot"
SNAPSHOT_PREFIX = "snapshot-"
LATEST = "LATEST"
EARLIEST = "EARLIEST"
SCHEMA_DIR = "schema"
SCHEMA_PREFIX = "schema-"
MANIFEST_DIR = "manifest"
MANIFEST_PREFIX = "manifest-"
MANIFEST_LIST_PREFIX = "manifest-list-"
TAG_DIR = "tag"
TAG_PREFIX = "tag-"
CHANGELOG_DIR = "changelog"
#: long-lived changelog files under `changelog/`, and (the default `changelog-file.prefix`)
#: changelog data files in bucket directories
CHANGELOG_PREFIX = "changelog-"
CONSUMER_DIR = "consumer"
CONSUMER_PREFIX = "consumer-"
STATISTICS_DIR = "statistics"
INDEX_DIR = "index"
BRANCH_DIR = "branch"
BUCKET_PREFIX = "bucket-"
POSTPONE_BUCKET = -2


class Joins(Protocol):
    """What a layout needs of a FileIO: joining path parts (local and S3 join differently)."""

    def join(self, *parts: str) -> str: ...


def bucket_dir_name(bucket: int) -> str:
    """`bucket-<b>`, or `bucket-postpone` for Paimon's postpone bucket (-2)."""
    return f"{BUCKET_PREFIX}postpone" if bucket == POSTPONE_BUCKET else f"{BUCKET_PREFIX}{bucket}"


def numbered_id(name: str, prefix: str) -> int | None:
    """The id of a numbered file name such as `snapshot-12`, or None for any other name."""
    m = _numbered(prefix).match(name)
    return int(m.group(1)) if m else None


def _numbered(prefix: str) -> re.Pattern[str]:
    pattern = _PATTERNS.get(prefix)
    if pattern is None:
        pattern = _PATTERNS[prefix] = re.compile(re.escape(prefix) + r"(\d+)$")
    return pattern


_PATTERNS: dict[str, re.Pattern[str]] = {}


class TablePaths:
    """The paths of one table (or branch) directory."""

    def __init__(self, file_io: Joins, table_path: str):
        self.file_io = file_io
        self.table_path = table_path

    def dir(self, name: str) -> str:
        return self.file_io.join(self.table_path, name)

    @property
    def snapshot_dir(self) -> str:
        return self.dir(SNAPSHOT_DIR)

    def snapshot(self, snapshot_id: int) -> str:
        return self.file_io.join(self.snapshot_dir, f"{SNAPSHOT_PREFIX}{snapshot_id}")

    def snapshot_hint(self, hint: str) -> str:
        """`LATEST` or `EARLIEST`."""
        return self.file_io.join(self.snapshot_dir, hint)

    @property
    def schema_dir(self) -> str:
        return self.dir(SCHEMA_DIR)

    def schema(self, schema_id: int) -> str:
        return self.file_io.join(self.schema_dir, f"{SCHEMA_PREFIX}{schema_id}")

    @property
    def manifest_dir(self) -> str:
        return self.dir(MANIFEST_DIR)

    def manifest(self, file_name: str) -> str:
        """A manifest, manifest list or index manifest (all live in `manifest/`)."""
        return self.file_io.join(self.manifest_dir, file_name)

    @property
    def tag_dir(self) -> str:
        return self.dir(TAG_DIR)

    def tag(self, name: str) -> str:
        return self.file_io.join(self.tag_dir, TAG_PREFIX + name)

    @property
    def changelog_dir(self) -> str:
        return self.dir(CHANGELOG_DIR)

    @property
    def consumer_dir(self) -> str:
        return self.dir(CONSUMER_DIR)

    def consumer(self, consumer_id: str) -> str:
        return self.file_io.join(self.consumer_dir, CONSUMER_PREFIX + consumer_id)

    @property
    def statistics_dir(self) -> str:
        return self.dir(STATISTICS_DIR)

    def statistics(self, file_name: str) -> str:
        return self.file_io.join(self.statistics_dir, file_name)
