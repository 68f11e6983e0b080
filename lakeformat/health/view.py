"""One pass over a table's metadata: everything health and the due rules look at, read once.

Read: the `LATEST`/`EARLIEST` hints and a few snapshot files, the latest snapshot's manifest
lists, data manifests and index manifest, what snapshot expiry's dry run reads (the snapshots
it may expire, their delta manifests and the manifests of the new earliest snapshot and the
tags), the tag and consumer files, a listing of `schema/` (and, only when more schema files
exist than `schema.num-retained.min`, the reference scan schema retention runs). Never a data
file and never a deletion-vector file: deleted rows come from the cardinalities the index
manifest records. `orphans=True` adds the listing of the whole table directory that orphan
removal's dry run makes.

A failed read of the latest snapshot or its manifests raises (there is no health without
them); a failure in the other parts is recorded in `errors` and leaves that part empty.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from lakeformat import clock
from lakeformat.health.buckets import BucketFigures, PartitionText, bucket_figures
from lakeformat.layout import SCHEMA_PREFIX, numbered_id
from lakeformat.meta.changelog import ChangelogManager
from lakeformat.meta.consumer import ConsumerManager
from lakeformat.meta.data_file_meta import ManifestEntry, ManifestFileMeta, merge_entries
from lakeformat.meta.deletion_vector import DeletionFile
from lakeformat.meta.snapshot import Snapshot, SnapshotManager
from lakeformat.meta.tag import Tag, TagManager
from lakeformat.operation.compact import CompactTask, check_compactable, plan_from_entries
from lakeformat.operation.maintain import (
    ReferenceScan,
    expire_range,
    explain_kept_schemas,
    first_snapshot,
    partition_update_times,
    plan_expire,
    plan_schema_retention,
    read_snapshots,
    remove_orphan_files,
    schema_retention_settings,
)
from lakeformat.operation.scan import FileStoreScan
from lakeformat.operation.support import EXPIRE_SNAPSHOTS, check_supported
from lakeformat.options import CoreOptions
from lakeformat.schema.schema_manager import SchemaManager
from lakeformat.schema.table_schema import TableSchema
from lakeformat.storage import FileIO
from lakeformat.storage.parallel import concurrently

T = TypeVar("T")

#: how many distinct last-compaction instants are traced to their COMPACT snapshot
MAX_TRACED = 32


@dataclass
class Expiry:
    earliest: int | None = None
    end: int | None = None
    eligible_end: int | None = None
    files: int = 0
    bytes: int = 0
    manifests: int = 0
    changelog_files: int = 0
    refused: str | None = None  # why expiry would refuse this table

    @property
    def expirable(self) -> int:
        if self.earliest is None or self.end is None:
            return 0
        return max(0, self.end - self.earliest)

    @property
    def backlog(self) -> int:
        if self.end is None or self.eligible_end is None:
            return 0
        return max(0, self.eligible_end - self.end)


@dataclass
class Schemas:
    ids: list[int] = field(default_factory=list)
    removable: list[int] = field(default_factory=list)
    kept: dict[int, tuple[str, str]] = field(default_factory=dict)
    #: schemas only DELETE entries of the latest snapshot keep: a manifest compaction frees them
    freed_by_manifests: list[int] = field(default_factory=list)
    retain_min: int = 10
    time_retained: str = "1 d"


@dataclass
class TableView:
    name: str
    file_io: FileIO
    path: str
    schema: TableSchema
    opts: CoreOptions  # the table's options with the caller's overrides
    now_ms: int
    local_ms: int
    latest: Snapshot | None
    earliest_id: int | None
    earliest: Snapshot | None
    metas: list[ManifestFileMeta]
    changelog_metas: list[ManifestFileMeta]
    entries: list[ManifestEntry]
    dvs: dict[tuple[bytes, int], dict[str, DeletionFile]]
    figures: BucketFigures
    parts: PartitionText
    minor: list[CompactTask] | None  # None: compaction refuses the table (`compact_refused`)
    compact_refused: str | None
    expiry: Expiry
    schemas: Schemas
    tags: list[Tag]
    consumers: dict[str, int]
    orphans: dict[str, Any] | None
    errors: list[str]
    cache: dict[int, Snapshot]
    compaction_snapshots: dict[int, int | None] = field(default_factory=dict)
    _full: list[CompactTask] | None = None
    #: each live partition's last update (`partition_update_times`), read when partition
    #: expiry goes by update time (empty otherwise)
    partition_update_times: dict[bytes, int | None] = field(default_factory=dict)

    @property
    def pk(self) -> bool:
        return bool(self.schema.primary_keys)

    def full_plan(self) -> list[CompactTask]:
        """What `compact(full=True)` would pick (planned on first use)."""
        if self.minor is None:
            return []
        if self._full is None:
            self._full = plan_from_entries(self.schema, self.opts, self.entries, self.dvs,
                                           True)
        return self._full

    def snapshots_since(self, local_ms: int) -> list[Snapshot]:
        """Retained APPEND/OVERWRITE snapshots committed after a local wall-clock instant
        (reads every retained snapshot file once)."""
        if self.latest is None or self.earliest_id is None:
            return []
        found = read_snapshots(SnapshotManager(self.file_io, self.path),
                               range(self.earliest_id, self.latest.id + 1), self.cache)
        utc = local_ms - self.offset_ms
        return [s for s in found.values()
                if s.commit_kind in ("APPEND", "OVERWRITE") and s.time_millis > utc]

    @property
    def offset_ms(self) -> int:
        """The local wall clock minus UTC, to the minute."""
        return round((self.local_ms - self.now_ms) / 60000) * 60000


class _Pinned(SnapshotManager):
    """The snapshot manager of the pass: latest and earliest ids as read at its start (the
    expiry dry run asks for them again otherwise)."""

    def __init__(self, file_io: FileIO, path: str, latest: Snapshot | None,
                 earliest_id: int | None):
        super().__init__(file_io, path)
        self._latest = latest.id if latest is not None else None
        self._earliest = earliest_id

    def latest_snapshot_id(self) -> int | None:
        return self._latest

    def earliest_snapshot_id(self) -> int | None:
        return self._earliest


class _Consumers:
    """The consumers as the pass read them, for the expiry dry run."""

    def __init__(self, consumers: dict[str, int]):
        self._consumers = consumers

    def consumers(self) -> dict[str, int]:
        return dict(self._consumers)

    def min_next_snapshot(self) -> int | None:
        return min(self._consumers.values(), default=None)


def _error(errors: list[str], what: str, e: Exception) -> None:
    errors.append(f"{what}: {type(e).__name__}: {e}")


def read_view(file_io: FileIO, path: str, schema: TableSchema, name: str,
              opts: CoreOptions, orphans: bool = False) -> TableView:
    now_ms = clock.now_millis()
    local_ms = clock.local_millis_now()
    errors: list[str] = []
    sm = SnapshotManager(file_io, path)
    # first round: everything that depends on nothing read before, at once
    latest, earliest_id, tags, consumers, schema_files, changelogs = concurrently(
        sm.latest_snapshot, sm.earliest_snapshot_id,
        _caught(lambda: TagManager(file_io, path).tags()),
        _caught(lambda: ConsumerManager(file_io, path).consumers()),
        _caught(lambda: _schema_ids(file_io, path)),
        _caught(lambda: ChangelogManager(file_io, path).changelog_ids()))
    earliest_id = earliest_id if latest is not None else None
    cache: dict[int, Snapshot] = {} if latest is None else {latest.id: latest}
    scan = FileStoreScan(file_io, path, schema)
    # second round: the latest snapshot's lists beside the earliest snapshot, then its
    # manifests beside its index manifest
    lists = ([latest.base_manifest_list, latest.delta_manifest_list]
             + ([latest.changelog_manifest_list] if latest.changelog_manifest_list else [])
             if latest is not None else [])
    earliest_ids = range(earliest_id, earliest_id + 1) if earliest_id is not None else range(0)
    found, *read_lists = concurrently(lambda: read_snapshots(sm, earliest_ids, cache),
                                      *[lambda n=n: scan.read_list(n) for n in lists])
    earliest = found.get(earliest_id) if earliest_id is not None else None
    metas = read_lists[0] + read_lists[1] if latest is not None else []
    changelog_metas = read_lists[2] if len(read_lists) > 2 else []
    raw_entries, index = concurrently(
        lambda: scan.read_entries(metas) if metas else [],
        _caught(lambda: scan.deletion_files(latest) if metas else {}))
    entries = merge_entries(raw_entries) if metas else []
    if entries and index[1] is not None:
        raise index[1]
    dvs = index[0] if entries else {}
    max_level = max(opts.num_levels, max((e.file.level for e in entries), default=0) + 1) - 1
    figures = bucket_figures(schema, opts, entries, dvs, max_level)
    minor: list[CompactTask] | None = None
    refused = None
    try:
        check_compactable(schema, path)
        minor = plan_from_entries(schema, opts, entries, dvs, False)
    except Exception as e:
        refused = f"compaction refuses this table: {e}"
    view = TableView(name, file_io, path, schema, opts, now_ms, local_ms, latest, earliest_id,
                     earliest, metas, changelog_metas, entries, dvs, figures,
                     PartitionText(schema, opts), minor, refused, Expiry(), Schemas(), [], {},
                     None, errors, cache)
    if str(opts.get("partition.expiration-strategy", "")).strip() == "update-time":
        view.partition_update_times = partition_update_times(raw_entries)
    consumers_read = True
    for what, (value, failure) in (("tags", tags), ("consumers", consumers)):
        if failure is None:
            setattr(view, what, value)
        else:
            _error(errors, f"cannot read the {what}", failure)
            consumers_read = consumers_read and what != "consumers"
    if consumers_read:  # what consumers pin bounds expiry: no figures without them
        decoupled = (None if changelogs[1] is not None else
                     CoreOptions(schema.options).changelog_lifecycle_decoupled
                     or bool(changelogs[0]))
        _read_expiry(view, _Pinned(file_io, path, latest, earliest_id),
                     None if tags[1] is not None else tags[0], decoupled)
    else:
        view.expiry.refused = "the consumers could not be read (see errors)"
    try:
        if schema_files[1] is not None:
            raise schema_files[1]
        view.schemas = _read_schemas(view, schema_files[0])
    except Exception as e:
        _error(errors, "cannot read the schema files", e)
    try:
        _trace_compactions(view, sm)
    except Exception as e:
        _error(errors, "cannot find the compaction snapshots", e)
    if orphans:
        try:
            found = remove_orphan_files(file_io, path, schema, name, None, True)
            view.orphans = {"files": len(found.deleted), "bytes": found.bytes_deleted,
                            "sample": found.deleted[:5]}
        except Exception as e:
            _error(errors, "cannot scan for orphan files", e)
    return view


def _caught(read: Callable[[], T]) -> Callable[[], tuple[T | None, Exception | None]]:
    """`read` giving (value, None), or (None, the failure): a part of the pass that fails is
    recorded in `errors`, not raised."""
    def call() -> tuple[T | None, Exception | None]:
        try:
            return read(), None
        except Exception as e:  # noqa: BLE001 - recorded by the caller
            return None, e
    return call


def _schema_ids(io: FileIO, path: str) -> list[int]:
    manager = SchemaManager(io, path)
    return sorted(i for i in (numbered_id(st.path.rsplit("/", 1)[-1], SCHEMA_PREFIX)
                              for st in io.list_status(manager.schema_dir)) if i is not None)


def _read_expiry(view: TableView, sm: SnapshotManager, tags: list[Tag] | None = None,
                 decoupled: bool | None = None) -> None:
    """Expiry's own range and plan (`expire_range`, `plan_expire`) over the pass's reads (its
    tags and changelog listing when they were read)."""
    opts, ex = view.opts, view.expiry
    try:
        check_supported(view.schema, EXPIRE_SNAPSHOTS, view.path)
    except Exception as e:
        ex.refused = f"snapshot expiry refuses this table: {e}"
        return
    try:
        cutoff = view.now_ms - int(opts.snapshot_time_retained.total_seconds() * 1000)
        span = expire_range(sm, _Consumers(view.consumers),  # type: ignore[arg-type]
                            opts.snapshot_num_retained_min, opts.snapshot_num_retained_max,
                            cutoff, opts.snapshot_expire_limit, view.cache)
        if span is None:
            return
        ex.earliest, ex.end, ex.eligible_end = span.earliest, span.end, span.eligible_end
        if span.end > span.earliest:
            plan = plan_expire(view.file_io, view.path, view.schema, span.earliest, span.end,
                               view.cache, decoupled, tags)
            if plan is not None:
                ex.files = len(plan.data) + len(plan.changelog) + len(plan.index)
                ex.manifests = len(plan.manifests)
                ex.changelog_files = len(plan.changelog)
                ex.bytes = (sum(plan.data.values()) + sum(plan.changelog.values())
                            + sum(plan.index.values()) + sum(plan.manifests.values()))
                view.errors.extend(f"snapshot expiry: {s}" for s in plan.skipped)
    except Exception as e:
        _error(view.errors, "cannot plan snapshot expiry", e)


def _read_schemas(view: TableView, ids: list[int]) -> Schemas:
    """Schema files (`ids`, listed), which of them clean_schemas would remove now, and why it
    keeps the others. With no more files than `schema.num-retained.min` nothing is removable
    and no manifest is read."""
    io = view.file_io
    manager = SchemaManager(io, view.path)
    raw = dict(view.opts.raw)
    retain_min, cutoff = schema_retention_settings(raw, None, None, view.now_ms)
    out = Schemas(ids=ids, retain_min=retain_min,
                  time_retained=str(raw.get("schema.time-retained", "1 d")))
    if not ids:
        return out
    if len(ids) <= retain_min:
        out.kept = {sid: ("latest", "latest schema") if sid == ids[-1] else
                    ("retain-min", f"among the newest {retain_min} schemas (retain_min)")
                    for sid in ids}
        return out
    scan = ReferenceScan(io, view.path, view.schema, "health")
    scan.refresh()  # one look is a report's worth (clean_schemas looks again before deleting)
    removable, young = plan_schema_retention(manager, ids, scan.schema_ids, retain_min, cutoff)
    out.removable = removable
    left = [sid for sid in ids if sid not in set(removable)]
    out.kept = explain_kept_schemas(left, scan, retain_min, young)
    deleted_only = [sid for sid, (kind, _) in out.kept.items() if kind == "deleted-file"]
    if deleted_only and view.latest is not None:
        # freed by compacting the latest snapshot's manifests only if no other snapshot or
        # tag lists the schema's files, and once old enough
        latest_key = ("snapshot", str(view.latest.id))
        only_latest = [sid for sid in deleted_only
                       if set(scan.holders_listing(sid)) <= {latest_key}]
        if only_latest:
            freed, _ = plan_schema_retention(manager, ids, scan.schema_ids - set(only_latest),
                                             retain_min, cutoff)
            out.freed_by_manifests = [sid for sid in freed if sid in only_latest]
    return out


def _trace_compactions(view: TableView, sm: SnapshotManager) -> None:
    """The COMPACT snapshot that committed each bucket's newest compaction output: the first
    retained COMPACT snapshot committed at or after the file was written (binary search over
    commit times, then a few steps forward). None when it has expired."""
    if view.latest is None or view.earliest_id is None:
        return
    instants = sorted({int(t) for t in view.figures.last_compaction.tolist() if t > 0},
                      reverse=True)[:MAX_TRACED]
    lo_id, hi_id = view.earliest_id, view.latest.id
    for local in instants:
        utc = local - view.offset_ms
        # narrow by the snapshots already read (the searches of the other instants)
        known = [(sid, s.time_millis) for sid, s in view.cache.items() if lo_id <= sid <= hi_id]
        lo = max((sid + 1 for sid, ms in known if ms < utc), default=lo_id)
        hi = min((sid for sid, ms in known if ms >= utc), default=hi_id + 1)
        lo = first_snapshot(sm, lo, hi, lambda s, utc=utc: s.time_millis >= utc, view.cache)
        found = None
        window = read_snapshots(sm, range(lo, min(hi_id, lo + 4) + 1), view.cache)
        for sid in sorted(window):
            if window[sid].commit_kind == "COMPACT":
                found = sid
                break
        view.compaction_snapshots[local] = found


def utc_iso(millis: int | None) -> str | None:
    if not millis:
        return None
    return dt.datetime.fromtimestamp(millis / 1000, dt.UTC).isoformat(timespec="seconds")
