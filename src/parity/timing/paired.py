"""Paired A/B rounds: a baseline and a candidate timed in alternated rounds, back to back.

``PairedRounds(baseline=Work(...))`` times the declared (candidate) ``Work`` and the baseline's
in ``rounds`` rounds; each round times both sides back to back, the baseline first in even
rounds and the candidate first in odd ones, so neither always runs second. Each side's round
is the timing protocol on its own Work (warm-up, flush, input rotation), with a ``rounds``-th
of the Work's budget and samples; the first two rounds warm up fully, later ones briefly
(``later_warmup_s``: the calls are warm by then). The candidate's samples pooled over rounds
are ``main``; each side's rounds are kept in ``metrics`` for a paired statistic
(``parity.stats.speedup.paired_speedup_ci``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from parity.model.samples import Samples
from parity.stats.summary import summarize
from parity.timing.measurement import Measurement
from parity.timing.protocol import measure
from parity.timing.timed import Timed

ROUNDS = 6
FULL_WARMUP_ROUNDS = 2
LATER_WARMUP_S = 0.002


@dataclass(frozen=True, kw_only=True)
class PairedRounds:
    """Alternated rounds of ``baseline`` (a ``Work``) and the timed Work; ``baseline_name``
    labels the pooled samples (``meta["alternated_with"]``)."""

    baseline: Any
    baseline_name: str = "baseline"
    rounds: int = ROUNDS
    telemetry: bool = False
    later_warmup_s: float = LATER_WARMUP_S

    def _round(self, work: Any, *, device: Any, index: int) -> Measurement:
        return measure(work.call, device=device, inputs=work.inputs,
                       warmup_s=work.warmup_s if index < FULL_WARMUP_ROUNDS else self.later_warmup_s,
                       min_samples=work.min_samples, flush_cache=work.flush_cache, telemetry=self.telemetry,
                       budget_s=work.budget_s / self.rounds, max_samples=max(3, work.max_samples // self.rounds))

    def time(self, work: Any, *, device: Any, group: Any = None) -> Timed:
        sides = {"baseline": self.baseline, "candidate": work}
        taken: dict[str, list[Measurement]] = {"baseline": [], "candidate": []}
        for i in range(self.rounds):
            order = ("baseline", "candidate") if i % 2 == 0 else ("candidate", "baseline")
            for side in order:
                taken[side].append(self._round(sides[side], device=device, index=i))
        pooled = pool(taken["candidate"], against=self.baseline_name)
        base = pool(taken["baseline"], against="candidate")
        return Timed(samples={"main": pooled.samples, "baseline": base.samples}, summary=pooled.summary,
                     findings=pooled.findings, telemetry=dict(pooled.telemetry),
                     metrics={"rounds": self.rounds,
                              "baseline_rounds_s": [list(r.samples.values_s) for r in taken["baseline"]],
                              "candidate_rounds_s": [list(r.samples.values_s) for r in taken["candidate"]]})


def pool(rounds: list[Measurement], *, against: str) -> Measurement:
    """One Measurement of every round's samples together, each finding code kept once (the
    latest), the last round's telemetry."""
    values = tuple(v for r in rounds for v in r.samples.values_s)
    first = rounds[0].samples
    samples = Samples(values_s=values, method=first.method, resolution_s=first.resolution_s,
                      calls_per_sample=first.calls_per_sample, warmup_calls=sum(r.samples.warmup_calls for r in rounds),
                      meta={**first.meta, "rounds": len(rounds), "alternated_with": against})
    findings = {f.code: f for r in rounds for f in r.findings}
    return Measurement(samples=samples, summary=summarize(values), findings=tuple(findings.values()),
                       telemetry=dict(rounds[-1].telemetry))
