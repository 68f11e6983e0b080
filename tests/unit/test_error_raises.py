"""No module raises the bare `LakeformatError`: callers branch on the subclasses in errors.py
(not found, already exists, invalid argument, cleanup aborted, commit outcomes...)."""

from __future__ import annotations

import ast
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[2] / "lakeformat"



def _bare_constructions(path: Path) -> list[int]:
    """Lines that build a `LakeformatError(...)` (raised at once or returned to be raised)."""
    tree = ast.parse(path.read_text(), str(path))
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if name == "LakeformatError":
                lines.append(node.lineno)
        elif isinstance(node, ast.Raise) and isinstance(node.exc, ast.Name | ast.Attribute):
            exc = node.exc
            if (exc.id if isinstance(exc, ast.Name) else exc.attr) == "LakeformatError":
                lines.append(node.lineno)  # `raise LakeformatError` without arguments
    return lines


def test_no_module_raises_the_bare_base_class():
    bad = []
    for path in sorted(SOURCE.rglob("*.py")):
        rel = path.relative_to(SOURCE).as_posix()
        bad += [f"lakeformat/{rel}:{line}" for line in _bare_constructions(path)]
    assert not bad, ("raise the most specific class of lakeformat/errors.py, not "
                     "LakeformatError itself:\n  " + "\n  ".join(bad))
