"""Joining the cases of several runs: identical work is the same suite and case key (the key
holds what makes the work: shape and dtype for GEMM, operation and size for bandwidth,
collective, size and dtype for communication, the model config for decode), and each case's
headline figure, the one number its ratio is taken of.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from parity.model.result import CaseResult


@dataclass(frozen=True, kw_only=True)
class Headline:
    """Which stored metric is a case's headline: its SI unit, the scale from the stored value
    to SI, whether a larger value is better (a rate) or worse (a time), and whether it is
    derived from the median of the case's ``main`` samples (only then do those samples give
    its ratio a CI)."""

    metric: str
    unit: str
    scale: float
    higher_is_better: bool
    from_main_samples: bool = True


# First match wins: a family's own rate, the harness's declared rates, then times.
HEADLINES = (
    Headline(metric="achieved_flops", unit="FLOP/s", scale=1.0, higher_is_better=True),
    Headline(metric="flop_per_s", unit="FLOP/s", scale=1.0, higher_is_better=True),
    Headline(metric="ceiling_flops", unit="FLOP/s", scale=1.0, higher_is_better=True, from_main_samples=False),
    Headline(metric="gbps", unit="B/s", scale=1e9, higher_is_better=True),
    Headline(metric="bytes_per_s", unit="B/s", scale=1.0, higher_is_better=True),
    Headline(metric="tokens_per_s", unit="tok/s", scale=1.0, higher_is_better=True, from_main_samples=False),
    Headline(metric="ns_per_load", unit="s", scale=1e-9, higher_is_better=False, from_main_samples=False),
    Headline(metric="median_s", unit="s", scale=1.0, higher_is_better=False),
)

# Parameters that say where a case came from rather than what it runs.
IGNORED_PARAMS = frozenset({"origin", "name", "family", "again_of"})


def headline(case: CaseResult) -> Headline | None:
    """The first of :data:`HEADLINES` the case has as a positive number, or None."""
    for candidate in HEADLINES:
        value = case.metrics.get(candidate.metric)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            return candidate
    return None


def headline_value(case: CaseResult, chosen: Headline) -> float | None:
    """The case's headline in SI units (None when it did not run, failed or lacks it)."""
    value = case.metrics.get(chosen.metric)
    if not case.ok or not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
        return None
    return float(value) * chosen.scale


def main_times(case: CaseResult) -> tuple[float, ...] | None:
    """The raw per-call times behind a headline that is a median of one sample set (``main``)."""
    samples = case.samples.get("main")
    return samples.values_s if samples is not None and len(samples) else None


def byte_convention(case: CaseResult) -> str | None:
    """How the case counts its bytes, where it counts bytes."""
    value = case.metrics.get("bytes_convention") or case.metrics.get("convention")
    return str(value) if value else None


def timing_method(case: CaseResult) -> str | None:
    """The timing strategy of the case's samples (``device-events``, ``host-clock``, ...)."""
    methods = sorted({s.method for s in case.samples.values()})
    return ", ".join(methods) if methods else (str(case.metrics["strategy"]) if case.metrics.get("strategy") else None)


def identity_params(case: CaseResult) -> dict[str, Any]:
    """The case's parameters without those in :data:`IGNORED_PARAMS`."""
    return {k: v for k, v in case.params.items() if k not in IGNORED_PARAMS}


@dataclass(frozen=True, kw_only=True)
class JoinedCase:
    """One case present in every run, in run order."""

    suite: str
    key: str
    cases: tuple[CaseResult, ...]


def join_cases(per_run: list[list[CaseResult]]) -> tuple[list[JoinedCase], list[list[str]]]:
    """Cases present in every run (in the first run's order), and per run the ``suite/key`` of
    its cases missing from some other run."""
    indexed = [{(c.suite, c.key): c for c in cases} for cases in per_run]
    common = set(indexed[0]).intersection(*indexed[1:]) if indexed else set()
    joined = [JoinedCase(suite=c.suite, key=c.key, cases=tuple(ix[(c.suite, c.key)] for ix in indexed))
              for c in per_run[0] if (c.suite, c.key) in common] if per_run else []
    only = [[f"{s}/{k}" for (s, k) in ix if (s, k) not in common] for ix in indexed]
    return joined, only
