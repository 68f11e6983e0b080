"""Manifest merging on commit, following Java's released ("legacy") merger rule for rule.

Without merging, every commit appends one manifest to the base list and scans slow down
forever (pypaimon never merges). Java rewrites small manifests into bigger ones and, once enough
small or delete-carrying manifests pile up, runs a full compaction that drops ADD/DELETE pairs.
Doing exactly what Java does keeps tables that both write in the same shape.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from lakeformat.errors import CorruptFileError
from lakeformat.meta import binary_row
from lakeformat.meta.data_file_meta import (
    FileKind,
    Identifier,
    ManifestEntry,
    ManifestFileMeta,
    describe_identifier,
    merge_entries,
)
from lakeformat.meta.manifest import ManifestFile, partition_order_key
from lakeformat.schema.types import DataType

__all__ = ["merge_manifests", "compact_fully", "DeletePartitionPredicate", "manifest_merge_due",
           "must_change"]

PartitionFilter = Callable[[ManifestFileMeta], bool]


def merge_manifests(
    inputs: Sequence[ManifestFileMeta],
    manifest_file: ManifestFile,
    target_size: int,
    merge_min_count: int,
    full_compaction_threshold: int,
    partition_filter: PartitionFilter | None = None,
) -> tuple[list[ManifestFileMeta], list[ManifestFileMeta]]:
    """Merge the manifests of a base list; returns ``(new base list, files written)``.

    The live set is unchanged. If this raises, the files it wrote are already deleted; if the
    caller's commit fails afterwards, it deletes the returned new files
    (``manifest_file.delete_quietly(m.file_name for m in new_files)``). Input files are never
    deleted here: older snapshots still reference them.

    ``partition_filter`` overrides, for full compaction only, Java's test of whether a big
    delete-free manifest may hold a file that some DELETE removes (True = must be read);
    by default the manifest's partition stats are compared with the deleted partitions.
    """
    new_files: list[ManifestFileMeta] = []
    try:
        full = _try_full_compaction(list(inputs), new_files, manifest_file, target_size,
                                    full_compaction_threshold, partition_filter)
        if full is not None:
            return full, new_files
        return _minor_compaction(list(inputs), new_files, manifest_file, target_size,
                                 merge_min_count), new_files
    except BaseException:
        manifest_file.delete_quietly([m.file_name for m in new_files])
        raise


def compact_fully(inputs: Sequence[ManifestFileMeta], manifest_file: ManifestFile,
                  target_size: int) -> tuple[list[ManifestFileMeta], list[ManifestFileMeta]]:
    """Java's manifest compaction on demand (`FileStoreCommit.compactManifest`, the
    `compact_manifest` procedure): the merge with `merge-min-count` 1 and a full-compaction
    threshold of 1 byte, so every manifest holding a DELETE entry is rewritten without its
    ADD/DELETE pairs. Returns ``(new list, files written)`` with ADD entries only; the inputs
    themselves when none holds a DELETE entry (nothing to do). Cleans up as `merge_manifests`.
    """
    if not any(m.num_deleted_files for m in inputs):
        return list(inputs), []
    new_files: list[ManifestFileMeta] = []
    try:
        full = _try_full_compaction(list(inputs), new_files, manifest_file, target_size, 1,
                                    None)
        if full is None:  # fewer than two manifests to rewrite: rewrite the live set whole
            entries = [e for m in inputs for e in manifest_file.read(m.file_name)]
            full = manifest_file.write(merge_entries(entries))
            new_files.extend(full)
        return full, new_files
    except BaseException:
        manifest_file.delete_quietly([m.file_name for m in new_files])
        raise


def must_change(meta: ManifestFileMeta, target_size: int) -> bool:
    """A manifest a full merge rewrites: it holds DELETE entries or is below the target size."""
    return meta.num_deleted_files > 0 or meta.file_size < target_size


def manifest_merge_due(metas: Sequence[ManifestFileMeta], target_size: int,
                       merge_min_count: int, full_compaction_threshold: int
                       ) -> tuple[str | None, dict[str, int]]:
    """Would `merge_manifests` rewrite anything in this base list, judging by the list alone
    (no manifest read)? ("full" | "minor" | None, figures). "full": the manifests that must
    change (`must_change`) reach `full_compaction_threshold` bytes and are two or more;
    "minor": consecutive manifests reach `target_size` as a group of two or more, or the
    trailing group of small ones holds `merge_min_count` manifests."""
    changing = [m for m in metas if must_change(m, target_size)]
    figures = {"manifests": len(metas), "bytes": sum(m.file_size for m in metas),
               "must_change": len(changing),
               "must_change_bytes": sum(m.file_size for m in changing),
               "delete_entries": sum(m.num_deleted_files for m in metas),
               "trailing_small": 0}
    if figures["must_change_bytes"] >= full_compaction_threshold and len(changing) > 1:
        return "full", figures
    group = total = 0
    grouped = False
    for m in metas:
        total += m.file_size
        group += 1
        if total >= target_size:
            grouped = grouped or group > 1
            group = total = 0
    figures["trailing_small"] = group
    if grouped or (group >= merge_min_count and group > 1):
        return "minor", figures
    return None, figures


# -- minor: merge consecutive small manifests --------------------------------------------------
def _minor_compaction(inputs: list[ManifestFileMeta], new_files: list[ManifestFileMeta],
                      manifest_file: ManifestFile, target_size: int,
                      merge_min_count: int) -> list[ManifestFileMeta]:
    result: list[ManifestFileMeta] = []
    candidates: list[ManifestFileMeta] = []
    total = 0
    for meta in inputs:
        total += meta.file_size
        candidates.append(meta)
        if total >= target_size:
            _merge_candidates(candidates, manifest_file, result, new_files)
            candidates = []
            total = 0
    # the tail is only worth rewriting when it has become too many files
    if len(candidates) >= merge_min_count:
        _merge_candidates(candidates, manifest_file, result, new_files)
    else:
        result.extend(candidates)
    return result


def _merge_candidates(candidates: list[ManifestFileMeta], manifest_file: ManifestFile,
                      result: list[ManifestFileMeta], new_files: list[ManifestFileMeta]) -> None:
    if len(candidates) == 1:  # rewriting one file alone gains nothing
        result.append(candidates[0])
        return
    merged = cancel_pairs(e for m in candidates for e in manifest_file.read(m.file_name))
    if merged:
        written = manifest_file.write(merged)
        result.extend(written)
        new_files.extend(written)


def cancel_pairs(entries: Any) -> list[ManifestEntry]:
    """Java's ``FileEntry.mergeEntries``: an ADD followed by its DELETE cancel out; a DELETE
    whose ADD is not among ``entries`` stays (the ADD lives in an older manifest)."""
    merged: dict[Identifier, ManifestEntry] = {}
    for entry in entries:
        ident = entry.identifier
        if entry.kind == FileKind.ADD:
            if ident in merged:
                raise CorruptFileError(
                    f"manifests add {describe_identifier(ident)} while it is already present "
                    f"(as {FileKind(merged[ident].kind).name})"
                )
            merged[ident] = entry
        elif entry.kind == FileKind.DELETE:
            if ident in merged:
                del merged[ident]
            else:
                merged[ident] = entry
        else:
            raise CorruptFileError(f"unknown manifest entry kind {entry.kind!r}")
    return list(merged.values())


# -- full: drop every ADD/DELETE pair ----------------------------------------------------------
def _try_full_compaction(inputs: list[ManifestFileMeta], new_files: list[ManifestFileMeta],
                         manifest_file: ManifestFile, target_size: int, threshold: int,
                         partition_filter: PartitionFilter | None) -> list[ManifestFileMeta] | None:
    if threshold <= 0:
        raise ValueError("manifest full compaction threshold size must be positive")

    def changes(m: ManifestFileMeta) -> bool:
        return must_change(m, target_size)

    if sum(m.file_size for m in inputs if changes(m)) < threshold:
        return None

    deleted: set[Identifier] = set()
    for meta in inputs:
        if meta.num_deleted_files > 0:
            deleted.update(e.identifier for e in manifest_file.read(meta.file_name)
                           if e.kind == FileKind.DELETE)

    may_hold_deleted: PartitionFilter
    if not deleted:
        may_hold_deleted = _never
    elif partition_filter is not None:
        may_hold_deleted = partition_filter
    elif manifest_file.partition_types:
        may_hold_deleted = DeletePartitionPredicate(
            manifest_file.partition_types, {ident[0] for ident in deleted})
    else:
        may_hold_deleted = _always

    result: list[ManifestFileMeta] = []
    to_merge: list[ManifestFileMeta] = []
    for meta in inputs:
        if not changes(meta) and not may_hold_deleted(meta):
            result.append(meta)  # big, delete-free and far from every deleted partition
        else:
            to_merge.append(meta)
    if len(to_merge) <= 1:
        return None

    writer = manifest_file.create_rolling_writer()
    try:
        for meta in to_merge:
            changed = changes(meta)
            kept: list[ManifestEntry] = []
            for entry in manifest_file.read(meta.file_name):
                if entry.kind != FileKind.ADD:
                    continue
                if entry.identifier in deleted:
                    changed = True
                else:
                    kept.append(entry)
            if changed:
                writer.write_all(kept)
            else:
                result.append(meta)
        written = writer.close()
    except BaseException:
        writer.abort()
        raise
    result.extend(written)
    new_files.extend(written)
    return result


def _never(meta: ManifestFileMeta) -> bool:
    return False


def _always(meta: ManifestFileMeta) -> bool:
    return True


class DeletePartitionPredicate:
    """Could a manifest hold one of these partitions, judging by its partition stats?

    Java's ``MultiplePartitionPredicate`` on stats: per column, the manifest's [min, max] must
    overlap [min, max] of the deleted partitions' values (or nulls on both sides). False means
    certainly not; undecodable or missing stats count as "maybe".
    """

    def __init__(self, partition_types: Sequence[DataType], partitions: set[bytes]):
        self._types = [t.copy(nullable=True) for t in partition_types]
        rows = [binary_row.from_avro_bytes(p, list(partition_types)) for p in partitions]
        self._columns: list[tuple[Any, Any, bool, bool]] = []  # (lo, hi, has_values, has_nulls)
        for i in range(len(partition_types)):
            values = [r[i] for r in rows if r[i] is not None]
            has_nulls = len(values) < len(rows)
            if values:
                lo = min(values, key=partition_order_key)
                hi = max(values, key=partition_order_key)
                self._columns.append((lo, hi, True, has_nulls))
            else:
                self._columns.append((None, None, False, True))

    def __call__(self, meta: ManifestFileMeta) -> bool:
        stats = meta.partition_stats
        try:
            mins = binary_row.from_avro_bytes(stats.min_values, self._types)
            maxs = binary_row.from_avro_bytes(stats.max_values, self._types)
        except Exception:
            return True
        if len(mins) != len(self._columns) or len(maxs) != len(self._columns):
            return True
        rows = meta.num_added_files + meta.num_deleted_files
        counts = stats.null_counts
        for i, (lo, hi, has_values, has_nulls) in enumerate(self._columns):
            nulls = counts[i] if counts is not None and i < len(counts) else None
            col = (rows, mins[i], maxs[i], nulls)
            if not has_values:
                ok = _leaf(col, "null", None)
            else:
                ok = ((has_nulls and _leaf(col, "null", None)) or _leaf(col, "ge", lo)) and (
                    (has_nulls and _leaf(col, "null", None)) or _leaf(col, "le", hi))
            if not ok:
                return False
        return True


def _leaf(col: tuple[int, Any, Any, int | None], op: str, literal: Any) -> bool:
    """One leaf predicate tested on column stats, as Java's LeafPredicate does."""
    rows, lo, hi, nulls = col
    if (nulls is None or rows != nulls) and (lo is None or hi is None):
        return True  # stats unknown: may match
    if op == "null":
        return nulls is None or nulls > 0
    if nulls is not None and rows == nulls:
        return False  # every value null: no comparison can match
    if op == "ge":  # column >= literal is possible iff literal <= max
        return not partition_order_key(literal) > partition_order_key(hi)
    return not partition_order_key(literal) < partition_order_key(lo)  # "le": literal >= min
