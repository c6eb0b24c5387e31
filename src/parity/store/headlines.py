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
(:func:`declared_decode`).
"""

from __future__ import annotations

from collections.abc import Mapping
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
