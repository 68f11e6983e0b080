"""The Airflow provider's costs against Airflow's own: DAG-file parse time and operator overhead.

1. **Parse time per DAG file** of the project's `dags/*.py` (the Airflow suite's
   `tests/airflow/dag_files/*.py` while `dags/` holds none; or `--dag-file`), in a fresh
   process per file and run: the time of `import airflow.sdk` (the peer: Airflow itself, paid
   by every DAG file), then the time to import the DAG file on top of it as Airflow's importer
   does. Median of `--parse-runs` after an untimed run. Target: < 0.2 s beyond Airflow's
   import; and no pyarrow, pyspark or boto3 in `sys.modules` after the parse (FAIL), since the
   scheduler parses DAG files every 30 s. Also timed: what a task's first call then loads.
2. **Operator overhead at `dag.test()`**: each operator in a one-task DAG of the bench's own
   DAG file (table and input files from `run_conf` params) against the same `lakeformat` call
   made directly (the peer, timed with opening catalog and table, as the operator does) on a
   twin table. The twins go through the same sequence — ingest of 3 small Parquet files, full
   compaction, snapshot expiry, schema-file retention, orphan listing (dry run), a tag,
   partition expiry, rollback to the tag (dry run), an alter — so each step starts from the
   same state on both. Overhead = `dag.test()` − library per repetition, median of `--repeat`.
   Target: <= 1.5 s per task. Not counted: the process's first `dag.test()` (a no-op task;
   Airflow's ~6 s warm-up, reported) and a warm-up pass of the sequence (first imports, first
   run of each DAG); then the warm heap is frozen (`gc.freeze()`, as Airflow does before it
   forks workers; `--no-gc-freeze`), since full collections of it took up to 1 s here and hit
   either side at random. A no-op task's `dag.test()` is timed too: Airflow's floor. The
   operators' XCom results must report the counts the library's do, and the twins must end
   with the same rows, snapshots, schemas and tags (exit 1 otherwise, or when a task fails).

Airflow is configured before its first import: a temporary AIRFLOW_HOME (SQLite, no examples)
whose DAGs folder holds only the bench's DAG file, as `dag.test()` re-parses the whole folder
on every call (the parsed DAG files get a folder of their own). Tables live on a moto S3 server
on 127.0.0.1 in a child process (`--storage local`: a folder). All is removed at the end.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median
from typing import Any

HERE = Path(__file__).resolve().parent
# `python bench/airflow.py` puts bench/ first on sys.path, where this file would shadow the
# `airflow` package itself: take it off before anything imports airflow.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
REPO = HERE.parent
TARGET_PARSE = 0.2  # seconds a DAG file may add to `import airflow.sdk`
TARGET_OVERHEAD = 1.5  # seconds dag.test() of one operator may add to the library call
HEAVY = ("pyarrow", "pyspark", "boto3")  # never at DAG-parse time
TASK_MODULES = ("lakeformat.catalog", "lakeformat.ingest", "boto3")  # an S3 ingest task's first
DAG_PREFIX = "lfbench_"
START = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)


def say(msg: str = "") -> None:
    print(msg, flush=True)


def heavy_loaded() -> list[str]:
    """Which of HEAVY (or a submodule of one) this process has imported."""
    return [h for h in HEAVY if any(m == h or m.startswith(h + ".") for m in sys.modules)]


# -- Airflow's configuration ---------------------------------------------------------------------
def configure_airflow(home: Path) -> Path:
    """Airflow reads its configuration on first import: set it up before that. Returns the DAGs
    folder."""
    dags = home / "dags"
    dags.mkdir(parents=True)
    os.environ.update({
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
        "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
        "AIRFLOW__CORE__DAGBAG_IMPORT_TIMEOUT": "120",
        "AIRFLOW__LOGGING__LOGGING_LEVEL": "WARNING",
        "AIRFLOW__CORE__ALLOWED_DESERIALIZATION_CLASSES_REGEXP": r"(airflow|lakeformat.*)\..*",
        # the checkout's library and provider first (children too), ahead of an installed copy
        "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "plugins"),
                                       *filter(None, [os.environ.get("PYTHONPATH")])]),
    })
    os.environ.pop("AIRFLOW_CONN_LAKEFORMAT_DEFAULT", None)
    # Airflow's API server imports fastapi's test client, which warns about httpx: not ours
    warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
    sys.path[:0] = [str(REPO), str(REPO / "plugins")]
    return dags


# -- 1. parse time -------------------------------------------------------------------------------
def child_parse(path: str) -> dict[str, Any]:
    """Runs in a fresh process: time `import airflow.sdk`, then the DAG file's import the way
    Airflow's Python importer does it (unique module name, autoregistered DAGs)."""
    import importlib.machinery
    import importlib.util

    start = time.perf_counter()
    import airflow.sdk  # noqa: F401 - the peer

    sdk_s = time.perf_counter() - start
    after_sdk = heavy_loaded()
    # what Airflow's importer already holds when it parses a file: not the DAG file's cost
    from airflow.sdk import DAG
    from airflow.sdk.definitions._internal.contextmanager import DagContext

    name = "lfbench_parsed_" + Path(path).stem
    sys.path.insert(0, str(Path(path).parent))
    DagContext.autoregistered_dags.clear()
    DagContext.current_autoregister_module_name = name
    start = time.perf_counter()
    loader = importlib.machinery.SourceFileLoader(name, path)
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, loader))
    sys.modules[name] = module
    loader.exec_module(module)
    parse_s = time.perf_counter() - start
    dags = {o.dag_id for o in vars(module).values() if isinstance(o, DAG)}
    dags |= {d.dag_id for d, _ in DagContext.autoregistered_dags}
    after_parse = heavy_loaded()
    start = time.perf_counter()  # what a task's first call loads, which the parse deferred
    for name in TASK_MODULES:
        importlib.import_module(name)
    return {"sdk_s": sdk_s, "parse_s": parse_s, "dags": len(dags), "after_sdk": after_sdk,
            "after_parse": after_parse, "task_imports_s": time.perf_counter() - start}


def run_parse_child(path: Path, timeout: float) -> dict[str, Any]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child-parse", str(path)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=REPO)
    except subprocess.TimeoutExpired:
        return {"error": f"no result after {timeout:.0f} s"}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        last = [ln for ln in proc.stderr.splitlines() if ln.strip()][-1:] or ["no output"]
        return {"error": f"exit {proc.returncode}: {last[0]}"}
    return json.loads(lines[-1])


def dag_files(args: argparse.Namespace) -> tuple[list[Path], list[Path], str]:
    """(files to link into the parse folder, the DAG files among them, where they come from)."""
    if args.dag_file:
        files = [Path(p).resolve() for p in args.dag_file]
        return files, files, "--dag-file"
    for folder in (REPO / "dags", REPO / "tests" / "airflow" / "dag_files"):
        # Airflow's safe-mode heuristic skips files that never mention airflow and dag; the
        # others are linked too, for DAG files that import a helper module beside them
        texts = {p: p.read_bytes().lower() for p in sorted(folder.glob("*.py"))}
        found = [p for p, t in texts.items() if b"airflow" in t and (b"dag" in t or b"asset" in t)]
        if found:
            return list(texts), found, str(folder.relative_to(REPO)) + "/"
    return [], [], "nothing"


def parse_times(args: argparse.Namespace, home: Path) -> tuple[list[str], list[str], bool]:
    """Part 1: (table lines, target lines, whether a DAG file failed to import)."""
    every, files, origin = dag_files(args)
    if not files:
        return ["1. DAG file parse time: no DAG files found"], [], True
    (home / "parse").mkdir()
    for f in every:
        (home / "parse" / f.name).symlink_to(f)
    links = [home / "parse" / f.name for f in files]
    say(f"1. parsing {len(links)} DAG files from {origin} in fresh processes "
        f"(runs per file: {args.parse_runs}, after 1 warm-up run) ...")
    run_parse_child(links[0], args.timeout)  # warm-up: page cache, Airflow's first config
    runs: dict[str, list[dict[str, Any]]] = {p.name: [] for p in links}
    for _ in range(args.parse_runs):  # files interleaved: a busy moment hits them alike
        for p in links:
            runs[p.name].append(run_parse_child(p, args.timeout))
    lines = [f"1. DAG file parse time ({origin}; fresh process per run, median of "
             f"{args.parse_runs})",
             f"  {'file':<34} {'DAGs':>4} {'import airflow.sdk':>18} {'file on top':>12}  "
             f"{'target':<12} heavy modules after parse"]
    medians: dict[str, float] = {}
    clean, broken = True, False
    for name, results in runs.items():
        errors = [r["error"] for r in results if "error" in r]
        if errors:
            broken = True
            lines.append(f"  {name:<34} FAILED to import: {errors[0]}")
            continue
        sdk = median([r["sdk_s"] for r in results])
        parse = medians[name] = median([r["parse_s"] for r in results])
        ok = parse < TARGET_PARSE
        heavy = sorted({h for r in results for h in r["after_parse"]})
        from_sdk = sorted({h for r in results for h in r["after_sdk"]})
        clean &= not heavy
        heavy_text = (f"FAIL: {', '.join(heavy)}" if heavy else "none (OK)") + (
            f" ({', '.join(from_sdk)} already by airflow.sdk)" if from_sdk else "")
        lines.append(f"  {name:<34} {results[0]['dags']:>4} {sdk:>16.3f} s {parse:>10.3f} s  "
                     f"{'< ' + str(TARGET_PARSE) + ' s ' + ('met' if ok else 'MISSED'):<12} "
                     f"{heavy_text}")
    loads = [r["task_imports_s"] for rs in runs.values() for r in rs if "error" not in r]
    if loads:
        lines += [f"  then a task's first call loads {', '.join(TASK_MODULES)}: "
                  f"{median(loads):.3f} s in the same fresh process",
                  "  (every task pays it in a deployment, where Airflow 3 runs each task in a "
                  "process of its own;", "  part 2 leaves it out: dag.test() runs every task "
                  "in one process)"]
    worst = max(medians.items(), key=lambda kv: kv[1], default=None)
    met = not broken and all(v < TARGET_PARSE for v in medians.values())
    targets = [f"target: DAG file parse < {TARGET_PARSE} s beyond import airflow.sdk: "
               + ("met" if met else "MISSED")
               + (f" (slowest {worst[0]}: {worst[1]:.3f} s)" if worst else ""),
               f"target: no {', '.join(HEAVY)} after parsing a DAG file: "
               + ("met" if clean and not broken else "MISSED")]
    return lines, targets, broken


# -- 2. operator overhead ------------------------------------------------------------------------
@dataclass(frozen=True)
class Step:
    """One operator and the library call it wraps, with the same arguments."""

    name: str  # task id (DAG id: DAG_PREFIX + name), and the Table method unless `call` is given
    label: str
    operator: str  # class in lakeformat_airflow.operators
    kwargs: dict[str, Any]  # the operator's arguments besides `table`
    call: Callable[[Any, str], Any] | None = None  # (table, source glob) -> library result

    def library(self, table: Any, source: str) -> Any:
        if self.call is not None:
            return self.call(table, source)
        return getattr(table, self.name)(**self.kwargs)


def _ingest(table: Any, source: str) -> Any:
    from lakeformat_airflow.operators.write import ingest_files

    return ingest_files(table, source)


def _alter(table: Any, _: str) -> Any:
    import lakeformat as lf

    schema = table.alter([lf.SchemaChange.set_option("snapshot.num-retained.min", "5")])
    return {"schema_id": schema.id}


STEPS = [
    Step("ingest", "ingest 3 Parquet files", "LakeformatIngestOperator",
         {"source": "{{ params.source }}"}, _ingest),
    Step("compact", "compact (full)", "LakeformatCompactOperator", {"full": True}),
    Step("expire_snapshots", "expire snapshots", "LakeformatExpireSnapshotsOperator",
         {"retain_min": 1, "retain_max": 1}),
    Step("clean_schemas", "clean schemas", "LakeformatCleanSchemasOperator",
         {"retain_min": 1, "older_than": "0 s"}),
    Step("remove_orphan_files", "remove orphan files (dry)",
         "LakeformatRemoveOrphanFilesOperator", {"dry_run": True}),
    Step("create_tag", "create tag", "LakeformatCreateTagOperator", {"tag": "bench"},
         lambda t, _: t.create_tag("bench")),
    Step("expire_partitions", "expire partitions", "LakeformatExpirePartitionsOperator",
         {"expiration_time": "365 d"}),
    Step("rollback", "rollback (dry)", "LakeformatRollbackOperator",
         {"to": "bench", "dry_run": True}, lambda t, _: t.rollback_to("bench", dry_run=True)),
    Step("alter", "alter table", "LakeformatAlterTableOperator",
         {"changes": [{"action": "set_option", "key": "snapshot.num-retained.min",
                       "value": "5"}]}, _alter),
]


def dag_file_text() -> str:
    """The bench's DAG file: a no-op DAG and one DAG per step, table and source from params."""
    classes = ", ".join(sorted({s.operator for s in STEPS}))
    out = ['"""One-task DAGs of the lakeformat Airflow benchmark (written by bench/airflow.py)."""',
           "import datetime as dt", "", "from airflow.sdk import DAG, Param, task",
           f"from lakeformat_airflow.operators import {classes}", "",
           f"START = dt.datetime({START.year}, {START.month}, {START.day}, tzinfo=dt.UTC)",
           'PARAMS = {"table": Param("bench.t", type="string"), '
           '"source": Param("", type="string")}', "",
           f'with DAG("{DAG_PREFIX}noop", schedule=None, start_date=START, catchup=False):',
           "    @task", "    def noop():", "        return None", "", "    noop()", ""]
    for s in STEPS:
        args = "".join(f", {k}={v!r}" for k, v in s.kwargs.items())
        out += [f'with DAG("{DAG_PREFIX}{s.name}", schedule=None, start_date=START, '
                "catchup=False, params=PARAMS):",
                f'    {s.operator}(task_id="{s.name}", table="{{{{ params.table }}}}"{args})',
                ""]
    return "\n".join(out)


def prepare_table(catalog: Any, name: str, today: str) -> None:
    """A table with history for every step: schemas 0-2 (data only under 2, so schema
    retention has files to delete), three commits over an old and a current partition."""
    import pyarrow as pa

    import lakeformat as lf

    schema = pa.schema([pa.field("dt", pa.string(), nullable=False),
                        pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    t = catalog.create_table(name, schema, primary_keys=["dt", "id"], partition_keys=["dt"],
                             options={"bucket": "2"})
    t.alter([lf.SchemaChange.add_column("w", pa.int64())])
    t.alter([lf.SchemaChange.set_option("snapshot.num-retained.min", "1")])
    t = catalog.get_table(name)
    for i in range(3):
        ids = list(range(i * 40, i * 40 + 100))
        t.write(pa.table({"dt": ["2020-01-01"] * 50 + [today] * 50, "id": ids,
                          "v": [f"v{i}"] * 100, "w": ids}))


def write_sources(folder: Path, today: str) -> str:
    """Three small Parquet files for the ingest step; returns their glob."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir()
    for k in range(3):
        ids = list(range(1000 + 20 * k, 1020 + 20 * k))
        pq.write_table(pa.table({"dt": [today] * 20, "id": ids, "v": ["in"] * 20, "w": ids}),
                       folder / f"part-{k}.parquet")
    return str(folder / "*.parquet")


def counts(value: Any) -> Any:
    """What a result says was done, without names, paths, sizes or times: ints as they are,
    lists by length, dicts recursively (None for anything else)."""
    if isinstance(value, dict):  # sizes differ with file names, times and commit ids by run
        out = {k: counts(v) for k, v in value.items()
               if not any(w in k for w in ("bytes", "time", "duration", "identifier", "user"))}
        return {k: v for k, v in out.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return len(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return None


def differences(lib: Any, op: Any) -> dict[str, Any]:
    """{key: (operator's, library's)} where the operator's XCom result reports other counts
    than the library's result (keys both have; a result with none in common differs)."""
    a, b = counts(lib), counts(op)
    if not isinstance(a, dict) or not isinstance(b, dict) or not a.keys() & b.keys():
        return {} if a == b else {"result": (b, a)}
    return {k: (b[k], a[k]) for k in sorted(a.keys() & b.keys()) if a[k] != b[k]}


def table_state(catalog: Any, name: str) -> tuple[Any, ...]:
    t = catalog.get_table(name)
    rows = t.read().sort_by([("dt", "ascending"), ("id", "ascending")]).to_pydict()
    return (rows, [s.id for s in t.snapshots()], [s.id for s in t.schemas()],
            sorted(tag.name for tag in t.list_tags()))


def xcom_result(run: Any, task_id: str) -> Any:
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        row = session.query(XComModel).filter_by(
            dag_id=run.dag_id, run_id=run.run_id, task_id=task_id, map_index=-1,
            key="return_value").one_or_none()
        value = None if row is None else row.value
    return json.loads(value) if isinstance(value, (str, bytes)) else value


def task_states(run: Any) -> dict[str, str]:
    from airflow.utils.session import create_session

    with create_session() as session:
        return {ti.task_id: str(ti.state) for ti in run.get_task_instances(session=session)}


@contextmanager
def warehouse(args: argparse.Namespace, home: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """(uri, options) of the warehouse: a folder, or a bucket of a moto S3 server on 127.0.0.1
    run by a child process (`--child-s3`). A store is a separate service: in this process its
    request handling would share the GIL with the code being timed, and its objects would
    lengthen this process's garbage collections (pauses of up to 1 s were seen)."""
    if args.storage == "local":
        yield str(home / "warehouse"), {}
        return
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child-s3"]
    with open(home / "s3-server.log", "w") as log:
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                                text=True, cwd=REPO, start_new_session=True)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        if not line.startswith("{"):
            proc.wait(timeout=10)
            tail = "\n".join((home / "s3-server.log").read_text().splitlines()[-15:])
            raise SystemExit(f"the S3 server did not start (exit {proc.returncode}):\n{tail}")
        server = json.loads(line)
        yield server["uri"], server["options"]
    finally:
        if proc.stdin:
            proc.stdin.close()  # the child's cue to stop its server and exit
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def child_s3() -> None:
    """The S3 server process: `lakeformat.demo.embedded_s3` until stdin closes."""
    from lakeformat.demo import embedded_s3

    with embedded_s3() as (uri, options):
        # moto takes any key: longer ones keep Airflow's masker from warning about short secrets
        options.update({"s3.access-key": "lakeformat-bench", "s3.secret-key": "bench-secret"})
        print(json.dumps({"uri": uri, "options": options}), flush=True)
        sys.stdin.read()


def set_connection(uri: str, options: dict[str, str]) -> None:
    """`lakeformat_default` in the environment, as a deployment's secrets would give it."""
    extra: dict[str, Any] = {k: {"true": True, "false": False}.get(v, v) for k, v in options.items()
                             if k not in ("s3.access-key", "s3.secret-key")}
    os.environ["AIRFLOW_CONN_LAKEFORMAT_DEFAULT"] = json.dumps({
        "conn_type": "lakeformat", "host": uri, "login": options.get("s3.access-key"),
        "password": options.get("s3.secret-key"), "extra": extra})


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


@dataclass
class Bench:
    """What every repetition of part 2 shares, and what it collected."""

    uri: str
    options: dict[str, str]
    bag: Any  # the DagBag of the bench's DAG file
    source: str  # glob of the input files
    today: str
    # seconds by "lib:<step>", "op:<step>", "noop" (no-op dag.test), "open" (catalog + table)
    times: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    problems: list[str] = field(default_factory=list)

    def table(self, name: str) -> Any:
        import lakeformat as lf

        return lf.Catalog(self.uri, options=self.options).get_table(name)


def repetition(b: Bench, rep: int, record: bool) -> None:
    """The step sequence on a fresh pair of twin tables: each step by the library on one, then
    by its operator's `dag.test()` on the other; then the twins are compared and dropped."""
    import lakeformat as lf

    catalog = lf.Catalog(b.uri, options=b.options)
    when = START + dt.timedelta(days=rep + 1)  # a run per DAG and date: a date per repetition
    what = f"repetition {rep}" if rep else "warm-up pass"
    times: dict[str, float] = {}
    run, times["noop"] = timed(lambda: b.bag.dags[DAG_PREFIX + "noop"].test(logical_date=when))
    if run.state != "success":
        b.problems.append(f"no-op ({what}): run {run.state}")
    lib_name, op_name = f"bench.lib_{rep}", f"bench.op_{rep}"
    for name in (lib_name, op_name):
        prepare_table(catalog, name, b.today)
    for step in STEPS:
        result, times["lib:" + step.name] = timed(
            lambda: step.library(b.table(lib_name), b.source))  # noqa: B023
        dag = b.bag.dags[DAG_PREFIX + step.name]
        run, times["op:" + step.name] = timed(lambda: dag.test(  # noqa: B023
            logical_date=when, run_conf={"table": op_name, "source": b.source}))
        if run.state != "success":
            b.problems.append(f"{step.name} ({what}): run {run.state}, tasks {task_states(run)}")
            continue
        lib_dict = result.to_dict() if hasattr(result, "to_dict") else result
        op_dict = xcom_result(run, step.name)
        diff = differences(lib_dict, op_dict)
        if diff:
            b.problems.append(f"{step.name} ({what}): (operator, library) differ in {diff}")
    if table_state(catalog, lib_name) != table_state(catalog, op_name):
        b.problems.append(f"{what}: the operators' table differs from the library's (rows, "
                          "snapshots, schemas or tags)")
    times["open"] = timed(lambda: b.table(lib_name))[1]
    for name in (lib_name, op_name):
        catalog.drop_table(name)
    say(f"  {what}: library / dag.test() s: " + ", ".join(
        f"{s.name} {times['lib:' + s.name]:.2f}/{times['op:' + s.name]:.2f}" for s in STEPS))
    for key, value in times.items() if record else ():
        b.times[key].append(value)


def overhead(args: argparse.Namespace, home: Path, dags_folder: Path
             ) -> tuple[list[str], list[str], bool]:
    """Part 2: (table lines, target lines, whether a run failed or a result differed)."""
    (dags_folder / "lakeformat_bench_dags.py").write_text(dag_file_text())
    today = dt.date.today().isoformat()
    source = write_sources(home / "landing", today)
    from airflow.dag_processing.dagbag import DagBag
    from airflow.utils.db import initdb

    import lakeformat as lf

    _, db_s = timed(initdb)
    bag = DagBag(dag_folder=dags_folder, safe_mode=False)
    if bag.import_errors:
        raise SystemExit(f"the bench's DAG file does not import: {bag.import_errors}")
    with warehouse(args, home) as (uri, options):
        set_connection(uri, options)
        where = f"moto S3 server at {options['s3.endpoint']}" if options else "local folder"
        say(f"2. operators against the library on a {where}: a warm-up pass and "
            f"{args.repeat} repetition(s) ...")
        lf.Catalog(uri, options=options).create_database("bench", exist_ok=True)
        b = Bench(uri, options, bag, source, today)
        run, first_s = timed(lambda: bag.dags[DAG_PREFIX + "noop"].test(logical_date=START))
        if run.state != "success":
            b.problems.append(f"first (no-op) run: {run.state}")
        repetition(b, 0, record=False)  # first imports and first runs of every DAG
        if not args.no_gc_freeze:
            gc.collect()
            gc.freeze()
        for rep in range(1, args.repeat + 1):
            repetition(b, rep, record=True)
    noop = median(b.times["noop"])
    lines = [f"2. Operator overhead at dag.test() ({where}; median of {args.repeat} after a "
             "warm-up pass; library = open catalog + table + call)",
             f"  Airflow metadata DB created in {db_s:.2f} s; first dag.test() of the process "
             f"(no-op task, not counted) {first_s:.2f} s",
             f"  no-op @task dag.test() (Airflow's floor for a one-task run) {noop:.3f} s; "
             f"opening catalog + table alone {median(b.times['open']):.3f} s",
             f"  {'operator':<28} {'library':>9} {'dag.test()':>11} {'overhead':>9} "
             f"{'- no-op':>9}  target"]
    worst = None
    for step in STEPS:
        libs, ops = b.times["lib:" + step.name], b.times["op:" + step.name]
        lib, op, over = median(libs), median(ops), median([o - x for o, x in zip(ops, libs)])
        if worst is None or over > worst[1]:
            worst = (step.name, over)
        mark = "met" if over <= TARGET_OVERHEAD else "MISSED"
        lines.append(f"  {step.label:<28} {lib:>7.3f} s {op:>9.3f} s {over:>7.3f} s "
                     f"{over - noop:>7.3f} s  <= {TARGET_OVERHEAD} s {mark}")
    check = "OK" if not b.problems else "MISMATCH OR FAILURE:\n    " + "\n    ".join(b.problems)
    lines.append(f"  operators' results and end states against the library's: {check}")
    ok = worst is not None and worst[1] <= TARGET_OVERHEAD
    targets = [f"target: operator overhead <= {TARGET_OVERHEAD} s per task: "
               + ("met" if ok else "MISSED")
               + (f" (largest {worst[0]}: {worst[1]:.3f} s)" if worst else "")]
    return lines, targets, bool(b.problems)


# -- main ----------------------------------------------------------------------------------------
def environment(args: argparse.Namespace) -> str:
    from importlib.metadata import PackageNotFoundError, version

    out = [f"Python {platform.python_version()}"]
    for dist in ("apache-airflow", "lakeformat", "pyarrow", "boto3", "moto"):
        try:
            out.append(f"{dist} {version(dist)}")
        except PackageNotFoundError:
            out.append(f"{dist} -")
    out += [f"{os.cpu_count()} cores", f"load average {os.getloadavg()[0]:.2f}",
            f"storage {args.storage}" + (" (--quick)" if args.quick else "")]
    return " | ".join(out)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="2 parse runs, 1 operator repetition")
    p.add_argument("--parse-runs", type=int, help="processes per DAG file (5; --quick 2)")
    p.add_argument("--repeat", type=int, help="operator sequence repetitions (3; --quick 1)")
    p.add_argument("--dag-file", action="append", default=[], metavar="PATH",
                   help="a DAG file to parse instead of the project's (repeatable)")
    p.add_argument("--storage", choices=("s3", "local"), default="s3")
    p.add_argument("--no-gc-freeze", action="store_true",
                   help="leave the warmed-up heap in the garbage collector's generations")
    p.add_argument("--skip", choices=("parse", "operators"), default=None)
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per parse process")
    p.add_argument("--child-parse", metavar="FILE", help=argparse.SUPPRESS)
    p.add_argument("--child-s3", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.parse_runs = args.parse_runs or (2 if args.quick else 5)
    args.repeat = args.repeat or (1 if args.quick else 3)
    if args.parse_runs < 1 or args.repeat < 1:
        p.error("--parse-runs and --repeat must be >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child_parse:
        print(json.dumps(child_parse(args.child_parse)), flush=True)
        return 0
    if args.child_s3:
        child_s3()
        return 0
    started = time.perf_counter()
    say(f"lakeformat Airflow benchmark | {environment(args)}")
    if os.getloadavg()[0] > 0.5:
        say("  note: other processes are using the CPU: figures will be noisy")
    home = Path(tempfile.mkdtemp(prefix="lf-bench-airflow-"))
    lines, targets, broken = [], [], False
    try:
        dags_folder = configure_airflow(home)
        parts = [lambda: parse_times(args, home), lambda: overhead(args, home, dags_folder)]
        for skip, part in zip(("parse", "operators"), parts):
            if args.skip != skip:
                more, target, failed = part()
                lines, targets, broken = lines + more, targets + target, broken or failed
    finally:
        shutil.rmtree(home, ignore_errors=True)
    say("\n" + "\n".join(lines) + "\n\n" + "\n".join(targets))
    say(f"(whole run {time.perf_counter() - started:.0f} s)")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
