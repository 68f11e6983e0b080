"""What the provider checks before it touches a table, with the library's rules: a table name
no catalog accepts fails the DAG file when it is parsed (a literal) or the task at once (a
template, once rendered)."""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace

import pytest
from airflow.sdk.exceptions import AirflowFailException

import lakeformat as lf
from lakeformat_airflow.operators import (
    LakeformatCompactOperator,
    LakeformatExpireSnapshotsOperator,
)

LONG = "db." + "t" * 256


def _context() -> dict:
    ti = SimpleNamespace(dag_id="d", task_id="t", map_index=-1)
    return {"ti": ti, "logical_date": dt.datetime(2024, 3, 1, tzinfo=dt.UTC)}


@pytest.mark.parametrize("table,rule", [(LONG, "256 bytes.*at most 255"),
                                        ("db.orders$snapshots", "'\\$'"),
                                        ("sys.orders", "system database"),
                                        ("db.a/b", "'/'")])
def test_a_table_name_no_catalog_accepts_fails_when_the_dag_is_parsed(table, rule):
    with pytest.raises(lf.InvalidIdentifierError, match=rule):
        LakeformatCompactOperator(task_id="x", table=table)


def test_a_templated_name_is_checked_once_rendered(local_conn):
    op = LakeformatExpireSnapshotsOperator(task_id="x", table="{{ params.table }}")
    op.table = LONG  # as rendered
    with pytest.raises(AirflowFailException, match="InvalidIdentifierError.*at most 255"):
        op.execute(_context())
