"""How deep the property and stress tests search, by named knobs.

`make test` runs every property test at a default depth: enough examples that each test still
reaches the cases it is there for (tests/README.md lists them), at a cost the ten-minute budget
of `make test` allows. `make test-deep` sets `TEST_DEPTH=deep` (and `STRESS_RUNS=5`): every
property test runs at its deep count, the counts the suite ran on every change before — for
nightly runs and for changes to commit, merge or compaction code.

A test's own variable (`MERGE_PROPERTY_EXAMPLES=2000`, ...) wins over both, for a search
aimed at one test. A `TEST_DEPTH` other than `deep` or `default` (or empty) is refused, so
a typo never runs the shallow suite while its author believes it deep.
"""

from __future__ import annotations

import os

__all__ = ["DEPTH", "examples", "stress_runs"]

_DEPTHS = ("default", "deep")


def _depth() -> str:
    value = os.environ.get("TEST_DEPTH", "").strip() or "default"
    if value not in _DEPTHS:
        raise ValueError(f"TEST_DEPTH={value!r} is not a depth: use 'deep' (make test-deep) or "
                         "'default' (make test), or leave it unset")
    return value


#: "default" (make test) or "deep" (make test-deep)
DEPTH = _depth()


def _int_env(name: str) -> int | None:
    text = os.environ.get(name, "").strip()
    if not text:
        return None
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"{name}={text!r} is not a whole number of examples") from None
    if value < 1:
        raise ValueError(f"{name}={value} must be at least 1")
    return value


def examples(default: int, deep: int, env: str | None = None) -> int:
    """Hypothesis `max_examples` for one property test: `default` under `make test`, `deep`
    under `make test-deep`; the test's own variable `env`, when set, wins."""
    if env is not None:
        chosen = _int_env(env)
        if chosen is not None:
            return chosen
    return deep if DEPTH == "deep" else default


def stress_runs(default: int, deep: int = 5, env: str = "STRESS_RUNS") -> int:
    """Seeded runs of a stress test (`STRESS_RUNS`, which `make test-deep` sets to 5)."""
    return examples(default, deep, env)
