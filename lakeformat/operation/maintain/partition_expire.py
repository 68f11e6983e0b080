"""Partition expiry, by partition values (Paimon's `values-time` strategy, the default) or by
the partition's last update (`update-time`), selected by `partition.expiration-strategy`.

values-time: a partition's time is read from its values as Java's `PartitionTimeExtractor` does:
`partition.timestamp-pattern` (e.g. `$dt` or `$dt $hour:00:00`; default: the first partition
value) gives the text, `partition.timestamp-formatter` (a Java `DateTimeFormatter` pattern such
as `yyyyMMdd`; default: `yyyy-MM-dd HH:mm:ss` or `yyyy-MM-dd`, leniently) parses it. Partitions
whose values cannot be read as a time are kept and reported.

update-time (Java's `PartitionUpdateTimeExpireStrategy`): a partition's time is its last file
creation time — Java's `PartitionEntry.lastFileCreationTime`, the newest `_CREATION_TIME` of
every entry (ADD or DELETE) of the snapshot's data manifests in that partition, over the
partitions whose ADD entries outnumber their DELETE entries (`partition_update_times`, numpy over
the entries' columns). Any partition values work, nulls included; a partition written again
(or compacted) recently is young again.

Either way a partition expires when its time is before now − `partition.expiration-time` (local
time, as Java's `LocalDateTime.now()`; creation times are local wall-clock times too). At most
`partition.expiration-max-num` partitions (default 100, the first in the order of their joined
values) are dropped per run, in OVERWRITE snapshots of `partition.expiration-batch-size`
partitions each (default: all in one) that delete every file live in them
(`DropPartitionsJob`, Java's `NormalPartitionExpire`); the files themselves go when the
snapshots holding them expire.

`expired_partitions` is the rule alone — which of the partitions a caller already has expire
now — and reads no file; `expire_partitions` runs it over the latest snapshot and drops them.
Both take `options`, a per-run overlay of the `partition.*` options above over the table's
(`EXPIRY_OPTIONS`): what a due action computed under threshold overrides, its run applies.

DATE and TIMESTAMP partition values are read as their ISO text (`2024-01-31`,
`2024-01-31 10:00:00`); Java would try to parse its internal number and keep the partition.
"""

from __future__ import annotations

import datetime as dt
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from lakeformat import clock
from lakeformat.errors import (
    InvalidArgumentError,
    InvalidOptionError,
    LakeformatError,
    UnsupportedError,
)
from lakeformat.meta.binary_row import from_avro_bytes
from lakeformat.meta.data_file_meta import FileKind, ManifestEntry, merge_entries
from lakeformat.meta.partition import partition_path, partition_value_text
from lakeformat.meta.snapshot import Snapshot, SnapshotManager
from lakeformat.operation.commit import DropPartitionsJob
from lakeformat.operation.maintain.cleanup import OlderThan
from lakeformat.operation.maintain.references import TableReferences
from lakeformat.operation.scan import FileStoreScan
from lakeformat.operation.support import EXPIRE_PARTITIONS, check_supported
from lakeformat.options import CoreOptions, parse_duration
from lakeformat.results import MaintenanceResult
from lakeformat.schema.table_schema import TableSchema
from lakeformat.storage import FileIO

EXPIRATION_TIME = "partition.expiration-time"
EXPIRATION_STRATEGY = "partition.expiration-strategy"
EXPIRATION_MAX_NUM = "partition.expiration-max-num"
EXPIRATION_BATCH_SIZE = "partition.expiration-batch-size"
VALUES_TIME, UPDATE_TIME = "values-time", "update-time"
TIMESTAMP_FORMATTER = "partition.timestamp-formatter"
TIMESTAMP_PATTERN = "partition.timestamp-pattern"
DEFAULT_MAX_NUM = 100
OPERATION = "expire-partitions"
#: the options a run's `options` overlay may set: every option the rule reads
EXPIRY_OPTIONS = frozenset({EXPIRATION_TIME, EXPIRATION_MAX_NUM, EXPIRATION_STRATEGY,
                            EXPIRATION_BATCH_SIZE, TIMESTAMP_FORMATTER, TIMESTAMP_PATTERN})


class TimeParseError(ValueError):
    """Partition values that do not hold a time (the partition is kept)."""


# -- Java DateTimeFormatter patterns ---------------------------------------------------------
_FIELDS = {"y": "year", "u": "year", "M": "month", "d": "day", "H": "hour", "m": "minute",
           "s": "second", "S": "fraction"}
_DEFAULT = re.compile(r"(\d{1,10})-(\d{1,2})-(\d{1,2})"
                      r"(?: (\d{1,2}):(\d{1,2}):(\d{1,2})(?:\.(\d{1,9}))?)?")


def compile_formatter(pattern: str) -> tuple[re.Pattern[str], list[tuple[str, int]]]:
    """A Java `DateTimeFormatter.ofPattern` pattern as a regex and its (field, width) groups.

    Numeric fields only: y/u (year), M, d, H, m, s, S, quoted text and literals. Variable-width
    fields leave room for fixed-width neighbours, as Java's adjacent value parsing does.
    """
    out: list[str] = []
    groups: list[tuple[str, int]] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "'":
            end = pattern.find("'", i + 1)
            if end < 0:
                raise InvalidOptionError(f"option {TIMESTAMP_FORMATTER!r}: unclosed quote in "
                                         f"{pattern!r}")
            out.append(re.escape(pattern[i + 1:end]) if end > i + 1 else "'")
            i = end + 1
            continue
        if c.isascii() and c.isalpha():
            n = 1
            while i + n < len(pattern) and pattern[i + n] == c:
                n += 1
            field = _FIELDS.get(c)
            if field is None or (field == "month" and n > 2) or (
                    field not in ("year", "fraction") and n > 2):
                raise UnsupportedError(f"option {TIMESTAMP_FORMATTER!r}: pattern letters "
                                       f"{c * n!r} in {pattern!r} are not supported (numeric "
                                       "y, u, M, d, H, m, s, S only)")
            if field == "fraction":
                out.append(rf"(\d{{{n}}})")
            elif field == "year" and n == 2:
                out.append(r"(\d{2})")  # reduced year: 2000 + yy
            elif n == 2 and field != "year":
                out.append(r"(\d{2})")
            else:
                out.append(rf"(\d{{{n},19}})")
            groups.append((field, n))
            i += n
            continue
        if c in "[]{}#":
            raise UnsupportedError(f"option {TIMESTAMP_FORMATTER!r}: {c!r} in {pattern!r} is "
                                   "not supported")
        out.append(re.escape(c))
        i += 1
    return re.compile("".join(out)), groups


def _parse_formatted(text: str, pattern: str) -> dt.datetime:
    regex, groups = compile_formatter(pattern)
    m = regex.fullmatch(text)
    if m is None:
        raise TimeParseError(f"{text!r} does not match {pattern!r}")
    f: dict[str, int] = {}
    for (field, width), raw in zip(groups, m.groups(), strict=True):
        if field == "fraction":
            f[field] = int(raw.ljust(9, "0")[:6])
        elif field == "year" and width == 2:
            f[field] = 2000 + int(raw)
        else:
            f[field] = int(raw)
    if not {"year", "month", "day"} <= f.keys():
        raise TimeParseError(f"{pattern!r} does not give a full date")
    year, month, day = f["year"], f["month"], f["day"]
    if not (1 <= year <= 9999 and 1 <= month <= 12 and 1 <= day <= 31):
        raise TimeParseError(f"{text!r} is not a valid date")
    # Java's SMART resolver moves day 29..31 past the month's end to its last day
    last = (dt.date(year + month // 12, month % 12 + 1, 1) - dt.timedelta(days=1)).day
    day = min(day, last)
    if "hour" not in f:
        return dt.datetime(year, month, day)
    hour, minute, second = f["hour"], f.get("minute", 0), f.get("second", 0)
    if hour > 23 or minute > 59 or second > 59:
        raise TimeParseError(f"{text!r} is not a valid time")
    return dt.datetime(year, month, day, hour, minute, second, f.get("fraction", 0))


def _parse_default(text: str) -> dt.datetime:
    """`yyyy-M-d[ H:m:s[.fraction]]`, resolved leniently (month 13 is next January)."""
    m = _DEFAULT.fullmatch(text)
    if m is None:
        raise TimeParseError(f"{text!r} is not 'yyyy-MM-dd' or 'yyyy-MM-dd HH:mm:ss'")
    year, month, day = (int(x) for x in m.group(1, 2, 3))
    hour, minute, second = (int(x or 0) for x in m.group(4, 5, 6))
    micros = int((m.group(7) or "0").ljust(9, "0")[:6])
    months = year * 12 + month - 1
    try:
        base = dt.datetime(months // 12, months % 12 + 1, 1)
        return base + dt.timedelta(days=day - 1, hours=hour, minutes=minute, seconds=second,
                                   microseconds=micros)
    except (ValueError, OverflowError) as e:
        raise TimeParseError(f"{text!r}: {e}") from None


def _replace_pattern(pattern: str, keys: Sequence[str], values: Sequence[str | None]) -> str:
    """`$key` -> value, longest key first (so `$dt` does not match inside `$dt1`)."""
    order = sorted(range(len(keys)), key=lambda i: -len(keys[i]))
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern[i] == "$" and i + 1 < len(pattern):
            hit = next((k for k in order if pattern.startswith(keys[k], i + 1)), None)
            if hit is not None:
                if values[hit] is None:
                    raise TimeParseError(f"partition value {keys[hit]!r} is null")
                out.append(values[hit])  # type: ignore[arg-type]
                i += 1 + len(keys[hit])
                continue
        out.append(pattern[i])
        i += 1
    return "".join(out)


def extract_time(keys: Sequence[str], values: Sequence[str | None], pattern: str | None,
                 formatter: str | None) -> dt.datetime:
    """Java's `PartitionTimeExtractor.extract`; raises TimeParseError when there is no time."""
    if pattern is None:
        if values[0] is None:
            raise TimeParseError(f"partition value {keys[0]!r} is null")
        text = values[0]
    else:
        text = _replace_pattern(pattern, keys, values)
    return _parse_default(text) if formatter is None else _parse_formatted(text, formatter)


# -- expiry ---------------------------------------------------------------------------------
class PartitionExpiry(NamedTuple):
    """Which partitions expire (`expired_partitions`)."""

    #: (path text such as `dt=2024-01-01`, serialized partition row) of every expired
    #: partition, in the order a run drops them (by their joined values); a run drops at most
    #: `partition.expiration-max-num` of them, the first
    expired: list[tuple[str, bytes]]
    #: why partitions that cannot expire are kept (their values hold no time), in input order
    kept: list[str]


def expiry_options(schema: TableSchema, options: Mapping[str, Any] | None) -> CoreOptions:
    """The table's options with a run's `options` overlaid; a name outside `EXPIRY_OPTIONS`
    raises `InvalidArgumentError` naming it (the overlay never changes anything else)."""
    if not options:
        return CoreOptions(schema.options)
    if not isinstance(options, Mapping):
        raise InvalidArgumentError(f"options must be a mapping of option name to value, got "
                                   f"{type(options).__name__}")
    unknown = sorted(str(k) for k in options if k not in EXPIRY_OPTIONS)
    if unknown:
        raise InvalidArgumentError(f"partition expiry options may only set "
                                   f"{', '.join(sorted(EXPIRY_OPTIONS))}; got {unknown}")
    overlay = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in options.items()}
    return CoreOptions({**schema.options, **overlay})


def max_per_run(opts: CoreOptions) -> int:
    """`partition.expiration-max-num`: how many expired partitions one run drops (the first
    in `PartitionExpiry.expired` order)."""
    raw = str(opts.get(EXPIRATION_MAX_NUM, str(DEFAULT_MAX_NUM))).strip()
    max_num = int(raw) if re.fullmatch(r"-?\d+", raw) else 0
    if max_num < 1:
        raise InvalidOptionError(f"option {EXPIRATION_MAX_NUM!r} must be a positive integer, "
                                 f"got {raw!r}")
    return max_num


def batch_size(opts: CoreOptions, max_num: int) -> int:
    """`partition.expiration-batch-size`: how many partitions one OVERWRITE snapshot drops
    (Java's `partitionExpireBatchSize`: unset is `max_num`; a value below 1 drops them all in
    one snapshot, as `NormalPartitionExpire` batches only for a positive size)."""
    raw = opts.get(EXPIRATION_BATCH_SIZE)
    if raw is None:
        return max_num
    text = str(raw).strip()
    if not re.fullmatch(r"-?\d+", text):
        raise InvalidOptionError(f"option {EXPIRATION_BATCH_SIZE!r} must be an integer, got "
                                 f"{text!r}")
    size = int(text)
    return size if size > 0 else max_num


def _check_strategy(opts: CoreOptions) -> str:
    strategy = str(opts.get(EXPIRATION_STRATEGY, VALUES_TIME)).strip()
    if strategy not in (VALUES_TIME, UPDATE_TIME):
        raise InvalidOptionError(f"unknown {EXPIRATION_STRATEGY} {strategy!r} (values-time, "
                                 "update-time)")
    return strategy


def partition_update_times(entries: Sequence[ManifestEntry]) -> dict[bytes, int | None]:
    """Each partition's last update of a snapshot, from every entry of its data manifests
    (base and delta, unmerged): Java's `PartitionEntry.lastFileCreationTime` — the newest
    `_CREATION_TIME` (local wall-clock millis) among the partition's ADD and DELETE entries —
    for the partitions whose ADD entries outnumber their DELETE entries (Java's
    `readPartitionEntries` keeps those with a positive file count). None for a partition
    with a file that records no creation time (its update time is unknown: expiry keeps it).
    Whole columns: one pass to gather the entries' fields, then numpy."""
    n = len(entries)
    if n == 0:
        return {}
    parts = pa.array([e.partition for e in entries], pa.binary()).dictionary_encode()
    codes = parts.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    created = np.fromiter((-1 if e.file.creation_time is None else e.file.creation_time
                           for e in entries), np.int64, n)
    adds = np.fromiter((e.kind == FileKind.ADD for e in entries), np.bool_, n)
    k = len(parts.dictionary)
    files = np.bincount(codes, weights=np.where(adds, 1, -1), minlength=k)
    unknown = np.bincount(codes, weights=created < 0, minlength=k) > 0
    order = np.lexsort((created, codes))  # per code, newest creation time last
    last_at = np.flatnonzero(np.r_[codes[order][1:] != codes[order][:-1], True])
    newest = np.zeros(k, np.int64)
    newest[codes[order][last_at]] = created[order][last_at]
    names = parts.dictionary.to_pylist()
    return {names[c]: None if unknown[c] else int(newest[c])
            for c in np.flatnonzero(files > 0).tolist()}


def _local_text(ms: int) -> str:
    return (dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=ms)).isoformat(
        " ", "milliseconds")


def _time_format(opts: CoreOptions) -> tuple[str | None, str | None]:
    """(timestamp pattern, formatter) of the table; a bad formatter is an error, not "no
    partition expires"."""
    pattern, formatter = opts.get(TIMESTAMP_PATTERN), opts.get(TIMESTAMP_FORMATTER)
    if formatter is not None:
        compile_formatter(formatter)
    return pattern, formatter


def _cutoff(expiration_time: OlderThan, options: dict[str, str],
            now: dt.datetime | None = None) -> dt.datetime:
    """The local date-time before which partitions expire (`now`: default the local wall
    clock)."""
    if isinstance(expiration_time, dt.datetime):
        if expiration_time.tzinfo is not None:
            return expiration_time.astimezone().replace(tzinfo=None)
        return expiration_time
    if isinstance(expiration_time, dt.timedelta):
        age = expiration_time
    elif isinstance(expiration_time, str):
        age = parse_duration(expiration_time, "expiration_time")
    elif expiration_time is None:
        raw = options.get(EXPIRATION_TIME)
        if raw is None:
            raise InvalidOptionError(f"set table option {EXPIRATION_TIME!r} or pass "
                                     "expiration_time: there is no default")
        age = parse_duration(raw, EXPIRATION_TIME)
    else:
        raise InvalidOptionError(f"expiration_time must be a datetime, timedelta or duration "
                                 f"text, got {expiration_time!r}")
    try:
        return (clock.local_now() if now is None else now) - age
    except OverflowError:  # an age reaching back before year 1
        raise InvalidOptionError(f"expiration_time {expiration_time!r} reaches back before the "
                                 "year 1; pass a shorter age") from None


def _value_text(value: Any, data_type: Any) -> str | None:
    if value is None:
        return None
    try:
        return partition_value_text(value, data_type, legacy_name=False)
    except LakeformatError:
        return str(value)


def expired_partitions(schema: TableSchema,
                       partitions: Iterable[bytes] | Mapping[bytes, int | None],
                       expiration_time: OlderThan = None, now: dt.datetime | None = None,
                       options: Mapping[str, Any] | None = None) -> PartitionExpiry:
    """Which of `partitions` (serialized partition rows, as manifest entries hold them, e.g.
    the partitions live in a snapshot) have expired, by the table's rule (see the module
    docstring): `(expired, kept)` as `PartitionExpiry` says. Reads no file.

    `partitions` may map each partition to its last update (`partition_update_times` of the
    snapshot's entries): the update-time strategy needs it (an `InvalidArgumentError`
    otherwise), values-time reads the keys only.

    `expiration_time` as `expire_partitions` takes it: a `datetime` (the cut-off itself), a
    `timedelta` or duration text (an age before `now`), None (the table's
    `partition.expiration-time`). `now`: a naive local date-time (default: the local wall
    clock, as Java's `LocalDateTime.now()`). Raises `InvalidOptionError` for an option or an
    `expiration_time` it cannot use, `UnsupportedError` for a formatter it cannot read.
    `options`: the run's overlay of `EXPIRY_OPTIONS` (see `expire_partitions`)."""
    opts = expiry_options(schema, options)
    strategy = _check_strategy(opts)
    pattern, formatter = _time_format(opts)
    cutoff = _cutoff(expiration_time, dict(opts.raw), now)
    return _expired(schema, opts, strategy, partitions, cutoff, pattern, formatter)[0]


def _update_times(partitions: Iterable[bytes] | Mapping[bytes, int | None]
                  ) -> Mapping[bytes, int | None]:
    if not isinstance(partitions, Mapping):
        raise InvalidArgumentError(f"{EXPIRATION_STRATEGY}={UPDATE_TIME} needs each "
                                   "partition's last update time (partition_update_times of "
                                   "the snapshot's manifest entries), not the partitions alone")
    return partitions


def _expired(schema: TableSchema, opts: CoreOptions, strategy: str,
             partitions: Iterable[bytes] | Mapping[bytes, int | None], cutoff: dt.datetime,
             pattern: str | None, formatter: str | None
             ) -> tuple[PartitionExpiry, dict[bytes, str]]:
    """The rule, and why each expired partition expires (partition -> its time as text)."""
    fields = schema.partition_fields()
    types = [f.type for f in fields]
    keys = list(schema.partition_keys)
    times = _update_times(partitions) if strategy == UPDATE_TIME else None
    # Java compares epoch millis of both local date-times (`toEpochMilli` floors)
    cutoff_ms = (cutoff - dt.datetime(1970, 1, 1)) // dt.timedelta(milliseconds=1)
    expired: list[tuple[str, bytes, str]] = []
    kept: list[str] = []
    why: dict[bytes, str] = {}
    for partition in partitions:
        values = from_avro_bytes(partition, types)
        texts = [_value_text(v, t) for v, t in zip(values, types, strict=True)]
        spec = partition_path(values, fields, opts.partition_default_name, False) or "/"
        if times is not None:
            last = times[partition]
            if last is None:
                kept.append(f"{spec}: kept, a file of it records no creation time")
                continue
            if last >= cutoff_ms:
                continue
            why[partition] = f"{spec} last updated {_local_text(last)}"
        else:
            try:
                when = extract_time(keys, texts, pattern, formatter)
            except TimeParseError as e:
                kept.append(f"{spec}: kept, no time in its values ({e})")
                continue
            if when >= cutoff:
                continue
            why[partition] = f"{spec} at {when}"
        joined = ",".join(opts.partition_default_name if t is None else t for t in texts)
        expired.append((joined, partition, spec))
    expired.sort()
    return PartitionExpiry([(spec, partition) for _, partition, spec in expired], kept), why


#: partitions a run's note names with their update time
NOTE_PARTITIONS = 5


def _why_note(strategy: str, cutoff: dt.datetime, reasons: list[str]) -> str:
    """One line: the rule, its cut-off and (update-time) the first partitions' last update."""
    ms = (cutoff - dt.datetime(1970, 1, 1)) // dt.timedelta(milliseconds=1)
    if strategy == VALUES_TIME:
        return f"values-time: the time in each one's values is before the cut-off {cutoff}"
    shown = reasons[:NOTE_PARTITIONS]
    more = f", ... and {len(reasons) - NOTE_PARTITIONS} more" \
        if len(reasons) > NOTE_PARTITIONS else ""
    return (f"update-time: the newest file of each was created before the cut-off "
            f"{_local_text(ms)} ({', '.join(shown)}{more})")


def expire_partitions(file_io: FileIO, table_path: str, schema: TableSchema, table_name: str,
                      expiration_time: OlderThan, dry_run: bool,
                      options: Mapping[str, Any] | None = None) -> MaintenanceResult:
    """Drop the partitions expired in the latest snapshot (`expired_partitions`), at most
    `partition.expiration-max-num`, in OVERWRITE snapshots of `partition.expiration-batch-size`
    partitions (`DropPartitionsJob`); a dry run plans the job and reports what it would drop.
    Either way `notes` say why each partition expires. `options` overlay `EXPIRY_OPTIONS`
    over the table's for this run only (`expiry_options`)."""
    start = time.monotonic()
    opts = expiry_options(schema, options)
    if not schema.partition_keys:
        raise InvalidArgumentError(f"{table_name} has no partition keys: there are no "
                                   "partitions to expire")
    check_supported(schema.copy(options=opts.raw) if options else schema, EXPIRE_PARTITIONS,
                    table_path)
    strategy = _check_strategy(opts)
    max_num = max_per_run(opts)
    per_batch = batch_size(opts, max_num)
    pattern, formatter = _time_format(opts)
    cutoff = _cutoff(expiration_time, dict(opts.raw))
    result = MaintenanceResult(table_name, OPERATION, dry_run=dry_run)
    files: dict[bytes, list[int]] = {}
    picked: list[tuple[str, bytes]] = []

    def select(latest: Snapshot | None) -> list[bytes]:
        scan = FileStoreScan(file_io, table_path, schema)
        entries = scan.read_entries(scan.data_manifests(latest)) if latest else []
        for e in merge_entries(entries):
            files.setdefault(e.partition, []).append(e.file.file_size)
        candidates = partition_update_times(entries) if strategy == UPDATE_TIME else files
        (expired, kept), why = _expired(schema, opts, strategy, candidates, cutoff, pattern,
                                        formatter)
        result.skipped.extend(kept)
        if len(expired) > max_num:
            result.skipped.append(f"{len(expired) - max_num} more expired partitions left for "
                                  f"the next run ({EXPIRATION_MAX_NUM}={max_num})")
            expired = expired[:max_num]
        picked.extend(expired)
        if expired:
            result.notes.append(_why_note(strategy, cutoff, [why[p] for _, p in expired]))
        return [partition for _, partition in expired]

    job = DropPartitionsJob(file_io, table_path, schema, select, table_name,
                            operation=OPERATION)
    units = job.plan()
    result.earliest_snapshot = SnapshotManager(file_io, table_path).earliest_snapshot_id()
    result.latest_snapshot = job.base.id if job.base else None
    if not units:
        result.duration_s = round(time.monotonic() - start, 3)
        return result
    result.partitions_expired = [spec for spec, _ in picked]
    sizes = [s for _, partition in picked for s in files.get(partition, [])]
    if dry_run:
        result.data_files_dropped, result.bytes_dropped = len(sizes), sum(sizes)
        if per_batch < len(units):
            result.notes.append(f"{-(-len(units) // per_batch)} snapshots of at most "
                                f"{per_batch} partitions ({EXPIRATION_BATCH_SIZE})")
    else:
        dropped_specs: list[str] = []
        refs = TableReferences(file_io, table_path, schema)
        spec_of = {partition: spec for spec, partition in picked}
        for at in range(0, len(units), per_batch):
            batch = units[at:at + per_batch]
            snap = job.commit(job.execute(batch))
            if snap is None:  # another job emptied them first
                result.skipped.append(f"partitions {', '.join(spec_of[p] for p in batch)} "
                                      "were already empty; no commit")
                continue
            result.latest_snapshot = snap.id
            dropped = refs.delta_entries(snap)
            dropped_specs += [spec_of[p] for p in batch]
            result.data_files_dropped += len(dropped)
            result.bytes_dropped += sum(e.file.file_size for e in dropped)
        result.partitions_expired = dropped_specs
    result.duration_s = round(time.monotonic() - start, 3)
    return result
