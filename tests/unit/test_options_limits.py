"""Durations and sizes past what Python's timedelta or a 64-bit count holds are refused with
an error naming the option, never an OverflowError from deep inside."""

from __future__ import annotations

from datetime import timedelta

import pytest

import lakeformat as lf
from lakeformat.options import parse_duration, parse_memory_size


def test_the_longest_duration_a_timedelta_holds_parses():
    assert parse_duration("999999999 d", "older_than") == timedelta(days=999999999)


@pytest.mark.parametrize("text", ["1000000000 d", "99999999999 d", "99999999999999999999 ms",
                                  "9" * 400 + " s"])
def test_a_duration_too_long_names_the_option_and_the_limit(text):
    with pytest.raises(lf.InvalidArgumentError, match=r"'older_than'.*too long.*999999999 days"):
        parse_duration(text, "older_than")


@pytest.mark.parametrize("text", ["8388608 tb", "9" * 400 + " mb"])
def test_a_size_too_large_names_the_option(text):
    assert parse_memory_size("8388607 tb", "target-file-size") == 8388607 << 40
    with pytest.raises(lf.InvalidOptionError, match=r"'target-file-size'.*too large"):
        parse_memory_size(text, "target-file-size")
