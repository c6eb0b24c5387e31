"""The what-if validation benchmark's CPU mode at a small size: it runs, measures and predicts."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "whatif_validation.py"


@pytest.mark.torch
@pytest.mark.slow
def test_validation_cpu_small(tmp_path) -> None:
    out = tmp_path / "validation.json"
    proc = subprocess.run([sys.executable, str(SCRIPT), "--small", "--steps", "5", "--json", str(out)],
                          check=False, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "median error over repeats" in proc.stdout
    record = json.loads(out.read_text())
    run = record["runs"][0]
    assert run["k_matrix"] > 0 and math.isfinite(run["k_matrix"])
    assert run["steps"]["base"] >= 2 and run["steps"]["fast"] >= 2
    assert set(run["errors"]) == {"first_order", "bound_low_speedup", "bound_high_speedup", "replay"}
    assert all(math.isfinite(v) for v in run["errors"].values())
    assert run["replay_reproduction_error"] < 0.01
    # Both threads (main and the batch-preparing worker) are lanes joined at step boundaries.
    assert run["graph"]["edges"]["step_barrier"] > 0
    assert any("join at every step boundary" in a for a in run["assumptions"])
