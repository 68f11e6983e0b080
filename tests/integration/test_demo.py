"""`make demo` runs `lakeformat.demo`; its table story must keep working."""

from __future__ import annotations

import lakeformat as lf
from lakeformat import demo


def test_demo_runs_against_embedded_s3(capsys):
    with demo.embedded_s3() as (warehouse, options):
        demo.run(warehouse, options)
        t = lf.Catalog(warehouse, options=options).get_table("demo.orders")
        snaps = t.snapshots()
        assert [(s.id, s.commit_kind, s.schema_id) for s in snaps] == [(5, "COMPACT", 1)]
        assert {f["level"] for f in t.files()} == {5}
        rows = {(r["dt"], r["id"]): r for r in t.read().to_pylist()}
    out = capsys.readouterr().out
    assert "only dt=2024-01-02 (partition pruning): 2 rows" in out
    assert "expire-snapshots deleted 4 snapshots" in out
    assert sorted(rows) == [("2024-01-01", 1), ("2024-01-01", 2), ("2024-01-02", 1),
                            ("2024-01-02", 2)]
    assert rows[("2024-01-02", 2)]["carrier"] == "ups"
    assert rows[("2024-01-01", 2)] == {"dt": "2024-01-01", "id": 2, "customer": "bob",
                                       "amount": 25.0, "status": "paid", "carrier": None}
