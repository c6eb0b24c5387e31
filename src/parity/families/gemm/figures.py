"""The GEMM sweep's quotable figures (``parity.model.figure.Figure``), from its typed summary.

Compare and the report read these: the ceilings ``P`` and ``B``, the best fraction of ``P``,
the ceiling's own shape as a fraction of ``P``, the median efficiency over compute-bound and
over all shapes (``gemm.median_efficiency.*``, with their CIs), and each tuned backend's
median speedup per size bucket. A figure the summary could not derive is listed with
``value=None`` and a note saying why. A fraction of ``P`` or an efficiency above 1 beyond its
CI, and a ceiling that is not positive, carry an ``invalid`` finding
(``parity.metrics.validity``).
"""

from __future__ import annotations

from typing import Any

from parity.ceilings.bandwidth import bandwidth_source_note
from parity.families.gemm.summary import GemmSummary
from parity.metrics.bandwidth import STREAM_CONVENTION
from parity.metrics.validity import fraction_above_one, invalid, non_positive_rate
from parity.model.figure import Figure
from parity.model.findings import Finding, Severity


def _ci(distribution: dict[str, Any] | None) -> tuple[float, float] | None:
    if not distribution or distribution.get("ci95_low") is None:
        return None
    return (distribution["ci95_low"], distribution["ci95_high"])


def _ceiling_ci(rounds: dict[str, Any] | None) -> tuple[float, float] | None:
    ci = (rounds or {}).get("ci95_flops")
    return (ci[0], ci[1]) if ci else None


def _unstable_note(rounds: dict[str, Any] | None) -> str:
    if not rounds or not rounds.get("unstable"):
        return ""
    both = rounds.get("with_confirmation")
    if both:
        return f"unstable-ceiling: confirmation and sentinel rounds spread {100 * both['spread']:.0f}% of their median"
    return f"unstable-ceiling: rounds spread {100 * rounds['spread']:.0f}% of their median"


def _found(*findings: Finding | None) -> tuple[Finding, ...]:
    return tuple(f for f in findings if f is not None)


def best_fraction_ci(fraction: float | None, ceiling_flops: float | None,
                     ceiling_ci: tuple[float, float] | None) -> tuple[float, float] | None:
    """The best fraction of ``P`` over ``P``'s own CI: ``[f·P/P_high, f·P/P_low]`` (the best
    shape's rate held fixed; the spread of ``P``'s rounds is what the fraction may move by).
    Example: f = 1.2, P = 100 with CI [90, 110] gives [1.09, 1.33]."""
    if fraction is None or not ceiling_flops or ceiling_ci is None or ceiling_ci[0] <= 0:
        return None
    return (fraction * ceiling_flops / ceiling_ci[1], fraction * ceiling_flops / ceiling_ci[0])


def _raised_note(raised: dict[str, Any] | None) -> str:
    if not raised:
        return ""
    return (f"ceiling-raised: the search gave {raised['from_flops'] / 1e12:.4g} TFLOP/s; "
            f"raised to {raised['flops'] / 1e12:.4g} ({raised['source']})")


def over_attainable_findings(summary: GemmSummary) -> tuple[Finding, ...]:
    """The shapes whose efficiency ``rate/min(P, AI·B)`` is over 1: an ``invalid`` finding for
    those beyond their CI (``over_attainable_beyond_ci``), an ``over-attainable`` warning for
    those within it (noise around a true 100%, or a memory roof that cached operands beat)."""
    beyond = list(summary.over_attainable_beyond_ci)
    within = [name for name in summary.over_ceiling if name not in beyond]
    found: list[Finding] = []
    if beyond:
        found.append(invalid(f"{len(beyond)} shapes ran faster than the roofline min(P, AI*B) allows, beyond "
                             f"their CIs: {', '.join(beyond[:8])}{' ...' if len(beyond) > 8 else ''}",
                             "B or P was measured low (a busy machine), or the operands stayed in cache "
                             "(gemm.flush off); measure again on a quiet machine before quoting them"))
    if within:
        found.append(Finding(
            code="over-attainable", severity=Severity.WARNING,
            message=(f"{len(within)} shapes read over 100% of the roofline min(P, AI*B) within their CIs: "
                     f"{', '.join(within[:8])}{' ...' if len(within) > 8 else ''}"),
            hint="noise around a true 100%; quote those efficiencies as 1 within their CI"))
    return tuple(found)


def gemm_figures(summary: GemmSummary) -> list[Figure]:
    """The GEMM sweep: ceilings, best fraction of ``P``, median efficiencies (compute-bound, all)."""
    s = summary
    scope = {"dtype": s.dtype, "device": s.device_name}
    best_ci = best_fraction_ci(s.best_fraction_of_ceiling, s.ceiling_flops, _ceiling_ci(s.ceiling_rounds))
    figures = [
        Figure(name="gemm.ceiling", value=s.ceiling_flops, unit="FLOP/s",
               method=("measured compute ceiling: "
                       + (s.ceiling_statistic or "median confirmation round of the ceiling search's winner")),
               scope={**scope, "shape": s.ceiling_shape, "ceiling_from": s.ceiling_from},
               ci95=_ceiling_ci(s.ceiling_rounds), best=s.ceiling_best_flops,
               note=s.ceiling_error or "; ".join(n for n in (_raised_note(s.ceiling_raised),
                                                             _unstable_note(s.ceiling_rounds)) if n),
               findings=_found(non_positive_rate(s.ceiling_flops, what="the compute ceiling P", unit="FLOP/s"))),
        Figure(name="gemm.bandwidth_ceiling", value=s.bandwidth_bps, unit="B/s",
               method=f"large device-to-device copy, {STREAM_CONVENTION}",
               scope={**scope, "measured_in": (s.bandwidth_source or {}).get("measured_in")},
               note=s.bandwidth_error or bandwidth_source_note(s.bandwidth_source),
               findings=_found(non_positive_rate(s.bandwidth_bps, what="the bandwidth ceiling B", unit="B/s"))),
        Figure(name="gemm.best_fraction_of_ceiling", value=s.best_fraction_of_ceiling, unit="1",
               method="best achieved rate over the measured ceiling P; CI from P's rounds",
               scope={**scope, "cases": s.measured, "best_shape": s.best_shape},
               ci95=best_ci,
               findings=_found(fraction_above_one(s.best_fraction_of_ceiling, best_ci,
                                                  what="the best shape's rate"))),
    ]
    own = s.ceiling_own_shape
    figures.append(Figure(
        name="gemm.ceiling_own_shape_fraction", value=own["fraction"] if own else None, unit="1",
        method=(f"the ceiling's shape timed as a sweep shape ({own['source']}): {own['statistic']}; "
                "95% bootstrap CI" if own
                else "the ceiling's shape timed as a sweep shape: median timing over P; 95% bootstrap CI"),
        scope={**scope, "shape": own["shape"] if own else s.ceiling_shape, "timings": len(own["own_flops"]) if own else 0},
        ci95=tuple(own["ci95"]) if own else None,
        note="" if own else "the ceiling's shape was not timed again (no ceiling, or the run stopped first)",
        findings=_found(fraction_above_one(own["fraction"], tuple(own["ci95"]) if own.get("ci95") else None,
                                           what="the ceiling's own shape") if own else None)))
    for subset, eff in (("compute-bound", s.efficiency_compute_bound), ("all", s.efficiency_all)):
        figures.append(Figure(
            name=f"gemm.median_efficiency.{subset}", value=eff["median"] if eff else None, unit="1",
            method="median of achieved/attainable, attainable = min(P, AI*B); 95% bootstrap CI",
            scope={**scope, "subset": subset, "cases": eff["n"] if eff else 0},
            ci95=_ci(eff), note=(eff.get("note", "") if eff else f"no {subset} shapes measured"),
            findings=_found(fraction_above_one(eff["median"], _ci(eff), what=f"the median efficiency ({subset})",
                                               ceiling="min(P, AI*B)") if eff else None)
            + (over_attainable_findings(s) if subset == "all" else ())))
    return figures + speedup_figures(s.speedups, scope)


def speedup_figures(speedups: dict[str, Any], scope: dict[str, Any]) -> list[Figure]:
    """Per tuned backend and size bucket: the median speedup over the baseline (a ratio,
    1 = as fast), with the bucket's shape count and its largest speedup beside it."""
    figures = []
    for candidate, entry in speedups.items():
        for bucket, dist in [*entry["buckets"].items(), ("all", entry["overall"])]:
            figures.append(Figure(
                name=f"gemm.speedup.{candidate}", value=dist.get("median"), unit="1", best=dist.get("max"),
                method=(f"median over shapes of median({entry['baseline']})/median({candidate}), "
                        "alternated rounds"),
                scope={**scope, "baseline": entry["baseline"], "bucket": bucket, "cases": dist["n"],
                       "subset": entry["subset"]},
                note="" if dist["n"] else "no shapes in this bucket"))
    return figures
