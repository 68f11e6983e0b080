"""Helpers every cleanup job shares: the cut-off instant of `older_than`, and deleting."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from lakeformat import clock
from lakeformat.errors import InvalidOptionError
from lakeformat.options import parse_duration
from lakeformat.storage import FileIO
from lakeformat.storage.parallel import chunks, parallel_map

OlderThan = dt.datetime | dt.timedelta | str | None


def cutoff_millis(older_than: OlderThan, default: dt.timedelta, now_ms: int | None = None
                  ) -> int:
    """Epoch millis before which things count as old.

    `older_than` is a datetime (the cut-off itself; naive means local time), a timedelta or a
    duration string such as "1 h" / "7 d" (an age, as Paimon's duration options read), or None
    for `default`.
    """
    now = clock.now_millis() if now_ms is None else now_ms
    if older_than is None:
        return now - int(default.total_seconds() * 1000)
    if isinstance(older_than, dt.datetime):
        try:
            return int(older_than.timestamp() * 1000)
        except (ValueError, OverflowError, OSError) as e:  # year 1 in a zone east of UTC...
            raise InvalidOptionError(f"older_than {older_than!r} cannot be used as an instant "
                                     f"({e}); pass a later date-time") from None
    if isinstance(older_than, dt.timedelta):
        return now - int(older_than.total_seconds() * 1000)
    if isinstance(older_than, str):
        return now - int(parse_duration(older_than, "older_than").total_seconds() * 1000)
    raise InvalidOptionError(f"older_than must be a datetime, timedelta or duration text, "
                             f"got {older_than!r}")


def past_cutoff_millis(older_than: OlderThan, default: dt.timedelta, now_ms: int,
                       risk: str) -> int:
    """`cutoff_millis`, refusing a cut-off in the future (every maintenance verb does): `risk`
    says what would be deleted that is still in use."""
    cutoff = cutoff_millis(older_than, default, now_ms)
    if cutoff > now_ms:
        raise InvalidOptionError(f"older_than {older_than!r} is in the future: {risk}")
    return cutoff


#: keys of one S3 DeleteObjects request (S3's limit)
DELETE_BATCH = 1000


def delete_paths(file_io: FileIO, paths: Sequence[str]) -> list[str]:
    """Delete in batches (S3 DeleteObjects takes 1,000 keys a request), the batches issued at
    once; missing counts as deleted. Returns the paths that could not be deleted."""
    return delete_together(file_io, paths)


def delete_together(file_io: FileIO, *groups: Sequence[str]) -> list[str]:
    """Delete several groups of files with no order between them (the data, changelog and
    index files of an expiry): each group cut into batches of `DELETE_BATCH`, every batch of
    every group in flight at once within the I/O bound. Returns the paths that could not be
    deleted, in group order."""
    batches = [list(b) for g in groups for b in chunks(list(g), DELETE_BATCH)]
    if not batches:
        return []
    return [p for failed in parallel_map(file_io.delete_many, batches) for p in failed]
