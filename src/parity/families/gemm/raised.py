"""A ceiling never below what the sweep sustained: fractions of ``P`` with their CIs, the search
again around a shape that beat ``P`` (``raise_case``, timed after the sweep), the raised ``P``
(``raise_ceiling``) and a ``P`` implausibly far below the device's peak.

Definitions (docs/definitions.md, "Raised and implausible ceilings"):

- a shape's rate interval: ``[F/t_high, F/t_low]`` from its median call's 95% CI
  ``[t_low, t_high]`` (``rate_interval``);
- its fraction of ``P`` with an interval: ``rate/P`` within ``[rate_low/P_high, rate_high/P_low]``
  (``fraction_interval``: both 95% CIs at their worst, so conservative);
- a shape beats ``P`` beyond both CIs when ``rate_low > P_high`` (the fraction interval's low end
  above 1); the fastest such shape is the challenger, searched around after the sweep;
- when that search holds (``parity.ceilings.raise_search``), ``P`` becomes
  ``max(the challenger's sweep rate, the search winner's median confirmation round)`` with a
  ``ceiling-raised`` warning, and every fraction and efficiency is computed against it;
  when it does not hold, ``P`` stays with a ``ceiling-kept`` note (the sweep's rate was a moment);
- a shape faster than ``P`` within their CIs (``rate > P`` but ``rate_low <= P_high``) is noise
  around a true 100%, not a reason to search again: ``P`` becomes the fastest such rate
  (``floor_at_sweep``) with a ``ceiling-raised`` note, so no fraction of ``P`` is over 1 unless
  a finding says why (a challenger the search did not confirm keeps its ``invalid`` figure);
- a shape's efficiency with an interval: ``rate/min(P, AI·B)`` within the same worst-case
  bounds over the rate's, ``P``'s and ``B``'s CIs (``efficiency_interval``);
- ``ceiling-implausible``: ``P < IMPLAUSIBLE_FRACTION`` of the datasheet or ISA peak.
"""

from __future__ import annotations

from typing import Any

from parity.harness.suite import CaseSpec
from parity.model.findings import Finding, Severity
from parity.model.result import CaseResult

TERA = 1e12
# A P under this share (a twentieth) of the datasheet or ISA peak is implausible for a dedicated search.
IMPLAUSIBLE_FRACTION = 0.05
PEAK_FINDINGS = ("ceiling-implausible", "ceiling-above-peak")  # P judged against the device's peak
# The search around a challenger gets this share of the ceiling search's budget.
RAISE_BUDGET_SHARE = 0.5
RAISE_STATISTIC = "raised after the sweep"


def rate_interval(metrics: dict[str, Any]) -> tuple[float, float] | None:
    """``[F/t_high, F/t_low]`` (FLOP/s) from a shape case's ``work_flop`` and ``ci95_s``; None
    without them. Example: 2e9 FLOP, CI [0.01, 0.02] s -> [1e11, 2e11]."""
    ci = metrics.get("ci95_s")
    work = metrics.get("work_flop")
    if not ci or not work or not ci[0] or not ci[1] or ci[0] <= 0:
        return None
    return float(work) / float(ci[1]), float(work) / float(ci[0])


def fraction_interval(rate_ci: tuple[float, float], ceiling_ci: tuple[float, float]) -> tuple[float, float]:
    """``[rate_low/P_high, rate_high/P_low]``: the fraction of ``P`` with both 95% CIs at their
    worst. Example: rate [110, 130], P [90, 100] -> [1.1, 1.444]."""
    return rate_ci[0] / ceiling_ci[1], rate_ci[1] / ceiling_ci[0]


def efficiency_interval(rate_ci: tuple[float, float], intensity: float, ceiling_ci: tuple[float, float],
                        bandwidth_ci: tuple[float, float]) -> tuple[float, float]:
    """A shape's efficiency ``rate/min(P, AI·B)`` with every 95% CI at its worst:
    ``[rate_low/min(P_high, AI·B_high), rate_high/min(P_low, AI·B_low)]``.
    Example: rate [110, 130], AI 10, P [90, 100], B [8, 12] -> [110/100, 130/80] = [1.1, 1.625]."""
    return (rate_ci[0] / min(ceiling_ci[1], intensity * bandwidth_ci[1]),
            rate_ci[1] / min(ceiling_ci[0], intensity * bandwidth_ci[0]))


def bandwidth_interval(metrics: dict[str, Any], bandwidth: float) -> tuple[float, float]:
    """``B``'s 95% CI ``[moved/t_high, moved/t_low]`` (B/s) from its copy's ``bytes_moved`` and
    ``ci95_s``, or ``[B, B]`` without them."""
    moved, ci = metrics.get("bytes_moved"), metrics.get("ci95_s")
    if not moved or not ci or not ci[0] or not ci[1]:
        return bandwidth, bandwidth
    return float(moved) / float(ci[1]), float(moved) / float(ci[0])


def ceiling_interval(ceiling_metrics: dict[str, Any], peak: float) -> tuple[float, float]:
    """``P``'s 95% CI from its rounds, or ``[P, P]`` when it has too few rounds for one."""
    ci = (ceiling_metrics.get("ceiling_rounds") or {}).get("ci95_flops")
    return (float(ci[0]), float(ci[1])) if ci else (peak, peak)


def challenger(results: list[CaseResult], ceiling_metrics: dict[str, Any]) -> CaseResult | None:
    """The fastest shape case (first timings only) whose rate beats ``P`` beyond both CIs
    (``rate_low > P_high``), None when none does or ``P`` is missing."""
    peak = ceiling_metrics.get("ceiling_flops")
    if not peak:
        return None
    high = ceiling_interval(ceiling_metrics, float(peak))[1]
    beating = []
    for r in results:
        if r.params.get("kind") != "shape" or not r.ok or r.params.get("again_of"):
            continue
        interval = rate_interval(r.metrics)
        if interval is not None and interval[0] > high:
            beating.append(r)
    return max(beating, key=lambda r: float(r.metrics["achieved_flops"]), default=None)


def raise_case(results: list[CaseResult], ceiling_metrics: dict[str, Any]) -> CaseSpec | None:
    """``ceiling/<dtype>/raise``: the search around the challenger (``challenger``), timed after
    the sweep with ``RAISE_BUDGET_SHARE`` of the ceiling's budget; None without a challenger,
    a measured ceiling shape, or when ``P`` was reused from another run."""
    ceiling = next((r for r in results if r.params.get("kind") == "ceiling"), None)
    shape = ceiling_metrics.get("ceiling_shape")
    if ceiling is None or not ceiling.ok or not shape or ceiling_metrics.get("ceiling_from"):
        return None
    found = challenger(results, ceiling_metrics)
    if found is None:
        return None
    p = ceiling.params
    budget = RAISE_BUDGET_SHARE * float(p["ceiling_budget_s"])
    return CaseSpec(suite=ceiling.suite, key=f"{ceiling.key}/raise", cost=budget, params={
        "kind": "ceiling-raise", "dtype": p["dtype"], "backend": p["backend"], "flush": p.get("flush", True),
        "raise_budget_s": budget, "challenger_key": found.key,
        "challenger": {d: int(found.params[d]) for d in "mnk"},
        "incumbent": {d: int(shape[d]) for d in "mnk"}})


def raise_ceiling(ceiling_metrics: dict[str, Any], results: list[CaseResult]) -> dict[str, Any]:
    """``ceiling_metrics`` with ``P`` raised when the run's ``ceiling-raise`` case held (see
    module): ``ceiling_flops``, ``ceiling_shape``, ``ceiling_statistic``, ``ceiling_rounds``
    (the winner's confirmation rounds, or the challenger's CI), ``ceiling_raised`` (how) and a
    ``ceiling-raised`` finding; unchanged otherwise."""
    case = next((r for r in results if r.params.get("kind") == "ceiling-raise" and r.ok), None)
    found = (case.metrics.get("raise") or {}) if case is not None else {}
    shape_case = next((r for r in results if case is not None and r.key == case.params.get("challenger_key")), None)
    if shape_case is None or not ceiling_metrics.get("ceiling_flops"):
        return ceiling_metrics
    if not found.get("holds"):
        return {**ceiling_metrics, "findings": [*ceiling_metrics.get("findings", []), kept_finding(found, shape_case)]}
    before = float(ceiling_metrics["ceiling_flops"])
    swept = float(shape_case.metrics["achieved_flops"])
    searched = float(found["flops"] or 0.0)
    dims = {d: int(shape_case.params[d]) for d in "mnk"}
    if searched > swept:
        rounds = dict(case.metrics["raise_rounds"])
        source = (f"median confirmation round of {_dims(found['winner'])}, found by a search around "
                  f"{_dims(dims)} after the sweep")
        shape = dict(found["winner"])
    else:
        interval = rate_interval(shape_case.metrics) or (swept, swept)
        rounds = {"statistic": "the sweep's median call of the challenger", "median_flops": swept, "best_flops": swept,
                  "rounds_flops": [swept], "ci95_flops": list(interval), "unstable": False}
        source = (f"the sweep's rate of {_dims(dims)} ({shape_case.params.get('name', '')}), confirmed by a "
                  f"search around it after the sweep")
        shape = dims
    raised = max(searched, swept)
    finding = Finding(
        code="ceiling-raised", severity=Severity.WARNING,
        message=(f"P raised from {before / TERA:.4g} to {raised / TERA:.4g} TFLOP/s ({raised / before:.3g}x): "
                 f"{source}; the search's P was below what the sweep sustained"),
        hint="the ceiling search was misled (load, or too small a budget): raise gemm.ceiling_budget_s, run idle")
    return _with_p(ceiling_metrics, flops=raised, shape=shape, rounds=rounds, source=source, finding=finding,
                   raised={"challenger": dims, "challenger_key": shape_case.key, "search": found})


def _with_p(ceiling_metrics: dict[str, Any], *, flops: float, shape: dict[str, int], rounds: dict[str, Any],
            source: str, finding: Finding, raised: dict[str, Any]) -> dict[str, Any]:
    """``ceiling_metrics`` with ``P`` = ``flops`` (raised from the ``P`` they hold), its shape,
    rounds and statistic, ``ceiling_raised`` (from what, plus ``raised``) and ``finding``."""
    before = float(ceiling_metrics["ceiling_flops"])
    return {**ceiling_metrics, "ceiling_flops": flops, "ceiling_best_flops": max(flops, float(
        ceiling_metrics.get("ceiling_best_flops") or 0.0)), "ceiling_shape": shape,
        "ceiling_statistic": f"{RAISE_STATISTIC}: {source}", "ceiling_rounds": rounds,
        "ceiling_raised": {"from_flops": before, "from_shape": ceiling_metrics.get("ceiling_shape"),
                           "flops": flops, "source": source, **raised},
        "findings": [*ceiling_metrics.get("findings", []), finding]}


def floor_at_sweep(ceiling_metrics: dict[str, Any], results: list[CaseResult]) -> dict[str, Any]:
    """``ceiling_metrics`` with ``P`` set to the fastest shape's sweep rate when that shape beat
    ``P`` within their CIs (``rate > P`` and ``rate_low <= P_high``; see module), with a
    ``ceiling-raised`` note (info: the two agree within noise); unchanged when no shape did, for
    a reused ceiling, or when ``P`` is missing. Example: P = 100 (CI [98, 102]) and a shape at
    101 (CI [97, 105]): P becomes 101."""
    peak = ceiling_metrics.get("ceiling_flops")
    if not peak or ceiling_metrics.get("ceiling_from"):
        return ceiling_metrics
    before = float(peak)
    high = ceiling_interval(ceiling_metrics, before)[1]
    within = []
    for r in results:
        if r.params.get("kind") != "shape" or not r.ok or r.params.get("again_of"):
            continue
        rate = float(r.metrics.get("achieved_flops") or 0.0)
        interval = rate_interval(r.metrics) or (rate, rate)
        if rate > before and interval[0] <= high:
            within.append((rate, interval, r))
    if not within:
        return ceiling_metrics
    rate, interval, shape_case = max(within, key=lambda t: t[0])
    dims = {d: int(shape_case.params[d]) for d in "mnk"}
    source = (f"the sweep's rate of {_dims(dims)} ({shape_case.params.get('name', '')}), above the searched P "
              f"within both 95% CIs")
    finding = Finding(
        code="ceiling-raised", severity=Severity.INFO,
        message=(f"P raised from {before / TERA:.4g} to {rate / TERA:.4g} TFLOP/s ({rate / before:.3g}x): "
                 f"{source}; P is never below what the run sustained, so no fraction of P is over 1"),
        hint="the two agree within noise; quote P with its CI")
    rounds = {"statistic": "the sweep's median call of the fastest shape", "median_flops": rate, "best_flops": rate,
              "rounds_flops": [rate], "ci95_flops": list(interval), "unstable": False}
    return _with_p(ceiling_metrics, flops=rate, shape=dims, rounds=rounds, source=source, finding=finding,
                   raised={"challenger": dims, "challenger_key": shape_case.key, "within_ci": True,
                           "previous": ceiling_metrics.get("ceiling_raised")})


def kept_finding(found: dict[str, Any], shape_case: CaseResult) -> Finding:
    """``ceiling-kept`` (info): the challenger beat ``P`` in the sweep, but timed beside ``P``'s
    shape after it (the contest of ``found``) it did not win, so ``P`` stays and the sweep's rate
    was a fast moment."""
    rates = {_dims(c): c["median_flops"] for c in (found.get("contest") or {}).get("candidates", [])}
    shown = ", ".join(f"{name} {rate / TERA:.4g}" for name, rate in rates.items())
    return Finding(
        code="ceiling-kept", severity=Severity.INFO,
        message=(f"{_dims({d: shape_case.params[d] for d in 'mnk'})} read "
                 f"{float(shape_case.metrics['achieved_flops']) / TERA:.4g} TFLOP/s in the sweep, above P; searched "
                 f"again beside P's shape it did not beat it (median rounds, TFLOP/s: {shown}): P kept"),
        hint="the sweep timed that shape in a fast moment; its fraction of P over 1 is not to be quoted")


def implausible_finding(peak: float | None, sheet: float | None, source: str | None) -> Finding | None:
    """``ceiling-implausible`` (a warning) when ``peak < IMPLAUSIBLE_FRACTION·sheet`` (FLOP/s)."""
    if not peak or not sheet or peak >= IMPLAUSIBLE_FRACTION * sheet:
        return None
    return Finding(
        code="ceiling-implausible", severity=Severity.WARNING,
        message=(f"P = {peak / TERA:.4g} TFLOP/s is {100 * peak / sheet:.2g}% of the device's peak "
                 f"{sheet / TERA:.4g} TFLOP/s ({source or 'datasheet'}), under {IMPLAUSIBLE_FRACTION:.0%}"),
        hint="other work held the device while the ceiling was searched, or the dtype is emulated; run idle")


def above_peak_finding(peak: float | None, sheet: float | None, source: str | None) -> Finding | None:
    """``ceiling-above-peak`` (a warning) when P exceeds the device's peak (FLOP/s): the peak's
    inputs understate the device (a derived CPU peak's clock most often), so fractions of it are
    not to be quoted."""
    if not peak or not sheet or peak <= sheet:
        return None
    return Finding(
        code="ceiling-above-peak", severity=Severity.WARNING,
        message=(f"P = {peak / TERA:.4g} TFLOP/s is {100 * peak / sheet:.3g}% of the device's peak "
                 f"{sheet / TERA:.4g} TFLOP/s ({source or 'datasheet'}): the peak understates this device"),
        hint=("a derived CPU peak uses the highest clock the CPU reports, and a CPU that boosts above it (a VM "
              "hides the boost clock) beats it; quote fractions of P, or give the peak with --peak-tflops"))


def _dims(shape: dict[str, Any]) -> str:
    return f"{shape['m']}x{shape['n']}x{shape['k']}"
