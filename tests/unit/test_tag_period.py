"""The period rules of automatic tags (Java's `TagPeriodHandler`, `TagTimeExtractor`) and the
checks of the `tag.*` options: names, what counts as an auto-created tag, the period a time
falls in, zones."""

from __future__ import annotations

import datetime as dt

import pytest

from lakeformat.errors import InvalidOptionError
from lakeformat.operation.maintain import tag_auto_options

T = dt.datetime


def period(**options: str):
    return tag_auto_options({"tag.automatic-creation": "process-time", **options}).period


def test_names_follow_the_formatter_and_period():
    at = T(2024, 3, 9, 13, 47)
    assert period().time_to_tag(at) == "2024-03-09"
    assert period(**{"tag.period-formatter": "without_dashes"}).time_to_tag(at) == "20240309"
    hourly = {"tag.creation-period": "hourly"}
    assert period(**hourly).time_to_tag(at) == "2024-03-09 13"
    assert period(**hourly, **{"tag.period-formatter": "without_dashes"}).time_to_tag(
        at) == "20240309 13"
    assert period(**hourly, **{"tag.period-formatter": "without_dashes_and_spaces"}
                  ).time_to_tag(at) == "2024030913"
    # two-hours always names with dashes; a period duration by the minute, and wins
    assert period(**{"tag.creation-period": "two-hours",
                     "tag.period-formatter": "without_dashes"}).time_to_tag(at) == \
        "2024-03-09 13"
    assert period(**{"tag.creation-period-duration": "90 min", **hourly}).time_to_tag(
        at) == "202403091347"


def test_which_names_are_auto_created_tags():
    daily, hourly = period(), period(**{"tag.creation-period": "hourly"})
    assert daily.is_auto_tag("2024-03-09") and not daily.is_auto_tag("20240309")
    assert daily.is_auto_tag("2024-03-09 13")  # Java reads the part before the first space
    assert not daily.is_auto_tag("2024-02-30") and not daily.is_auto_tag("24-03-09")
    assert not daily.is_auto_tag("nightly") and not daily.is_auto_tag(" 2024-03-09")
    assert hourly.is_auto_tag("2024-03-09 23") and not hourly.is_auto_tag("2024-03-09 24")
    assert not hourly.is_auto_tag("2024-03-09") and not hourly.is_auto_tag("2024-03-09 1")
    assert hourly.tag_to_time("2024-03-09 07") == T(2024, 3, 9, 7)


def test_a_time_is_tagged_with_the_period_before_its_own():
    assert period().normalize_to_previous(T(2024, 3, 9, 0, 0)) == T(2024, 3, 8)
    assert period().normalize_to_previous(T(2024, 3, 9, 23, 59)) == T(2024, 3, 8)
    two = period(**{"tag.creation-period": "two-hours"})
    assert two.normalize_to_previous(T(2024, 3, 9, 13, 30)) == T(2024, 3, 9, 10)
    # a period duration counts from the epoch: 90-minute periods start at 00:00, 01:30, ...
    ninety = period(**{"tag.creation-period-duration": "90 min"})
    assert ninety.normalize_to_previous(T(2024, 3, 9, 13, 47)) == T(2024, 3, 9, 12)
    assert ninety.next_time(T(2024, 3, 9, 12)) == T(2024, 3, 9, 13, 30)


def test_tag_time_by_mode_and_zone():
    ms = int(dt.datetime(2024, 3, 9, 20, 0, tzinfo=dt.UTC).timestamp() * 1000)
    proc = tag_auto_options({"tag.automatic-creation": "process-time",
                             "sink.process-time-zone": "GMT-08:00"})
    assert proc.tag_time(ms, None) == T(2024, 3, 9, 12)
    mark = tag_auto_options({"tag.automatic-creation": "watermark"})  # UTC by default
    assert mark.tag_time(0, ms) == T(2024, 3, 9, 20)
    assert mark.tag_time(ms, None) is None and mark.tag_time(ms, -(1 << 63)) is None
    shanghai = tag_auto_options({"tag.automatic-creation": "watermark",
                                 "sink.watermark-time-zone": "Asia/Shanghai"})
    assert shanghai.tag_time(0, ms) == T(2024, 3, 10, 4)


@pytest.mark.parametrize("options,named", [
    ({"tag.automatic-creation": "hourly"}, "tag.automatic-creation"),
    ({"tag.creation-period": "weekly"}, "tag.creation-period"),
    ({"tag.creation-period-duration": "0 s"}, "tag.creation-period-duration"),
    ({"tag.creation-delay": "1 d"}, "tag.creation-delay"),
    ({"tag.num-retained-max": "two"}, "tag.num-retained-max"),
    ({"tag.default-time-retained": "forever"}, "tag.default-time-retained"),
    ({"tag.automatic-completion": "yes"}, "tag.automatic-completion"),
    ({"tag.batch.customized-name": " "}, "tag.batch.customized-name"),
    ({"sink.watermark-time-zone": "GMT+25"}, "sink.watermark-time-zone"),
])
def test_bad_values_are_named(options, named):
    with pytest.raises(InvalidOptionError, match=named):
        tag_auto_options({"tag.automatic-creation": "process-time", **options})


def test_enum_values_read_in_any_case_and_the_delay_only_binds_timed_modes():
    opts = tag_auto_options({"tag.automatic-creation": "Process-Time",
                             "tag.creation-period": "HOURLY", "tag.num-retained-max": "0"})
    assert opts.mode == "process-time" and opts.period.length == dt.timedelta(hours=1)
    assert opts.num_retained_max == 0
    assert tag_auto_options({"tag.automatic-creation": "batch",
                             "tag.creation-delay": "2 d"}).mode == "batch"
