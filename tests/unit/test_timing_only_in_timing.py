"""Only ``parity.timing`` times: no family, ceiling or harness module reads a clock or a device
event itself, and no family or ceiling reaches past the harness into a timing strategy.

A family declares its cases as ``Work`` (``parity.harness.work``) with a named strategy and the
harness (``parity.harness.measure``) times it; the strategy objects and the bookkeeping clocks
reach families through ``parity.harness.strategies``; ``parity.device`` wraps the events it uses.
A clock read anywhere else is a second, unreviewed idea of what a sample is.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "parity"
PACKAGES = ("families", "ceilings", "harness")
# Clock reads: time.<name>() or a bare <name>() imported from time.
CLOCKS = {"perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "time", "time_ns",
          "process_time", "process_time_ns", "thread_time", "thread_time_ns"}
# Device timing: events and their elapsed time, the device's timers.
DEVICE_TIMING = {"Event", "elapsed_time", "timer"}
# The harness modules that are the door to parity.timing: the one that times declared work, and
# the one that hands strategy objects and bookkeeping clocks to families.
DOORS = {"harness/measure.py", "harness/strategies.py"}
# Modules of parity.timing that are data, not timing (input sets a Work rotates through).
TIMING_DATA = {"parity.timing.rotation"}


def _modules() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (SRC / pkg).rglob("*.py"))


def offences(path: Path) -> list[str]:
    """Each clock read, device timing call and timing-strategy import in ``path``, as text."""
    rel = path.relative_to(SRC).as_posix()
    tree = ast.parse(path.read_text(), filename=str(path))
    from_time: set[str] = set()
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "time":
            from_time.update(a.asname or a.name for a in node.names if a.name in CLOCKS)
        if isinstance(node, (ast.Import, ast.ImportFrom)) and rel not in DOORS:
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for name in names:
                if name.startswith("parity.timing") and name not in TIMING_DATA and not (
                        isinstance(node, ast.ImportFrom) and name == "parity.timing"
                        and all(f"parity.timing.{a.name}" in TIMING_DATA or a.name == "InputRotation"
                                for a in node.names)):
                    found.append(f"{rel}:{node.lineno} imports {name}")
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id == "time" and node.attr in CLOCKS):
            found.append(f"{rel}:{node.lineno} reads time.{node.attr}")
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute):
            if func.attr in DEVICE_TIMING:
                found.append(f"{rel}:{node.lineno} calls .{func.attr}()")
        elif isinstance(func, ast.Name) and (func.id in from_time or func.id in DEVICE_TIMING):
            found.append(f"{rel}:{node.lineno} calls {func.id}()")
    return found


@pytest.mark.parametrize("path", _modules(), ids=lambda p: p.relative_to(SRC).as_posix())
def test_no_clock_outside_timing(path: Path) -> None:
    found = offences(path)
    assert not found, "only parity.timing times; declare Work with a strategy instead: " + "; ".join(found)


def test_the_rule_sees_a_clock(tmp_path: Path) -> None:
    pkg = tmp_path / "families"
    pkg.mkdir()
    sample = pkg / "x.py"
    sample.write_text("import time\nfrom time import perf_counter as pc\n"
                      "from parity.timing import measure\n"
                      "def f(dev):\n    a = time.monotonic()\n    b = pc()\n    dev.timer()\n")
    global SRC
    saved, SRC = SRC, tmp_path
    try:
        found = offences(sample)
    finally:
        SRC = saved
    assert sorted(f.split(" ", 1)[1] for f in found) == sorted([
        "imports parity.timing", "reads time.monotonic", "calls pc()", "calls .timer()"])
