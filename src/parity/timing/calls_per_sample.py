"""Several back-to-back calls per sample: how a call shorter than the timer's own cost is timed.

``CallsPerSample(calls=n)`` times ``n`` calls of a declared ``Work`` as one timed span (the
protocol of ``parity.timing.protocol.measure``: warm-up, budget, flush before each span when the
work asks) and divides each span by ``n``, so a sample is a per-call duration whose
``calls_per_sample`` says how many calls it covered and whose timer resolution is divided with
it. A bare timed loop measures a tiny copy this way; one timed call would measure the timer.
With ``calls=1`` it is the plain protocol. The self-checks (spread, resolution) judge the spans
as they were read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from parity.stats.summary import summarize
from parity.timing.measurement import Measurement
from parity.timing.protocol import measure
from parity.timing.timed import Timed


def repeated(call: Callable[..., Any], calls: int) -> Callable[..., Any]:
    """``call`` ``calls`` times in a row, with the same arguments, as one call."""
    def run(*args: Any) -> None:
        for _ in range(calls):
            call(*args)
    return run


def per_call(m: Measurement, calls: int) -> Measurement:
    """``m``, whose samples each span ``calls`` calls, as per-call durations."""
    if calls == 1:
        return m
    values = tuple(v / calls for v in m.samples.values_s)
    samples = replace(m.samples, values_s=values, calls_per_sample=calls,
                      resolution_s=m.samples.resolution_s / calls)
    return replace(m, samples=samples, summary=summarize(values))


@dataclass(frozen=True, kw_only=True)
class CallsPerSample:
    """Time ``calls`` back-to-back calls of the work per sample; samples are per call."""

    calls: int = 1

    def __post_init__(self) -> None:
        if self.calls < 1:
            raise ValueError(f"calls per sample must be at least 1, got {self.calls}")

    def time(self, work: Any, *, device: Any, group: Any = None) -> Timed:
        if group is not None:
            raise ValueError("calls per sample times one process; several ranks are timed by max-over-ranks")
        run = work.call if self.calls == 1 else repeated(work.call, self.calls)
        m = per_call(measure(run, device=device, inputs=work.inputs, warmup_s=work.warmup_s,
                             budget_s=work.budget_s, min_samples=work.min_samples,
                             max_samples=work.max_samples, flush_cache=work.flush_cache), self.calls)
        return Timed(samples={"main": m.samples}, summary=m.summary, findings=tuple(m.findings),
                     telemetry=dict(m.telemetry))
