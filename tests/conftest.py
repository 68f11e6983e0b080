"""Fixtures every suite shares.

`advancing_clock`: the library reads one wall clock (`lakeformat.clock.now_millis`). On a fast
machine a commit and the expiry that follows it can fall in the same millisecond, and an age
rule such as `older_than=0` ("every snapshot committed before this call is old") then depends
on timing. The fixture makes each reading strictly later than the one before — real time when
it has moved on, one millisecond more when it has not — so such a test asserts Paimon's rule,
not the machine's speed.
"""

from __future__ import annotations

import threading
import time

import pytest

import lakeformat.clock


@pytest.fixture(autouse=True)
def advancing_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    guard = threading.Lock()
    last = [0]

    def now_millis() -> int:
        with guard:
            last[0] = max(time.time_ns() // 1_000_000, last[0] + 1)
            return last[0]

    monkeypatch.setattr(lakeformat.clock, "now_millis", now_millis)
