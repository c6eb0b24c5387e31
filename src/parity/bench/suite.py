"""The contract between benchmarks and the harness.

A suite declares its cases and how to measure one; the runner (``parity.bench.runner``) walks
the cases, skips those a resumed run already stored, commits each result to the store as soon
as it is measured, and shows progress. A suite never prints and never writes to the store.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from parity.model.result import CaseResult


@dataclass(frozen=True, kw_only=True)
class CaseSpec:
    """One case to measure. ``key`` is unique within the suite and stable across runs
    (``--resume`` matches on it); ``params`` are JSON-serialisable; ``cost`` is a relative
    estimate of its run time used for the ETA (1.0 when unknown)."""

    suite: str
    key: str
    params: dict[str, Any] = field(default_factory=dict)
    cost: float = 1.0


@runtime_checkable
class Suite(Protocol):
    """A registered benchmark (gemm, membw, latency, ...)."""

    name: str
    description: str

    def cases(self, *, device: Any, quick: bool, options: dict[str, Any]) -> list[CaseSpec]:
        """The cases this suite would measure on ``device``."""
        ...

    def measure(self, case: CaseSpec, *, device: Any, options: dict[str, Any]) -> CaseResult:
        """Measure one case. Errors (out of memory, unsupported dtype) are returned as a
        ``CaseResult`` with ``error`` set, never raised."""
        ...

    def summarize(self, results: list[CaseResult], *, options: dict[str, Any]) -> dict[str, Any]:
        """Suite-level figures derived from the stored cases (a JSON-serialisable dict)."""
        ...
