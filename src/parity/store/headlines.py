"""The headline a case stored before cases declared one: what ``parity compare`` took as the
case's headline then, written into the case once so that comparisons of old runs keep their
values, units and ratios.

A case names its headline in its metrics: ``headline_metric`` (a metric whose name gives its
unit: ``achieved_flops``, ``gbps``, ``ns_per_load``) and ``headline_from_samples`` (true when
that metric is derived from the median of the case's ``main`` samples, which then give its
ratio a CI) or ``headline_medians`` (the sample sets whose medians make it, with their weights);
without a declaration compare takes the harness's canonical metrics
(``flop_per_s``, ``bytes_per_s``, ``median_s``). Runs stored by schema 3 and older, and run
exports of that time, declared nothing: until then compare chose the first metric of
:data:`BEFORE_DECLARED` that the case held as a positive number. The migration to schema 4 and
the import of an old export declare that choice where the canonical rule would not make it.
Offline decode cases (``tokens_per_s_per_card``) declared nothing until schema 5, so compare
gave them no ratio; the migration to schema 5 and the import of an export declare it for them
(:func:`declared_decode`). Latency slopes and decode steps named the sample sets their headline
is made of only from schema 6 (``headline_medians``), so compare gave them no within-run CI; the
migration to schema 6 and the import of an export declare them where the case's own samples
give back its headline (:func:`declared_medians`).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any, TypeGuard

HEADLINE_METRIC = "headline_metric"
FROM_SAMPLES = "headline_from_samples"
# a headline made of several sample sets' medians declares how, ``{set: weight}``: its time is
# ``Σ weight·median(set)``, the headline itself for a time, its reciprocal for a rate (a latency
# slope, a decode step); compare then resamples each set within a run
MEDIANS = "headline_medians"
# a case with no headline may say why compare gives it no ratio (a GEMM ceiling's sentinels: their
# rounds make the ceiling), in its own words
NOT_COMPARED = "not_compared"
CANONICAL = ("flop_per_s", "bytes_per_s", "median_s")  # the harness's own, derived from ``main``

# (metric, derived from the main samples), in the order compare tried them before schema 4.
BEFORE_DECLARED = (("achieved_flops", True), ("flop_per_s", True), ("ceiling_flops", False), ("gbps", True),
                   ("bytes_per_s", True), ("tokens_per_s", False), ("ns_per_load", False), ("median_s", True))


def positive(value: Any) -> TypeGuard[float]:
    """A number (not a bool) above zero."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


DECODE_HEADLINE = "tokens_per_s_per_card"  # offline decode, declared since schema 5


def declared_decode(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """The declaration an offline decode case stored before schema 5 lacks: its tokens/s per
    card (derived from the step time, not from ``main`` samples); empty for any other case."""
    if HEADLINE_METRIC in metrics or not positive(metrics.get(DECODE_HEADLINE)):
        return {}
    return {HEADLINE_METRIC: DECODE_HEADLINE}


def declared_before(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """The declaration to add to an old case's metrics: empty when the case declares one
    already, when it has no headline, or when the canonical rule picks the same metric."""
    if HEADLINE_METRIC in metrics:
        return {}
    chosen = next(((name, main) for name, main in BEFORE_DECLARED if positive(metrics.get(name))), None)
    if chosen is None or chosen[0] in CANONICAL:
        return {}
    name, main = chosen
    return {HEADLINE_METRIC: name, **({FROM_SAMPLES: True} if main else {})}


def medians_weights(metrics: Mapping[str, Any]) -> dict[str, float]:
    """The ``headline_medians`` a latency slope or a decode step stored before schema 6 would
    have declared, from its own metrics; empty for any other case (module docstring).

    - latency (``ns_per_load`` from ``short_loads`` and ``long_loads``): ``±1e9 / (N_long - N_short)``;
    - offline decode (``tokens_per_s_per_card`` and ``kinds``): per kind ``total / run / c`` with
      ``c = tokens_per_s_per_card · step_s`` (``batch · accepted / cards``);
    - the engine's slope (``tokens_per_s_per_card``, ``step_s`` and the lengths ``short``,
      ``long``): ``±1 / (c · (long - short))``."""
    if MEDIANS in metrics or not isinstance(metrics.get(HEADLINE_METRIC), str):
        return {}
    short, long = metrics.get("short_loads"), metrics.get("long_loads")
    if metrics[HEADLINE_METRIC] == "ns_per_load" and positive(short) and positive(long) and long > short:
        return {"short": -1e9 / (long - short), "long": 1e9 / (long - short)}
    rate, step = metrics.get(DECODE_HEADLINE), metrics.get("step_s")
    if metrics[HEADLINE_METRIC] != DECODE_HEADLINE or not positive(rate) or not positive(step):
        return {}
    per = rate * step
    kinds = metrics.get("kinds")
    if isinstance(kinds, dict) and kinds:
        weights = {}
        for kind, layers in kinds.items():
            total, run = (layers.get("layers_total"), layers.get("layers_run")) if isinstance(layers, dict) else (None, None)
            if not (positive(total) and positive(run)):
                return {}
            weights[str(kind)] = total / run / per
        return weights
    short, long = metrics.get("short"), metrics.get("long")
    if positive(short) and positive(long) and long > short:
        return {"short": -1 / (per * (long - short)), "long": 1 / (per * (long - short))}
    return {}


def gives_back(time: float, value: float, *, rate: bool) -> bool:
    """True when ``time = Σ w·median(set)`` is the stored headline ``value`` within 1e-9: the
    value itself for a time, its reciprocal for a rate (what compare resamples, and what a
    declaration must reproduce)."""
    return time > 0 and math.isclose(time, 1.0 / value if rate else value, rel_tol=1e-9)


def declared_medians(metrics: Mapping[str, Any], sets: Mapping[str, Sequence[float]]) -> dict[str, Any]:
    """``{headline_medians: weights}`` (:func:`medians_weights`) when the medians of the case's
    sample ``sets`` (raw times by set name) give back its stored headline (:func:`gives_back`);
    empty otherwise: no declaration that compare would refuse."""
    weights = medians_weights(metrics)
    if not weights or any(not sets.get(k) for k in weights):
        return {}
    time = sum(w * statistics.median(sets[k]) for k, w in weights.items())
    metric = metrics[HEADLINE_METRIC]
    return {MEDIANS: weights} if gives_back(time, metrics[metric], rate=metric != "ns_per_load") else {}
