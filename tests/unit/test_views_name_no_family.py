"""``compare`` and ``report`` name no family: they read figures and canonical case metrics, and
draw what each family's registered views give them. A family added by another package then
appears in both without a change to parity.

A family is named by a module of its own in these packages, an import of ``parity.families``,
a string that is a family's name or starts with it (``"gemm"``, ``"membw.fixed_cost"``) outside
a docstring, or an identifier one of whose words is a family's name (``gemm_rows``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "parity"
PACKAGES = ("compare", "report")
FAMILIES = ("gemm", "membw", "latency", "collectives", "moe", "overlap", "decode", "kernels", "serving")
# Words that trace analysis uses for its own categories (a kernel, the overlap of compute and
# communication, a collective); as identifiers they do not name a family.
TRACE_WORDS = {"kernels", "overlap", "collectives", "latency"}
_STRING = re.compile(r"^(?:(%s)$|(%s)[./:])" % ("|".join(sorted(set(FAMILIES) - TRACE_WORDS)), "|".join(FAMILIES)))



def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            body = getattr(node, "body", [])
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def _words(identifier: str) -> set[str]:
    return set(identifier.lower().split("_"))


def offences(path: Path, root: Path = SRC) -> list[str]:
    rel = path.relative_to(root).as_posix()
    found = [f"{rel}: module named after a family" for part in path.relative_to(root).with_suffix("").parts
             if _words(part) & set(FAMILIES) - TRACE_WORDS or part in FAMILIES]
    tree = ast.parse(path.read_text(), filename=str(path))
    skip = _docstrings(tree)
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("parity.families"):
            found.append(f"{rel}:{line} imports {node.module}")
        elif isinstance(node, ast.Import):
            found += [f"{rel}:{line} imports {a.name}" for a in node.names if a.name.startswith("parity.families")]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            if _STRING.match(node.value):
                found.append(f"{rel}:{line} names {node.value!r}")
        else:
            name = (node.id if isinstance(node, ast.Name)
                    else node.attr if isinstance(node, ast.Attribute) and node.attr != "decode"  # bytes.decode
                    else node.name if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                    else node.arg if isinstance(node, ast.arg) else None)
            if name and _words(name) & (set(FAMILIES) - TRACE_WORDS):
                found.append(f"{rel}:{line} identifier {name}")
    return found


def _modules() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (SRC / pkg).rglob("*.py"))


@pytest.mark.parametrize("path", _modules(), ids=lambda p: p.relative_to(SRC).as_posix())
def test_compare_and_report_name_no_family(path: Path) -> None:
    found = offences(path)
    assert not found, "read figures and registered views instead: " + "; ".join(found[:5])


def test_the_rule_sees_a_family(tmp_path: Path) -> None:
    pkg = tmp_path / "report"
    pkg.mkdir()
    sample = pkg / "gemm_view.py"
    sample.write_text('"""gemm is fine in a docstring."""\nfrom parity.families.gemm import x\n'
                      'def gemm_rows(kernels):\n    return kernels["membw.fixed_cost"], "trace"\n')
    found = [f.split(" ", 1)[1] for f in offences(sample, tmp_path)]
    assert "module named after a family" in found
    assert "imports parity.families.gemm" in found
    assert "identifier gemm_rows" in found
    assert "names 'membw.fixed_cost'" in found
    assert not any("kernels" in f or "trace" in f for f in found)
