"""Tag expiry (`expire_tags`), as Java's `TagTimeExpire` and the `expire_tags` procedure do it.

A tag expires when it has a creation time and a `tagTimeRetained` and now is past their sum;
a tag without retention never expires by time. With `older_than`, a tag created before that
instant expires too — one without retention (or without a recorded creation time) counting
from its tag file's modification time, as Java does. Each expired tag is deleted as
`delete_tag` deletes one: the tag file, and the files only that tag still held.

Times are the local wall clock, as Paimon records a tag's `tagCreateTime`.
"""

from __future__ import annotations

import datetime as dt
import time

from lakeformat import clock
from lakeformat.errors import InvalidOptionError
from lakeformat.meta.tag import Tag, TagManager
from lakeformat.operation.maintain.cleanup import OlderThan
from lakeformat.operation.maintain.tag_period import local_time
from lakeformat.operation.maintain.tags import delete_tag
from lakeformat.operation.support import EXPIRE_TAGS, check_supported
from lakeformat.options import parse_duration
from lakeformat.results import MaintenanceResult
from lakeformat.schema.table_schema import TableSchema
from lakeformat.storage import FileIO


def tags_cutoff(older_than: OlderThan, now: dt.datetime) -> dt.datetime | None:
    """The local date-time before which tags expire whatever their retention: a datetime (a
    naive one is local time), an age (timedelta or duration text), or None for none. A
    cut-off in the future is refused: it would expire tags created this instant."""
    if older_than is None:
        return None
    if isinstance(older_than, dt.datetime):
        cut = older_than.astimezone().replace(tzinfo=None) if older_than.tzinfo else older_than
    elif isinstance(older_than, (dt.timedelta, str)):
        age = older_than if isinstance(older_than, dt.timedelta) else parse_duration(
            older_than, "older_than")
        try:
            cut = now - age
        except OverflowError:
            raise InvalidOptionError(f"older_than {older_than!r} reaches back before the year "
                                     "1; pass a shorter age") from None
    else:
        raise InvalidOptionError(f"older_than must be a datetime, timedelta or duration text, "
                                 f"got {older_than!r}")
    if cut > now:
        raise InvalidOptionError(f"older_than {older_than!r} is in the future: it would expire "
                                 "tags created just now")
    return cut


def past_retention(tag: Tag, now: dt.datetime) -> bool:
    """Java's rule without `older_than`: a creation time and a retention, and now past both."""
    created, retained = tag.create_time, tag.time_retained
    return created is not None and retained is not None and now > created + retained


def expired_tags(file_io: FileIO, table_path: str, older_than: OlderThan = None,
                 now: dt.datetime | None = None) -> list[tuple[Tag, str]]:
    """The tags that expire now (oldest snapshot first) and why each does; a tag file that
    cannot be read raises (nothing is deleted on a partial view)."""
    now = clock.local_now() if now is None else now
    cut = tags_cutoff(older_than, now)
    manager = TagManager(file_io, table_path)
    tags = manager.tags()
    mtimes: dict[str, float] | None = None
    out: list[tuple[Tag, str]] = []
    for tag in tags:
        created, retained = tag.create_time, tag.time_retained
        if created is None or retained is None:
            if cut is None:
                continue
            if mtimes is None:  # Java counts such a tag from its file's modification time
                mtimes = {s.path.rsplit("/", 1)[-1]: s.mtime
                          for s in file_io.list_status(manager.tag_dir)}
            mtime = mtimes.get(f"tag-{tag.name}")
            if mtime is None:  # gone meanwhile
                continue
            created = local_time(int(mtime * 1000), None)
        if retained is not None and now > created + retained:
            out.append((tag, f"created {created.isoformat(sep=' ')}, retained {retained}"))
        elif cut is not None and cut > created:
            out.append((tag, f"created {created.isoformat(sep=' ')}, before "
                             f"{cut.isoformat(sep=' ')}"))
    return out


def expire_tags(file_io: FileIO, table_path: str, schema: TableSchema, table_name: str,
                older_than: OlderThan = None, dry_run: bool = False) -> MaintenanceResult:
    """Delete the tags past their retention (and, with `older_than`, those created before
    it), each with the files only it held. A dry run lists exactly what the run would delete:
    the tags it already counted as deleted no longer keep files."""
    start = time.monotonic()
    check_supported(schema, EXPIRE_TAGS, table_path)
    result = MaintenanceResult(table_name, "expire-tags", dry_run=dry_run)
    done: list[str] = []
    for tag, why in expired_tags(file_io, table_path, older_than):
        one = delete_tag(file_io, table_path, schema, table_name, tag.name, dry_run,
                         excluded=done)
        done.append(tag.name)
        result.tags_deleted.append(tag.name)
        result.notes.append(f"tag {tag.name} (snapshot {tag.snapshot_id}): {why}")
        for attr in ("data_files_deleted", "changelog_files_deleted", "manifest_files_deleted",
                     "other_files_deleted", "bytes_deleted"):
            setattr(result, attr, getattr(result, attr) + getattr(one, attr))
        result.deleted += one.deleted
        result.skipped += one.skipped
        result.notes += one.notes
        result.earliest_snapshot = one.earliest_snapshot
    result.duration_s = round(time.monotonic() - start, 3)
    return result
