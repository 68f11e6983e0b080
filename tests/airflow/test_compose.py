"""docker-compose.yml and the Dockerfile: the platform users start from, checked without a
Docker engine (these machines have none).

The compose file is read the way Compose reads it: Debian's `docker-compose` validates it
against the Compose schema and prints the resolved configuration (anchors merged, `${VAR:-x}`
replaced by the demo defaults), and the tests assert on that. Its parts are then checked with
the real pieces they name: airflow-init's script runs against an Airflow home (SQLite) and
creates the connections there, which go through Airflow's `Connection` and the provider's own
hook, the project's DAGs are parsed by Airflow's DagBag to collect the
connection ids their operators use, and the spark-connect service's command is run here (bound
to 127.0.0.1) and serves a lakeformat write and read whose Python workers import lakeformat.
`docker-compose` missing fails the run (`make docker-compose` installs it).
"""

from __future__ import annotations

import inspect
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from tests.support.serving import wait_until_serving

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILES = ("docker-compose.yml", "Dockerfile", ".dockerignore", "docker")
AIRFLOW_SERVICES = ("airflow-apiserver", "airflow-scheduler", "airflow-dag-processor",
                    "airflow-triggerer")
ONE_SHOT = ("airflow-init", "minio-init")
PROJECT_DAGS = ("lakeformat_dual_stream.py", "lakeformat_maintenance.py",
                "lakeformat_expire.py", "lakeformat_backfill.py")
INSTALL_HINT = ("docker-compose is not installed: run `make docker-compose` (it installs "
                "Debian's docker-compose package, which checks the compose file without a "
                "Docker engine)")


# -- the compose file as docker-compose reads it ----------------------------------------------
def _docker_compose(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`docker-compose ARGS` in `folder`, with an environment holding none of the file's
    variables (PATH and a scratch HOME only), so the demo defaults apply."""
    exe = shutil.which("docker-compose")
    if exe is None:
        pytest.fail(INSTALL_HINT)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(folder),
           "LANG": "C.UTF-8"}
    return subprocess.run([exe, *args], cwd=folder, env=env, capture_output=True, text=True,
                          timeout=120)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the compose file and the files it builds from, away from any `.env` of the
    checkout (docker-compose reads one from the project folder)."""
    folder = tmp_path_factory.mktemp("compose")
    for name in COMPOSE_FILES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, folder / name)
        else:
            shutil.copy2(source, folder / name)
    return folder


@pytest.fixture(scope="module")
def compose(project: Path) -> dict[str, Any]:
    """The resolved configuration `docker-compose config` prints."""
    done = _docker_compose(project, "config")
    assert done.returncode == 0, done.stderr
    return yaml.safe_load(done.stdout)


def init_connections(compose: dict[str, Any]) -> dict[str, str]:
    """{conn_id: Airflow connection JSON} airflow-init creates (its INIT_CONN_<ID> variables)."""
    env = service(compose, "airflow-init")["environment"]
    return {key.removeprefix("INIT_CONN_").lower(): value for key, value in env.items()
            if key.startswith("INIT_CONN_")}


def service(compose: dict[str, Any], name: str) -> dict[str, Any]:
    assert name in compose["services"], f"no service {name!r}: {sorted(compose['services'])}"
    return compose["services"][name]


def published(svc: dict[str, Any]) -> dict[int, tuple[str, int]]:
    """{container port: (host address, host port)} of a service's `ports` (as docker-compose
    prints them: `[address:]host:container[/proto]`)."""
    out = {}
    for entry in svc.get("ports", []):
        parts = str(entry).split("/")[0].split(":")
        address = parts[0] if len(parts) == 3 else "0.0.0.0"
        out[int(parts[-1])] = (address, int(parts[-2]))
    return out


def conf_value(command: list[str], key: str) -> str:
    """The value of `--conf KEY=VALUE` in a spark-submit command."""
    for flag, setting in zip(command, command[1:]):
        if flag == "--conf" and setting.startswith(key + "="):
            return setting.split("=", 1)[1]
    raise AssertionError(f"no --conf {key}=... in {command}")


def test_docker_compose_accepts_the_file(project: Path) -> None:
    done = _docker_compose(project, "config", "-q")
    assert done.returncode == 0, done.stderr
    # every ${VAR} has a default: a fresh checkout needs no .env
    assert "variable is not set" not in done.stderr, done.stderr


def test_airflow_services_merge_one_anchor() -> None:
    """The shared Airflow settings are written once (`x-airflow-common`) and merged by every
    Airflow service: PyYAML's node graph shows each service's `<<` aliasing that one node."""
    root = yaml.compose((ROOT / "docker-compose.yml").read_text())
    top = {key.value: value for key, value in root.value}
    assert "x-airflow-common" in top
    services = {key.value: value for key, value in top["services"].value}
    for name in (*AIRFLOW_SERVICES, "airflow-init"):
        merged = [value for key, value in services[name].value
                  if key.tag == "tag:yaml.org,2002:merge"]
        assert merged and merged[0] is top["x-airflow-common"], \
            f"{name} does not merge x-airflow-common"


def test_services_ports_and_health(compose: dict[str, Any]) -> None:
    names = set(compose["services"])
    assert {"minio", "minio-init", "postgres", "spark-connect", *ONE_SHOT,
            *AIRFLOW_SERVICES} <= names
    assert published(service(compose, "minio"))[9000][1] == 9000
    assert published(service(compose, "minio"))[9001][1] == 9001
    assert published(service(compose, "airflow-apiserver"))[8080][1] == 8080
    assert published(service(compose, "spark-connect"))[15002][1] == 15002
    for name in names:
        for address, _ in published(service(compose, name)).values():
            assert address == "127.0.0.1", f"{name} publishes on {address} by default"
    # every long-running service reports its health; one-shots are not restarted
    for name in names - set(ONE_SHOT):
        assert service(compose, name).get("healthcheck", {}).get("test"), name
    for name in ONE_SHOT:
        assert service(compose, name).get("restart") == "no", name


def test_start_order(compose: dict[str, Any]) -> None:
    def needs(name: str) -> dict[str, str]:
        return {k: v["condition"] for k, v in service(compose, name)["depends_on"].items()}

    assert needs("minio-init") == {"minio": "service_healthy"}
    assert needs("airflow-init") == {"postgres": "service_healthy"}
    for name in AIRFLOW_SERVICES:
        assert needs(name)["postgres"] == "service_healthy", name
        assert needs(name)["airflow-init"] == "service_completed_successfully", name
    scheduler = needs("airflow-scheduler")  # runs the tasks: bucket and execution API
    assert scheduler["minio-init"] == "service_completed_successfully"
    assert scheduler["airflow-apiserver"] == "service_healthy"
    # nothing waits for Spark Connect: with LAKEFORMAT_ENGINE=local it need not run at all
    # (`--scale spark-connect=0`), and a Spark task started before it answers is retried
    for name in (*AIRFLOW_SERVICES, *ONE_SHOT):
        assert "spark-connect" not in needs(name), name


def test_airflow_services_run_the_dockerfile_image(compose: dict[str, Any],
                                                   project: Path) -> None:
    image = service(compose, "airflow-apiserver")["image"]
    commands = {"airflow-apiserver": "api-server", "airflow-scheduler": "scheduler",
                "airflow-dag-processor": "dag-processor", "airflow-triggerer": "triggerer"}
    for name in (*AIRFLOW_SERVICES, "airflow-init", "spark-connect"):
        svc = service(compose, name)
        assert svc["image"] == image, name
        assert Path(svc["build"]["context"]) == project, name
        assert svc["build"].get("dockerfile", "Dockerfile") == "Dockerfile", name
    for name, command in commands.items():
        svc = service(compose, name)
        assert svc["command"] in (command, [command]), name
        env = svc["environment"]
        assert env["AIRFLOW__CORE__EXECUTOR"] == "LocalExecutor"
        assert env["AIRFLOW__CORE__LOAD_EXAMPLES"] == "false"
        # Admin -> Connections' Test button (Airflow 3.3 has it off by default)
        assert env["AIRFLOW__CORE__TEST_CONNECTION"] == "Enabled", name
        assert f"{project / 'dags'}:/opt/airflow/dags:ro" in svc["volumes"], name
        assert svc["volumes"] == service(compose, "airflow-apiserver")["volumes"], name
    # every Airflow process signs and checks execution-API tokens with the same secret
    secrets = {service(compose, n)["environment"]["AIRFLOW__API_AUTH__JWT_SECRET"]
               for n in (*AIRFLOW_SERVICES, "airflow-init")}
    assert len(secrets) == 1 and len(secrets.pop()) >= 64
    env = service(compose, "airflow-scheduler")["environment"]
    assert urlsplit(env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"]).netloc == \
        "airflow-apiserver:8080"
    assert urlsplit(env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"]).hostname == "postgres"
    # the admin airflow-init writes is the user the auth manager lists, in the file it reads
    init = service(compose, "airflow-init")
    assert init["command"] == ["bash", "/opt/lakeformat/airflow-init.sh"]
    assert init["environment"]["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS"] == \
        f"{init['environment']['AIRFLOW_ADMIN_USER']}:admin"
    passwords = env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE"]
    assert init["environment"]["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE"] == passwords
    auth_volume = [v for v in service(compose, "airflow-apiserver")["volumes"]
                   if v.split(":")[1] == str(Path(passwords).parent)]
    assert auth_volume and auth_volume[0] in init["volumes"]


def _airflow(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """The `airflow` command of this venv with the environment `env`."""
    return subprocess.run([str(Path(sys.executable).parent / "airflow"), *args], env=env,
                          capture_output=True, text=True, timeout=300)


def _connections(env: dict[str, str]) -> dict[str, dict[str, Any]]:
    """{conn_id: connection} of the metadata DB, as `airflow connections list --show-values
    -o json` shows them (the fields `connections get -o json` shows, one interpreter for all)."""
    done = _airflow(env, "connections", "list", "--show-values", "-o", "json")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return {c["conn_id"]: c for c in json.loads(done.stdout[done.stdout.index("["):])}


def test_airflow_init_script_migrates_sets_the_admin_password_and_creates_connections(
        compose: dict[str, Any], tmp_path: Path) -> None:
    """docker/airflow-init.sh, run here with the airflow-init service's settings (on SQLite and
    a scratch passwords file instead of PostgreSQL and the volume): the connections the DAGs
    use land in the metadata DB (Admin -> Connections), and a second run keeps an edited one."""
    import sqlite3

    init = service(compose, "airflow-init")["environment"]
    passwords = tmp_path / "auth" / "passwords.json"
    env = {**{k: str(v) for k, v in init.items()}, **{
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
        "HOME": str(tmp_path), "AIRFLOW_HOME": str(tmp_path / "home"),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{tmp_path / 'airflow.db'}",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords)}}
    passwords.parent.mkdir()
    passwords.write_text('{"viewer": "kept"}\n')
    done = subprocess.run(["bash", str(ROOT / "docker" / "airflow-init.sh")], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    with sqlite3.connect(tmp_path / "airflow.db") as db:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
    assert {"alembic_version", "dag", "task_instance", "connection"} <= tables
    assert json.loads(passwords.read_text()) == {
        "viewer": "kept", init["AIRFLOW_ADMIN_USER"]: init["AIRFLOW_ADMIN_PASSWORD"]}

    # the connections, as the UI and the CLI see them in the DB (no AIRFLOW_CONN_* is set)
    assert not any(k.startswith("AIRFLOW_CONN_") for k in env)
    wanted = init_connections(compose)
    assert {"lakeformat_default", "spark_default"} <= set(wanted)
    made = _connections(env)
    assert set(made) == set(wanted), made
    for conn_id, definition in wanted.items():
        got, spec = made[conn_id], json.loads(definition)
        assert got["conn_type"] == spec["conn_type"] and got["host"] == spec["host"], got
        assert str(got["port"]) == str(spec.get("port", "None")), got
        assert (got["extra_dejson"] or {}) == spec.get("extra", {}), got
    lake = made["lakeformat_default"]
    assert lake["login"] == json.loads(wanted["lakeformat_default"])["login"]

    # re-run after an edit in the UI (here in the DB row the UI's edit form writes): the edit
    # is kept, nothing fails
    with sqlite3.connect(tmp_path / "airflow.db") as db:
        edited = db.execute("UPDATE connection SET host = 's3://edited/warehouse' "
                            "WHERE conn_id = 'lakeformat_default'").rowcount
    assert edited == 1
    again = subprocess.run(["bash", str(ROOT / "docker" / "airflow-init.sh")], env=env,
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-3000:]
    after = _connections(env)
    assert after["lakeformat_default"]["host"] == "s3://edited/warehouse"
    assert after["lakeformat_default"]["login"] == lake["login"]
    assert after["spark_default"]["host"] == "sc://spark-connect"


# -- connections and DAG settings --------------------------------------------------------------
def test_connections_are_airflow_connections_to_the_services(
        compose: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.sdk import Connection

    from lakeformat_airflow.hooks.lakeformat import LakeformatHook
    from lakeformat_airflow.hooks.spark import spark_url

    # the services read connections from the metadata DB only: an AIRFLOW_CONN_* variable
    # would hide the connection from Admin -> Connections and override edits made there
    for name in (*AIRFLOW_SERVICES, "airflow-init"):
        env = service(compose, name)["environment"]
        assert not [k for k in env if k.startswith("AIRFLOW_CONN_")], name
    conns = init_connections(compose)
    lake = Connection.from_json(conns["lakeformat_default"], "lakeformat_default")
    assert (lake.conn_type, lake.host) == ("lakeformat", "s3://lakeformat/warehouse")
    spark = Connection.from_json(conns["spark_default"], "spark_default")
    assert (spark.conn_type, spark.host, spark.port) == ("spark", "sc://spark-connect", 15002)
    # Airflow masks every extra value in task logs, warning of each under 5 characters
    for conn_id, definition in conns.items():
        short = {k: v for k, v in json.loads(definition).get("extra", {}).items()
                 if len(str(v)) < 5}
        assert not short, f"{conn_id}: extra values too short to mask: {short}"

    # the hook builds the catalog the tasks open: MinIO's keys, its service and API port
    monkeypatch.setenv("AIRFLOW_CONN_LAKEFORMAT_DEFAULT", conns["lakeformat_default"])
    warehouse, options = LakeformatHook("lakeformat_default").catalog_config()
    minio = service(compose, "minio")
    assert warehouse == "s3://lakeformat/warehouse"
    assert options["s3.access-key"] == minio["environment"]["MINIO_ROOT_USER"]
    assert options["s3.secret-key"] == minio["environment"]["MINIO_ROOT_PASSWORD"]
    assert options["s3.region"] == "us-east-1"
    endpoint = urlsplit(options["s3.endpoint"])
    assert endpoint.hostname == "minio"
    api_port = minio["command"][minio["command"].index("--address") + 1]
    assert endpoint.port == int(api_port.rsplit(":", 1)[1]) == 9000
    assert endpoint.port in published(minio)

    # the Spark URL the operators' session is opened on: the Connect server and its port
    url = urlsplit(spark_url(spark))
    assert url.scheme == "sc" and url.hostname == "spark-connect"
    command = service(compose, "spark-connect")["command"]
    assert url.port == int(conf_value(command, "spark.connect.grpc.binding.port"))
    assert conf_value(command, "spark.connect.grpc.binding.address") == "0.0.0.0"
    assert url.port in published(service(compose, "spark-connect"))


def test_landing_and_warehouse_are_in_the_bucket_minio_init_creates(
        compose: dict[str, Any]) -> None:
    script = " ".join(service(compose, "minio-init")["command"])
    alias = re.search(r"mc alias set (\S+) (\S+)", script)
    assert alias, script
    assert urlsplit(alias.group(2)).hostname == "minio"
    made = re.search(rf"mc mb (?:--\S+ )*{re.escape(alias.group(1))}/([a-z0-9.-]+)", script)
    assert made, script
    bucket = made.group(1)
    for name in AIRFLOW_SERVICES:
        env = service(compose, name)["environment"]
        landing = urlsplit(env["LAKEFORMAT_LANDING"])
        assert (landing.scheme, landing.netloc) == ("s3", bucket), env["LAKEFORMAT_LANDING"]
        assert landing.path.strip("/"), "landing is a prefix of the bucket"
        assert env["LAKEFORMAT_ENGINE"] == "spark"
    from airflow.sdk import Connection

    lake = Connection.from_json(init_connections(compose)["lakeformat_default"])
    assert urlsplit(lake.host).netloc == bucket


def _conn_ids(task: Any) -> dict[str, str]:
    """{argument: connection id} of every `*_conn_id` argument of a task's operator: the value
    the task was given, else the operator's default (a mapped task keeps its class and the
    arguments given to `.partial()`)."""
    from airflow.sdk.definitions.mappedoperator import MappedOperator

    mapped = isinstance(task, MappedOperator)
    cls = task.operator_class if mapped else type(task)
    found: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        for name, param in inspect.signature(init).parameters.items():
            if name.endswith("conn_id") and isinstance(param.default, str):
                found[name] = param.default
    for name in found:
        given = task.partial_kwargs.get(name) if mapped else getattr(task, name, None)
        if given is not None:
            found[name] = given
    return found


def test_every_conn_id_of_the_project_dags_is_defined(compose: dict[str, Any],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.dag_processing.dagbag import DagBag

    env = service(compose, "airflow-dag-processor")["environment"]
    for key, value in env.items():  # parse the DAGs as the stack's DAG processor does
        if key.startswith("LAKEFORMAT_"):
            monkeypatch.setenv(key, str(value))
    assert set(PROJECT_DAGS) <= {p.name for p in (ROOT / "dags").glob("*.py")}
    bag = DagBag(dag_folder=ROOT / "dags", safe_mode=False)
    assert not bag.import_errors, bag.import_errors
    assert set(PROJECT_DAGS) <= {Path(dag.fileloc).name for dag in bag.dags.values()}
    used: dict[str, set[str]] = {}
    for dag in bag.dags.values():
        for task in dag.tasks:
            for conn_id in _conn_ids(task).values():
                used.setdefault(conn_id, set()).add(f"{dag.dag_id}.{task.task_id}")
    assert {"lakeformat_default", "spark_default"} <= set(used), used
    missing = {c: users for c, users in used.items() if c not in init_connections(compose)}
    assert not missing, f"airflow-init does not create connections the DAGs use: {missing}"


# -- the Dockerfile -----------------------------------------------------------------------------
def _instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, continuation lines joined."""
    text = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), " ".join(rest.split())))
    return out


def _dockerignored(patterns: list[str], path: str) -> bool:
    """Whether `.dockerignore` keeps `path` out of the build context (Docker's rules: the last
    matching pattern wins, `!` re-includes, a pattern matching a parent folder matches)."""
    def regex(pattern: str) -> re.Pattern[str]:
        out = ""
        for token in re.split(r"(\*\*/|\*\*|\*|\?)", pattern):
            out += {"**/": "(?:.*/)?", "**": ".*", "*": "[^/]*", "?": "[^/]"}.get(
                token, re.escape(token))
        return re.compile(out)

    parts = path.split("/")
    prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    ignored = False
    for pattern in patterns:
        negate = pattern.startswith("!")
        if any(regex(pattern.lstrip("!").strip("/")).fullmatch(p) for p in prefixes):
            ignored = not negate
    return ignored


def test_dockerfile_builds_airflow_with_java17_and_the_project() -> None:
    steps = _instructions()
    args = {rest.split("=", 1)[0]: rest.split("=", 1)[1] for word, rest in steps
            if word == "ARG" and "=" in rest}
    base = next(rest for word, rest in steps if word == "FROM")
    for name, value in args.items():
        base = base.replace(f"${{{name}}}", value)
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    pin = next(r for r in pyproject["project"]["optional-dependencies"]["airflow"]
               if r.startswith("apache-airflow=="))
    assert base == f"apache/airflow:{pin.split('==')[1]}-python3.11", base

    def user_at(index: int) -> str:
        """The USER a step runs as (the Airflow image's own is airflow)."""
        return ([rest for word, rest in steps[:index] if word == "USER"] or ["airflow"])[-1]

    runs = [(i, rest) for i, (word, rest) in enumerate(steps) if word == "RUN"]
    java = [i for i, rest in runs if re.search(r"apt-get install .*openjdk-17-jre", rest)]
    assert java and user_at(java[0]) == "root"
    assert ("ENV", "JAVA_HOME=/usr/lib/jvm/java-17") in steps
    pip = [(i, rest) for i, rest in runs if "pip install" in rest]
    assert len(pip) == 1 and user_at(pip[0][0]) == "airflow"
    target = re.search(r'"(/\S+)\[([a-z,]+)\]"', pip[0][1])
    assert target and set(target.group(2).split(",")) >= {"airflow", "spark"}, pip[0][1]
    assert '"apache-airflow==${AIRFLOW_VERSION}"' in pip[0][1]
    copies = []  # (sources, destination)
    for word, rest in steps:
        if word == "COPY":
            tokens = [t for t in rest.split() if not t.startswith("--")]
            copies.append((tokens[:-1], tokens[-1]))
    into_target = {src for sources, dest in copies if dest.startswith(target.group(1))
                   for src in sources}
    assert {"pyproject.toml", "README.md", "lakeformat", "plugins"} <= into_target, copies
    assert (["docker/airflow-init.sh"], "/opt/lakeformat/airflow-init.sh") in copies
    assert any(word == "ENV" and "PYSPARK_PYTHON=" in rest for word, rest in steps)

    patterns = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
                if line.strip() and not line.startswith("#")]
    for path in ("pyproject.toml", "README.md", "lakeformat/table.py",
                 "plugins/lakeformat_airflow/__init__.py", "docker/airflow-init.sh"):
        assert not _dockerignored(patterns, path), f".dockerignore drops {path}"
    for path in (".venv/bin/python", "tests/airflow/conftest.py", ".git/HEAD",
                 "lakeformat/__pycache__/table.cpython-311.pyc"):
        assert _dockerignored(patterns, path), f".dockerignore keeps {path}"


# -- the spark-connect service, run here ------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture()
def connect_server(compose: dict[str, Any], tmp_path: Path) -> Iterator[tuple[int, list[str]]]:
    """The spark-connect service's command, run from this venv on 127.0.0.1 and a free port
    (and without its web UI); yields (port, the service's healthcheck test)."""
    svc = service(compose, "spark-connect")
    port = _free_port()
    command = []
    for arg in svc["command"]:
        if arg.startswith("spark.connect.grpc.binding.address="):
            arg = "spark.connect.grpc.binding.address=127.0.0.1"
        elif arg.startswith("spark.connect.grpc.binding.port="):
            arg = f"spark.connect.grpc.binding.port={port}"
        command.append(arg)
    assert command[0] == "spark-submit" and command[-1] == "spark-internal"
    command[0] = str(Path(sys.executable).parent / "spark-submit")
    command[-1:-1] = ["--conf", "spark.ui.enabled=false"]
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    log_path = tmp_path / "spark-connect.log"
    with open(log_path, "wb") as log:
        server = subprocess.Popen(command, env=env, cwd=tmp_path, stdout=log,
                                  stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_until_serving(port, server, log_path, 180, "the spark-connect command")
        check = [str(p).replace("15002", str(port)) for p in svc["healthcheck"]["test"]]
        yield port, check
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait()


def test_spark_connect_command_serves_lakeformat_jobs(connect_server: tuple[int, list[str]],
                                                     tmp_path: Path) -> None:
    import pyarrow as pa
    from pyspark.sql.connect.session import SparkSession as RemoteSparkSession

    import lakeformat as lf
    import lakeformat.spark as lfs

    port, check = connect_server
    assert check[0] == "CMD" and check[1] == "python", check
    assert subprocess.run([sys.executable, *check[2:]], timeout=60).returncode == 0

    cat = lf.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    table = cat.create_table("db.t", pa.schema([pa.field("id", pa.int64(), nullable=False),
                                                ("v", pa.string())]),
                             primary_keys=["id"], options={"bucket": "2"})
    spark = RemoteSparkSession.builder.remote(f"sc://127.0.0.1:{port}").getOrCreate()
    try:
        lfs.register(spark)
        written = lfs.write(spark.range(0, 50).selectExpr("id", "CAST(id AS STRING) AS v"),
                            table, merge_schema=False)
        assert written.rows_written == 50
        got = (spark.read.format("lakeformat").option("warehouse", cat.warehouse).load("db.t")
               .where("id >= 48").toArrow().sort_by("id").to_pylist())
    finally:
        spark.stop()
    assert got == [{"id": 48, "v": "48"}, {"id": 49, "v": "49"}]
    assert table.read().num_rows == 50
