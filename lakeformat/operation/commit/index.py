"""The index manifest a commit publishes: what changes the index files of a snapshot, and the
conflicts that make a commit give up.

An index manifest lists a snapshot's live index files whole (not a delta): a dynamic-bucket
table's HASH files and a lookup table's DELETION_VECTORS files. A commit replaces the files of
the (partition, bucket)s it brings new ones for, an overwrite drops those of its partitions,
and the deletion vectors of the data files it removes go with them (`deletion_vector`). A
commit whose index files were computed from a base that another commit changed since, in one
of its partitions, is refused; so is a rewrite whose input files' deletion vectors changed
since it read them (their rows would come back).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from lakeformat.errors import CommitConflictError
from lakeformat.meta.data_file_meta import FileKind, ManifestEntry
from lakeformat.meta.deletion_vector import check_deletions_seen, prune_deletion_vectors
from lakeformat.meta.index_manifest import IndexManifestEntry, IndexManifestFile, replace_entries
from lakeformat.meta.snapshot import Snapshot

INHERIT = object()  # the next snapshot keeps the latest one's index manifest


def removed_files(entries: Sequence[ManifestEntry]) -> set[str]:
    """Data files a commit deletes and does not add back (an upgrade re-adds its file)."""
    added = {e.file.file_name for e in entries if e.kind != FileKind.DELETE}
    return {e.file.file_name for e in entries if e.kind == FileKind.DELETE} - added


def next_index_manifest(index_file: IndexManifestFile, latest: Snapshot | None,
                        added: Sequence[IndexManifestEntry], base: str | None,
                        overwrite_partitions: Sequence[bytes] | None, overwrite_all: bool,
                        removed: set[str],
                        deletions_seen: Mapping[str, tuple[str, int] | None] | None,
                        table_path: str) -> str | None | object:
    """The index manifest of the next snapshot: INHERIT (the latest's) when nothing changes
    the index, else a new one written here (None when no index file is left)."""
    current = latest.index_manifest if latest else None
    dropping = overwrite_all or bool(overwrite_partitions)
    planned_dvs = any(v is not None for v in (deletions_seen or {}).values())
    if not added and not planned_dvs and not (
            current and (dropping or removed or deletions_seen)):
        return INHERIT
    live = index_file.read(current)
    if deletions_seen:
        check_deletions_seen(live, deletions_seen, table_path)
    changed = bool(added) or bool(dropping and current)
    if added and current != base:
        mine = {e.partition for e in added}
        try:
            before = {(e.key, e.file_name) for e in index_file.read(base)
                      if e.partition in mine}
        except FileNotFoundError:  # expired since the plan: it cannot be compared
            before = None
        now = {(e.key, e.file_name) for e in live if e.partition in mine}
        if before != now:
            raise CommitConflictError(
                f"{table_path}: another commit changed the index (dynamic-bucket assignments "
                "or deletion vectors) of a partition this commit changes it in; run it again")
    entries = replace_entries(live, added, overwrite_partitions or (), overwrite_all)
    pruned = prune_deletion_vectors(entries, removed, index_file)
    if pruned is None and not changed:
        return INHERIT
    entries = entries if pruned is None else pruned
    if not entries:
        return None
    return index_file.write(entries)
