"""`snapshot/snapshot-N` JSON, LATEST/EARLIEST hints, and finding snapshots of a table."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import Any

from lakeformat.errors import CorruptFileError
from lakeformat.layout import EARLIEST, LATEST, SNAPSHOT_PREFIX, TablePaths, numbered_id
from lakeformat.storage import FileIO, FileStatus
from lakeformat.storage.parallel import parallel_map

BATCH_COMMIT_IDENTIFIER = 9223372036854775807  # Long.MAX: what batch writers use
#: snapshot property naming the lakeformat call ("write" or "delete") that made a commit with
#: a commit identifier: both make APPEND snapshots, and one must not pass for the other
OPERATION_PROPERTY = "lakeformat.operation"

# JSON key -> attribute, in the order Java writes them.
_KEYS = [
    ("version", "version"), ("id", "id"), ("schemaId", "schema_id"),
    ("baseManifestList", "base_manifest_list"),
    ("baseManifestListSize", "base_manifest_list_size"),
    ("deltaManifestList", "delta_manifest_list"),
    ("deltaManifestListSize", "delta_manifest_list_size"),
    ("changelogManifestList", "changelog_manifest_list"),
    ("changelogManifestListSize", "changelog_manifest_list_size"),
    ("indexManifest", "index_manifest"), ("commitUser", "commit_user"),
    ("commitIdentifier", "commit_identifier"), ("commitKind", "commit_kind"),
    ("timeMillis", "time_millis"), ("logOffsets", "log_offsets"),
    ("totalRecordCount", "total_record_count"), ("deltaRecordCount", "delta_record_count"),
    ("changelogRecordCount", "changelog_record_count"), ("watermark", "watermark"),
    ("statistics", "statistics"), ("properties", "properties"), ("nextRowId", "next_row_id"),
    ("uuid", "uuid"), ("writerVersion", "writer_version"), ("operation", "operation"),
]
_REQUIRED = ("id", "schemaId", "baseManifestList", "deltaManifestList", "commitUser",
             "commitIdentifier", "commitKind", "timeMillis")


@dataclass(frozen=True)
class Snapshot:
    id: int
    schema_id: int
    base_manifest_list: str
    delta_manifest_list: str
    commit_user: str
    commit_identifier: int
    commit_kind: str
    time_millis: int
    total_record_count: int | None = None
    delta_record_count: int | None = None
    version: int = 3
    base_manifest_list_size: int | None = None
    delta_manifest_list_size: int | None = None
    changelog_manifest_list: str | None = None
    changelog_manifest_list_size: int | None = None
    index_manifest: str | None = None
    log_offsets: dict[str, int] | None = None
    changelog_record_count: int | None = None
    watermark: int | None = None
    statistics: str | None = None
    properties: dict[str, str] | None = None
    next_row_id: int | None = None
    uuid: str | None = None
    writer_version: str | None = None
    operation: str | None = None
    # tag files carry extra keys; kept verbatim so a tag round-trips
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def to_json(self) -> str:
        """Java's key order; optional keys omitted when null, as Java's NON_NULL inclusion."""
        obj: dict[str, Any] = {}
        for key, attr in _KEYS:
            v = getattr(self, attr)
            if v is not None:
                obj[key] = v
        obj.update(self.extra)
        return json.dumps(obj, indent=2)

    @staticmethod
    def from_json(text: str | bytes, path: str = "<snapshot>") -> Snapshot:
        try:
            obj = json.loads(text)
            missing = [k for k in _REQUIRED if obj.get(k) is None]
            if missing:
                raise ValueError(f"missing keys {missing}")
            known = {key for key, _ in _KEYS}
            kwargs = {attr: obj.get(key) for key, attr in _KEYS}
            kwargs["version"] = obj.get("version", 3)
            kwargs["extra"] = {k: v for k, v in obj.items() if k not in known}
            snap = Snapshot(**kwargs)
            int(snap.id), int(snap.schema_id)
            return snap
        except (ValueError, TypeError, AttributeError) as e:
            raise CorruptFileError(f"cannot parse snapshot file {path}: {e}") from e

    def to_dict(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "extra"}
        return {k: v for k, v in d.items() if v is not None}


class SnapshotManager:
    """Reads snapshots of one table (or branch) directory."""

    def __init__(self, file_io: FileIO, table_path: str):
        self.file_io = file_io
        self.table_path = table_path
        self.paths = TablePaths(file_io, table_path)
        self.snapshot_dir = self.paths.snapshot_dir

    def snapshot_path(self, snapshot_id: int) -> str:
        return self.paths.snapshot(snapshot_id)

    def snapshot(self, snapshot_id: int) -> Snapshot:
        path = self.snapshot_path(snapshot_id)
        try:
            data = self.file_io.read_bytes(path)
        except FileNotFoundError:
            raise FileNotFoundError(f"snapshot {snapshot_id} does not exist ({path})") from None
        snap = Snapshot.from_json(data, path)
        if snap.id != snapshot_id:
            raise CorruptFileError(f"{path} holds snapshot id {snap.id}")
        return snap

    def exists(self, snapshot_id: int) -> bool:
        """A file-only probe (one HEAD on S3, no directory listing)."""
        try:
            self.file_io.status(self.snapshot_path(snapshot_id))
            return True
        except FileNotFoundError:
            return False

    def snapshot_ids(self) -> list[int]:
        return sorted(self.listed())

    def listed(self) -> dict[int, FileStatus]:
        """The snapshot files one listing shows, by id."""
        out = {}
        for st in self.file_io.list_status(self.snapshot_dir):
            sid = numbered_id(st.path.rsplit("/", 1)[-1], SNAPSHOT_PREFIX)
            if sid is not None:
                out[sid] = st
        return out

    def snapshot_listed(self, snapshot_id: int, status: FileStatus) -> Snapshot:
        """`snapshot(snapshot_id)` as `status` (from `listed`) shows it: kept in the catalog's
        metadata cache under the listing's size, time and version, so the next listing that
        shows the same file needs no read (`snapshot-N` is written anew after a rollback: its
        listing then differs)."""
        if not status.version:
            return self.snapshot(snapshot_id)
        validator = (status.size, status.mtime, status.version)
        cache = self.file_io.metadata_cache
        key = (status.path, "snapshot")
        snap = cache.get(key, validator)
        if snap is None:
            snap = self.snapshot(snapshot_id)
            cache.put(key, snap, status.size * 4, validator)
        return snap  # type: ignore[no-any-return]

    def _hint(self, name: str) -> int | None:
        try:
            text = self.file_io.read_bytes(self.paths.snapshot_hint(name))
            return int(text.decode().strip())
        except (FileNotFoundError, ValueError, UnicodeDecodeError):
            return None

    def latest_snapshot_id(self) -> int | None:
        """LATEST is only a hint: trust it when the next id does not exist, else list."""
        hint = self._hint(LATEST)
        if hint is not None and parallel_map(self.exists, [hint, hint + 1]) == [True, False]:
            return hint
        ids = self.snapshot_ids()
        return ids[-1] if ids else None

    def earliest_snapshot_id(self) -> int | None:
        hint = self._hint(EARLIEST)
        if hint is not None and self.exists(hint):
            return hint
        ids = self.snapshot_ids()
        return ids[0] if ids else None

    def latest_snapshot(self, probe_next: bool = True) -> Snapshot | None:
        """LATEST, then at once the snapshot it names (a GET, a 404 when absent: no HEAD
        first) and the probe of the next id: two round trips when the hint is right.

        `probe_next=False` trusts the hint about the next id (one request less): only for a
        writer's plan, whose commit proves it with the write-if-absent of the next id."""
        return self.latest_and_hint(probe_next)[0]

    def latest_and_hint(self, probe_next: bool = True) -> tuple[Snapshot | None, bool]:
        """`latest_snapshot`, and whether LATEST named it (False: the hint is stale or gone
        and the directory was listed)."""
        hint = self._hint(LATEST)
        if hint is not None:
            def fetch(i: int) -> Snapshot | bool | None:
                if i == hint:
                    try:
                        return self.snapshot(i)
                    except FileNotFoundError:
                        return None
                return self.exists(i)

            ids = [hint, hint + 1] if probe_next else [hint]
            found = parallel_map(fetch, ids) + [False]
            if isinstance(found[0], Snapshot) and not found[1]:
                return found[0], True
        ids = self.snapshot_ids()
        return (self.snapshot(ids[-1]) if ids else None), not ids

    def snapshots(self) -> list[Snapshot]:
        """Every retained snapshot, oldest first: one listing, then (at once) the files the
        metadata cache does not hold as listed."""
        listed = self.listed()
        ids = sorted(listed)
        return parallel_map(lambda i: self.snapshot_listed(i, listed[i]), ids)

    def find_commit(self, commit_user: str, commit_identifier: int,
                    since: int | None = None) -> list[Snapshot]:
        """The snapshots (oldest first) committed by `commit_user` with `commit_identifier`,
        among those still retained (after `since` when given). One job's commit can be several
        snapshots (a compaction's partition groups), all carrying the same pair.

        Paimon's writers keep one identifier sequence per user and treat every identifier up to
        the user's latest as committed; here the pair must match exactly, so that a backfill of an
        older logical date (a smaller identifier) is not mistaken for one already written.
        """
        listed = self.listed()
        ids = [i for i in sorted(listed) if since is None or i > since]
        found = []
        for snap in parallel_map(lambda i: self._snapshot_or_none(i, listed[i]), ids):
            if (snap is not None and snap.commit_user == commit_user
                    and snap.commit_identifier == commit_identifier):
                found.append(snap)
        return found

    def _snapshot_or_none(self, snapshot_id: int, status: FileStatus | None = None
                          ) -> Snapshot | None:
        try:
            if status is not None:
                return self.snapshot_listed(snapshot_id, status)
            return self.snapshot(snapshot_id)
        except FileNotFoundError:  # expired while we looked
            return None

    def commit_latest_hint(self, snapshot_id: int) -> None:
        """Best effort, as in Paimon: a stale hint is corrected by the existence check."""
        try:
            self.file_io.write_bytes(self.paths.snapshot_hint(LATEST),
                                     str(snapshot_id).encode())
        except OSError:
            pass

    def commit_earliest_hint(self, snapshot_id: int) -> None:
        try:
            self.file_io.write_bytes(self.paths.snapshot_hint(EARLIEST),
                                     str(snapshot_id).encode())
        except OSError:
            pass


def operation_of(snap: Snapshot) -> str:
    """What made a snapshot: the lakeformat call recorded with a commit identifier ("write",
    "delete"), else its commit kind (APPEND, OVERWRITE, COMPACT, ANALYZE)."""
    return (snap.properties or {}).get(OPERATION_PROPERTY) or snap.commit_kind
