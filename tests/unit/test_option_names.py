"""Likely typos among table option keys: named, never refused (Paimon stores any key)."""

from __future__ import annotations

from lakeformat.schema.option_names import KNOWN_TABLE_OPTIONS, likely_option_typos

COLUMNS = ["id", "name", "ts", "amount"]


def test_known_paimon_and_lakeformat_keys_are_not_typos():
    options = {k: "x" for k in ("bucket", "merge-engine", "sequence.field", "bucket-key",
                                "snapshot.num-retained.min", "schema.time-retained",
                                "fields.default-aggregate-function",
                                "fields.amount.aggregate-function", "fields.ts.sequence-group",
                                "fields.a,b.sequence-group", "file-index.bloom-filter.columns")}
    assert likely_option_typos(options, COLUMNS) == {}
    assert {"bucket", "merge-engine", "changelog-producer", "write-buffer-size"} \
        <= KNOWN_TABLE_OPTIONS


def test_near_misses_name_the_intended_key():
    typos = likely_option_typos({"merge-engin": "x", "bucket-keys": "x",
                                 "snapshot.num-retained.mni": "x",
                                 "fields.amount.agregate-function": "x",
                                 "fields.amout.ignore-retract": "x"}, COLUMNS)
    assert typos == {"merge-engin": "merge-engine", "bucket-keys": "bucket-key",
                     "snapshot.num-retained.mni": "snapshot.num-retained.min",
                     "fields.amount.agregate-function": "fields.amount.aggregate-function",
                     "fields.amout.ignore-retract": "fields.amount.ignore-retract"}


def test_users_own_keys_pass_silently():
    assert likely_option_typos({"owner": "data-eng", "my.team.sla": "4h",
                                "comment.ticket": "JIRA-1"}, COLUMNS) == {}
