"""Measuring one GEMM case: the ceiling search, the bandwidth copy, or one shape on one backend.

Every function returns a ``CaseResult``; a failure is a result with ``error`` set and an
error-severity finding whose code says what happened (``unsupported-dtype``,
``unsupported-backend``, ``out-of-memory``, ``too-slow``, ``backend-error``).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from parity.ceilings.bandwidth import shared_bandwidth_case
from parity.ceilings.compute import search_ceiling
from parity.ceilings.plan import SearchPlan
from parity.families.gemm.backends import load_backend
from parity.families.gemm.check import check_backend, check_findings
from parity.families.gemm.datasheet import reference_peak
from parity.families.gemm.dtypes import GemmDtype, emulation_note, precision_mode
from parity.families.gemm.evaluator import FLUSHED_SETS, gemm_rate_evaluator
from parity.families.gemm.raised import implausible_finding
from parity.families.gemm.inputs import bytes_per_set, free_memory_bytes, rotation_for
from parity.harness.measure import time_work
from parity.harness.strategies import ReplayFallback, SearchClock
from parity.harness.suite import CaseSpec
from parity.harness.work import Work
from parity.metrics.ceiling import CeilingRounds
from parity.metrics.roofline import arithmetic_intensity, gemm_flops, gemm_min_bytes
from parity.model.findings import Finding, Severity
from parity.model.result import CaseResult
from parity.model.samples import Samples
from parity.stats import median

log = logging.getLogger(__name__)

# Graph replay (where the device has it) for shapes of at most this much work under --graph auto:
# their calls are short enough that launch overhead would show in per-call events.
GRAPH_MAX_FLOP = 2e9
# The case checks the product itself, on fresh inputs, after timing (``check_backend``).
NOT_CHECKED = {"passed": True, "method": "checked after timing, by the case"}
# The finding of a graph capture that failed (the shape was timed eagerly).
FALLBACK_CODE = "graph-failed"
# Never let one case's tensors take more than this share of the free memory.
MEMORY_SHARE = 0.8


def error_row(case: CaseSpec, *, code: str, message: str, hint: str, metrics: dict[str, Any] | None = None) -> CaseResult:
    """A row for a case that could not be measured."""
    return CaseResult(
        suite=case.suite, key=case.key, params=dict(case.params), metrics=dict(metrics or {}), error=message,
        findings=(Finding(code=code, severity=Severity.ERROR, message=message, hint=hint),),
    )


def skipped_row(case: CaseSpec, *, code: str, message: str) -> CaseResult:
    """A row for a case that was not timed, and why: not an error, an info finding."""
    return CaseResult(suite=case.suite, key=case.key, params=dict(case.params), metrics={"skipped": message},
                      check={"passed": True, "skipped": True},
                      findings=(Finding(code=code, severity=Severity.INFO, message=message,
                                        hint="a fresh run times every sentinel"),))


def unsupported_dtype_row(case: CaseSpec, reason: str, *, metrics: dict[str, Any] | None = None) -> CaseResult:
    """The row of a case whose dtype this device cannot run (``reason`` says why)."""
    return error_row(case, code="unsupported-dtype", message=reason, metrics=metrics,
                     hint="choose another --dtype; see 'parity doctor' for what this device runs")


SEARCH_NOT_COMPARED = ("the ceiling search's P: the run's P (the median of the rounds timed through the sweep, "
                       "or raised past it) is compared as the figure gemm.ceiling")


def measure_ceiling(case: CaseSpec, *, device: Any, dtype: GemmDtype, unavailable: str | None,
                    final: bool = True) -> CaseResult:
    """Search the compute ceiling ``P`` of ``dtype`` with the case's backend. ``final``: the
    search's ``P`` is the one the suite quotes, and compare's ratio is of it; else (the GEMM
    sweep, whose sentinels make ``P`` after it) the case says it is not compared, and why."""
    if unavailable:
        return unsupported_dtype_row(case, unavailable)
    backend = load_backend(case.params["backend"])
    reason = backend.unavailable_reason(device=device, dtype=dtype)
    if reason:
        return error_row(case, code="unsupported-backend", message=reason, hint="choose another --backend")
    sheet = reference_peak(device=device, dtype=dtype.name, given_tflops=case.params.get("peak_tflops"))
    plan = replace(search_plan(device, dtype, budget_s=float(case.params["ceiling_budget_s"])),
                   reference_flops=sheet["flops"] if sheet else None)
    kept: dict[tuple[int, int, int], Samples] = {}
    evaluate = gemm_rate_evaluator(device=device, backend=backend, dtype=dtype, keep=kept,
                                   flush=bool(case.params.get("flush", True)))
    clock = SearchClock(device)
    result = search_ceiling(evaluate, plan, clock=clock)
    device_name = device.properties().name
    m, n, k = result.dims
    check = check_backend(backend, device=device, dtype=dtype, m=m, n=n, k=k)
    rounds = result.rounds
    emulated = emulation_note(dtype, device)
    extra = (Finding(code="emulated-dtype", severity=Severity.WARNING, message=emulated,
                     hint="compare this dtype on hardware that runs it natively"),) if emulated else ()
    implausible = implausible_finding(rounds.median_flops, sheet["flops"] if sheet else None,
                                      (sheet or {}).get("derived") or (sheet or {}).get("source"))
    extra += (implausible,) if implausible else ()
    return CaseResult(
        suite=case.suite, key=case.key, params=dict(case.params), check=check,
        findings=tuple(check_findings(check)) + tuple(ceiling_findings(rounds)) + extra,
        samples={"winner": kept[result.dims]} if result.dims in kept else {},
        metrics={
            "ceiling_flops": rounds.median_flops,
            **({"headline_metric": "ceiling_flops"} if final  # compare's ratio is of P (its rounds, not "main")
               else {"not_compared": SEARCH_NOT_COMPARED}),
            "ceiling_best_flops": rounds.best_flops,
            "ceiling_statistic": "median of the winner's confirmation rounds",
            "ceiling_rounds": rounds.to_dict(),
            "ceiling_shape": {"m": m, "n": n, "k": k},
            "emulation_note": emulated,
            "search": result.to_dict(),
            "search_flush_s": clock.flushed_s(),  # wall time beside the budget: the cache flushes
            "plan": {"min_dim": plan.min_dim, "max_dim": plan.max_dim, "align": plan.align,
                     "budget_s": plan.budget_s, "max_elements": plan.max_elements,
                     "reference_flops": plan.reference_flops},
            "device_name": device_name,
            "datasheet_flops": sheet["flops"] if sheet else None,
            "datasheet_source": sheet["source"] if sheet else None,
            "datasheet_derived": sheet["derived"] if sheet else None,
        },
    )


def search_plan(device: Any, dtype: GemmDtype, *, budget_s: float) -> SearchPlan:
    """The device's ``SearchPlan`` with its shapes bounded by the free memory: the operands of
    the evaluator's input sets (``FLUSHED_SETS``, ``M·K + K·N + M·N`` elements each, at the
    wider of the input and output widths) within ``MEMORY_SHARE`` of it."""
    plan = SearchPlan.for_device(device.type, budget_s=budget_s)
    free = free_memory_bytes(device)
    if not free:
        return plan
    width = max(dtype.in_bytes, dtype.out_bytes)
    return replace(plan, max_elements=int(MEMORY_SHARE * free / (width * FLUSHED_SETS)))


def measure_ceiling_shape(case: CaseSpec, *, device: Any, dtype: GemmDtype, unavailable: str | None) -> CaseResult:
    """Time the ceiling's own shape in ``rounds`` pairs, back to back: a round as ``P``'s are
    timed (``gemm_rate_evaluator``, the confirmation's length; ``rounds_flops``) and the shape
    timed as the sweep times every shape (its warm-up, budget, flush and median call;
    ``own_flops``). Pair ``i`` times the round first when ``index + i`` is even, the shape
    first otherwise, so that neither always follows the other (``orders``)."""
    if unavailable:
        return unsupported_dtype_row(case, unavailable)
    p = case.params
    backend = load_backend(p["backend"])
    m, n, k = int(p["m"]), int(p["n"]), int(p["k"])
    work = gemm_flops(m, n, k)
    plan = SearchPlan.for_device(device.type, budget_s=float(p["ceiling_budget_s"]))
    kept: dict[tuple[int, int, int], Samples] = {}
    evaluate = gemm_rate_evaluator(device=device, backend=backend, dtype=dtype, keep=kept, flush=bool(p["flush"]))
    samples: dict[str, Samples] = {}
    rates: list[float] = []
    own: list[float] = []
    orders: list[str] = []
    extra: list[Finding] = []

    def time_round(pair: int) -> None:
        rates.append(evaluate(m, n, k, plan.confirm_budget_s))
        samples[f"round{pair}"] = kept[(m, n, k)]

    def time_as_shape(pair: int) -> None:
        with precision_mode(dtype, device):
            timed, _ = _time_alone(p, device=device, dtype=dtype, backend=backend, base={"work_flop": work}, extra=extra)
        own.append(work / timed.median_s)
        samples[f"own{pair}"] = timed.samples["main"]

    for index in range(int(p["rounds"])):
        round_first = (int(p.get("index", 0)) + index) % 2 == 0
        for step in (time_round, time_as_shape) if round_first else (time_as_shape, time_round):
            step(index + 1)
        orders.append("round-first" if round_first else "shape-first")
    check = check_backend(backend, device=device, dtype=dtype, m=m, n=n, k=k)
    return CaseResult(suite=case.suite, key=case.key, params=dict(p), check=check,
                      findings=tuple(check_findings(check)) + tuple(extra), samples=samples,
                      metrics={"rounds_flops": rates, "median_flops": median(rates), "best_flops": max(rates),
                               "own_flops": own, "orders": orders, "round_budget_s": plan.confirm_budget_s,
                               "statistic": "median of the rounds, as P; own_flops: the median call of "
                                            "each timing as a sweep shape",
                               "not_compared": ("a ceiling sentinel: its rounds make the ceiling P"
                                                if p.get("kind") == "ceiling-sentinel" else
                                                "the ceiling's shape timed as a sweep shape, beside P's rounds")
                                               + ", compared as the figure gemm.ceiling"})


def measure_ceiling_raise(case: CaseSpec, *, device: Any, dtype: GemmDtype, unavailable: str | None) -> CaseResult:
    """Search again around the shape that beat ``P`` (``parity.ceilings.raise_search``), within
    ``raise_budget_s``: ``raise`` (what it found, ``holds``) and ``raise_rounds`` (the winner's
    confirmation rounds, ``CeilingRounds``) when it held."""
    from parity.ceilings.raise_search import search_around
    from parity.metrics.ceiling import ceiling_rounds

    if unavailable:
        return unsupported_dtype_row(case, unavailable)
    p = case.params
    backend = load_backend(p["backend"])
    plan = search_plan(device, dtype, budget_s=float(p["raise_budget_s"]))
    evaluate = gemm_rate_evaluator(device=device, backend=backend, dtype=dtype, flush=bool(p.get("flush", True)))
    found = search_around(evaluate, challenger=tuple(int(p["challenger"][d]) for d in "mnk"),  # type: ignore[arg-type]
                          incumbent=tuple(int(p["incumbent"][d]) for d in "mnk"),  # type: ignore[arg-type]
                          plan=plan, clock=SearchClock(device))
    metrics: dict[str, Any] = {"raise": found.to_dict()}
    if found.confirm_rates:
        metrics["raise_rounds"] = ceiling_rounds(found.confirm_rates).to_dict()
    m, n, k = found.contest.winner
    check = check_backend(backend, device=device, dtype=dtype, m=m, n=n, k=k)
    return CaseResult(suite=case.suite, key=case.key, params=dict(p), check=check,
                      findings=tuple(check_findings(check)), metrics=metrics)


def ceiling_findings(rounds: CeilingRounds, *, where: str = "rounds") -> list[Finding]:
    """``unstable-ceiling`` (a warning) when the ceiling's rounds (``where`` names them) spread
    beyond what one run's CI can promise (``CeilingRounds.unstable``), with every round in the
    message."""
    if not rounds.unstable:
        return []
    shown = ", ".join(f"{r / 1e12:.4g}" for r in rounds.rates)
    ci = (f"95% CI {rounds.ci95_flops[0] / 1e12:.4g}-{rounds.ci95_flops[1] / 1e12:.4g}" if rounds.ci95_flops
          else "too few rounds for a CI")
    return [Finding(
        code="unstable-ceiling", severity=Severity.WARNING,
        message=(f"the ceiling's {where} spread {100 * rounds.spread:.0f}% of their median "
                 f"({shown} TFLOP/s; median {rounds.median_flops / 1e12:.4g}, {ci})"),
        hint=("another run may measure a different P: run on an idle machine, raise the ceiling budget, "
              "or share one P between sweeps with --ceiling-from RUN"))]


def measure_bandwidth(case: CaseSpec, *, device: Any) -> CaseResult:
    """The bandwidth ceiling ``B``: the dedicated copy membw measures too (read plus write bytes),
    once per run and device (``shared_bandwidth_case``)."""
    return shared_bandwidth_case(case, device=device)


def measure_shape(case: CaseSpec, *, device: Any, dtype: GemmDtype, backend: Any, unavailable: str | None,
                  ceiling_flops: float | None, baseline: Any = None) -> CaseResult:
    """Time one shape on one backend, check it, and record what the telemetry saw; with a
    ``baseline`` backend, time the two in alternated rounds and record the speedup
    (``parity.families.gemm.speedup``) and which of the two won, re-checked."""
    p = case.params
    m, n, k = int(p["m"]), int(p["n"]), int(p["k"])
    work = gemm_flops(m, n, k)
    traffic = gemm_min_bytes(m, n, k, in_bytes=dtype.in_bytes, out_bytes=dtype.out_bytes)
    base = {"work_flop": work, "min_traffic_bytes": traffic,
            "arithmetic_intensity": arithmetic_intensity(work, traffic)}
    if unavailable:
        return unsupported_dtype_row(case, unavailable, metrics=base)
    reason = backend.unavailable_reason(device=device, dtype=dtype)
    if reason:
        return error_row(case, code="unsupported-backend", message=reason, metrics=base, hint="choose another --backend")
    if ceiling_flops and work / ceiling_flops > float(p["max_call_s"]):
        return error_row(
            case, code="too-slow", metrics=base,
            message=(f"one call needs at least {work / ceiling_flops:.3g} s at the fastest rate this run measured "
                     f"({ceiling_flops / 1e12:.3g} TFLOP/s: P, or a faster swept shape), over the "
                     f"{float(p['max_call_s']):.3g} s limit (gemm.max_call_s)"),
            hint=("a rate this low on this shape's size means the device was busy or the dtype is emulated: "
                  "run idle, give smaller shapes with --shapes FILE, or raise --max-call-s"))
    needed = 3 * bytes_per_set(dtype, m=m, n=n, k=k)
    free = free_memory_bytes(device)
    if free is not None and needed > MEMORY_SHARE * free:
        return error_row(case, code="out-of-memory", metrics=base,
                         message=f"needs about {needed / 2**30:.3g} GiB; {free / 2**30:.3g} GiB is free",
                         hint="skip this shape or free memory on the device")
    try:
        return _time_and_check(case, device=device, dtype=dtype, backend=backend, base=base, baseline=baseline)
    except Exception as exc:  # errors are rows; the sweep goes on
        log.debug("%s failed", case.key, exc_info=True)
        _release(device)
        return error_row(case, code=_error_code(exc), message=_describe(exc), metrics=base,
                         hint="this backend cannot run this shape here; other shapes go on")


def _time_and_check(case: CaseSpec, *, device: Any, dtype: GemmDtype, backend: Any, base: dict[str, Any],
                    baseline: Any = None) -> CaseResult:
    p = case.params
    m, n, k = int(p["m"]), int(p["n"]), int(p["k"])
    extra: list[Finding] = []
    speedup: dict[str, Any] = {}
    with precision_mode(dtype, device):
        if baseline is None:
            result, graph = _time_alone(p, device=device, dtype=dtype, backend=backend, base=base, extra=extra)
        else:
            from parity.families.gemm.speedup import time_alternated

            graph = False
            result, speedup = time_alternated(
                baseline=baseline, candidate=backend, device=device, dtype=dtype, m=m, n=n, k=k,
                timing={"warmup_s": p["warmup_s"], "budget_s": p["budget_s"], "max_samples": p["max_samples"],
                        "flush_cache": p["flush"], "telemetry": p["telemetry"]})
    check = (check_backend(backend, device=device, dtype=dtype, m=m, n=n, k=k)
             if p["check"] else {"passed": True, "skipped": True})
    if speedup:
        winner = backend if speedup["speedup"] >= 1.0 else baseline
        winner_check = check if winner is backend else check_backend(winner, device=device, dtype=dtype, m=m, n=n, k=k)
        speedup.update({"winner": p["backend"] if winner is backend else p.get("baseline"),
                        "winner_check": {"passed": winner_check.get("passed"),
                                         "relative_error": winner_check.get("relative_error")}})
        if not winner_check.get("passed"):
            extra.append(Finding(code="wrong-winner", severity=Severity.WARNING,
                                 message=f"the faster of the two ({speedup['winner']}) failed its re-check",
                                 hint="its speed is not to be quoted; see that backend's own row"))
    tuning = getattr(backend, "tuning_s", {}).get((m, n, k))
    telemetry = dict(result.telemetry)
    reasons = list(telemetry.get("throttle_reasons", []))
    power_limited = any("power" in r for r in reasons)
    telemetry["power_limited"] = power_limited
    findings = list(result.findings) + extra + check_findings(check)
    if power_limited:
        findings.append(Finding(code="power-limited", severity=Severity.WARNING,
                                message=f"the clock was held by the power limit ({', '.join(reasons)})",
                                hint="this shape's rate is power-bound; compare it with care"))
    summary = result.summary
    metrics = {
        **base,
        "median_s": summary.median, "iqr_s": summary.iqr, "p25_s": summary.p25, "p75_s": summary.p75,
        "ci95_s": [summary.ci_low, summary.ci_high], "min_s": summary.min,
        "samples": summary.n, "achieved_flops": base["work_flop"] / summary.median,
        "power_limited": power_limited, "throttle_reasons": reasons,
        "clock_mhz": _median_reading(telemetry, "clock_mhz"), "power_w": _median_reading(telemetry, "power_w"),
        "backend_name": getattr(backend, "name", p["backend"]),
        "graph": graph and not extra,
        "tuning_s": tuning,
        **speedup,
    }
    return CaseResult(suite=case.suite, key=case.key, params=dict(p), samples={"main": result.samples["main"]},
                      metrics=metrics, check=check, findings=tuple(findings), telemetry=telemetry)


def _time_alone(p: dict[str, Any], *, device: Any, dtype: GemmDtype, backend: Any, base: dict[str, Any],
                extra: list[Finding]) -> tuple[Any, bool]:
    """One backend timed on its own as declared Work (graph replay for tiny shapes where the
    device has it, eagerly when the capture fails: ``ReplayFallback``); its fallback finding
    goes to ``extra``. ``(the Timed, whether graph replay was tried)``."""
    m, n, k = int(p["m"]), int(p["n"]), int(p["k"])
    inputs = rotation_for(device=device, backend=backend, dtype=dtype, m=m, n=n, k=k)
    graph = p["graph"] == "on" or (p["graph"] == "auto" and base["work_flop"] <= GRAPH_MAX_FLOP)
    graph = graph and bool(getattr(device, "supports_graphs", False))
    work = Work(call=backend.run, check=lambda: NOT_CHECKED, inputs=inputs, warmup_s=float(p["warmup_s"]),
                budget_s=float(p["budget_s"]), min_samples=5, max_samples=int(p["max_samples"]),
                flush_cache=bool(p["flush"]), strategy=ReplayFallback(graph=graph, telemetry=bool(p["telemetry"])))
    timed = time_work(work, device=device)
    fell_back = [f for f in timed.findings if f.code == FALLBACK_CODE]
    extra.extend(fell_back)
    return replace(timed, findings=tuple(f for f in timed.findings if f.code != FALLBACK_CODE)), graph


def _median_reading(telemetry: dict[str, Any], metric: str) -> float | None:
    """The median of a telemetry metric during the timed calls, None when unread."""
    reading = telemetry.get(metric)
    return float(reading["median"]) if isinstance(reading, dict) and "median" in reading else None


def _error_code(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".lower()
    if "out of memory" in text or "outofmemory" in text or "can't allocate memory" in text:
        return "out-of-memory"
    return "backend-error"


def _describe(exc: BaseException) -> str:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {first}"[:300]


def _release(device: Any) -> None:
    """Return cached blocks after a failure so the next shape starts from a clean pool."""
    try:
        device.empty_cache()
    except Exception:  # best effort
        log.debug("empty_cache failed", exc_info=True)
