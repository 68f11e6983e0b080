"""Result objects of table operations: printable, and a plain dict for XCom and `--json`."""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class CommitResult:
    """What a write or delete committed (snapshot_id None when there was nothing to commit)."""

    table: str
    snapshot_id: int | None
    commit_kind: str | None
    rows_written: int
    files_added: int
    files_deleted: int
    bytes_added: int
    duration_s: float
    #: times buckets of the write were renumbered and rewritten because other commits wrote
    #: to them after this write's base snapshot (see `operation/write.WriteJob`)
    rewrites: int = 0
    #: who committed, and the identifier that makes a retried commit land once
    commit_user: str | None = None
    commit_identifier: int | None = None
    #: True when this (commit_user, commit_identifier) had already landed: nothing was written
    #: and the counts are those of the earlier commit
    already_committed: bool = False
    #: a delete by predicate: the rows it wrote -D records for (None when it dropped whole
    #: partitions, whose rows it does not read), and the partitions it dropped (path text)
    rows_deleted: int | None = None
    partitions_dropped: tuple[str, ...] = ()
    #: a lookup table's write compacts what it wrote before it returns (Java's
    #: `changelog-producer.lookup-wait`): the COMPACT snapshots that made
    compaction_snapshot_ids: list[int] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["partitions_dropped"] = list(self.partitions_dropped)
        return out

    def __str__(self) -> str:
        if self.snapshot_id is None:
            return f"{self.table}: nothing to commit"
        if self.partitions_dropped and not self.already_committed:
            return (f"{self.table}: snapshot {self.snapshot_id} ({self.commit_kind}) dropped "
                    f"{len(self.partitions_dropped)} partitions "
                    f"{list(self.partitions_dropped)} ({self.files_deleted} files) in "
                    f"{self.duration_s:.2f}s")
        if self.already_committed:
            return (f"{self.table}: already committed as snapshot {self.snapshot_id} "
                    f"({self.commit_kind}) by {self.commit_user} / {self.commit_identifier}; "
                    "nothing written")
        rows = (f"{self.rows_deleted} rows deleted" if self.rows_deleted is not None
                else f"{self.rows_written} rows")
        return (f"{self.table}: snapshot {self.snapshot_id} ({self.commit_kind}), "
                f"{rows}, +{self.files_added}/-{self.files_deleted} files, "
                f"{human_size(self.bytes_added)} in {self.duration_s:.2f}s"
                + (f", renumbered {self.rewrites}x after concurrent commits"
                   if self.rewrites else "")
                + (f", compacted in snapshot(s) {self.compaction_snapshot_ids}"
                   if self.compaction_snapshot_ids else ""))


@dataclass(frozen=True)
class TagInfo:
    """A tag as `create_tag` made it or `list_tags` found it: the snapshot it keeps from expiry,
    that snapshot's commit time (epoch millis), when the tag was created (local wall-clock time,
    as Paimon stores it) and how long it lives (None: until deleted)."""

    name: str
    snapshot_id: int
    schema_id: int
    commit_time: int | None
    create_time: dt.datetime | None = None
    time_retained: dt.timedelta | None = None

    def to_dict(self) -> dict[str, Any]:
        ct, tr = self.create_time, self.time_retained
        return {"name": self.name, "snapshot_id": self.snapshot_id, "schema_id": self.schema_id,
                "commit_time": self.commit_time,
                "create_time": ct.isoformat() if ct else None,
                "time_retained_s": tr.total_seconds() if tr else None}

    def __str__(self) -> str:
        created = f", created {self.create_time.isoformat(sep=' ')}" if self.create_time else ""
        kept = f", expires {self.time_retained} after creation" if self.time_retained else ""
        return (f"tag {self.name}: snapshot {self.snapshot_id} (schema {self.schema_id})"
                f"{created}{kept}")


@dataclass(frozen=True)
class BranchInfo:
    """A branch (`branch/branch-<name>/`) as `Table.branches()` finds it: Java's `$branches`
    shows its name and creation time (here the oldest of its schema files, which creating it
    writes; None without one); the snapshots it holds (None: none yet, as a branch created
    empty), its latest schema id and its own tags — a branch made from a tag holds a copy of
    that tag, the only record of where it came from (Paimon keeps no other)."""

    name: str
    create_time: dt.datetime | None
    earliest_snapshot: int | None
    latest_snapshot: int | None
    schema_id: int | None
    tags: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        ct = self.create_time
        return {"name": self.name, "create_time": ct.isoformat() if ct else None,
                "earliest_snapshot": self.earliest_snapshot,
                "latest_snapshot": self.latest_snapshot, "schema_id": self.schema_id,
                "tags": list(self.tags)}

    def __str__(self) -> str:
        snaps = (f"snapshots {self.earliest_snapshot}..{self.latest_snapshot}"
                 if self.latest_snapshot is not None else "no snapshot")
        tags = f", tags {', '.join(self.tags)}" if self.tags else ""
        return f"branch {self.name}: {snaps} (schema {self.schema_id}){tags}"


#: why `clean_schemas` keeps a schema file (`MaintenanceResult.kept_kinds` values): the latest
#: schema; among the newest `retain_min`; the `schemaId` of a snapshot, tag or long-lived
#: changelog, or of one of a branch's ("branch"); the `_SCHEMA_ID` of a file a snapshot reads
#: ("live-file"), or only of files its manifests list as deleted (ADD/DELETE entries that
#: `compact_manifests=True` drops); younger than the cut-off, or replaced by a schema that is
KEPT_KINDS = ("latest", "retain-min", "snapshot", "tag", "changelog", "branch",
              "live-file", "deleted-file", "too-young")
#: how many paths, partitions or snapshot ranges the text of a result lists before "... and K more"
LIST_LIMIT = 10
_UNITS = ("KiB", "MiB", "GiB", "TiB", "PiB")


def human_size(n: int) -> str:
    """`12.3 KiB` for the text of a result (`to_dict` keeps the exact byte count)."""
    if n < 1024:
        return f"{n} B"
    value = float(n)
    for unit in _UNITS:
        value /= 1024
        if value < 1024 or unit == _UNITS[-1]:
            break
    return f"{value:.1f} {unit}"


def first_of(items: list[str], limit: int = LIST_LIMIT) -> list[str]:
    """The first `limit` items, then "... and K more" when some were left out."""
    shown = list(items[:limit])
    if len(items) > limit:
        shown.append(f"... and {len(items) - limit} more")
    return shown


def id_ranges(ids: list[int]) -> list[str]:
    """Consecutive ids as ranges: [1, 2, 3, 7] -> ["1..3", "7"]."""
    out: list[str] = []
    run: list[int] = []
    for i in sorted(ids):
        if run and i != run[-1] + 1:
            out.append(f"{run[0]}..{run[-1]}" if len(run) > 1 else str(run[0]))
            run = []
        run.append(i)
    if run:
        out.append(f"{run[0]}..{run[-1]}" if len(run) > 1 else str(run[0]))
    return out


@dataclass
class MaintenanceResult:
    """What a cleanup job deleted — or, with `dry_run`, exactly what it would delete.

    `deleted` lists every path in deletion order; counts are per kind of file. `bytes_deleted`
    sums the sizes the metadata records (data, changelog and manifest files). The text form
    sums up; a dry run's text also lists the first `LIST_LIMIT` paths it would delete.
    """

    table: str
    operation: str
    dry_run: bool = False
    snapshots_deleted: list[int] = field(default_factory=list)
    data_files_deleted: int = 0
    changelog_files_deleted: int = 0
    manifest_files_deleted: int = 0
    schema_files_deleted: int = 0
    other_files_deleted: int = 0
    bytes_deleted: int = 0
    earliest_snapshot: int | None = None
    latest_snapshot: int | None = None
    deleted: list[str] = field(default_factory=list)
    # partition expiry drops partitions from the table in a new snapshot; their files stay on
    # storage until the snapshots holding them expire
    partitions_expired: list[str] = field(default_factory=list)
    data_files_dropped: int = 0
    bytes_dropped: int = 0
    skipped: list[str] = field(default_factory=list)  # why less than planned was deleted
    duration_s: float = 0.0
    #: snapshot expiry: snapshots that the rules let expire but that this run left because
    #: `expire_limit` (`snapshot.expire.limit` / `max_deletes`) stopped it; 0 when none
    snapshots_remaining_eligible: int = 0
    #: snapshot expiry: the per-run limit in force (None for other operations)
    expire_limit: int | None = None
    #: schema retention: why each remaining schema file is kept (schema id -> reason), and the
    #: kind of that reason (schema id -> one of `KEPT_KINDS`)
    kept: dict[int, str] = field(default_factory=dict)
    kept_kinds: dict[int, str] = field(default_factory=dict)
    #: schema retention with `compact_manifests`: the COMPACT snapshot whose manifests hold
    #: only ADD entries (None: not asked, nothing to compact, or a dry run)
    manifest_compaction_snapshot: int | None = None
    notes: list[str] = field(default_factory=list)  # what else the job did or found
    #: tag expiry: the tags deleted (or, on a dry run, that would be)
    tags_deleted: list[str] = field(default_factory=list)
    #: decoupled changelog: the expired snapshots written as `changelog/changelog-<id>` (they
    #: outlive their snapshots), and the long-lived changelogs that changelog expiry deleted
    changelogs_written: list[int] = field(default_factory=list)
    changelogs_deleted: list[int] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data: schema ids as keys become text (`{"0": ...}`), as JSON (XCom,
        `--json`) would make them anyway."""
        out = asdict(self)
        for key in ("kept", "kept_kinds"):
            out[key] = {str(k): v for k, v in out[key].items()}
        return out

    @property
    def files_deleted(self) -> int:
        return len(self.deleted)

    def __str__(self) -> str:
        lines = [self._summary()]
        if self.snapshots_remaining_eligible:
            lines.append(f"  limit snapshot.expire.limit={self.expire_limit} reached; "
                         f"{self.snapshots_remaining_eligible} more snapshots are eligible — "
                         "run again or raise max_deletes")
        lines += [f"  {note}" for note in self.notes]
        if self.dry_run and self.snapshots_deleted:
            lines.append("  snapshots: " + ", ".join(first_of(id_ranges(self.snapshots_deleted))))
        if self.dry_run and self.deleted:
            lines.append("  would delete:")
            lines += [f"    {p}" for p in first_of(self.deleted)]
        if self.kept:
            lines.append("  kept schemas:")
            kept = [f"{sid}: {why}" for sid, why in sorted(self.kept.items())]
            lines += [f"    {line}" for line in first_of(kept)]
        return "\n".join(lines)

    def _summary(self) -> str:
        notes = f" ({'; '.join(self.skipped)})" if self.skipped else ""
        if self.partitions_expired or self.operation == "expire-partitions":
            verb = "would drop" if self.dry_run else "dropped"
            snap = f" in snapshot {self.latest_snapshot}" if self.latest_snapshot else ""
            shown = first_of(self.partitions_expired)
            return (f"{self.table}: {self.operation} {verb} {len(self.partitions_expired)} "
                    f"partitions {shown}{snap} ({self.data_files_dropped} data "
                    f"files, {human_size(self.bytes_dropped)}, deleted when the snapshots "
                    f"holding them expire) in {self.duration_s:.2f}s{notes}")
        if self.operation == "compact-manifests":  # commits a snapshot, deletes nothing
            done = (f"committed COMPACT snapshot {self.manifest_compaction_snapshot}"
                    if self.manifest_compaction_snapshot is not None else "committed nothing")
            return f"{self.table}: compact-manifests {done} in {self.duration_s:.2f}s{notes}"
        verb = "would delete" if self.dry_run else "deleted"
        parts = [f"{len(self.snapshots_deleted)} snapshots"] if self.snapshots_deleted else []
        if self.tags_deleted:
            parts.append(f"{len(self.tags_deleted)} tags {first_of(self.tags_deleted)}")
        if self.changelogs_deleted:
            parts.append(f"{len(self.changelogs_deleted)} changelogs")
        for label, n in (("data files", self.data_files_deleted),
                         ("changelog files", self.changelog_files_deleted),
                         ("manifest files", self.manifest_files_deleted),
                         ("schema files", self.schema_files_deleted),
                         ("other files", self.other_files_deleted)):
            if n:
                parts.append(f"{n} {label}")
        what = ", ".join(parts) if parts else "nothing"
        tail = f"; earliest snapshot {self.earliest_snapshot}" \
            if self.earliest_snapshot is not None else ""
        if self.changelogs_written:
            tail += (f"; {'would keep' if self.dry_run else 'kept'} "
                     f"{len(self.changelogs_written)} changelogs as changelog/changelog-<id>")
        return (f"{self.table}: {self.operation} {verb} {what} ({human_size(self.bytes_deleted)})"
                f" in {self.duration_s:.2f}s{tail}{notes}")


@dataclass
class CompactStats:
    """Counts of one partition (or of a whole compaction)."""

    buckets_compacted: int = 0
    files_in: int = 0
    files_out: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    rows_in: int = 0
    rows_out: int = 0
    sorted_runs_before: int = 0
    sorted_runs_after: int = 0
    changelog_files: int = 0
    changelog_rows: int = 0

    def add(self, other: CompactStats) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass
class CompactResult:
    """What a compaction did, per partition and overall; `snapshot_ids` are its COMPACT
    snapshots (one per committed group of partitions), `failed` the partitions whose commit
    conflicted with another job (their new files were deleted; run the compaction again)."""

    table: str
    full: bool
    snapshot_ids: list[int]
    partitions: dict[str, CompactStats]
    total: CompactStats
    failed: dict[str, str]
    duration_s: float
    commit_user: str | None = None
    commit_identifier: int | None = None
    #: snapshots an earlier run with the same (commit_user, commit_identifier) committed; a
    #: re-run compacts only what that run left (nothing, when it finished)
    earlier_snapshot_ids: list[int] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"table": self.table, "full": self.full, "snapshot_ids": list(self.snapshot_ids),
                "partitions": {k: asdict(v) for k, v in self.partitions.items()},
                "total": asdict(self.total), "failed": dict(self.failed),
                "duration_s": self.duration_s, "commit_user": self.commit_user,
                "commit_identifier": self.commit_identifier,
                "earlier_snapshot_ids": list(self.earlier_snapshot_ids)}

    def __str__(self) -> str:
        t = self.total
        kind = "full" if self.full else "minor"
        earlier = (f" (already committed as snapshots {self.earlier_snapshot_ids})"
                   if self.earlier_snapshot_ids else "")
        if not t.buckets_compacted and not self.failed:
            return (f"{self.table}: {kind} compaction: nothing to compact{earlier} "
                    f"({self.duration_s:.2f}s)")
        lines = [f"{self.table}: {kind} compaction, snapshots {self.snapshot_ids or '-'}: "
                 f"{t.buckets_compacted} buckets, files {t.files_in} -> {t.files_out}, bytes "
                 f"{t.bytes_in} -> {t.bytes_out}, rows {t.rows_in} -> {t.rows_out}, sorted runs "
                 f"{t.sorted_runs_before} -> {t.sorted_runs_after}"
                 + (f", changelog {t.changelog_rows} rows in {t.changelog_files} files"
                    if t.changelog_files else "") + f" in {self.duration_s:.2f}s"]
        for name, p in self.partitions.items():
            lines.append(f"  {name}: {p.buckets_compacted} buckets, files {p.files_in} -> "
                         f"{p.files_out}, rows {p.rows_in} -> {p.rows_out}, runs "
                         f"{p.sorted_runs_before} -> {p.sorted_runs_after}")
        for name, why in self.failed.items():
            lines.append(f"  {name}: FAILED: {why}")
        return "\n".join(lines)
