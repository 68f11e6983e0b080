"""The one-way import rule of the architecture, checked on the source: every import in
lakeformat/ (at module level or inside a function) points to the same layer or a lower one, the
module-level imports form no cycle, and the library imports neither Airflow nor (outside
lakeformat/spark/) PySpark. Parsed with `ast`, so nothing is imported and nothing is installed.

Layers, top to bottom (a module may import its own layer and every layer below it):

    entry points   lakeformat (the package root), cli, demo, spark/
    catalog        catalog
    table          table, branch_table   (the facade sits above the operations it offers)
    health         health/            (table health and due maintenance: reads through the
                     front doors of operation/, never table or catalog)
    operation      operation/write/, operation/maintain/   (beside each other: neither imports
                     the other)
                   operation/read/, operation/compact/     (beside each other, likewise)
                   operation/commit/  (the commit protocol and the job driver)
                   operation/ itself  (paths, scan, runner, support: what every job stands on)
    runtime        mergetree/, expressions/   (the LSM runtime and the filter language)
    siblings       meta/, data/, merge/, ingest   (may import each other)
    schema         schema/
    storage        storage/, lock/
    foundation     errors, options, results, version, clock, layout, identifier   (leaves
                   every layer uses)

A new top-level module or package must be placed in `LAYERS` (the test fails until it is).

Code outside a sub-package of operation/ (and outside mergetree/, expressions/) imports it
through its front door, the package's `__init__`, which names what the rest of the library may
use; inside a sub-package modules import each other directly.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = "lakeformat"
SOURCE = Path(__file__).resolve().parents[2] / PACKAGE

#: (layer name, module prefixes in it), top to bottom
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("entry points", ("lakeformat", "lakeformat.cli", "lakeformat.demo", "lakeformat.spark")),
    ("catalog", ("lakeformat.catalog", "lakeformat.metastore")),
    ("table", ("lakeformat.table", "lakeformat.branch_table")),
    ("health", ("lakeformat.health",)),
    ("operation: write, maintain", ("lakeformat.operation.write",
                                    "lakeformat.operation.maintain")),
    ("operation: read, compact", ("lakeformat.operation.read", "lakeformat.operation.compact")),
    ("operation: commit", ("lakeformat.operation.commit",)),
    ("operation: shared", ("lakeformat.operation",)),
    ("runtime", ("lakeformat.mergetree", "lakeformat.expressions")),
    ("meta, data, merge", ("lakeformat.meta", "lakeformat.data", "lakeformat.merge",
                           "lakeformat.ingest")),
    ("schema", ("lakeformat.schema",)),
    ("storage", ("lakeformat.storage", "lakeformat.lock")),
    ("foundation", ("lakeformat.errors", "lakeformat.options", "lakeformat.results",
                    "lakeformat.version", "lakeformat.clock", "lakeformat.layout",
                    "lakeformat.identifier")),
]

#: prefixes that share a layer but must not import each other
SEALED_SIBLINGS: list[tuple[str, str]] = [
    ("lakeformat.operation.write", "lakeformat.operation.maintain"),
    ("lakeformat.operation.read", "lakeformat.operation.compact"),
]

#: packages whose modules the rest of the library reaches only through the package itself
FRONT_DOORS = ("lakeformat.operation.commit", "lakeformat.operation.read",
               "lakeformat.operation.write", "lakeformat.operation.compact",
               "lakeformat.operation.maintain", "lakeformat.mergetree", "lakeformat.expressions",
               "lakeformat.health")

#: third-party packages the library must not import, and the one folder allowed each
FORBIDDEN = {"airflow": None, "pyspark": "lakeformat.spark"}

#: cycles closed only by imports inside functions, known and accepted (each a set of modules)
KNOWN_DEFERRED_CYCLES: list[set[str]] = []


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SOURCE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES: dict[str, Path] = {module_name(p): p for p in sorted(SOURCE.rglob("*.py"))}


def layer_of(module: str) -> int | None:
    """Index in LAYERS of the longest prefix naming `module` (the root matches only itself)."""
    best, best_len = None, -1
    for i, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            hit = module == prefix or (prefix != PACKAGE and module.startswith(prefix + "."))
            if hit and len(prefix) > best_len:
                best, best_len = i, len(prefix)
    return best


def _targets(node: ast.Import | ast.ImportFrom, module: str) -> list[str]:
    """Modules an import statement loads (`from pkg import sub` names the submodule)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if node.level:  # relative: resolve against this module's package
        is_package = MODULES.get(module, Path()).name == "__init__.py"
        base = module.split(".")
        base = base[: len(base) - node.level + (1 if is_package else 0)]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module or ""
    out = []
    for alias in node.names:
        sub = f"{source}.{alias.name}"
        out.append(sub if sub in MODULES else source)
    return out


def all_imports(module: str) -> Iterator[tuple[int, str]]:
    """(line, imported module) for every import statement anywhere in the module."""
    tree = ast.parse(MODULES[module].read_text(), str(MODULES[module]))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            for target in _targets(node, module):
                yield node.lineno, target


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _run_at_import(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """Import statements executed when the module is imported (not inside functions, not under
    `if TYPE_CHECKING:`; class bodies do run)."""
    for stmt in body:
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            yield stmt
        elif isinstance(stmt, ast.If):
            if not _is_type_checking(stmt.test):
                yield from _run_at_import(stmt.body)
            yield from _run_at_import(stmt.orelse)
        elif isinstance(stmt, ast.Try):
            for block in (stmt.body, *(h.body for h in stmt.handlers), stmt.orelse,
                          stmt.finalbody):
                yield from _run_at_import(block)
        elif isinstance(stmt, ast.With | ast.For | ast.While | ast.ClassDef):
            yield from _run_at_import(stmt.body)


def module_level_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(), str(path))
        for node in _run_at_import(tree.body):
            graph[module].update(t for t in _targets(node, module)
                                 if t in MODULES and t != module)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def test_every_module_has_a_layer():
    missing = [m for m in MODULES if layer_of(m) is None]
    assert not missing, (f"modules in no layer: {missing}; place them in LAYERS of "
                         f"{Path(__file__).name} (and in the table of its docstring)")


def test_imports_point_down_the_layers():
    order = " -> ".join(name for name, _ in LAYERS)
    bad = []
    for module in MODULES:
        own = layer_of(module)
        for line, target in all_imports(module):
            if not (target == PACKAGE or target.startswith(PACKAGE + ".")):
                continue
            theirs = layer_of(target)
            if own is not None and theirs is not None and theirs < own:
                bad.append(f"{MODULES[module].relative_to(SOURCE.parent)}:{line} imports "
                           f"{target} ({LAYERS[theirs][0]}) from the {LAYERS[own][0]} layer")
    assert not bad, f"imports must point down ({order}):\n  " + "\n  ".join(bad)


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def test_sealed_siblings_do_not_import_each_other():
    bad = []
    for module in MODULES:
        for a, b in SEALED_SIBLINGS:
            for own, other in ((a, b), (b, a)):
                if not _within(module, own):
                    continue
                bad += [f"{MODULES[module].relative_to(SOURCE.parent)}:{line} imports {target}"
                        for line, target in all_imports(module) if _within(target, other)]
    assert not bad, "sub-packages beside each other import each other:\n  " + "\n  ".join(bad)


def test_other_code_enters_a_sub_package_by_its_front_door():
    bad = []
    for module in MODULES:
        for door in FRONT_DOORS:
            if _within(module, door):
                continue
            bad += [f"{MODULES[module].relative_to(SOURCE.parent)}:{line} imports {target}, "
                    f"not {door}" for line, target in all_imports(module)
                    if target.startswith(door + ".")]
    assert not bad, ("import a sub-package's names from its front door (export them there if "
                     "the rest of the library needs them):\n  " + "\n  ".join(bad))


def test_no_module_level_import_cycles():
    found = cycles(module_level_graph())
    assert not found, "module-level import cycles:\n  " + "\n  ".join(" <-> ".join(c)
                                                                     for c in found)


def test_no_cycles_through_imports_inside_functions():
    """An import moved into a function to dodge a circle is still a circle of concepts."""
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for module in MODULES:
        graph[module].update(t for _, t in all_imports(module) if t in MODULES and t != module)
    left = [c for c in cycles(graph) if set(c) not in KNOWN_DEFERRED_CYCLES]
    assert not left, "import cycles (through imports inside functions):\n  " + "\n  ".join(
        " <-> ".join(c) for c in left)


def test_no_airflow_or_pyspark_in_the_library():
    bad = []
    for module in MODULES:
        for line, target in all_imports(module):
            top = target.split(".")[0]
            if top in FORBIDDEN:
                allowed = FORBIDDEN[top]
                if allowed is None or not (module == allowed or module.startswith(allowed + ".")):
                    bad.append(f"{MODULES[module].relative_to(SOURCE.parent)}:{line} imports "
                               f"{target}")
    assert not bad, ("the library stays free of Airflow, and only lakeformat/spark/ imports "
                     "PySpark:\n  " + "\n  ".join(bad))


def test_the_cycle_finder_finds_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c"]]
