"""`lakeformat.spark.register(spark)` on a session the user built, as the README shows it: a
plain `SparkSession.builder...getOrCreate()` (classic, and Spark Connect's local `remote()`),
without any of `local_session()`'s settings. A filtered read must return the table's rows.

Each session runs in a child process: the suite's shared `spark` session (conftest) was built by
`local_session()` with filter pushdown already on, and a JVM holds one classic session, so a
plain session cannot be made beside it in this process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pytest

import lakeformat as lf

ROOT = Path(__file__).resolve().parents[2]

# The user's script: their own builder, register, a read with filters on a partition column
# and on a key column. It prints the rows it read as JSON on its last line.
SCRIPT = textwrap.dedent("""
    import json, sys
    from pyspark.sql import SparkSession
    import lakeformat.spark as lfs

    kind, warehouse = sys.argv[1], sys.argv[2]
    builder = SparkSession.builder.appName("user-session")
    if kind == "connect":
        builder = builder.remote("local[1]")
    else:
        builder = builder.master("local[1]").config("spark.ui.enabled", "false")
    spark = builder.getOrCreate()
    try:
        lfs.register(spark)
        df = (spark.read.format("lakeformat").option("warehouse", warehouse)
              .load("db.events").where("dt = '2024-01-02' AND id >= 3"))
        rows = sorted(df.toArrow().to_pylist(), key=lambda r: r["id"])
        print(json.dumps(rows))
    finally:
        spark.stop()
""")


@pytest.mark.parametrize("kind", ["classic", "connect"])
def test_register_makes_a_plain_session_read_with_filters(kind: str, tmp_path: Path) -> None:
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
    script = tmp_path / "user_session.py"
    script.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))}
    env.update(PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, str(script), kind, cat.warehouse], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    rows = json.loads(done.stdout.strip().splitlines()[-1])
    assert rows == [{"id": 3, "dt": "2024-01-02", "v": "x2"},
                    {"id": 4, "dt": "2024-01-02", "v": "d2"},
                    {"id": 5, "dt": "2024-01-02", "v": "e2"}]
