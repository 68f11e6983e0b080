"""The one wall clock of the library: every "now" a table file records or an age rule compares.

A leaf module (it imports nothing from lakeformat), so every layer may read it. Everything
derives from `now_millis`, so a test that moves it (monkeypatch `lakeformat.clock.now_millis`)
moves every age decision, snapshot time and creation time together. Durations of a job
(`duration_s`) are measured with `time.monotonic` where they are taken: they are not instants.

Paimon stores two kinds of instant: epoch millis (snapshot `timeMillis`, schema `timeMillis`),
and Java `LocalDateTime.now()` — the local wall clock, stored as if it were UTC (a data file's
`_CREATION_TIME`, a tag's `tagCreateTime`, partition expiry's cut-off).
"""

from __future__ import annotations

import calendar
import datetime as dt
import time


def now_millis() -> int:
    """Epoch millis now (UTC)."""
    return time.time_ns() // 1_000_000


def local_now() -> dt.datetime:
    """Java `LocalDateTime.now()`: the local wall clock as a naive datetime (millisecond
    precision, read from `now_millis`)."""
    ms = now_millis()
    return dt.datetime.fromtimestamp(ms // 1000).replace(microsecond=ms % 1000 * 1000)


def local_millis_now() -> int:
    """Java `LocalDateTime.now()` stored as epoch millis: the local wall clock read as UTC."""
    now = local_now()
    return calendar.timegm(now.timetuple()) * 1000 + now.microsecond // 1000
