"""A tuned backend against the baseline on one shape: alternated rounds, a paired speedup CI.

With ``--backend torch,compile`` every shape case of ``compile`` times both as declared Work
with the paired-rounds strategy (``parity.timing.paired.PairedRounds``, through the harness):
``ROUNDS`` rounds, each timing the baseline and the candidate back to back (the order swapped
every round, so neither always runs second), each side's calls flushed, warmed and rotated as
any GEMM case. The candidate's samples pooled over rounds are the case's own timing (its row on
the roofline); the speedup is ``median(baseline) / median(candidate)`` with the paired round
bootstrap of ``parity.stats.speedup.paired_speedup_ci``. Inputs are built, and tuning done,
before the first round, so no round pays for compilation.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from parity.families.gemm.inputs import rotation_for
from parity.harness.measure import time_work
from parity.harness.strategies import PairedRounds
from parity.harness.work import Work
from parity.stats.speedup import paired_speedup_ci
from parity.stats.summary import summarize

ROUNDS = 6
# Each round samples at least this many calls per side.
ROUND_MIN_SAMPLES = 3
NOT_CHECKED = {"passed": True, "method": "checked after timing, by the case"}


def side_work(backend: Any, *, device: Any, dtype: Any, m: int, n: int, k: int, timing: dict[str, Any]) -> Work:
    """One side of the pair as declared Work: ``backend.run`` over its own input rotation, with
    the whole pair's warm-up, budget and samples (the strategy divides them between rounds)."""
    inputs = rotation_for(device=device, backend=backend, dtype=dtype, m=m, n=n, k=k)
    return Work(call=backend.run, check=lambda: NOT_CHECKED, inputs=inputs, warmup_s=float(timing["warmup_s"]),
                budget_s=float(timing["budget_s"]), min_samples=ROUND_MIN_SAMPLES,
                max_samples=int(timing["max_samples"]), flush_cache=bool(timing["flush_cache"]))


def time_alternated(*, baseline: Any, candidate: Any, device: Any, dtype: Any, m: int, n: int, k: int,
                    timing: dict[str, Any], rounds: int = ROUNDS) -> tuple[Any, dict[str, Any]]:
    """``(candidate's pooled timing, speedup metrics)`` for one shape; the timing is a
    ``parity.timing.timed.Timed`` whose ``main`` samples are the candidate's, pooled."""
    base = side_work(baseline, device=device, dtype=dtype, m=m, n=n, k=k, timing=timing)
    work = side_work(candidate, device=device, dtype=dtype, m=m, n=n, k=k, timing=timing)
    strategy = PairedRounds(baseline=base, baseline_name=getattr(baseline, "name", "baseline"), rounds=rounds,
                            telemetry=bool(timing["telemetry"]))
    timed = time_work(replace(work, strategy=strategy), device=device)
    del base, work
    return timed, speedup_metrics(timed.metrics["baseline_rounds_s"], timed.metrics["candidate_rounds_s"])


def speedup_metrics(base_rounds: list[list[float]], cand_rounds: list[list[float]]) -> dict[str, Any]:
    """The speedup of paired rounds (seconds per call, per round): ``median(baseline) /
    median(candidate)`` with the paired round bootstrap CI, and the baseline's pooled median."""
    speedup, low, high = paired_speedup_ci(base_rounds, cand_rounds)
    base_pooled = [v for r in base_rounds for v in r]
    return {"speedup": speedup, "speedup_ci95": [low, high], "speedup_rounds": len(base_rounds),
            "baseline_median_s": float(summarize(base_pooled).median),
            "speedup_method": "median(baseline)/median(candidate) over alternated rounds; "
                              "95% CI: bootstrap resampling whole rounds, paired"}

