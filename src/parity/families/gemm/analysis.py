"""From stored GEMM cases to the roofline rows and the sweep summary (no torch, no device).

The ceiling and bandwidth cases give ``P`` and ``B``; every measured shape is then placed on
the roofline (``parity.metrics.roofline.place``). With several backends, a shape's headline
figures use its best backend (highest achieved rate among rows whose check passed), and each
backend's own figures are kept beside it.

Statistic. A shape's rate is its median call (``achieved_flops``, its fastest call beside it as
``best_flops``) and ``P`` is the median round of the ceiling's shape over the sentinel rounds
timed through the sweep (``sweep_ceiling``; the confirmation's, or the stored ``P`` for a reused
ceiling, when fewer than three sentinels were timed), its best round beside it as
``ceiling_best_flops``: every fraction of ``P`` and every efficiency is median over median, and
the summary says so (``statistic``).

Summary figures (docs/definitions.md, GEMM and roofline):
- ``best_fraction_of_ceiling``: the best achieved rate over ``P`` (the "99.7%" figure);
- ``efficiency_compute_bound``: median of achieved/attainable over compute-bound shapes, with a
  95% bootstrap CI and percentiles (its median is the "41.5%" figure);
- counts per class, throttled and power-limited shapes, failed shapes, shapes over the ceiling.
"""

from __future__ import annotations

from typing import Any

from parity.families.gemm.speedup_summary import speedup_summary
from parity.families.gemm.summary import GemmSummary
from parity.harness.recheck import settle_rechecks
from parity.families.gemm.measure_case import ceiling_findings
from parity.families.gemm.raised import (
    PEAK_FINDINGS,
    above_peak_finding,
    bandwidth_interval,
    ceiling_interval,
    efficiency_interval,
    floor_at_sweep,
    fraction_interval,
    implausible_finding,
    raise_ceiling,
    rate_interval,
)
from parity.metrics.ceiling import (
    MIN_ROUNDS_FOR_CI,
    ceiling_rounds,
    own_shape_fraction,
    paired_own_shape_fraction,
)
from parity.metrics.roofline import (
    COMPUTE_BOUND,
    MEMORY_BOUND,
    best_fraction_of_ceiling,
    fraction_of,
    median_efficiency,
    place,
    ridge_point,
)
from parity.model.findings import Severity
from parity.model.result import CaseResult
from parity.stats import ratio_ci
from parity.stats.trend import off_trend

TERA = 1e12
STATISTIC = "median: each shape's median call over P's median round (best of each kept beside it)"


def _ceilings(results: list[CaseResult]) -> tuple[CaseResult | None, CaseResult | None]:
    ceiling = next((r for r in results if r.params.get("kind") == "ceiling"), None)
    bandwidth = next((r for r in results if r.params.get("kind") == "bandwidth"), None)
    return ceiling, bandwidth


def _ok_value(result: CaseResult | None, key: str) -> float | None:
    if result is None or result.error is not None:
        return None
    value = result.metrics.get(key)
    return float(value) if value else None


def backend_row(result: CaseResult, *, peak: float | None, bandwidth: float | None, sheet: float | None,
                ceiling_ci: tuple[float, float] | None = None,
                bandwidth_ci: tuple[float, float] | None = None) -> dict[str, Any]:
    """One backend's figures for one shape (SI units; rates in FLOP/s); with ``ceiling_ci``
    (``P``'s 95% CI), ``fraction_of_ceiling_ci95`` (``raised.fraction_interval``), and with
    ``bandwidth_ci`` too, ``efficiency_ci95`` (``raised.efficiency_interval``)."""
    m = result.metrics
    row: dict[str, Any] = {"key": result.key, "ok": result.ok, "error": result.error,
                           "findings": [f.code for f in result.findings]}
    if result.error is not None:
        return row
    achieved = float(m["achieved_flops"])
    row.update({
        "median_s": m["median_s"], "iqr_s": m["iqr_s"], "ci95_s": m.get("ci95_s"),
        "achieved_flops": achieved,
        "best_flops": float(m["work_flop"]) / float(m["min_s"]) if m.get("min_s") and m.get("work_flop") else None,
        "relative_error": result.check.get("relative_error"), "check_passed": result.check.get("passed"),
        "power_limited": bool(m.get("power_limited")), "throttle_reasons": m.get("throttle_reasons", []),
        "clock_mhz": m.get("clock_mhz"), "power_w": m.get("power_w"),
        "fraction_of_datasheet": fraction_of(achieved, sheet),
    })
    if peak and bandwidth:
        point = place(intensity=float(m["arithmetic_intensity"]), achieved_flops=achieved,
                      peak_flops=peak, bandwidth_bps=bandwidth)
        row.update({"attainable_flops": point.attainable_flops, "efficiency": point.efficiency,
                    "fraction_of_ceiling": point.fraction_of_ceiling})
    elif peak:
        row["fraction_of_ceiling"] = achieved / peak
    interval = rate_interval(m)
    if peak and ceiling_ci and interval:
        row["fraction_of_ceiling_ci95"] = list(fraction_interval(interval, ceiling_ci))
        if bandwidth_ci and m.get("arithmetic_intensity"):
            row["efficiency_ci95"] = list(efficiency_interval(interval, float(m["arithmetic_intensity"]),
                                                              ceiling_ci, bandwidth_ci))
    return row


def shape_rows(results: list[CaseResult], *, peak: float | None, bandwidth: float | None,
               sheet: float | None, ceiling_ci: tuple[float, float] | None = None,
               bandwidth_ci: tuple[float, float] | None = None) -> list[dict[str, Any]]:
    """Per shape: dims, name, intensity, class, best backend, and each backend's figures."""
    shapes: dict[tuple[int, int, int], dict[str, Any]] = {}
    ridge = ridge_point(peak, bandwidth) if peak and bandwidth else None
    for result in results:
        p = result.params
        if p.get("kind") != "shape":
            continue
        dims = (int(p["m"]), int(p["n"]), int(p["k"]))
        entry = shapes.setdefault(dims, {
            "m": dims[0], "n": dims[1], "k": dims[2], "name": p.get("name", ""), "family": p.get("family", ""),
            "origin": p.get("origin", ""), "backends": {},
        })
        intensity = result.metrics.get("arithmetic_intensity")
        if intensity is not None:
            entry["arithmetic_intensity"] = intensity
            if ridge:
                entry["class"] = COMPUTE_BOUND if intensity >= ridge else MEMORY_BOUND
                entry["near_ridge"] = 0.75 * ridge <= intensity <= 1.25 * ridge
        entry["backends"][p["backend"]] = backend_row(result, peak=peak, bandwidth=bandwidth, sheet=sheet,
                                                      ceiling_ci=ceiling_ci, bandwidth_ci=bandwidth_ci)
    for entry in shapes.values():
        good = {name: b for name, b in entry["backends"].items() if b["ok"]}
        entry["best_backend"] = max(good, key=lambda name: good[name]["achieved_flops"]) if good else None
        entry["best"] = good[entry["best_backend"]] if good else None
    return list(shapes.values())


def _figures(rows: list[dict[str, Any]], peak: float | None) -> dict[str, Any]:
    """Headline figures over the given rows' best-backend entries."""
    best = [(r, r["best"]) for r in rows if r["best"] is not None]
    out: dict[str, Any] = {"measured": len(best)}
    if not best or not peak:
        out["best_fraction_of_ceiling"] = None
        return out
    out["best_fraction_of_ceiling"] = best_fraction_of_ceiling([b["achieved_flops"] for _, b in best], peak)
    winner = max(best, key=lambda rb: rb[1]["achieved_flops"])[0]
    out["best_shape"] = {"name": winner["name"], "m": winner["m"], "n": winner["n"], "k": winner["k"]}
    compute = [b["efficiency"] for r, b in best if r.get("class") == COMPUTE_BOUND and "efficiency" in b]
    every = [b["efficiency"] for _, b in best if "efficiency" in b]
    out["efficiency_compute_bound"] = median_efficiency(compute) if compute else None
    out["efficiency_all"] = median_efficiency(every) if every else None
    return out


def off_trend_shapes(results: list[CaseResult]) -> list[CaseResult]:
    """Shape cases whose rate is off the trend of their neighbours in shape: for each backend
    and axis (M, N or K), the shapes that share the other two dimensions, ordered along it
    (``parity.stats.trend.off_trend`` on the achieved FLOP/s)."""
    shapes = [r for r in results if r.params.get("kind") == "shape" and r.ok and r.metrics.get("achieved_flops")
              and not r.params.get("again_of")]
    found: dict[str, CaseResult] = {}
    for axis in range(3):
        lines: dict[tuple[Any, ...], list[CaseResult]] = {}
        for r in shapes:
            dims = (int(r.params["m"]), int(r.params["n"]), int(r.params["k"]))
            lines.setdefault((r.params.get("backend"), axis) + dims[:axis] + dims[axis + 1:], []).append(r)
        for line in lines.values():
            line.sort(key=lambda r: int(r.params["mnk"[axis]]))
            for i in off_trend([float(r.metrics["achieved_flops"]) for r in line]):
                found.setdefault(line[i].key, line[i])
    return list(found.values())


def analyse(results: list[CaseResult]) -> dict[str, Any]:
    """The GEMM sweep summary as stored (``gemm_summary(results).to_dict()``)."""
    return gemm_summary(results).to_dict()


def gemm_summary(results: list[CaseResult]) -> GemmSummary:
    """The GEMM sweep summary (see module docstring), with the per-shape ``rows``."""
    results, trend_findings = settle_rechecks(
        results, find=off_trend_shapes, describe=lambda r: f"{float(r.metrics['achieved_flops']) / TERA:.4g} TFLOP/s")
    ceiling_case, bandwidth_case = _ceilings(results)
    bandwidth = _ok_value(bandwidth_case, "bandwidth_bps")
    cm = sweep_ceiling(ceiling_case, sentinel_rates(results))
    own = own_shape_figure(results, cm)
    cm = floor_at_sweep(raise_ceiling(cm, results), results)
    peak = float(cm["ceiling_flops"]) if _ok_value(ceiling_case, "ceiling_flops") else None
    sheet = cm.get("datasheet_flops")
    source = cm.get("datasheet_derived") or cm.get("datasheet_source")
    judged = [f for f in (implausible_finding(peak, sheet, source), above_peak_finding(peak, sheet, source)) if f]
    cm["findings"] = [f for f in cm.get("findings", ()) if f.code not in PEAK_FINDINGS] + judged
    rows = shape_rows(results, peak=peak, bandwidth=bandwidth, sheet=sheet,
                      ceiling_ci=ceiling_interval(cm, peak) if peak else None,
                      bandwidth_ci=bandwidth_interval(bandwidth_case.metrics, bandwidth)
                      if bandwidth and bandwidth_case is not None else None)
    shape_results = [r for r in results if r.params.get("kind") == "shape"]
    ceiling_codes = [f.code for f in cm.get("findings", ())]
    sweep_findings = [f.to_dict() for f in cm.pop("sweep_findings", ())] + [
        f.to_dict() for f in cm.pop("findings", ()) if f.code in ("ceiling-raised", "ceiling-kept", *PEAK_FINDINGS)]
    dtype = next((r.params.get("dtype") for r in results if r.params.get("dtype")), None)
    return GemmSummary(
        ceiling_flops=peak,
        statistic=STATISTIC,
        bandwidth_bps=bandwidth,
        bandwidth_source=bandwidth_case.metrics.get("bandwidth_source") if bandwidth_case is not None else None,
        dtype=dtype,
        device_name=cm.get("device_name"),
        ceiling_shape=cm.get("ceiling_shape"),
        ceiling_best_flops=cm.get("ceiling_best_flops"),
        ceiling_rounds=cm.get("ceiling_rounds"),
        ceiling_statistic=cm.get("ceiling_statistic"),
        ceiling_findings=ceiling_codes,
        ceiling_from=cm.get("ceiling_from"),
        emulation_note=cm.get("emulation_note"),
        ceiling_error=ceiling_case.error if ceiling_case is not None else "no ceiling case in this run",
        bandwidth_error=bandwidth_case.error if bandwidth_case is not None else "no bandwidth case in this run",
        ridge_flop_per_byte=ridge_point(peak, bandwidth) if peak and bandwidth else None,
        datasheet=_datasheet(cm, peak),
        **_figures(rows, peak),
        shapes=len(rows),
        classes=_classes(rows),
        throttled=sorted({r.key for r in shape_results if any(f.code == "throttled" for f in r.findings)}),
        power_limited=sorted({r.key for r in shape_results if r.metrics.get("power_limited")}),
        failed=[_failure(r) for r in shape_results if not r.ok],
        over_ceiling=[r["name"] for r in rows if r["best"] and (r["best"].get("efficiency") or 0) > 1.0],
        over_ceiling_beyond_ci=[r["name"] for r in rows if r["best"]
                                and (r["best"].get("fraction_of_ceiling_ci95") or [0.0])[0] > 1.0],
        over_attainable_beyond_ci=[r["name"] for r in rows if r["best"]
                                   and (r["best"].get("efficiency_ci95") or [0.0])[0] > 1.0],
        ceiling_raised=cm.get("ceiling_raised"),
        ceiling_own_shape=own,
        findings=(trend_findings + sweep_findings
                  + ([own_shape_finding(own)] if own and not own["reproduced"] else [])),
        backends=_per_backend(rows, peak),
        rows=[{key: value for key, value in row.items() if key != "best"} for row in rows],
        speedups=speedup_summary(shape_results),
    )


def sentinel_rates(results: list[CaseResult]) -> list[float]:
    """The rates (FLOP/s) of the sentinel rounds timed through the sweep, in case order."""
    return [float(rate) for r in results if r.params.get("kind") == "ceiling-sentinel" and r.ok
            for rate in r.metrics.get("rounds_flops") or []]


def own_pairs(results: list[CaseResult], kind: str) -> tuple[list[float], list[float]]:
    """``(rounds, own)`` of the ``kind`` cases (``ceiling-sentinel`` or ``ceiling-shape``): each
    round of ``P``'s (FLOP/s) and the own shape timed as a sweep shape beside it, in the order
    timed; a case without own timings (stored before they were taken) adds none."""
    rounds: list[float] = []
    own: list[float] = []
    for r in results:
        if r.params.get("kind") == kind and r.ok and r.metrics.get("own_flops"):
            rounds.extend(float(v) for v in r.metrics["rounds_flops"])
            own.extend(float(v) for v in r.metrics["own_flops"])
    return rounds, own


def sweep_ceiling(ceiling: CaseResult | None, sentinels: list[float]) -> dict[str, Any]:
    """The ceiling case's metrics with ``P`` read from the sweep's sentinel rounds
    (``parity.metrics.ceiling``): ``ceiling_flops`` (their median), ``ceiling_best_flops``,
    ``ceiling_rounds`` (their dispersion, with ``confirm_flops``, ``sentinel_flops``, and
    ``unstable`` and ``with_confirmation`` judged over the confirmation and sentinel rounds
    together), ``sweep_findings`` (``unstable-ceiling`` over those rounds)
    and ``findings`` (the case's, its ``unstable-ceiling`` verdict replaced by that one). Only
    ``findings`` is added for a reused ceiling, a failed one, or fewer than ``MIN_ROUNDS_FOR_CI``
    sentinels: ``P`` is then the confirmation's (or the stored run's)."""
    metrics = dict(ceiling.metrics) if ceiling is not None else {}
    metrics["findings"] = list(ceiling.findings) if ceiling is not None else []
    confirmation = (metrics.get("ceiling_rounds") or {}).get("rounds_flops") or []
    if (ceiling is None or ceiling.error is not None or metrics.get("ceiling_from") or not confirmation
            or len(sentinels) < MIN_ROUNDS_FOR_CI):
        return metrics
    rounds = ceiling_rounds(sentinels)
    both = ceiling_rounds(list(confirmation) + sentinels)
    unstable = ceiling_findings(both, where="confirmation and sentinel rounds")
    metrics.update({
        "findings": [f for f in ceiling.findings if f.code != "unstable-ceiling"] + unstable,
        "ceiling_flops": rounds.median_flops, "ceiling_best_flops": rounds.best_flops,
        "ceiling_statistic": "median of the sentinel rounds timed through the sweep",
        "ceiling_rounds": {**rounds.to_dict(), "statistic": "median of the sentinel rounds",
                           "confirm_flops": list(confirmation), "sentinel_flops": list(sentinels),
                           "unstable": both.unstable,
                           "with_confirmation": {"spread": both.spread, "ci_width": both.ci_width}},
        "sweep_findings": unstable})
    return metrics


def own_shape_figure(results: list[CaseResult], ceiling_metrics: dict[str, Any]) -> dict[str, Any] | None:
    """The ceiling's own shape timed as a sweep shape, as a fraction of ``P`` with its CI: from
    the sentinels when at least ``MIN_ROUNDS_FOR_CI`` carry own timings (over the rounds timed
    beside them, ``paired_own_shape_fraction``, when ``P`` is those rounds; over the stored
    ``P``'s rounds, ``own_shape_fraction``, for a reused ceiling), else from
    ``ceiling/<dtype>/own-shape`` timed after the sweep (``own_shape_fraction`` over ``P``'s
    rounds). ``confirm_fraction``: the rounds timed through (or after) the sweep over the median
    confirmation round, how far the sweep's moments were from the search's. None when either
    side is missing."""
    rounds = ceiling_metrics.get("ceiling_rounds") or {}
    p_rounds = rounds.get("rounds_flops")
    confirmation = rounds.get("confirm_flops") or p_rounds
    shape = ceiling_metrics.get("ceiling_shape")
    if not p_rounds or not shape:
        return None
    beside, own = own_pairs(results, "ceiling-sentinel")
    from_sentinels = len(own) >= MIN_ROUNDS_FOR_CI
    if not from_sentinels:
        beside, own = own_pairs(results, "ceiling-shape")
    if not own:
        return None
    source = "sentinels through the sweep" if from_sentinels else "timed after the sweep"
    paired = from_sentinels and bool(rounds.get("sentinel_flops")) and not ceiling_metrics.get("ceiling_from")
    fraction = paired_own_shape_fraction(own, beside) if paired else own_shape_fraction(own, p_rounds)
    drift, low, high = ratio_ci(beside, confirmation)
    return {"shape": {d: shape[d] for d in "mnk"}, "source": source, **fraction.to_dict(),
            "confirm_fraction": {"fraction": drift, "ci95": [low, high],
                                 "statistic": "median round of P's shape timed through (or after) the sweep "
                                              "over the median confirmation round"}}


def own_shape_finding(own: dict[str, Any]) -> dict[str, Any]:
    """``ceiling-not-reproduced`` (a warning): the shape that gave ``P``, timed again (its
    ``source`` rounds), reads a fraction of ``P`` whose CI excludes 1.0."""
    low, high = own["ci95"]
    shape = own["shape"]
    return {"code": "ceiling-not-reproduced", "severity": "warning",
            "message": (f"the ceiling's own shape {shape['m']}x{shape['n']}x{shape['k']} ({own['source']}) "
                        f"reads {100 * own['fraction']:.1f}% of P (95% CI {100 * low:.1f}%-{100 * high:.1f}%)"),
            "hint": ("P was measured at a faster (or slower) moment than the sweep: fractions of P move by as much; "
                     "run on an idle machine, or share one P between sweeps with --ceiling-from RUN")}


def _datasheet(ceiling_metrics: dict[str, Any], peak: float | None) -> dict[str, Any]:
    flops = ceiling_metrics.get("datasheet_flops")
    if not flops:
        name = ceiling_metrics.get("device_name")
        return {"flops": None, "note": f"no datasheet entry for {name!r}" if name else "no datasheet entry"}
    return {"flops": flops, "source": ceiling_metrics.get("datasheet_source"),
            "derived": ceiling_metrics.get("datasheet_derived"),
            "ceiling_fraction_of_datasheet": fraction_of(peak, flops) if peak else None}


def _classes(rows: list[dict[str, Any]]) -> dict[str, int]:
    counts = {COMPUTE_BOUND: 0, MEMORY_BOUND: 0, "near-ridge": 0, "unclassified": 0}
    for row in rows:
        if "class" not in row:
            counts["unclassified"] += 1
            continue
        counts[row["class"]] += 1
        counts["near-ridge"] += int(row["near_ridge"])
    return counts


def _failure(result: CaseResult) -> dict[str, Any]:
    errors = [f for f in result.findings if f.severity is Severity.ERROR]
    return {"key": result.key, "error": result.error or (errors[0].message if errors else "check failed"),
            "code": errors[0].code if errors else ("error" if result.error else "check-failed")}


def _per_backend(rows: list[dict[str, Any]], peak: float | None) -> dict[str, Any]:
    names = sorted({name for r in rows for name in r["backends"]})
    out = {}
    for name in names:
        own = []
        for r in rows:
            b = r["backends"].get(name)
            if b is not None:
                own.append({**r, "best": b if b["ok"] else None})
        figures = _figures(own, peak)
        figures["wins"] = sum(1 for r in rows if r["best_backend"] == name)
        figures["failed"] = sum(1 for r in own if r["best"] is None)
        out[name] = figures
    return out
