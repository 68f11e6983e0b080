"""Table options by Paimon's names, with Paimon's defaults and value syntax."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timedelta

from lakeformat.errors import (
    InvalidArgumentError,
    InvalidOptionError,
    UnsupportedError,
    hides_value,
    shown_value,
)

_SIZE_UNITS = {
    "": 1, "b": 1, "bytes": 1, "byte": 1,
    "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "kibibytes": 1 << 10,
    "m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20, "mebibytes": 1 << 20,
    "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30, "gibibytes": 1 << 30,
    "t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40, "tebibytes": 1 << 40,
}
_DURATION_UNITS = {
    "ns": 1e-9, "nano": 1e-9, "nanos": 1e-9, "nanosecond": 1e-9, "nanoseconds": 1e-9,
    "us": 1e-6, "µs": 1e-6, "micro": 1e-6, "micros": 1e-6, "microsecond": 1e-6,
    "microseconds": 1e-6,
    "ms": 1e-3, "milli": 1e-3, "millis": 1e-3, "millisecond": 1e-3, "milliseconds": 1e-3,
    "": 1e-3,  # Paimon/Flink durations without a unit are milliseconds
    "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1,
    "m": 60, "min": 60, "mins": 60, "minute": 60, "minutes": 60,
    "h": 3600, "hour": 3600, "hours": 3600,
    "d": 86400, "day": 86400, "days": 86400,
}
#: the longest duration a `timedelta` holds, and the largest size a signed 64-bit count holds
_MAX_DURATION_S = timedelta.max.days * 86400
_MAX_SIZE = float(1 << 63)
_NUM_UNIT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Zµ]*)\s*$")


#: the standard AWS variables the S3 credentials fall back to: as secret as the options (the
#: access key id is no secret: see `hides_value`)
_SECRET_ENVIRONMENT = ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")


def secret_values(options: Mapping[str, object]) -> list[str]:
    """The values of the secret options (`hides_value`) and of the AWS credential variables
    they fall back to, longest first."""
    found = {str(v).strip() for k, v in options.items()
             if v is not None and hides_value(k) and str(v).strip()}
    found |= {os.environ[name].strip() for name in _SECRET_ENVIRONMENT
              if os.environ.get(name, "").strip()}
    return sorted(found, key=len, reverse=True)


def hide_secrets(text: str, secrets: list[str]) -> str:
    """`text` with every whole occurrence of a secret replaced by `***` (a short secret does
    not blank out letters of other words)."""
    for secret in secrets:
        text = re.sub(rf"(?<![A-Za-z0-9]){re.escape(secret)}(?![A-Za-z0-9])", "***", text)
    return text


@contextmanager
def secrets_hidden(options: Mapping[str, object]) -> Iterator[None]:
    """Errors raised in the body never show the value of a secret option of `options` —
    whatever key it was placed under (a secret key pasted into `s3.path-style-access` is
    echoed by that option's error otherwise). The error keeps its type; only its text
    changes."""
    try:
        yield
    except Exception as e:
        secrets = secret_values(options)
        if secrets and e.args and isinstance(e.args[0], str):
            hidden = hide_secrets(e.args[0], secrets)
            if hidden != e.args[0]:
                e.args = (hidden, *e.args[1:])
        raise


def parse_memory_size(text: str, key: str = "size") -> int:
    """Parse Paimon's MemorySize text ('128 mb', '8MB', '1024')."""
    m = _NUM_UNIT.match(str(text))
    if not m or m.group(2).lower() not in _SIZE_UNITS:
        raise InvalidOptionError(f"option {key!r}: cannot parse memory size "
                                 f"{shown_value(key, text)}")
    size = float(m.group(1)) * _SIZE_UNITS[m.group(2).lower()]
    if not size < _MAX_SIZE:  # also inf: a number of hundreds of digits
        raise InvalidOptionError(f"option {key!r}: memory size {shown_value(key, text)} is "
                                 "too large (at most 8388608 tb)")
    return int(size)


def parse_duration(text: str, key: str = "duration") -> timedelta:
    """Parse Paimon's Duration text ('1 h', '7 d', '30 min', '500 ms')."""
    m = _NUM_UNIT.match(str(text))
    if not m or m.group(2).lower() not in _DURATION_UNITS:
        raise InvalidOptionError(f"option {key!r}: cannot parse duration "
                                 f"{shown_value(key, text)}")
    seconds = float(m.group(1)) * _DURATION_UNITS[m.group(2).lower()]
    if not seconds <= _MAX_DURATION_S:  # Python's timedelta would overflow (also inf)
        raise InvalidOptionError(f"option {key!r}: duration {shown_value(key, text)} is too "
                                 f"long (at most {timedelta.max.days} days)")
    return timedelta(seconds=seconds)


def parse_budget(budget: int | str | None) -> int | None:
    """A job's `memory_budget`: bytes, or a Paimon memory size (`"256 mb"`); positive."""
    if budget is None:
        return None
    value = budget if isinstance(budget, int) else parse_memory_size(str(budget),
                                                                     "memory_budget")
    if value <= 0:
        raise InvalidArgumentError(f"memory_budget must be positive, got {budget!r}")
    return value


def parse_bool(options: Mapping[str, str], key: str, default: bool = False) -> bool:
    """A boolean option: 'true'/'false' in any case; anything else is an error naming the key."""
    raw = options.get(key)
    if raw is None:
        return default
    text = str(raw).strip().lower()
    if text not in ("true", "false"):
        raise InvalidOptionError(f"option {key!r} must be true or false, "
                                 f"got {shown_value(key, raw)}")
    return text == "true"


class CoreOptions:
    """Typed read access to a table's option map."""

    def __init__(self, options: Mapping[str, str]):
        self.raw = dict(options)

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.raw.get(key, default)

    def _int(self, key: str, default: int) -> int:
        v = self.raw.get(key)
        if v is None:
            return default
        try:
            return int(str(v).strip())
        except ValueError:
            raise InvalidOptionError(f"option {key!r} must be an integer, "
                                     f"got {shown_value(key, v)}") from None

    def _bool(self, key: str, default: bool) -> bool:
        return parse_bool(self.raw, key, default)

    def _size(self, key: str, default: str) -> int:
        return parse_memory_size(self.raw.get(key, default), key)

    def validate(self) -> None:
        """Parse every typed option once, so a bad value fails at create time naming its key."""
        for name in _TYPED:
            getattr(self, name)
        if self.bucket == 0 or self.bucket < -2:
            raise InvalidOptionError(f"option 'bucket' must be > 0, -1 or -2, got {self.bucket}")
        if self.snapshot_num_retained_min < 1:
            raise InvalidOptionError("option 'snapshot.num-retained.min' must be at least 1, got "
                                     f"{self.snapshot_num_retained_min}")
        if self.snapshot_num_retained_max < self.snapshot_num_retained_min:
            raise InvalidOptionError(
                f"option 'snapshot.num-retained.max' ({self.snapshot_num_retained_max}) must not "
                f"be less than 'snapshot.num-retained.min' ({self.snapshot_num_retained_min})")
        if self.snapshot_expire_limit < 1:
            raise InvalidOptionError("option 'snapshot.expire.limit' must be at least 1, got "
                                     f"{self.snapshot_expire_limit}")
        if self.changelog_num_retained_min < 1:  # [JAVA SchemaValidation]
            raise InvalidOptionError("option 'changelog.num-retained.min' must be at least 1, "
                                     f"got {self.changelog_num_retained_min}")
        if self.changelog_num_retained_max < self.changelog_num_retained_min:
            raise InvalidOptionError(
                f"option 'changelog.num-retained.max' ({self.changelog_num_retained_max}) must "
                "not be less than 'changelog.num-retained.min' "
                f"({self.changelog_num_retained_min})")
        if self.file_format not in ("parquet", "orc", "avro"):
            raise UnsupportedError(f"option file.format={self.file_format!r} is not supported "
                                   "(parquet, orc, avro)")

    @property
    def bucket(self) -> int:
        return self._int("bucket", -1)

    @property
    def file_format(self) -> str:
        return str(self.raw.get("file.format", "parquet")).lower()

    @property
    def file_compression(self) -> str:
        return str(self.raw.get("file.compression", "zstd")).lower()

    @property
    def zstd_level(self) -> int:
        return self._int("file.compression.zstd-level", 1)

    @property
    def target_file_size(self) -> int:
        return self._size("target-file-size", "128 mb")

    def target_file_size_of(self, primary_key: bool) -> int:
        """Java's `targetFileSize(hasPrimaryKey)`: 128 MB for a primary-key table, 256 MB for
        an append table, unless `target-file-size` is set."""
        return self._size("target-file-size", "128 mb" if primary_key else "256 mb")

    @property
    def compaction_min_file_num(self) -> int:
        """`compaction.min.file-num`: small files an append-table compaction waits for."""
        n = self._int("compaction.min.file-num", 5)
        if n < 1:
            raise InvalidOptionError(f"option 'compaction.min.file-num' must be >= 1, got {n}")
        return n

    @property
    def dynamic_bucket_target_row_num(self) -> int:
        return self._int("dynamic-bucket.target-row-num", 2_000_000)

    @property
    def dynamic_bucket_max_buckets(self) -> int:
        return self._int("dynamic-bucket.max-buckets", -1)

    @property
    def dynamic_bucket_initial_buckets(self) -> int:
        """Assigners of a dynamic-bucket write (Java's assigner tasks); 1 when unset."""
        return self._int("dynamic-bucket.initial-buckets", 1)

    @property
    def split_open_file_cost(self) -> int:
        return self._size("source.split.open-file-cost", "4 mb")

    @property
    def data_file_prefix(self) -> str:
        return str(self.raw.get("data-file.prefix", "data-"))

    @property
    def file_suffix_include_compression(self) -> bool:
        return self._bool("file.suffix.include.compression", False)

    @property
    def deletion_vectors_enabled(self) -> bool:
        return self._bool("deletion-vectors.enabled", False)

    @property
    def deletion_vectors_merge_on_read(self) -> bool:
        """Batch reads of a deletion-vector table see level-0 files too (they skip them by
        default: those rows become visible once compacted) [JAVA CoreOptions]."""
        return self._bool("deletion-vectors.merge-on-read", False)

    @property
    def lookup_merge(self) -> bool:
        """A key merges its level-0 records with only its newest record above level 0: tables
        whose writers look keys up (lookup changelog, deletion vectors, `force-lookup`); first
        row has its own rule [JAVA CoreOptions.needLookup, LookupMergeFunction.wrap]."""
        lookup = (self.changelog_producer == "lookup" or self.deletion_vectors_enabled
                  or self._bool("force-lookup", False))
        return lookup and self.merge_engine != "first-row"

    @property
    def changelog_row_deduplicate(self) -> bool:
        return self._bool("changelog-producer.row-deduplicate", False)

    @property
    def changelog_row_deduplicate_ignore_fields(self) -> list[str]:
        raw = self.get("changelog-producer.row-deduplicate-ignore-fields") or ""
        return [f.strip() for f in raw.split(",") if f.strip()]

    @property
    def thin_mode(self) -> bool:
        return self._bool("data-file.thin-mode", False)

    @property
    def merge_engine(self) -> str:
        return str(self.raw.get("merge-engine", "deduplicate")).lower()

    @property
    def ignore_delete(self) -> bool:
        """`ignore-delete`, with the engine-specific fallback keys Paimon reads."""
        for key in ("ignore-delete", "first-row.ignore-delete", "deduplicate.ignore-delete",
                    "partial-update.ignore-delete"):
            if key in self.raw:
                return self._bool(key, False)
        return False

    @property
    def ignore_update_before(self) -> bool:
        return self._bool("ignore-update-before", False)

    @property
    def stats_mode(self) -> str:
        return str(self.raw.get("metadata.stats-mode", "truncate(16)")).lower()

    @property
    def stats_dense_store(self) -> bool:
        return self._bool("metadata.stats-dense-store", True)

    @property
    def rowkind_field(self) -> str | None:
        return self.raw.get("rowkind.field")

    @property
    def partition_default_name(self) -> str:
        return str(self.raw.get("partition.default-name", "__DEFAULT_PARTITION__"))

    @property
    def partition_legacy_name(self) -> bool:
        return self._bool("partition.legacy-name", True)

    @property
    def manifest_target_file_size(self) -> int:
        return self._size("manifest.target-file-size", "8 mb")

    @property
    def manifest_merge_min_count(self) -> int:
        return self._int("manifest.merge-min-count", 30)

    @property
    def manifest_full_compaction_threshold(self) -> int:
        return self._size("manifest.full-compaction-threshold-size", "16 mb")

    def _commit_settings(self) -> tuple[int, float, float, float | None]:
        """(max retries, min wait s, max wait s, timeout s): parsed and checked together, so the
        first commit option a commit reads refuses a bad value of any of them."""
        retries = self._int("commit.max-retries", 10)
        if retries < 0:
            raise InvalidOptionError(f"option 'commit.max-retries' must be 0 or more, got "
                                     f"{retries}")
        min_wait = parse_duration(self.raw.get("commit.min-retry-wait", "10 ms"),
                                  "commit.min-retry-wait").total_seconds()
        max_wait = parse_duration(self.raw.get("commit.max-retry-wait", "10 s"),
                                  "commit.max-retry-wait").total_seconds()
        if max_wait < min_wait:
            raise InvalidOptionError(
                f"option 'commit.max-retry-wait' ({self.raw.get('commit.max-retry-wait', '10 s')})"
                " must not be less than 'commit.min-retry-wait' "
                f"({self.raw.get('commit.min-retry-wait', '10 ms')})")
        v = self.raw.get("commit.timeout")
        timeout = None if v is None else parse_duration(v, "commit.timeout").total_seconds()
        if timeout is not None and timeout <= 0:
            raise InvalidOptionError(f"option 'commit.timeout' must be positive, got {v!r}")
        return retries, min_wait, max_wait, timeout

    @property
    def commit_max_retries(self) -> int:
        return self._commit_settings()[0]

    @property
    def commit_min_retry_wait(self) -> float:
        return self._commit_settings()[1]

    @property
    def commit_max_retry_wait(self) -> float:
        return self._commit_settings()[2]

    @property
    def commit_timeout(self) -> float | None:
        return self._commit_settings()[3]

    # snapshot expiry [CoreOptions.java]
    @property
    def snapshot_num_retained_min(self) -> int:
        return self._int("snapshot.num-retained.min", 10)

    @property
    def snapshot_num_retained_max(self) -> int:
        return self._int("snapshot.num-retained.max", 2147483647)

    @property
    def snapshot_time_retained(self) -> timedelta:
        return parse_duration(self.raw.get("snapshot.time-retained", "1 h"),
                              "snapshot.time-retained")

    @property
    def snapshot_expire_limit(self) -> int:
        return self._int("snapshot.expire.limit", 10)

    # changelog expiry: unset falls back to the snapshot setting [CoreOptions.java]
    @property
    def changelog_num_retained_min(self) -> int:
        return self._int("changelog.num-retained.min", self.snapshot_num_retained_min)

    @property
    def changelog_num_retained_max(self) -> int:
        return self._int("changelog.num-retained.max", self.snapshot_num_retained_max)

    @property
    def changelog_time_retained(self) -> timedelta:
        v = self.raw.get("changelog.time-retained")
        return self.snapshot_time_retained if v is None else parse_duration(
            v, "changelog.time-retained")

    @property
    def changelog_lifecycle_decoupled(self) -> bool:
        """The changelog outlives snapshots: a changelog setting above its snapshot one."""
        return (self.changelog_num_retained_max > self.snapshot_num_retained_max
                or self.changelog_time_retained > self.snapshot_time_retained
                or self.changelog_num_retained_min > self.snapshot_num_retained_min)

    @property
    def consumer_changelog_only(self) -> bool:
        """`consumer.changelog-only`: consumers pin only the changelog (decoupled tables)."""
        return (self._bool("consumer.changelog-only", False)
                and self.changelog_lifecycle_decoupled)

    # partition expiry [CoreOptions.java]
    @property
    def partition_expiration_time(self) -> timedelta | None:
        """`partition.expiration-time`: unset means partitions never expire."""
        v = self.raw.get("partition.expiration-time")
        return None if v is None else parse_duration(v, "partition.expiration-time")

    @property
    def partition_expiration_check_interval(self) -> timedelta:
        return parse_duration(self.raw.get("partition.expiration-check-interval", "1 h"),
                              "partition.expiration-check-interval")

    @property
    def partition_expiration_strategy(self) -> str:
        v = str(self.raw.get("partition.expiration-strategy", "values-time")).strip()
        if v not in ("values-time", "update-time"):
            raise InvalidOptionError(f"option 'partition.expiration-strategy' must be "
                                     f"values-time or update-time, got {v!r}")
        return v

    @property
    def partition_expiration_max_num(self) -> int:
        return self._positive("partition.expiration-max-num", 100)

    @property
    def partition_timestamp_formatter(self) -> str | None:
        return self.raw.get("partition.timestamp-formatter")

    @property
    def partition_timestamp_pattern(self) -> str | None:
        return self.raw.get("partition.timestamp-pattern")

    @property
    def consumer_expiration_time(self) -> timedelta | None:
        v = self.raw.get("consumer.expiration-time")
        return None if v is None else parse_duration(v, "consumer.expiration-time")

    @property
    def write_buffer_size(self) -> int:
        return self._size("write-buffer-size", "256 mb")

    # -- compaction (Paimon's names and defaults) ------------------------------------------------
    @property
    def num_sorted_run_compaction_trigger(self) -> int:
        return self._positive("num-sorted-run.compaction-trigger", 5)

    @property
    def num_sorted_run_stop_trigger(self) -> int:
        """`num-sorted-run.stop-trigger`: above this many sorted runs a Java writer stops to
        wait for compaction; default trigger + 3, never below the trigger (Java's
        `numSortedRunStopTrigger`)."""
        trigger = self.num_sorted_run_compaction_trigger
        return max(trigger, self._positive("num-sorted-run.stop-trigger", trigger + 3))

    @property
    def compaction_delete_ratio_threshold(self) -> float:
        """`compaction.delete-ratio-threshold`: a file whose deletion vector marks more than
        this share of its rows is worth rewriting (Java's default 0.2)."""
        v = self.raw.get("compaction.delete-ratio-threshold", "0.2")
        try:
            ratio = float(str(v).strip())
        except ValueError:
            ratio = -1.0
        if not 0.0 <= ratio <= 1.0:
            raise InvalidOptionError("option 'compaction.delete-ratio-threshold' must be a "
                                     f"number from 0 to 1, got {v!r}")
        return ratio

    @property
    def full_compaction_delta_commits(self) -> int | None:
        """`full-compaction.delta-commits`: a full compaction every this many commits (unset:
        never; Java's Flink writers act on it)."""
        if self.raw.get("full-compaction.delta-commits") is None:
            return None
        return self._positive("full-compaction.delta-commits", 1)

    @property
    def compaction_force_up_level_0(self) -> bool:
        return self._bool("compaction.force-up-level-0", False)

    @property
    def source_split_target_size(self) -> int:
        return self._size("source.split.target-size", "128 mb")

    @property
    def compaction_spark_threshold(self) -> int:
        """`lakeformat.compaction.spark-threshold`: compaction work (bytes of input files) from
        which a due compaction is sent to Spark when one is configured (default 2 GiB, 8 x the
        default `write-buffer-size`)."""
        return self._size("lakeformat.compaction.spark-threshold", "2 gb")

    @property
    def num_levels(self) -> int:
        """`num-levels`, default trigger + 1 so compaction never has to output level 0."""
        v = self._int("num-levels", self.num_sorted_run_compaction_trigger + 1)
        if v < 2:
            raise InvalidOptionError(f"option 'num-levels' must be at least 2, got {v}")
        return v

    @property
    def compaction_max_size_amplification_percent(self) -> int:
        return self._int("compaction.max-size-amplification-percent", 200)

    @property
    def compaction_size_ratio(self) -> int:
        return self._int("compaction.size-ratio", 1)

    @property
    def compaction_small_file_ratio(self) -> float:
        v = self.raw.get("compaction.small-file-ratio", "0.7")
        try:
            return float(str(v).strip())
        except ValueError:
            raise InvalidOptionError(
                f"option 'compaction.small-file-ratio' must be a number, got {v!r}") from None

    @property
    def compaction_file_size(self) -> int:
        """Files smaller than this are rewritten rather than moved up a level (Java's
        `compactionFileSize`): target-file-size x compaction.small-file-ratio."""
        return int(self.target_file_size * self.compaction_small_file_ratio)

    def compaction_file_size_of(self, primary_key: bool) -> int:
        return int(self.target_file_size_of(primary_key) * self.compaction_small_file_ratio)

    @property
    def compaction_force_rewrite_all_files(self) -> bool:
        return self._bool("compaction.force-rewrite-all-files", False)

    @property
    def compaction_optimization_interval(self) -> timedelta | None:
        v = self.raw.get("compaction.optimization-interval")
        return None if v is None else parse_duration(v, "compaction.optimization-interval")

    @property
    def compaction_total_size_threshold(self) -> int | None:
        v = self.raw.get("compaction.total-size-threshold")
        return None if v is None else parse_memory_size(v, "compaction.total-size-threshold")

    @property
    def compaction_incremental_size_threshold(self) -> int | None:
        v = self.raw.get("compaction.incremental-size-threshold")
        return None if v is None else parse_memory_size(
            v, "compaction.incremental-size-threshold")

    @property
    def compaction_offpeak_start_hour(self) -> int:
        return self._int("compaction.offpeak.start.hour", -1)

    @property
    def compaction_offpeak_end_hour(self) -> int:
        return self._int("compaction.offpeak.end.hour", -1)

    @property
    def compaction_offpeak_ratio(self) -> int:
        return self._int("compaction.offpeak-ratio", 0)

    def compaction_offpeak_ratio_now(self, now: datetime) -> int:
        """The extra size ratio during off-peak hours (Java's `OffPeakHours`)."""
        start, end = self.compaction_offpeak_start_hour, self.compaction_offpeak_end_hour
        if start < 0 or end < 0 or start == end:
            return 0
        hour = now.hour
        off = start <= hour < end if start <= end else (hour < end or start <= hour)
        return self.compaction_offpeak_ratio if off else 0

    @property
    def changelog_producer(self) -> str:
        return str(self.raw.get("changelog-producer", "none")).strip().lower()

    @property
    def changelog_file_prefix(self) -> str:
        return str(self.raw.get("changelog-file.prefix", "changelog-"))

    def _positive(self, key: str, default: int) -> int:
        v = self._int(key, default)
        if v <= 0:
            raise InvalidOptionError(f"option {key!r} must be a positive integer, got {v}")
        return v


_TYPED = [name for name, value in vars(CoreOptions).items() if isinstance(value, property)]
