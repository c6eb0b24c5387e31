"""Joining the cases of several runs: identical work is the same suite and case key (the key
holds what makes the work: shape and dtype for GEMM, operation and size for bandwidth,
collective, size and dtype for communication, the model config for decode), and each case's
headline figure, the one number its ratio is taken of.

The headline is the metric a case declares in its metrics (``headline_metric``, with
``headline_from_samples`` true when it is derived from the median of the ``main`` samples, or
``headline_medians`` naming the sample sets whose medians make it),
else the first of the harness's canonical metrics the case holds as a positive number:
``flop_per_s``, then ``bytes_per_s``, then ``median_s``. A metric's unit comes from its name
(:func:`metric_unit`). Runs stored before cases declared a headline had it declared for them
when the store was migrated (``parity.store.headlines``).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from parity.compare.bootstrap import Medians
from parity.model.errors import ParityError
from parity.model.result import CaseResult
from parity.store.headlines import CANONICAL, FROM_SAMPLES, HEADLINE_METRIC, MEDIANS, gives_back
from parity.store.headlines import positive as _positive

log = logging.getLogger(__name__)


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


# How a metric's name gives its unit (a name carries its unit when it is not SI), in the
# order tried: (suffix or prefix, SI unit, scale from the stored value to SI).
NAME_UNITS = (("gbps", "B/s", 1e9), ("bps", "B/s", 1.0), ("bytes_per_s", "B/s", 1.0), ("flops", "FLOP/s", 1.0),
              ("flop_per_s", "FLOP/s", 1.0), ("tokens_per_s", "tok/s", 1.0), ("tokens_per_s_per_card", "tok/s", 1.0), ("ns_", "s", 1e-9), ("_ns", "s", 1e-9),
              ("us_", "s", 1e-6), ("_us", "s", 1e-6), ("ms_", "s", 1e-3), ("_ms", "s", 1e-3), ("_s", "s", 1.0))


def metric_unit(name: str) -> tuple[str, float] | None:
    """``(SI unit, scale to SI)`` of a metric from its name: ``gbps`` is B/s times 1e9,
    ``achieved_flops`` FLOP/s, ``ns_per_load`` s times 1e-9, ``median_s`` s; None when the name
    does not say (a pattern ending in ``_`` is a prefix, any other a suffix; a rate of
    something else per second, ``requests_per_s``, says no unit parity knows)."""
    for pattern, unit, scale in NAME_UNITS:
        if pattern == "_s" and name.endswith("_per_s"):
            return None
        if name.startswith(pattern) if pattern.endswith("_") else name.endswith(pattern):
            return unit, scale
    return None


def _headline_of(metric: str, *, from_main_samples: bool, where: str) -> Headline:
    unit = metric_unit(metric)
    if unit is None:
        raise ParityError(f"{where} declares headline metric {metric!r}, whose name gives no unit; "
                          "name it with a unit suffix (_s, _ns, _flops, _bps, _gbps, _per_s)")
    return Headline(metric=metric, unit=unit[0], scale=unit[1], higher_is_better=unit[0] != "s",
                    from_main_samples=from_main_samples)


# Parameters that say where a case came from rather than what it runs.
IGNORED_PARAMS = frozenset({"origin", "name", "family", "again_of"})


def headline(case: CaseResult) -> Headline | None:
    """The case's declared headline when it holds it as a positive number, else the first of
    :data:`CANONICAL` it holds as one, else None (see the module docstring)."""
    declared = case.metrics.get(HEADLINE_METRIC)
    if isinstance(declared, str) and _positive(case.metrics.get(declared)):
        return _headline_of(declared, from_main_samples=declared in CANONICAL or case.metrics.get(FROM_SAMPLES) is True,
                            where=f"case {case.suite}/{case.key}")
    metric = next((name for name in CANONICAL if _positive(case.metrics.get(name))), None)
    return _headline_of(metric, from_main_samples=True, where="the harness") if metric else None


def headline_value(case: CaseResult, chosen: Headline) -> float | None:
    """The case's headline in SI units (None when it did not run, failed or lacks it)."""
    value = case.metrics.get(chosen.metric)
    if not case.ok or not _positive(value):
        return None
    return float(value) * chosen.scale


def headline_medians(case: CaseResult, chosen: Headline) -> Medians | None:
    """The sample sets whose medians make the case's headline, for its within-run CI: ``main``
    alone, weight 1, for a headline that is its median; else the sets and weights the case
    declares (``headline_medians``: ``Σ weight·median(set)`` is the headline for a time, its
    reciprocal for a rate) when they give back the stored headline within 1e-9, else None (a
    declaration that does not reproduce its own headline is logged, never resampled)."""
    if chosen.from_main_samples:
        samples = case.samples.get("main")
        return Medians(weights=(1.0,), sets=(np.asarray(samples.values_s, dtype=np.float64),)) \
            if samples is not None and len(samples) else None
    declared = case.metrics.get(MEDIANS)
    value = case.metrics.get(chosen.metric)
    if not isinstance(declared, dict) or not declared or not _positive(value):
        return None
    sets = [case.samples.get(str(name)) for name in declared]
    weights = list(declared.values())
    if any(s is None or not len(s) for s in sets) or not all(_finite(w) for w in weights):
        return None
    medians = Medians(weights=tuple(float(w) for w in weights),
                      sets=tuple(np.asarray(s.values_s, dtype=np.float64) for s in sets if s is not None))
    time = medians.time()
    if not gives_back(time, float(value), rate=chosen.higher_is_better):
        log.warning("case %s/%s: its %s give %.6g, not what its %s %.6g makes; no within-run CI for it",
                    case.suite, case.key, MEDIANS, time, chosen.metric, float(value))
        return None
    return medians


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def byte_convention(case: CaseResult) -> str | None:
    """How the case counts its bytes, where it counts bytes."""
    value = case.metrics.get("bytes_convention") or case.metrics.get("convention")
    return str(value) if value else None


def timing_method(case: CaseResult) -> str | None:
    """The timing strategy of the case's samples (``device-events``, ``host-clock``, ...)."""
    methods = sorted({s.method for s in case.samples.values()})
    return ", ".join(methods) if methods else (str(case.metrics["strategy"]) if case.metrics.get("strategy") else None)


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
