"""The result of timing one piece of work: raw samples, their summary, findings, telemetry."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from parity.model.findings import Finding
from parity.model.samples import Samples
from parity.stats.summary import Summary


@dataclass(frozen=True, kw_only=True)
class Measurement:
    """Raw per-call seconds (``samples``) and what is derived from them.

    ``summary`` holds the median, IQR and 95% bootstrap CI of the samples; ``findings`` the
    self-checks (spread, timer resolution, throttling, input rotation); ``telemetry`` what the
    sampler saw during the timed calls (empty unless asked for).
    """

    samples: Samples
    summary: Summary
    findings: tuple[Finding, ...] = ()
    telemetry: dict[str, Any] = field(default_factory=dict)

    @property
    def median_s(self) -> float:
        """The median per-call time in seconds."""
        return self.summary.median

    def to_dict(self) -> dict[str, Any]:
        return {
            "samples": self.samples.to_dict(),
            "summary": self.summary.to_dict(),
            "findings": [f.to_dict() for f in self.findings],
            "telemetry": dict(self.telemetry),
        }
