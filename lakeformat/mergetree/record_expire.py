"""Record-level expiry: a primary-key table's compaction drops the records whose time field is
older than `record-level.expire-time` [JAVA RecordLevelExpire].

* `record-level.expire-time` is a Paimon duration with a whole number (`30 d`, `12 h`, `500`
  = milliseconds), counted in whole seconds (`1500 ms` is one second);
* `record-level.time-field` names a column of type INT (epoch seconds), BIGINT (epoch seconds,
  or epoch milliseconds when the value is at least 10^12), TIMESTAMP or TIMESTAMP_LTZ (its epoch
  milliseconds, divided by 1000 towards zero);
* a record is kept while `now <= time + expire-time` (`now`: epoch seconds); a null time never
  expires. Only rows a compaction reads are filtered; reads never are.
* A file whose minimum time (its value stats, evolved to the current schema by field id) is
  expired is rewritten rather than moved up, and a full compaction of a bucket that is one run
  at the top level rewrites those files. A file without stats of the field is never picked
  for its age (its rows are still filtered whenever it is rewritten).

Only primary-key tables expire records (Java builds the filter in its key-value writer); an
append table's compaction ignores the options. A bad setting is refused by name before anything
is read or written.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakeformat.errors import CorruptFileError, InvalidOptionError, shown_value
from lakeformat.meta.binary_row import from_avro_bytes, timestamp_parts
from lakeformat.meta.data_file_meta import DataFileMeta
from lakeformat.schema.table_schema import TableSchema
from lakeformat.schema.types import DataField

EXPIRE_TIME = "record-level.expire-time"
TIME_FIELD = "record-level.time-field"
TIME_TYPES = ("INT", "BIGINT", "TIMESTAMP", "TIMESTAMP_LTZ")
#: a BIGINT time at least this large is epoch milliseconds [JAVA RecordLevelExpire]
MILLIS_FROM = 1_000_000_000_000

#: the unit labels of Java's `TimeUtils` (lower case), in nanoseconds
_NANOS = {
    **dict.fromkeys(("ns", "nano", "nanos", "nanosecond", "nanoseconds"), 1),
    **dict.fromkeys(("µs", "micro", "micros", "microsecond", "microseconds"), 10**3),
    **dict.fromkeys(("", "ms", "milli", "millis", "millisecond", "milliseconds"), 10**6),
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), 10**9),
    **dict.fromkeys(("m", "min", "minute", "minutes"), 60 * 10**9),
    **dict.fromkeys(("h", "hour", "hours"), 3600 * 10**9),
    **dict.fromkeys(("d", "day", "days"), 86400 * 10**9),
}
_DURATION = re.compile(r"^\s*(\d+)\s*(\S*)\s*$")
_LONG_MAX = (1 << 63) - 1


def expire_seconds(text: str) -> int:
    """`record-level.expire-time` in whole seconds, parsed as Java's `TimeUtils.parseDuration`
    (a whole number, then a unit; none means milliseconds) and `Duration.getSeconds`."""
    m = _DURATION.match(str(text))
    unit = m.group(2).lower() if m else None
    if m is None or unit not in _NANOS:
        raise InvalidOptionError(f"option {EXPIRE_TIME!r}: cannot parse duration "
                                 f"{shown_value(EXPIRE_TIME, text)} (a whole number and a unit "
                                 "such as '30 d', '12 h', '90 min')")
    seconds = int(m.group(1)) * _NANOS[unit] // 10**9
    if seconds > _LONG_MAX:
        raise InvalidOptionError(f"option {EXPIRE_TIME!r}: duration "
                                 f"{shown_value(EXPIRE_TIME, text)} is too long")
    return seconds


@dataclass(frozen=True)
class RecordLevelExpire:
    """The expiry of one compaction: records older than `now_seconds - expire_seconds` go."""

    field: DataField  # the time field, in the table's current schema
    expire_seconds: int
    now_seconds: int

    @staticmethod
    def of(schema: TableSchema, options: Mapping[str, str], now_seconds: int
           ) -> RecordLevelExpire | None:
        """The table's expiry (None: not set, or an append table); raises InvalidOptionError
        naming the option that cannot be used."""
        checked = check_record_level_expire(schema, options)
        if checked is None:
            return None
        field, seconds = checked
        return RecordLevelExpire(field, seconds, now_seconds)

    @property
    def oldest_kept(self) -> int:
        """The smallest time (epoch seconds) a kept record has."""
        return self.now_seconds - self.expire_seconds

    # -- rows ------------------------------------------------------------------------------------
    def keep(self, rows: pa.Table) -> np.ndarray | None:
        """Per row, whether it stays (None: every row does)."""
        if not rows.num_rows:
            return None
        col = rows[self.field.name]
        seconds = _seconds(col, self.field.type.root)
        keep = seconds >= self.oldest_kept
        if col.null_count:
            keep |= np.asarray(pc.is_null(col).to_numpy(zero_copy_only=False), dtype=bool)
        return None if keep.all() else keep

    def filter(self, rows: pa.Table) -> pa.Table:
        keep = self.keep(rows)
        return rows if keep is None else rows.filter(pa.array(keep))

    # -- files -----------------------------------------------------------------------------------
    def min_time(self, meta: DataFileMeta, schema_of: Callable[[int], TableSchema]
                 ) -> int | None:
        """The file's smallest time in epoch seconds, from its value stats (None: unknown)."""
        fields = list(schema_of(meta.schema_id).fields)
        if meta.value_stats_cols is not None:
            by_name = {f.name: f for f in fields}
            if any(n not in by_name for n in meta.value_stats_cols):
                return None
            fields = [by_name[n] for n in meta.value_stats_cols]
        at = next((i for i, f in enumerate(fields) if f.id == self.field.id), None)
        if at is None:
            return None  # the column is newer than the file, or has no stats there
        try:
            values = from_avro_bytes(meta.value_stats.min_values,
                                     [f.type.copy(True) for f in fields])
        except (CorruptFileError, ValueError, TypeError):
            return None  # stats we cannot read: the file is not picked for its age
        return _value_seconds(values[at], self.field)

    def is_expired_file(self, meta: DataFileMeta, schema_of: Callable[[int], TableSchema]
                        ) -> bool:
        """Whether the file holds a record that has expired (by its minimum time)."""
        lo = self.min_time(meta, schema_of)
        return lo is not None and lo < self.oldest_kept


def check_record_level_expire(schema: TableSchema, options: Mapping[str, str]
                              ) -> tuple[DataField, int] | None:
    """(time field, expire seconds) of a primary-key table with `record-level.expire-time`
    set; None otherwise. Raises InvalidOptionError naming what cannot be used."""
    raw = options.get(EXPIRE_TIME)
    if not schema.primary_keys or raw is None:
        return None
    seconds = expire_seconds(str(raw))
    name = options.get(TIME_FIELD)
    if name is None or not str(name).strip():
        raise InvalidOptionError(f"option {EXPIRE_TIME!r} is set but {TIME_FIELD!r} is not: "
                                 "record-level expiry needs the time field")
    field = next((f for f in schema.fields if f.name == name), None)
    if field is None:
        raise InvalidOptionError(f"option {TIME_FIELD!r}: the table has no column {name!r}")
    if field.type.root not in TIME_TYPES:
        raise InvalidOptionError(f"option {TIME_FIELD!r}: column {name!r} is {field.type}; the "
                                 "time field must be INT, BIGINT, TIMESTAMP or TIMESTAMP_LTZ")
    return field, seconds


def _java_div(values: np.ndarray, by: int) -> np.ndarray:
    """Integer division towards zero, as Java's `/` on longs."""
    q = np.abs(values) // by
    return np.where(values < 0, -q, q)


def _seconds(col: pa.ChunkedArray | pa.Array, root: str) -> np.ndarray:
    """Epoch seconds of a time column as Java converts it (null rows: 0, masked by the
    caller)."""
    if pa.types.is_timestamp(col.type):
        unit = col.type.unit
        raw = pc.fill_null(col.cast(pa.timestamp(unit)).cast(pa.int64()), 0)
        values = np.asarray(raw.to_numpy(zero_copy_only=False), dtype=np.int64)
        if unit == "s":
            millis = values * 1000
        else:
            millis = values // {"ms": 1, "us": 1000, "ns": 1_000_000}[unit]  # floor, as Java
        return _java_div(millis, 1000)
    values = np.asarray(pc.fill_null(col.cast(pa.int64()), 0).to_numpy(zero_copy_only=False),
                        dtype=np.int64)
    if root == "BIGINT":
        return np.where(values >= MILLIS_FROM, values // 1000, values)
    return values


def _value_seconds(value: object, field: DataField) -> int | None:
    """One stats value in epoch seconds, by the current type's rule (None: no value)."""
    if value is None:
        return None
    root = field.type.root
    if root in ("INT", "BIGINT") and isinstance(value, int) and not isinstance(value, bool):
        return value // 1000 if root == "BIGINT" and value >= MILLIS_FROM else value
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ") and hasattr(value, "tzinfo"):
        millis = timestamp_parts(value, field.type)[0]
        return int(_java_div(np.array([millis], dtype=np.int64), 1000)[0])
    return None
