"""The what-if validation benchmark: its scoring rules on hand-built steps, and its CPU mode at a
small size (it runs, measures, pairs and predicts)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
SCRIPT = BENCHMARKS / "whatif_validation.py"
sys.path.insert(0, str(BENCHMARKS))

import whatif_scoring as scoring  # the benchmark folder is not a package: put on the path above


def test_adjacent_pairs_take_each_base_step_with_the_fast_step_after_it() -> None:
    steps = [(0, 10, "fp32", 1), (10, 20, "bf16", 2), (20, 30, "bf16", 3),
             (30, 40, "fp32", 4), (40, 50, "fp32", 5), (50, 60, "bf16", 6)]
    pairs = scoring.adjacent_pairs(steps, "fp32", "bf16")
    assert [(b[3], f[3]) for b, f in pairs] == [(1, 2), (5, 6)]


def test_a_step_is_contended_when_a_thread_waited_over_the_share() -> None:
    wall = 40_000_000
    waits = {
        1: {"wall_ns": wall, "main_wait_ns": 0, "worker_wait_ns": int(0.03 * wall)},
        2: {"wall_ns": wall, "main_wait_ns": int(0.01 * wall), "worker_wait_ns": 0},
        3: {"wall_ns": wall, "main_wait_ns": None, "worker_wait_ns": None},
    }
    assert scoring.CONTENDED_SHARE == 0.02
    assert scoring.contended(waits, (0, wall, "bf16", 1)) is True
    assert scoring.contended(waits, (0, wall, "bf16", 2)) is False
    assert scoring.contended(waits, (0, wall, "bf16", 3)) is None  # the kernel did not say
    assert scoring.contended(waits, (0, wall, "bf16", 9)) is None  # no record of the step


def test_stability_flags_drift_bimodality_and_too_few_pairs() -> None:
    steady = [2.0, 2.02, 1.98, 2.01, 1.99, 2.0, 2.03, 1.97, 2.0, 2.01]
    assert scoring.stability(steady, n_pairs=10, n_contended=0) == []
    drifting = [2.0, 2.02, 1.98, 2.01, 1.99] + [2.4, 2.42, 2.38, 2.41, 2.39]  # 20% faster later
    assert "drifted by 18.2%" in scoring.stability(drifting, 10, 0)[0]
    # Halves 10% apart but each spread over 1.6-2.6: noise, not drift (z < 2).
    noisy = [1.6, 2.6, 1.8, 2.4, 2.0] + [1.8, 2.8, 2.0, 2.6, 2.2]
    assert not any("drifted" in r for r in scoring.stability(noisy, 10, 0))
    two_modes = [1.15, 2.1] * 6  # same level in both halves, but two speed-ups
    reasons = scoring.stability(two_modes, 12, 0)
    assert len(reasons) == 1 and "bimodal" in reasons[0]
    few = scoring.stability(steady[:3], n_pairs=10, n_contended=6, n_outliers=1)
    assert len(few) == 1 and "only 3 of 10 pairs were kept" in few[0]
    assert "6 had run-queue waits" in few[0] and "1 were outliers" in few[0]


def test_inside_bounds_reads_the_bounds_error_intervals() -> None:
    assert scoring.inside_bounds({"bound_high_speedup": (-0.3, -0.2),
                                  "bound_low_speedup": (0.05, 0.1)})
    # The high bound's step is the truth: noise puts the interval across 0, which is inside.
    assert scoring.inside_bounds({"bound_high_speedup": (-0.01, 0.02),
                                  "bound_low_speedup": (0.3, 0.4)})
    assert not scoring.inside_bounds({"bound_high_speedup": (0.01, 0.03),
                                      "bound_low_speedup": (0.3, 0.4)})
    assert not scoring.inside_bounds({"bound_high_speedup": (-0.3, -0.2),
                                      "bound_low_speedup": (-0.05, -0.01)})


@pytest.mark.torch
def test_fast_dtype_follows_the_hosts_amx_flag(monkeypatch) -> None:
    import whatif_validation as validation

    monkeypatch.setattr(validation, "cpu_flags", lambda: {"avx512f", "amx_tile", "amx_bf16"})
    assert validation.fast_default() == "bf16"
    monkeypatch.setattr(validation, "cpu_flags", lambda: {"avx2", "fma"})
    assert validation.fast_default() == "int8"
    assert set(validation.sweep_points("bf16", None)) == {"k1.5", "k2", "k4"}
    assert set(validation.sweep_points("int8", None)) == {"k1.5", "k2"}  # attention stays fp32
    with pytest.raises(SystemExit, match="no sweep point 'k4' for int8"):
        validation.sweep_points("int8", ["k4"])


@pytest.mark.torch
@pytest.mark.slow
def test_validation_cpu_small(tmp_path) -> None:
    out = tmp_path / "validation.json"
    proc = subprocess.run([sys.executable, str(SCRIPT), "--small", "--steps", "5", "--points", "k2",
                           "--json", str(out)],
                          check=False, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    record = json.loads(out.read_text())
    run = record["runs"][0]
    assert run["point"] == "k2" and record["fast"] in ("bf16", "int8")
    assert run["k_matrix"] > 0 and math.isfinite(run["k_matrix"])
    assert run["pairs"]["all"] >= 4
    pairs = run["pairs"]
    assert pairs["kept"] + pairs["contended"] + pairs["outliers"] == pairs["all"]
    assert set(run["errors"]) == set(scoring.METHODS)
    assert all(math.isfinite(v) for v in run["errors"].values())
    assert run["scored"] == (not run["unstable"])
    assert run["replay_reproduction_error"] < 0.01
    # Both threads (main and the batch-preparing worker) are lanes joined at step boundaries.
    assert run["graph"]["edges"]["step_barrier"] > 0
    assert any("join at every step boundary" in a for a in run["assumptions"])
    assert "k2" in record["summary"]  # a point both fast dtypes have


def test_a_run_with_one_pair_left_is_too_few_however_many_pairs_it_had() -> None:
    """19 of 20 pairs contended: the one kept pair cannot score the run (the printed errors fall
    back to every pair, which must not make the run look steady)."""
    speedups = [1.7 + 0.01 * (i % 3) for i in range(20)]
    busy = [i != 4 for i in range(20)]
    kept, outliers = scoring.keep_pairs(speedups, busy)
    assert (kept, outliers) == ([4], [])
    reasons = scoring.stability([speedups[i] for i in kept], 20, 19, len(outliers))
    assert reasons and "only 1 of 20 pairs were kept" in reasons[0]
    free = [False] * 8
    kept, outliers = scoring.keep_pairs([1.7, 1.71, 1.69, 1.7, 3.5, 1.72, 1.7, 1.68], free)
    assert outliers == [4] and kept == [0, 1, 2, 3, 5, 6, 7]
