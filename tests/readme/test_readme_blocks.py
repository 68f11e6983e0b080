"""Every example in README.md runs, so the README cannot rot.

README.md's fenced blocks are parsed here. ```python blocks run top to bottom in one child
process and one namespace (a block may use names an earlier block defined; see
`python_blocks.py`), each a test of its own named by its README line and section. ```sh,
```bash and ```console blocks (for console, the `$ ` lines) each run with `bash -euo pipefail`
in a fresh directory, PATH starting with this venv's bin directory (so `lakeformat` is the
installed entry point) and `$LAKEFORMAT_WAREHOUSE` unset: a shell example sets up what it needs
itself. Only the exit status is checked, never the output text.

Markers, HTML comments on the line(s) right before a fence:

* `<!-- readme-test: skip (reason) -->` — the block is not run. Only for what cannot run in a
  test by nature (`make test` itself, Docker); `EXPECTED_SKIPS` lists them, so a new skip is a
  deliberate change of this file.
* `<!-- readme-test: s3 -->` — the block runs against the moto S3 server over HTTP on
  127.0.0.1 (`tests/support/s3server.py`): the README's placeholder endpoint
  `http://127.0.0.1:9000` is replaced by the server's, and every bucket the block names
  (`s3://<bucket>/...`) is created first. moto accepts any credentials, so `"..."` stays.

Blocks of other languages (```text for synopses and usage, json, yaml, ...) are shown, not
run; a fence without a language is refused, so every block says which it is.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
PYTHON_RUNNER = Path(__file__).resolve().parent / "python_blocks.py"
# Not resolved: the venv's python is a link to the system one, and its bin dir is the point.
VENV_BIN = Path(sys.executable).parent

SHELL_LANGS = {"sh", "bash", "console"}
RUN_LANGS = {"python"} | SHELL_LANGS
SHOWN_LANGS = {"text", "json", "yaml", "toml", "ini", "sql", "diff"}
PLACEHOLDER_ENDPOINT = "http://127.0.0.1:9000"

# The first code line of every skipped block, in README order.
EXPECTED_SKIPS = [
    "make demo   # creates .venv, starts an S3 server on 127.0.0.1 and an Airflow home (SQLite) in",
    "docker compose up -d --build     # then http://localhost:8080 (admin / admin)",
]

_FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
_MARKER = re.compile(r"^\s*<!--\s*readme-test:\s*(.*?)\s*-->\s*$")
_SKIP = re.compile(r"^skip\s*\((.*)\)$")
_BUCKET = re.compile(r"s3://([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])")
# Only against a hang: the CLI session (24 commands, ~15 s alone) took over 300 s on a 2-core
# machine at a load of 40.
_PYTHON_TIMEOUT = 900
_SHELL_TIMEOUT = 900


@dataclass(frozen=True)
class Block:
    lang: str
    line: int              # README line of the block's first code line
    source: str
    section: str           # the heading above it
    markers: tuple[str, ...]

    @property
    def first_line(self) -> str:
        return next((s for s in self.source.splitlines() if s.strip()), "")

    @property
    def skip_reason(self) -> str | None:
        for m in self.markers:
            found = _SKIP.match(m)
            if found:
                return found.group(1).strip()
        return None

    @property
    def skipped(self) -> bool:
        return any(_SKIP.match(m) for m in self.markers)

    @property
    def s3(self) -> bool:
        return "s3" in self.markers

    @property
    def id(self) -> str:
        slug = re.sub(r"[^a-z0-9]+", "-", self.section.lower()).strip("-")[:40]
        return f"L{self.line}-{slug}"


def parse_blocks(text: str) -> list[Block]:
    """The fenced blocks of a Markdown text, with their markers and section."""
    lines = text.splitlines()
    blocks: list[Block] = []
    section = "top"
    i = 0
    while i < len(lines):
        fence = _FENCE.match(lines[i])
        if not fence:
            if lines[i].startswith("#"):
                section = lines[i].lstrip("#").strip()
            i += 1
            continue
        indent, lang = fence.group(1), fence.group(2)
        markers: list[str] = []
        j = i - 1
        while j >= 0 and _MARKER.match(lines[j]):
            markers.insert(0, _MARKER.match(lines[j]).group(1))
            j -= 1
        body: list[str] = []
        k = i + 1
        while k < len(lines) and not re.match(rf"^{indent}```\s*$", lines[k]):
            body.append(lines[k][len(indent):] if lines[k].startswith(indent) else lines[k])
            k += 1
        if k == len(lines):
            raise AssertionError(f"README.md:{i + 1}: the fence is never closed")
        blocks.append(Block(lang, i + 2, "\n".join(body) + "\n", section, tuple(markers)))
        i = k + 1
    return blocks


BLOCKS = parse_blocks(README.read_text(encoding="utf-8"))
PYTHON_BLOCKS = [b for b in BLOCKS if b.lang == "python" and not b.skipped]
SHELL_BLOCKS = [b for b in BLOCKS if b.lang in SHELL_LANGS and not b.skipped]


def test_every_block_is_run_or_shown() -> None:
    """A fence names its language; markers sit only on blocks that run, and are known ones."""
    for b in BLOCKS:
        where = f"README.md:{b.line - 1}"
        assert b.lang in RUN_LANGS | SHOWN_LANGS, (
            f"{where}: fence language {b.lang!r}: use one of {sorted(RUN_LANGS)} (run by this "
            f"test) or {sorted(SHOWN_LANGS)} (shown only, e.g. a synopsis)")
        for m in b.markers:
            assert m == "s3" or _SKIP.match(m), (
                f"{where}: unknown marker {m!r}: 'skip (reason)' or 's3'")
        if b.markers:
            assert b.lang in RUN_LANGS, f"{where}: a marker on a {b.lang!r} block means nothing"
    assert PYTHON_BLOCKS and SHELL_BLOCKS, "the parser found no examples: is README.md there?"


def test_skips_are_few_and_deliberate() -> None:
    skipped = [b for b in BLOCKS if b.skipped]
    for b in skipped:
        assert b.skip_reason, f"README.md:{b.line - 1}: a skip names its reason: skip (why)"
        assert not b.s3, f"README.md:{b.line - 1}: skipped and s3 at once"
    assert [b.first_line for b in skipped] == EXPECTED_SKIPS


# The Spark example's session (`lfs.local_session`) is started the way the Spark suite starts
# its own (tests/spark/conftest.py): a JVM that compiles less and collects garbage on one
# thread, and a few shuffle partitions for a thousand rows. Set by the environment, so the
# README's code runs as written; it took ~40 s of CPU with Spark's defaults, ~27 s so.
_SPARK_SUBMIT_ARGS = ('--driver-java-options "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC" '
                      "--conf spark.sql.shuffle.partitions=4 --conf spark.default.parallelism=2 "
                      "pyspark-shell")


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    env.pop("LAKEFORMAT_WAREHOUSE", None)   # an example sets its own
    env["AWS_EC2_METADATA_DISABLED"] = "true"
    env["PYSPARK_SUBMIT_ARGS"] = _SPARK_SUBMIT_ARGS
    return env


def _s3_source(block: Block, request: pytest.FixtureRequest) -> str:
    """The block's source pointed at the moto server, with the buckets it names created."""
    if not block.s3:
        return block.source
    from tests.support.s3server import boto3_client

    endpoint = request.getfixturevalue("s3_server")
    client = boto3_client(endpoint)
    have = {b["Name"] for b in client.list_buckets().get("Buckets", [])}
    for bucket in sorted(set(_BUCKET.findall(block.source)) - have):
        client.create_bucket(Bucket=bucket)
    return block.source.replace(PLACEHOLDER_ENDPOINT, endpoint)


@pytest.fixture(scope="module")
def python_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
               ) -> tuple[dict[int, dict], str]:
    """Run every Python block once, in order, in one child process: ({line: result}, stderr)."""
    work, meta = tmp_path_factory.mktemp("readme-python"), tmp_path_factory.mktemp("readme-run")
    blocks_file, results_file = meta / "blocks.json", meta / "results.json"
    blocks_file.write_text(json.dumps(
        [{"line": b.line, "source": _s3_source(b, request)} for b in PYTHON_BLOCKS]))
    try:
        proc = subprocess.run(
            [sys.executable, str(PYTHON_RUNNER), str(README), str(blocks_file),
             str(results_file)],
            cwd=work, env=_env(), capture_output=True, text=True, timeout=_PYTHON_TIMEOUT)
        stderr = proc.stderr
    except subprocess.TimeoutExpired as e:
        stderr = f"timed out after {_PYTHON_TIMEOUT} s\n{e.stderr or ''}"
    results = json.loads(results_file.read_text()) if results_file.exists() else []
    return {r["line"]: r for r in results}, stderr


@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=[b.id for b in PYTHON_BLOCKS])
def test_python_block(block: Block, python_run: tuple[dict[int, dict], str]) -> None:
    results, stderr = python_run
    result = results.get(block.line)
    if result is None:
        pytest.fail(f"README.md:{block.line} ({block.section}): never ran; the run stopped "
                    f"before it. Child's stderr (end):\n{stderr[-4000:]}", pytrace=False)
    if not result["ok"]:
        earlier = [line for line, r in results.items() if line < block.line and not r["ok"]]
        note = (f"\n(an earlier block failed too, at README.md:{earlier[0]}: this may follow "
                f"from it)" if earlier else "")
        pytest.fail(f"README.md:{block.line} ({block.section}) fails:{note}\n"
                    f"{result['error']}\nits stdout:\n{result['output'][-2000:]}\n"
                    f"child's stderr (end):\n{stderr[-3000:]}", pytrace=False)


def _shell_script(block: Block, source: str) -> str:
    if block.lang == "console":  # the `$ ` lines are commands, the rest is their output
        source = "\n".join(s[2:] if s.startswith("$ ") else "" for s in source.splitlines())
    # Padded so that $LINENO (and bash's "README.md: line N") is the README's line; the trap
    # names the command that failed, since `set -e` exits without a word.
    trap = """trap 'echo "README.md:$LINENO: exit status $?: $BASH_COMMAND" >&2' ERR"""
    return trap + "\n" * (block.line - 1) + source


@pytest.mark.parametrize("block", SHELL_BLOCKS, ids=[b.id for b in SHELL_BLOCKS])
def test_shell_block(block: Block, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    script_dir, work = tmp_path / "script", tmp_path / "work"
    script_dir.mkdir()
    work.mkdir()
    script = script_dir / "README.md"
    script.write_text(_shell_script(block, _s3_source(block, request)))
    try:
        proc = subprocess.run(["bash", "-euo", "pipefail", str(script)], cwd=work, env=_env(),
                              capture_output=True, text=True, timeout=_SHELL_TIMEOUT)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"README.md:{block.line} ({block.section}): timed out after "
                    f"{_SHELL_TIMEOUT} s\nstdout:\n{e.stdout}\nstderr:\n{e.stderr}",
                    pytrace=False)
    if proc.returncode != 0:
        pytest.fail(f"README.md:{block.line} ({block.section}): exit status {proc.returncode}\n"
                    f"stdout:\n{proc.stdout[-4000:]}\nstderr:\n{proc.stderr[-4000:]}",
                    pytrace=False)
