"""The import rules of docs/architecture.md: imports point one way, and trace analysis needs no torch."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "parity"

# Which parity subpackages each layer may import (besides itself and the top-level package).
ALLOWED: dict[str, set[str]] = {
    "model": set(),
    "stats": {"model"},
    "metrics": {"stats", "model"},
    "device": {"model", "stats"},
    "ranks": {"device", "stats", "model"},
    "timing": {"ranks", "device", "stats", "model"},
    "store": {"model"},
    "trace": {"metrics", "stats", "model"},
    # the harness also holds the runner, which commits each case to the store as it is measured.
    "harness": {"timing", "ranks", "device", "metrics", "stats", "model", "store"},
    "ceilings": {"harness", "timing", "ranks", "device", "metrics", "stats", "model", "store"},
    "families": {"harness", "ceilings", "timing", "ranks", "device", "metrics", "stats", "model", "store", "report"},
    "report": {"store", "trace", "metrics", "stats", "model"},
    "compare": {"store", "trace", "metrics", "stats", "model"},
    "export": {"store", "metrics", "stats", "model"},
    "cli": {
        "export",
        "report",
        "compare",
        "harness",
        "ceilings",
        "families",
        "store",
        "trace",
        "timing",
        "ranks",
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
    "compare": {"torch"},
    "export": {"torch"},
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
        "import parity.ranks, parity.timing.stream  # a decode client needs no torch\n"
        "from parity.cli.main import cli\n"
        "from click.testing import CliRunner\n"
        "r = CliRunner().invoke(cli, ['trace', '--help'])\n"
        "assert r.exit_code == 0, r.output\n"
        "assert 'torch' not in sys.modules\n"
        "assert 'aiohttp' not in sys.modules  # imported by the probe, not by the package\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


# --- device APIs stay behind the device interface ----------------------------------------------

# torch's per-vendor modules, and the build facts that name a vendor backend: bench/ and timing/
# reach all of them through ``parity.device`` instead.
BACKEND_MODULES = {"cuda", "npu", "xpu", "mps"}
BACKEND_CHAINS = {
    ("torch", "backends", "cuda"),
    ("torch", "backends", "cudnn"),
    ("torch", "backends", "mps"),
    ("torch", "version", "cuda"),
    ("torch", "version", "hip"),
}
VENDOR_PACKAGES = {"torch_npu"}
# Layers that must ask the device, never torch's backend modules.
DEVICE_CLIENTS = ("bench", "timing")
# Files that still reach a backend module by the device's type name
# (``getattr(torch, device.type)``); shrinking only: a file leaves this set when it is fixed.
KNOWN_DYNAMIC_BACKEND_USE: set[str] = set()


def _chain(node: ast.AST) -> tuple[str, ...]:
    """``torch.cuda.synchronize`` -> ("torch", "cuda", "synchronize"); () when not a name chain."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return ()
    return (node.id, *reversed(parts))


def _is_backend_module(dotted: str) -> bool:
    """``torch.cuda``, ``torch.npu.amp``, ``torch_npu``... but not ``torch`` or ``torch.nn``."""
    parts = dotted.split(".")
    return parts[0] in VENDOR_PACKAGES or (
        parts[0] == "torch" and len(parts) > 1 and parts[1] in BACKEND_MODULES
    )


def _backend_import(node: ast.AST) -> str | None:
    if isinstance(node, ast.Import):
        for alias in node.names:
            if _is_backend_module(alias.name):
                return f"import {alias.name}"
    if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
        if _is_backend_module(node.module):
            return f"from {node.module} import ..."
        if node.module == "torch" and any(a.name in BACKEND_MODULES for a in node.names):
            return "from torch import " + ", ".join(a.name for a in node.names)
    return None


def _backend_getattr(node: ast.AST) -> tuple[str, bool] | None:
    """``getattr(torch, "cuda")`` -> ("getattr(torch, 'cuda')", False); ``getattr(torch,
    device.type)`` -> (..., True), the dynamic form; None for other calls."""
    is_getattr = isinstance(node, ast.Call) and _chain(node.func) == ("getattr",)
    if not is_getattr:
        return None
    if len(node.args) < 2 or _chain(node.args[0]) != ("torch",):
        return None
    name = node.args[1]
    if isinstance(name, ast.Constant) and name.value in BACKEND_MODULES:
        return f"getattr(torch, {name.value!r})", False
    if isinstance(name, ast.Attribute) and name.attr == "type":
        return f"getattr(torch, {ast.unparse(name)})", True
    return None


def backend_references(source: str) -> list[tuple[int, str, bool]]:
    """Every place ``source`` reaches a vendor backend of torch: (line, what, dynamic)."""
    found: list[tuple[int, str, bool]] = []
    for node in ast.walk(ast.parse(source)):
        line = getattr(node, "lineno", 0)
        # ast.walk visits every prefix of a chain, so matching whole chains finds each use once.
        chain = _chain(node) if isinstance(node, ast.Attribute) else ()
        if (len(chain) == 2 and chain[0] == "torch" and chain[1] in BACKEND_MODULES) or (
            chain in BACKEND_CHAINS
        ):
            found.append((line, ".".join(chain), False))
        elif (what := _backend_import(node)) is not None:
            found.append((line, what, False))
        elif (call := _backend_getattr(node)) is not None:
            found.append((line, *call))
    return found


def test_backend_reference_finder_on_hand_written_code() -> None:
    code = (
        "import torch\n"
        "torch.cuda.synchronize()\n"  # 2
        "x = torch.float32\n"
        "getattr(torch, 'npu').matmul\n"  # 4
        "getattr(torch, dtype.storage)\n"
        "getattr(torch, device.type).empty_cache()\n"  # 6
        "from torch import mps, nn\n"  # 7
        "import torch_npu\n"  # 8
        "torch.backends.cuda.matmul.allow_tf32 = True\n"  # 9
        "torch.backends.mkldnn.is_available()\n"
        "torch.version.hip\n"  # 11
        "torch.xpu.Event(enable_timing=True)\n"  # 12
    )
    found = {(line, dynamic) for line, _, dynamic in backend_references(code)}
    expected = {(2, False), (4, False), (6, True), (7, False), (8, False), (9, False)}
    assert found == expected | {(11, False), (12, False)}


def _client_files() -> list[Path]:
    return [path for layer in DEVICE_CLIENTS for path in sorted((SRC / layer).rglob("*.py"))]


@pytest.mark.parametrize("path", _client_files(), ids=lambda p: str(p.relative_to(SRC)))
def test_bench_and_timing_never_call_torch_backends(path: Path) -> None:
    """torch.cuda, torch.npu, torch.xpu and torch.mps are reached only through parity.device."""
    name = str(path.relative_to(SRC))
    for line, what, dynamic in backend_references(path.read_text()):
        if dynamic and name in KNOWN_DYNAMIC_BACKEND_USE:
            continue
        assert False, f"{name}:{line} uses {what}; ask the device (parity.device) instead"


def test_known_dynamic_backend_uses_are_still_there() -> None:
    """Shrinking only: a file fixed to use the device interface leaves the known set."""
    for name in sorted(KNOWN_DYNAMIC_BACKEND_USE):
        uses = [d for _, _, d in backend_references((SRC / name).read_text()) if d]
        assert uses, f"{name} no longer reaches torch by device type: remove it from the known set"
