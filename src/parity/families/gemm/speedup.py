"""A tuned backend against the baseline on one shape: alternated rounds, a paired speedup CI.

With ``--backend torch,compile`` every shape case of ``compile`` times both: ``ROUNDS`` rounds,
each timing the baseline and the candidate back to back (the order swapped every round, so
neither always runs second), each side's calls flushed, warmed and rotated as any GEMM case.
The candidate's samples pooled over rounds are the case's own timing (its row on the roofline);
the speedup is ``median(baseline) / median(candidate)`` with the paired round bootstrap of
``parity.stats.speedup.paired_speedup_ci``. Inputs are built, and tuning done, before the first
round, so no round pays for compilation.
"""

from __future__ import annotations

from typing import Any

from parity.families.gemm.inputs import rotation_for
from parity.model.samples import Samples
from parity.stats.speedup import paired_speedup_ci
from parity.stats.summary import summarize
from parity.timing.measurement import Measurement

ROUNDS = 6
FIRST_WARMUP_SHARE = 1.0  # the first round warms up fully, later rounds briefly
LATER_WARMUP_S = 0.002


def time_alternated(*, baseline: Any, candidate: Any, device: Any, dtype: Any, m: int, n: int, k: int,
                    timing: dict[str, Any], rounds: int = ROUNDS) -> tuple[Measurement, dict[str, Any]]:
    """``(candidate's pooled Measurement, speedup metrics)`` for one shape."""
    from parity.timing import measure

    sides = {"baseline": (baseline, rotation_for(device=device, backend=baseline, dtype=dtype, m=m, n=n, k=k)),
             "candidate": (candidate, rotation_for(device=device, backend=candidate, dtype=dtype, m=m, n=n, k=k))}
    per_round = {"budget_s": float(timing["budget_s"]) / rounds,
                 "max_samples": max(3, int(timing["max_samples"]) // rounds)}
    taken: dict[str, list[Measurement]] = {"baseline": [], "candidate": []}
    for i in range(rounds):
        order = ("baseline", "candidate") if i % 2 == 0 else ("candidate", "baseline")
        for side in order:
            backend, inputs = sides[side]
            warmup = float(timing["warmup_s"]) * FIRST_WARMUP_SHARE if i < 2 else LATER_WARMUP_S
            taken[side].append(measure(backend.run, device=device, inputs=inputs, warmup_s=warmup, min_samples=3,
                                       flush_cache=bool(timing["flush_cache"]), telemetry=bool(timing["telemetry"]),
                                       **per_round))
    del sides
    base_rounds = [list(r.samples.values_s) for r in taken["baseline"]]
    cand_rounds = [list(r.samples.values_s) for r in taken["candidate"]]
    speedup, low, high = paired_speedup_ci(base_rounds, cand_rounds)
    pooled = _pool(taken["candidate"], against=getattr(baseline, "name", "baseline"))
    base_pooled = [v for r in base_rounds for v in r]
    metrics = {"speedup": speedup, "speedup_ci95": [low, high], "speedup_rounds": rounds,
               "baseline_median_s": float(summarize(base_pooled).median),
               "speedup_method": "median(baseline)/median(candidate) over alternated rounds; "
                                 "95% CI: bootstrap resampling whole rounds, paired"}
    return pooled, metrics


def _pool(rounds: list[Measurement], *, against: str) -> Measurement:
    """One Measurement of every round's samples together, each round's findings kept once."""
    values = tuple(v for r in rounds for v in r.samples.values_s)
    first = rounds[0].samples
    samples = Samples(values_s=values, method=first.method, resolution_s=first.resolution_s,
                      calls_per_sample=first.calls_per_sample, warmup_calls=sum(r.samples.warmup_calls for r in rounds),
                      meta={**first.meta, "rounds": len(rounds), "alternated_with": against})
    findings = {f.code: f for r in rounds for f in r.findings}
    return Measurement(samples=samples, summary=summarize(values), findings=tuple(findings.values()),
                       telemetry=dict(rounds[-1].telemetry))
