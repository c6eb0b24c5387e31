"""What a timing strategy object returns: the raw samples, their summary, and what it saw.

``parity.harness.measure`` turns a ``Timed`` into a case's row exactly as it does a
``Measurement`` (same metric keys); ``samples["main"]`` is the sample set the row is rated by.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from parity.model.findings import Finding
from parity.model.samples import Samples
from parity.stats.summary import Summary


@dataclass(frozen=True, kw_only=True)
class Timed:
    """Raw sample sets by name (``"main"`` always), the summary of ``main``, extra metrics of
    the strategy (SI units), its findings, and the telemetry seen during the timed calls."""

    samples: dict[str, Samples]
    summary: Summary
    metrics: dict[str, Any] = field(default_factory=dict)
    findings: tuple[Finding, ...] = ()
    telemetry: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if "main" not in self.samples:
            raise ValueError("a timed result needs a 'main' sample set")

    @property
    def median_s(self) -> float:
        """The median per-call time of ``main`` in seconds."""
        return self.summary.median
