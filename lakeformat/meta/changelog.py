"""`changelog/changelog-<id>`: a long-lived changelog, and the `changelog/` directory's hints.

When a table's changelog is kept longer than its snapshots (Paimon's "decoupled" changelog
lifecycle: `changelog.num-retained.*` / `changelog.time-retained` above the snapshot settings),
snapshot expiry writes each expiring snapshot's metadata to `changelog/changelog-<id>` before it
deletes `snapshot/snapshot-<id>`, so streaming readers can still replay that snapshot's changes.
The file is the snapshot's own JSON (Java's `Changelog` is a `Snapshot`: same keys, same
order, read ignoring unknown keys), so `Snapshot` parses and writes it. The directory keeps
`LATEST` and `EARLIEST` hints as `snapshot/` does [JAVA ChangelogManager, HintFileUtils].
"""

from __future__ import annotations

from dataclasses import replace

from lakeformat.layout import CHANGELOG_PREFIX, EARLIEST, LATEST, TablePaths, numbered_id
from lakeformat.meta.snapshot import Snapshot
from lakeformat.storage import FileIO


def changelog_of(snapshot: Snapshot) -> Snapshot:
    """The long-lived changelog of a snapshot: its fields as they are (Java's `new
    Changelog(snapshot)` copies every snapshot field; keys a snapshot file carried beyond
    those, such as a tag's, are not copied)."""
    return replace(snapshot, extra={})


class ChangelogManager:
    """Paths, listing, reading and writing of one table's (or branch's) `changelog/`."""

    def __init__(self, file_io: FileIO, table_path: str):
        self.file_io = file_io
        self.table_path = table_path
        self.changelog_dir = TablePaths(file_io, table_path).changelog_dir

    def changelog_path(self, changelog_id: int) -> str:
        return self.file_io.join(self.changelog_dir, f"{CHANGELOG_PREFIX}{changelog_id}")

    def hint_path(self, hint: str) -> str:
        """`LATEST` or `EARLIEST` in `changelog/`."""
        return self.file_io.join(self.changelog_dir, hint)

    # -- reading --------------------------------------------------------------------------------
    def changelog_ids(self) -> list[int]:
        """Ids of the `changelog-<id>` files (hints and other names ignored), ascending."""
        ids = (numbered_id(st.path.rsplit("/", 1)[-1], CHANGELOG_PREFIX)
               for st in self.file_io.list_status(self.changelog_dir))
        return sorted(i for i in ids if i is not None)

    def exists(self, changelog_id: int) -> bool:
        try:
            self.file_io.status(self.changelog_path(changelog_id))
            return True
        except FileNotFoundError:
            return False

    def changelog(self, changelog_id: int) -> Snapshot:
        """A long-lived changelog; FileNotFoundError when there is none with this id."""
        path = self.changelog_path(changelog_id)
        try:
            data = self.file_io.read_bytes(path)
        except FileNotFoundError:
            raise FileNotFoundError(f"changelog {changelog_id} does not exist ({path})") from None
        return Snapshot.from_json(data, path)

    def changelogs(self) -> list[Snapshot]:
        """Every long-lived changelog still present, by id (one removed meanwhile is skipped)."""
        out = []
        for cid in self.changelog_ids():
            try:
                out.append(self.changelog(cid))
            except FileNotFoundError:
                continue
        return out

    def _hint(self, name: str) -> int | None:
        try:
            return int(self.file_io.read_bytes(self.hint_path(name)).decode().strip())
        except (FileNotFoundError, ValueError, UnicodeDecodeError):
            return None

    def latest_id(self) -> int | None:
        """The LATEST hint when no next changelog exists, else the highest id listed."""
        hint = self._hint(LATEST)
        if hint is not None and hint > 0 and not self.exists(hint + 1):
            return hint
        ids = self.changelog_ids()
        return ids[-1] if ids else None

    def earliest_id(self) -> int | None:
        """The EARLIEST hint when that changelog exists, else the lowest id listed."""
        hint = self._hint(EARLIEST)
        if hint is not None and self.exists(hint):
            return hint
        ids = self.changelog_ids()
        return ids[0] if ids else None

    # -- writing --------------------------------------------------------------------------------
    def commit(self, changelog: Snapshot) -> None:
        """Write `changelog-<id>` (overwriting: a rerun of an interrupted expiry writes the same
        content), as Java's `commitChangelog` does."""
        self.file_io.write_bytes(self.changelog_path(changelog.id), changelog.to_json().encode())

    def commit_latest_hint(self, changelog_id: int) -> None:
        self._write_hint(LATEST, changelog_id)

    def commit_earliest_hint(self, changelog_id: int) -> None:
        self._write_hint(EARLIEST, changelog_id)

    def _write_hint(self, name: str, changelog_id: int) -> None:
        """Best effort, as the snapshot hints: a stale hint is corrected by the checks above."""
        try:
            self.file_io.write_bytes(self.hint_path(name), str(changelog_id).encode())
        except OSError:
            pass

    def delete_hints(self) -> None:
        self.file_io.delete_many([self.hint_path(LATEST), self.hint_path(EARLIEST)])
