"""No import cycles among parity's modules, found statically over src/parity.

Every import counts, at module level, inside functions and under ``TYPE_CHECKING``: a cycle
hidden in a function or a type annotation still means two modules share names that belong in
a third. Cycles are the strongly connected components of the module graph (Tarjan's
algorithm), so each is reported once with all of its members.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "parity"

# Cycles that exist and are being cut; shrinking only: the test fails when a new one appears,
# and when a listed one is gone but still listed.
KNOWN_CYCLES: set[frozenset[str]] = set()  # none left; a new one fails the test


def module_names(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` under ``root`` (a package directory)."""
    names = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join(parts)] = path
    return names


def _imported(node: ast.AST, *, package: str, modules: dict[str, Path]) -> set[str]:
    """The modules of ``modules`` that one import statement loads by name.

    ``from a.b import c`` names module ``a.b.c`` when it exists, else ``a.b`` (c is a name in
    it); relative imports are resolved against ``package``.
    """
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names if alias.name in modules}
    if not isinstance(node, ast.ImportFrom):
        return set()
    base = node.module or ""
    if node.level:
        anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
        base = ".".join(anchor + ([base] if base else []))
    found = set()
    for alias in node.names:
        full = f"{base}.{alias.name}"
        if full in modules:
            found.add(full)
        elif base in modules:
            found.add(base)
    return found


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the modules it imports anywhere in its source (itself excluded)."""
    modules = module_names(root)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            edges |= _imported(node, package=package, modules=modules)
        edges.discard(name)
        graph[name] = edges
    return graph


def import_cycles(graph: dict[str, set[str]]) -> set[frozenset[str]]:
    """The strongly connected components with more than one module (iterative Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: set[frozenset[str]] = set()
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.add(frozenset(component))
    return cycles


def _write(root: Path, name: str, text: str) -> None:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_cycle_finder_on_a_hand_made_package(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    _write(pkg, "__init__.py", "")
    _write(pkg, "a.py", "from pkg.b import x\n")
    _write(pkg, "b.py", "def f():\n    from pkg import a\nx = 1\n")  # a <-> b, one inside f
    typing_only = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.d import T\n"
    _write(pkg, "c.py", typing_only)
    _write(pkg, "d.py", "from .c import y\nimport pkg.e\n")  # c <-> d, one typing-only
    _write(pkg, "e.py", "import os\nfrom pkg.sub import g\n")
    _write(pkg, "sub/__init__.py", "from . import h\n")
    _write(pkg, "sub/h.py", "from .. import e\n")  # e -> sub -> sub.h -> e: three modules
    _write(pkg, "f.py", "import pkg.a\n")  # imports into a cycle but is not part of it
    graph = import_graph(pkg)
    assert graph["pkg.a"] == {"pkg.b"} and graph["pkg.b"] == {"pkg.a"}
    assert graph["pkg.sub"] == {"pkg.sub.h"} and graph["pkg.sub.h"] == {"pkg.e"}
    assert graph["pkg.d"] == {"pkg.c", "pkg.e"} and graph["pkg"] == set()
    assert import_cycles(graph) == {
        frozenset({"pkg.a", "pkg.b"}),
        frozenset({"pkg.c", "pkg.d"}),
        frozenset({"pkg.e", "pkg.sub", "pkg.sub.h"}),
    }
    graph["pkg"] = {"pkg.f"}
    graph["pkg.b"].add("pkg")  # pkg -> f -> a -> b -> pkg joins the a/b cycle
    assert frozenset({"pkg", "pkg.f", "pkg.a", "pkg.b"}) in import_cycles(graph)
    assert import_cycles({"x": {"y"}, "y": set()}) == set()


def test_parity_has_no_import_cycles_beyond_the_known_ones() -> None:
    cycles = import_cycles(import_graph(SRC))
    new = [sorted(c) for c in cycles - KNOWN_CYCLES]
    assert not new, f"import cycles among parity's modules: {new}; move the shared names out"
    gone = [sorted(c) for c in KNOWN_CYCLES - cycles]
    assert not gone, f"known cycles {gone} are gone: remove them from KNOWN_CYCLES"
