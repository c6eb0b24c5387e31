"""The import rules of DESIGN.md: imports point one way, and trace analysis needs no torch."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "parity"

# Which parity subpackages each layer may import (besides itself and the top-level package).
ALLOWED: dict[str, set[str]] = {
    "model": set(),
    "stats": {"model"},
    "metrics": {"stats", "model"},
    "device": {"model", "stats"},
    "target": {"device", "stats", "model"},
    "timing": {"target", "device", "stats", "model"},
    "store": {"model"},
    "trace": {"metrics", "stats", "model"},
    # bench also holds the runner, which commits each case to the store as it is measured.
    "bench": {"timing", "target", "device", "metrics", "stats", "model", "store"},
    "report": {"store", "trace", "metrics", "stats", "model"},
    "cli": {
        "report",
        "bench",
        "store",
        "trace",
        "timing",
        "target",
        "device",
        "metrics",
        "stats",
        "model",
    },
}

# Third-party modules that must never be imported at module level by a layer.
FORBIDDEN_MODULES: dict[str, set[str]] = {
    "model": {"numpy", "torch"},
    "stats": {"torch"},
    "metrics": {"torch"},
    "trace": {"torch"},
    "store": {"torch"},
    "report": {"torch"},
}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _layer_files() -> list[tuple[str, Path]]:
    return [
        (layer, path) for layer in ALLOWED for path in sorted((SRC / layer).rglob("*.py"))
    ]


@pytest.mark.parametrize(("layer", "path"), _layer_files(), ids=lambda v: str(v))
def test_layer_imports_point_one_way(layer: str, path: Path) -> None:
    for name in _imports(path):
        parts = name.split(".")
        if parts[0] == "parity" and len(parts) > 1 and parts[1] in ALLOWED:
            target = parts[1]
            assert target == layer or target in ALLOWED[layer], (
                f"{path.relative_to(SRC)} imports {name}: {layer} may not import {target}"
            )
        assert parts[0] not in FORBIDDEN_MODULES.get(layer, set()), (
            f"{path.relative_to(SRC)} imports {name}, forbidden in {layer}"
        )


def test_trace_and_cli_import_without_torch() -> None:
    """An analyst studies a trace, and a decode client probes an endpoint, without PyTorch:
    block torch and import."""
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'torch' or name.startswith('torch.'):\n"
        "            raise ImportError('torch is blocked in this test')\n"
        "sys.meta_path.insert(0, Block())\n"
        "import parity.trace, parity.model, parity.stats, parity.metrics, parity.store\n"
        "import parity.target, parity.timing.stream  # a decode client needs no torch\n"
        "from parity.cli.main import cli\n"
        "from click.testing import CliRunner\n"
        "r = CliRunner().invoke(cli, ['trace', '--help'])\n"
        "assert r.exit_code == 0, r.output\n"
        "assert 'torch' not in sys.modules\n"
        "assert 'aiohttp' not in sys.modules  # imported by the probe, not by the package\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
