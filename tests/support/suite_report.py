"""The closing lines of `make test`: each suite's exit status and counts, then one line adding
both suites up, and the exit status of the whole.

`make test` runs the main suite and the interop suite side by side (two venvs), so neither
pytest's own closing line counts every test. This reads the JUnit XML each run wrote and
prints, last, `total: N passed, N failed, N skipped` (a line CI reads as the run's outcome).
It exits non-zero when either suite did — also when a suite failed without writing its XML
(a crash at collection, a missing venv): the exit status of pytest is passed in, never
inferred from the counts alone.

Usage: python -m tests.support.suite_report NAME STATUS XML [NAME STATUS XML ...]
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Counts:
    passed: int = 0
    failed: int = 0  # failures and errors
    skipped: int = 0

    def add(self, other: Counts) -> None:
        self.passed += other.passed
        self.failed += other.failed
        self.skipped += other.skipped


def read_counts(xml: Path) -> Counts | None:
    """The counts of a pytest JUnit XML report; None when it is missing or unreadable."""
    try:
        root = ET.parse(xml).getroot()
    except (OSError, ET.ParseError):
        return None
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    counts = Counts()
    for suite in suites:
        tests = int(suite.get("tests", 0))
        failed = int(suite.get("failures", 0)) + int(suite.get("errors", 0))
        skipped = int(suite.get("skipped", 0))
        counts.add(Counts(passed=tests - failed - skipped, failed=failed, skipped=skipped))
    return counts


def main(argv: list[str]) -> int:
    if not argv or len(argv) % 3:
        print("usage: python -m tests.support.suite_report NAME STATUS XML [...]",
              file=sys.stderr)
        return 2
    total = Counts()
    worst = 0
    for i in range(0, len(argv), 3):
        name, status, xml = argv[i], int(argv[i + 1]), Path(argv[i + 2])
        counts = read_counts(xml)
        if counts is None:
            print(f"{name} suite: exit status {status}, no report at {xml} (it did not run "
                  "to the end: see its output above)")
            counts = Counts(failed=1 if status else 0)
        else:
            print(f"{name} suite: exit status {status}, {counts.passed} passed, "
                  f"{counts.failed} failed, {counts.skipped} skipped")
        if status and not counts.failed:  # pytest failed without a failing test (usage, crash)
            counts.failed = 1
        total.add(counts)
        worst = worst or status
    print(f"total: {total.passed} passed, {total.failed} failed, {total.skipped} skipped")
    return 1 if worst else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
