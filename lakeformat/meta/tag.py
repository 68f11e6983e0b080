"""`tag/tag-<name>`: a snapshot kept by name, as Paimon's TagManager writes it.

A tag file is the tagged snapshot's JSON plus `tagCreateTime` (a LocalDateTime as
`[y, M, d, h, m, s, nanos]`) and, when the tag expires, `tagTimeRetained` (seconds).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, replace

from lakeformat import clock
from lakeformat.errors import InvalidOptionError, TagAlreadyExistsError, TagNotFoundError
from lakeformat.layout import TAG_PREFIX, TablePaths
from lakeformat.meta.snapshot import Snapshot
from lakeformat.storage import FileIO
from lakeformat.storage.parallel import parallel_map

_NAME = re.compile(r"^[A-Za-z0-9_.\-]+$")


@dataclass(frozen=True)
class Tag:
    name: str
    snapshot: Snapshot

    @property
    def snapshot_id(self) -> int:
        return self.snapshot.id

    @property
    def create_time(self) -> dt.datetime | None:
        raw = self.snapshot.extra.get("tagCreateTime")
        if not isinstance(raw, list) or len(raw) < 5:
            return None
        parts = [int(x) for x in raw] + [0] * (7 - len(raw))
        return dt.datetime(*parts[:6], parts[6] // 1000)

    @property
    def time_retained(self) -> dt.timedelta | None:
        raw = self.snapshot.extra.get("tagTimeRetained")
        return None if raw is None else dt.timedelta(seconds=float(raw))


def check_tag_name(name: str) -> str:
    if not name or not _NAME.match(name) or name.isdigit():
        raise InvalidOptionError(f"invalid tag name {name!r}: use letters, digits, '_', '-', "
                                 "'.' and not only digits")
    return name


class TagManager:
    def __init__(self, file_io: FileIO, table_path: str):
        self.file_io = file_io
        self.paths = TablePaths(file_io, table_path)
        self.tag_dir = self.paths.tag_dir

    def tag_path(self, name: str) -> str:
        return self.paths.tag(name)

    def names(self) -> list[str]:
        out = []
        for st in self.file_io.list_status(self.tag_dir):
            base = st.path.rsplit("/", 1)[-1]
            if base.startswith(TAG_PREFIX) and not base.startswith("."):
                out.append(base[len(TAG_PREFIX):])
        return sorted(out)

    def get(self, name: str) -> Tag:
        path = self.tag_path(name)
        try:
            data = self.file_io.read_bytes(path)
        except FileNotFoundError:
            raise TagNotFoundError(f"tag {name!r} does not exist") from None
        return Tag(name, Snapshot.from_json(data, path))

    def tags(self) -> list[Tag]:
        """Every tag, ordered by tagged snapshot id then name; the tag files are read at once
        (a failed read raises)."""
        return sorted(parallel_map(self.get, self.names()),
                      key=lambda t: (t.snapshot_id, t.name))

    def create(self, name: str, snapshot: Snapshot, time_retained: dt.timedelta | None = None,
               *, check_name: bool = True) -> Tag:
        """`check_name=False` for the names Paimon's automatic tags take (`2024-03-09 10`,
        `2024030910`), which lakeformat's own rule for tag names refuses."""
        if check_name:
            check_tag_name(name)
        now = clock.local_now()
        extra = {k: v for k, v in snapshot.extra.items()
                 if k not in ("tagCreateTime", "tagTimeRetained")}
        extra["tagCreateTime"] = [now.year, now.month, now.day, now.hour, now.minute,
                                  now.second, now.microsecond * 1000]
        if time_retained is not None:
            extra["tagTimeRetained"] = time_retained.total_seconds()
        tagged = replace(snapshot, extra=extra)
        if not self.file_io.write_if_absent(self.tag_path(name), tagged.to_json().encode()):
            raise TagAlreadyExistsError(f"tag {name!r} already exists")
        return Tag(name, tagged)

    def delete_file(self, name: str) -> None:
        self.file_io.delete(self.tag_path(name))
