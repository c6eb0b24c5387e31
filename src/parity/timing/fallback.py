"""Graph replay with an eager fallback, telemetry sampled: how a GEMM shape is timed.

``ReplayFallback(graph=True)`` times a declared ``Work`` by CUDA graph replays where the device
has graphs; when the capture fails (some kernels cannot be captured) it times the same work
eagerly and says so with a ``graph-failed`` finding (info: per-call events include the launch
overhead of short calls). ``telemetry=True`` samples clocks, power and temperature during the
timed calls (``parity.timing.protocol.measure``). The rest of the protocol (warm-up, budget,
flush, input rotation) is the Work's own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from parity.model.findings import Finding, Severity
from parity.timing.measurement import Measurement
from parity.timing.protocol import measure
from parity.timing.timed import Timed

FALLBACK_CODE = "graph-failed"


def describe(exc: BaseException) -> str:
    """``Type: first line of the message``, at most 300 characters."""
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {first}"[:300]


def as_timed(m: Measurement, *, metrics: dict[str, Any] | None = None, extra: tuple[Finding, ...] = ()) -> Timed:
    """A ``Measurement`` as a ``Timed`` (its samples as ``main``), with ``extra`` findings last."""
    return Timed(samples={"main": m.samples}, summary=m.summary, metrics=dict(metrics or {}),
                 findings=tuple(m.findings) + extra, telemetry=dict(m.telemetry))


@dataclass(frozen=True, kw_only=True)
class ReplayFallback:
    """Time by graph replay when ``graph`` (eager when the capture raises), eagerly otherwise.

    ``metrics["graph"]``: whether the samples are graph replays (False after a fallback)."""

    graph: bool = False
    telemetry: bool = False

    def time(self, work: Any, *, device: Any, group: Any = None) -> Timed:
        kwargs = {"device": device, "inputs": work.inputs, "warmup_s": work.warmup_s, "budget_s": work.budget_s,
                  "min_samples": work.min_samples, "max_samples": work.max_samples,
                  "flush_cache": work.flush_cache, "telemetry": self.telemetry}
        try:
            return as_timed(measure(work.call, graph=self.graph, **kwargs), metrics={"graph": self.graph})
        except Exception as exc:  # graph capture can fail where eager works
            if not self.graph:
                raise
            failed = Finding(code=FALLBACK_CODE, severity=Severity.INFO,
                             message=f"graph capture failed ({describe(exc)}); timed eagerly",
                             hint="per-call events include launch overhead for short calls")
            return as_timed(measure(work.call, graph=False, **kwargs), metrics={"graph": False}, extra=(failed,))
