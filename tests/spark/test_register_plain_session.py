"""`lakeformat.spark.register(spark)` on a session the user built, as the README shows it: a
plain session without any of `local_session()`'s settings — classic, and Spark Connect. A
filtered read must return the table's rows. Before `register()`, the test asserts the session
is a user's: the format unknown to it, filter pushdown into Python data sources off (so a
`register()` that left either undone fails the read).

* classic: the user's script (their own `SparkSession.builder...getOrCreate()`) in a child
  process. It cannot share the suite's JVM: `spark.newSession()` there starts with neither
  setting, but Spark checks a registration against the JVM's active session (the suite's,
  where lakeformat is registered) and refuses it (DATA_SOURCE_ALREADY_EXISTS).
* Spark Connect: a new client session on the suite's Connect service (conftest) — a fresh
  session on the server, as a user's `SparkSession.builder.remote("sc://...")` gets; no child
  and no second Spark start-up needed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lakeformat as lf
import lakeformat.spark as lfs
from lakeformat.spark.datasource import PUSHDOWN_CONF

ROOT = Path(__file__).resolve().parents[2]

EXPECTED = [{"id": 3, "dt": "2024-01-02", "v": "x2"},
            {"id": 4, "dt": "2024-01-02", "v": "d2"},
            {"id": 5, "dt": "2024-01-02", "v": "e2"}]

# The user's script: their own builder, register, a read with filters on a partition column
# and on a key column. It prints what the session had before register() and the rows it read,
# as JSON on its last line.
SCRIPT = textwrap.dedent("""
    import json, sys
    from pyspark.sql import SparkSession
    import lakeformat.spark as lfs

    warehouse = sys.argv[1]
    spark = (SparkSession.builder.appName("user-session").master("local[1]")
             .config("spark.ui.enabled", "false").getOrCreate())
    try:
        before = {"pushdown": spark.conf.get("spark.sql.python.filterPushdown.enabled", "false")}
        try:
            spark.read.format("lakeformat").option("warehouse", warehouse).load("db.events")
            before["known"] = True
        except Exception as e:
            before["known"] = "DATA_SOURCE_NOT_FOUND" not in str(e)
        lfs.register(spark)
        df = (spark.read.format("lakeformat").option("warehouse", warehouse)
              .load("db.events").where("dt = '2024-01-02' AND id >= 3"))
        rows = sorted(df.toArrow().to_pylist(), key=lambda r: r["id"])
        print(json.dumps({"before": before, "rows": rows}))
    finally:
        spark.stop()
""")


def events(tmp_path: Path) -> lf.Catalog:
    cat = lf.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), False), pa.field("dt", pa.string(), False),
                        pa.field("v", pa.string())])
    table = cat.create_table("db.events", schema, primary_keys=["id", "dt"],
                             partition_keys=["dt"], options={"bucket": "2"})
    table.write(pa.table({"id": [1, 2, 3, 4, 5, 3], "v": ["a", "b", "c", "d", "e", "x"],
                          "dt": ["2024-01-01"] * 5 + ["2024-01-02"]}, schema=schema))
    table.write(pa.table({"id": [4, 5, 3], "v": ["d2", "e2", "x2"],
                          "dt": ["2024-01-02", "2024-01-02", "2024-01-02"]}, schema=schema))
    return cat


def test_register_makes_a_plain_classic_session_read_with_filters(tmp_path: Path) -> None:
    cat = events(tmp_path)
    script = tmp_path / "user_session.py"
    script.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))}
    env.update(PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])),
               # the JVM's JIT and GC for a short run (no Spark setting: the session stays plain)
               JAVA_TOOL_OPTIONS="-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
    done = subprocess.run([sys.executable, str(script), cat.warehouse], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["before"] == {"pushdown": "false", "known": False}
    assert out["rows"] == EXPECTED


def test_register_makes_a_plain_connect_session_read_with_filters(new_connect_session: Any,
                                                                  tmp_path: Path) -> None:
    cat = events(tmp_path)
    spark = new_connect_session
    assert str(spark.conf.get(PUSHDOWN_CONF, "false")).lower() == "false"
    unknown = spark.read.format("lakeformat").option("warehouse", cat.warehouse).load(
        "db.events")  # Connect resolves a plan when asked for its schema
    with pytest.raises(Exception, match="DATA_SOURCE_NOT_FOUND"):
        _ = unknown.columns
    lfs.register(spark)
    df = (spark.read.format("lakeformat").option("warehouse", cat.warehouse)
          .load("db.events").where("dt = '2024-01-02' AND id >= 3"))
    assert sorted(df.toArrow().to_pylist(), key=lambda r: r["id"]) == EXPECTED
