"""Each built-in family's summary as typed figures (``parity.model.figure.Figure``).

Compare and the report read these and nothing else, so every figure names its method and its
scope here, once. A figure whose value the summary could not derive is still listed, with
``value=None`` and a note saying why, so a missing number is never silent.
"""

from __future__ import annotations

from typing import Any

from parity.metrics.bandwidth import STREAM_CONVENTION
from parity.model.figure import Figure

GIGA = 1e9
NS = 1e-9


def _ci(summary: dict[str, Any] | None) -> tuple[float, float] | None:
    if not summary or summary.get("ci95_low") is None:
        return None
    return (summary["ci95_low"], summary["ci95_high"])


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


def gemm_figures(summary: dict[str, Any]) -> list[Figure]:
    """The GEMM sweep: ceilings, best fraction of ``P``, median efficiencies (compute-bound, all)."""
    dtype = summary.get("dtype")
    scope = {"dtype": dtype, "device": summary.get("device_name")}
    shape = summary.get("ceiling_shape")
    figures = [
        Figure(name="gemm.ceiling", value=summary.get("ceiling_flops"), unit="FLOP/s",
               method=("measured compute ceiling: "
                       + (summary.get("ceiling_statistic") or "median confirmation round of the ceiling search's winner")),
               scope={**scope, "shape": shape, "ceiling_from": summary.get("ceiling_from")},
               ci95=_ceiling_ci(summary.get("ceiling_rounds")), best=summary.get("ceiling_best_flops"),
               note=summary.get("ceiling_error") or _unstable_note(summary.get("ceiling_rounds"))),
        Figure(name="gemm.bandwidth_ceiling", value=summary.get("bandwidth_bps"), unit="B/s",
               method=f"large device-to-device copy, {STREAM_CONVENTION}", scope=scope,
               note=summary.get("bandwidth_error") or ""),
        Figure(name="gemm.best_fraction_of_ceiling", value=summary.get("best_fraction_of_ceiling"), unit="1",
               method="best achieved rate over the measured ceiling P",
               scope={**scope, "cases": summary.get("measured", 0), "best_shape": summary.get("best_shape")}),
    ]
    own = summary.get("ceiling_own_shape")
    figures.append(Figure(
        name="gemm.ceiling_own_shape_fraction", value=own["fraction"] if own else None, unit="1",
        method=(f"the ceiling's shape timed as a sweep shape ({own['source']}): {own['statistic']}; "
                "95% bootstrap CI" if own
                else "the ceiling's shape timed as a sweep shape: median timing over P; 95% bootstrap CI"),
        scope={**scope, "shape": own["shape"] if own else shape, "timings": len(own["own_flops"]) if own else 0},
        ci95=tuple(own["ci95"]) if own else None,
        note="" if own else "the ceiling's shape was not timed again (no ceiling, or the run stopped first)"))
    for subset, key in (("compute-bound", "efficiency_compute_bound"), ("all", "efficiency_all")):
        eff = summary.get(key)
        figures.append(Figure(
            name=f"gemm.median_efficiency.{subset}", value=eff["median"] if eff else None, unit="1",
            method="median of achieved/attainable, attainable = min(P, AI*B); 95% bootstrap CI",
            scope={**scope, "subset": subset, "cases": eff["n"] if eff else 0},
            ci95=_ci(eff), note=(eff.get("note", "") if eff else f"no {subset} shapes measured")))
    return figures + speedup_figures(summary.get("speedups") or {}, scope)


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
