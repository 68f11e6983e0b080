"""Ranking due actions across tables (`lakeformat.health.rank_actions`) and the threshold
overrides check: urgent first, then benefit; a budget filled greedily; a table's actions in
dependency order, and those after one left out left out too."""

from __future__ import annotations

import json

import pytest

from lakeformat.errors import InvalidArgumentError
from lakeformat.health import DueAction, DueReport, check_thresholds, rank_actions


def act(table, kind, benefit=1.0, work=1 << 20, urgent=False) -> DueAction:
    return DueAction(table=table, kind=kind, rule="r", reason="why", work_bytes=work,
                     urgent=urgent, benefit=benefit, expected_gain=benefit)


def report(table, *actions) -> DueReport:
    return DueReport(table=table, snapshot_id=1, actions=list(actions), not_due={}, score=50)


def names(actions) -> list[tuple[str, str]]:
    return [(a.table, a.kind) for a in actions]


def test_urgent_first_then_benefit_then_name():
    reports = [report("db.a", act("db.a", "expire-snapshots", benefit=9)),
               report("db.b", act("db.b", "compact", benefit=1, urgent=True)),
               report("db.c", act("db.c", "clean-schemas", benefit=3)),
               report("db.d", act("db.d", "clean-schemas", benefit=3))]
    assert names(rank_actions(reports)) == [("db.b", "compact"), ("db.a", "expire-snapshots"),
                                           ("db.c", "clean-schemas"),
                                           ("db.d", "clean-schemas")]


def test_budget_skips_what_does_not_fit_and_what_depends_on_it():
    reports = [report("db.a", act("db.a", "compact", benefit=5, work=10 << 20),
                      act("db.a", "expire-snapshots", benefit=8, work=1 << 20)),
               report("db.b", act("db.b", "compact", benefit=4, work=2 << 20)),
               report("db.c", act("db.c", "clean-schemas", benefit=1, work=1 << 20))]
    # 4 MiB: a's expiry (8) fits, a's compaction (10 MiB) does not -> a's expiry, which
    # comes after it, is dropped; b's compaction and c's schemas fit
    chosen = rank_actions(reports, max_bytes=4 << 20)
    assert names(chosen) == [("db.b", "compact"), ("db.c", "clean-schemas")]
    assert names(rank_actions(reports, max_actions=2)) == [("db.a", "compact"),
                                                           ("db.a", "expire-snapshots")]
    assert rank_actions(reports, max_actions=0) == []
    # no budget: every action, a table's own in dependency order (compaction first)
    assert names(rank_actions(reports))[:2] == [("db.a", "compact"), ("db.a", "expire-snapshots")]


def test_bad_budget_and_thresholds_are_refused_by_name():
    with pytest.raises(InvalidArgumentError, match="max_bytes"):
        rank_actions([], max_bytes=-1)
    with pytest.raises(InvalidArgumentError, match="unknown maintenance threshold 'bucket'"):
        check_thresholds({"bucket": 2})
    with pytest.raises(InvalidArgumentError, match="'num-sorted-run.stop-trigger': bad value"):
        check_thresholds({"num-sorted-run.stop-trigger": "-1"})
    with pytest.raises(InvalidArgumentError, match="'snapshot.time-retained'"):
        check_thresholds({"snapshot.time-retained": "a while"})
    assert check_thresholds({"num-sorted-run.compaction-trigger": 3,
                             "snapshot.time-retained": "1 h",
                             "compaction.delete-ratio-threshold": 0.5}) == {
        "num-sorted-run.compaction-trigger": "3", "snapshot.time-retained": "1 h",
        "compaction.delete-ratio-threshold": "0.5"}


def test_actions_and_reports_are_plain_dicts():
    a = act("db.a", "compact")
    r = report("db.a", a)
    assert DueAction.from_dict(json.loads(json.dumps(a.to_dict()))) == a
    d = json.loads(json.dumps(r.to_dict()))
    assert d["due"] is True and d["actions"][0]["kind"] == "compact" and d["health"] is None
    assert "1 actions due" in str(r) and "compact" in str(a)
