"""The options of Paimon's automatic tags, the period a tag name stands for, and the time a
snapshot is tagged by (Java's `TagPeriodHandler`, `TagTimeExtractor`, the `tag.*` options).

A tag made by `tag.automatic-creation` is named after a period: with `tag.creation-period`
daily the tag `2024-03-09` (`tag.period-formatter` with_dashes) holds the data up to the end
of that day, hourly `2024-03-09 13`, two-hours `2024-03-09 12`, and with
`tag.creation-period-duration` (which wins over the period) `202403091330`. A tag whose name
the table's formatter reads is an auto-created tag — the only tags `tag.num-retained-max`
counts in process-time and watermark modes.

Times are Java `LocalDateTime`s: naive datetimes on the wall clock of a zone
(`sink.process-time-zone`, default the machine's; `sink.watermark-time-zone`, default UTC).
"""

from __future__ import annotations

import datetime as dt
import re
import zoneinfo
from dataclasses import dataclass

from lakeformat.errors import InvalidOptionError
from lakeformat.options import parse_bool, parse_duration

MODE = "tag.automatic-creation"
PERIOD = "tag.creation-period"
PERIOD_DURATION = "tag.creation-period-duration"
FORMATTER = "tag.period-formatter"
DELAY = "tag.creation-delay"
NUM_RETAINED_MAX = "tag.num-retained-max"
DEFAULT_TIME_RETAINED = "tag.default-time-retained"
TIME_EXPIRE_ENABLED = "tag.time-expire-enabled"
AUTOMATIC_COMPLETION = "tag.automatic-completion"
BATCH_NAME = "tag.batch.customized-name"
PROCESS_TIME_ZONE = "sink.process-time-zone"
WATERMARK_TIME_ZONE = "sink.watermark-time-zone"

MODES = ("none", "process-time", "watermark", "batch")
PERIODS = {"daily": dt.timedelta(days=1), "hourly": dt.timedelta(hours=1),
           "two-hours": dt.timedelta(hours=2)}
FORMATTERS = ("with_dashes", "without_dashes", "without_dashes_and_spaces")
#: Java's `Long.MIN_VALUE`: a snapshot whose writer had no watermark yet
NO_WATERMARK = -(1 << 63)

_EPOCH = dt.datetime(1970, 1, 1)
_FIELDS = {"Y": (r"(\d{4})", "{:04d}"), "M": (r"(\d{2})", "{:02d}"), "D": (r"(\d{2})", "{:02d}"),
           "h": (r"(\d{2})", "{:02d}"), "m": (r"(\d{2})", "{:02d}")}


@dataclass(frozen=True)
class NameFormat:
    """A fixed-width date-time layout such as `Y-M-D h` (Java's STRICT `DateTimeFormatter`s of
    `TagPeriodHandler`): letters are fields, anything else is literal."""

    layout: str

    def format(self, t: dt.datetime) -> str:
        values = {"Y": t.year, "M": t.month, "D": t.day, "h": t.hour, "m": t.minute}
        return "".join(_FIELDS[c][1].format(values[c]) if c in _FIELDS else c
                       for c in self.layout)

    def parse(self, text: str) -> dt.datetime | None:
        """The date-time of `text` when it is exactly this layout and a valid date-time."""
        pattern = "".join(_FIELDS[c][0] if c in _FIELDS else re.escape(c)
                          for c in self.layout)
        m = re.fullmatch(pattern, text, re.ASCII)
        if m is None:
            return None
        values = dict(zip([c for c in self.layout if c in _FIELDS], map(int, m.groups())))
        try:
            return dt.datetime(values["Y"], values["M"], values["D"], values.get("h", 0),
                               values.get("m", 0))
        except ValueError:  # 2024-02-30, hour 24: STRICT refuses them
            return None


DAY, DAY_PLAIN = NameFormat("Y-M-D"), NameFormat("YMD")
HOUR, HOUR_PLAIN, HOUR_COMPACT = NameFormat("Y-M-D h"), NameFormat("YMD h"), NameFormat("YMDh")
MINUTE = NameFormat("YMDhm")


@dataclass(frozen=True)
class TagPeriod:
    """Java's `TagPeriodHandler`: one period's length and the tag names it gives."""

    length: dt.timedelta
    name_format: NameFormat
    daily: bool = False

    def tag_to_time(self, name: str) -> dt.datetime | None:
        if self.daily:  # Java reads what comes before the first space as the day
            return self.name_format.parse(name.split(" ")[0])
        return self.name_format.parse(name)

    def is_auto_tag(self, name: str) -> bool:
        return self.tag_to_time(name) is not None

    def time_to_tag(self, t: dt.datetime) -> str:
        return self.name_format.format(t)

    def normalize_to_previous(self, t: dt.datetime) -> dt.datetime:
        """The start of the period before the one `t` is in (periods counted from the epoch on
        the local wall clock, as Java's `Timestamp.fromLocalDateTime` reads it)."""
        ms = (t - _EPOCH) // dt.timedelta(milliseconds=1)
        step = self.length // dt.timedelta(milliseconds=1)
        start = _EPOCH + dt.timedelta(milliseconds=int(ms / step) * step)  # Java's truncation
        return start - self.length

    def next_time(self, t: dt.datetime) -> dt.datetime:
        return t + self.length


def _enum(options: dict[str, str], key: str, values: tuple[str, ...], default: str) -> str:
    raw = options.get(key)
    value = default if raw is None else str(raw).strip().lower()
    if value not in values:
        raise InvalidOptionError(f"option {key!r}: {raw!r} is not one of {', '.join(values)}")
    return value


def _duration(options: dict[str, str], key: str) -> dt.timedelta | None:
    raw = options.get(key)
    return None if raw is None else parse_duration(raw, key)


def parse_zone(name: str | None, key: str) -> dt.tzinfo | None:
    """Java's `ZoneId.of`: a region (`Asia/Shanghai`), `UTC`/`GMT`/`Z`, or an offset (`+08:00`,
    `GMT-8`, `UTC+05:30`); None (no value) is the machine's zone."""
    if name is None:
        return None
    text = str(name).strip()
    if text in ("Z", "UTC", "GMT", "UT"):
        return dt.UTC
    m = re.fullmatch(r"(?:UTC|GMT|UT)?([+-])(\d{1,2})(?::?(\d{2}))?(?::?(\d{2}))?", text)
    if m:
        hours, minutes, seconds = int(m.group(2)), int(m.group(3) or 0), int(m.group(4) or 0)
        if hours <= 18 and minutes < 60 and seconds < 60:
            sign = -1 if m.group(1) == "-" else 1
            return dt.timezone(sign * dt.timedelta(hours=hours, minutes=minutes,
                                                   seconds=seconds))
    elif re.fullmatch(r"[A-Za-z][A-Za-z0-9~/._+-]+", text):
        try:
            return zoneinfo.ZoneInfo(text)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            pass
    raise InvalidOptionError(f"option {key!r}: {name!r} is not a time zone (a region such as "
                             "'Asia/Shanghai', 'UTC' or an offset such as '+08:00')")


def local_time(epoch_ms: int, zone: dt.tzinfo | None) -> dt.datetime:
    """Java's `Instant.ofEpochMilli(ms).atZone(zone).toLocalDateTime()` (None: the machine's
    zone)."""
    if zone is None:
        base = dt.datetime.fromtimestamp(epoch_ms // 1000)
        return base.replace(microsecond=epoch_ms % 1000 * 1000)
    instant = dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(milliseconds=epoch_ms)
    return instant.astimezone(zone).replace(tzinfo=None)


@dataclass(frozen=True)
class TagAutoOptions:
    """The table's `tag.*` options as automatic tag creation reads them, checked: a value Java
    would refuse is an `InvalidOptionError` naming the option, raised before anything is
    written."""

    mode: str
    period: TagPeriod
    delay: dt.timedelta
    num_retained_max: int | None
    default_time_retained: dt.timedelta | None
    automatic_completion: bool
    batch_name: str | None
    process_zone: dt.tzinfo | None
    watermark_zone: dt.tzinfo | None
    time_expire_enabled: bool
    write_only: bool

    @property
    def creates_tags(self) -> bool:
        return self.mode != "none"

    def tag_time(self, time_millis: int, watermark: int | None) -> dt.datetime | None:
        """Java's `TagTimeExtractor`: the snapshot's commit time (process-time) or watermark
        (watermark; None when the snapshot has none) on the zone's wall clock."""
        if self.mode == "process-time":
            return local_time(time_millis, self.process_zone)
        if watermark is None or watermark == NO_WATERMARK:
            return None
        return local_time(watermark, self.watermark_zone)


def tag_period(options: dict[str, str]) -> TagPeriod:
    length = _duration(options, PERIOD_DURATION)
    if length is not None:
        if length < dt.timedelta(milliseconds=1):
            raise InvalidOptionError(f"option {PERIOD_DURATION!r}: the period must be at least "
                                     f"1 ms, got {options[PERIOD_DURATION]!r}")
        return TagPeriod(length, MINUTE)
    period = _enum(options, PERIOD, tuple(PERIODS), "daily")
    formatter = _enum(options, FORMATTER, FORMATTERS, "with_dashes")
    if period == "daily":
        return TagPeriod(PERIODS[period], DAY if formatter == "with_dashes" else DAY_PLAIN,
                         daily=True)
    if period == "two-hours":
        return TagPeriod(PERIODS[period], HOUR)
    return TagPeriod(PERIODS[period], {"with_dashes": HOUR, "without_dashes": HOUR_PLAIN,
                                       "without_dashes_and_spaces": HOUR_COMPACT}[formatter])


def tag_auto_options(options: dict[str, str]) -> TagAutoOptions:
    """Read and check the options (all of them, whatever the mode: a typo is found before the
    first tag is due)."""
    mode = _enum(options, MODE, MODES, "none")
    period = tag_period(options)
    delay = _duration(options, DELAY) or dt.timedelta(0)
    if mode in ("process-time", "watermark") and not delay < period.length:
        raise InvalidOptionError(f"option {DELAY!r}: {options.get(DELAY)!r} must be shorter "
                                 f"than the tag period ({period.length})")
    raw_max = options.get(NUM_RETAINED_MAX)
    num_max = None
    if raw_max is not None:
        try:
            num_max = int(str(raw_max).strip())
        except ValueError:
            num_max = -1
        if num_max < 0:
            raise InvalidOptionError(f"option {NUM_RETAINED_MAX!r}: {raw_max!r} is not a "
                                     "count (an integer >= 0)")
    batch_name = options.get(BATCH_NAME)
    if batch_name is not None and not str(batch_name).strip():
        raise InvalidOptionError(f"option {BATCH_NAME!r}: a tag name cannot be blank")
    return TagAutoOptions(
        mode=mode, period=period, delay=delay, num_retained_max=num_max,
        default_time_retained=_duration(options, DEFAULT_TIME_RETAINED),
        automatic_completion=parse_bool(options, AUTOMATIC_COMPLETION, False),
        batch_name=batch_name,
        process_zone=parse_zone(options.get(PROCESS_TIME_ZONE), PROCESS_TIME_ZONE),
        watermark_zone=parse_zone(options.get(WATERMARK_TIME_ZONE, "UTC"), WATERMARK_TIME_ZONE),
        time_expire_enabled=parse_bool(options, TIME_EXPIRE_ENABLED, True),
        write_only=parse_bool(options, "write-only", False))
