"""The harness: times declared work with a named strategy, checks it, derives its rates.

``measure_work`` is the one place a :class:`parity.harness.work.Work` becomes a stored row:

1. time ``work.call`` with ``time_work`` (``auto``: the device's events, or the host clock plus
   a synchronize where the device has none; ``graph-replay``: CUDA graph replays, eager with a
   finding elsewhere; ``max-over-ranks``, always when the run has several ranks: each rank
   times every iteration and the per-iteration maximum over ranks is the sample, the minimum
   kept beside it);
2. run ``work.check`` after timing, on the state the timed calls left;
3. derive ``flop_per_s`` and ``bytes_per_s`` from the median (``parity.metrics.rates``) and keep
   the raw samples, the median, IQR and 95% CI in the one shape every family uses
   (``timing_metrics``).

A row whose check raises or returns no ``passed`` is not ok: every performance row carries its
correctness check.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from parity.harness.suite import CaseSpec
from parity.harness.work import Work
from parity.metrics.rates import rate_per_s
from parity.model.findings import Finding, Severity
from parity.model.result import CaseResult

__all__ = ["load_window", "measure_work", "time_work", "timing_metrics", "with_conditions"]


def timing_metrics(summary: Any) -> dict[str, Any]:
    """The timing figures every family stores per case, in seconds: median, IQR, 95% CI, min."""
    return {"median_s": summary.median, "iqr_s": summary.iqr,
            "ci95_s": [summary.ci_low, summary.ci_high], "min_s": summary.min}


def time_work(work: Work, *, device: Any, group: Any = None) -> Any:
    """A ``parity.timing.Measurement`` of ``work.call`` by ``work.strategy`` (a
    ``parity.timing.timed.Timed`` when the strategy is an object of ``parity.timing``), with the
    device's power read over the same window: ``telemetry["energy"]`` (``parity.timing.energy``).
    A device with no readable sensor gets no record: the run's provenance says so once
    (``device.power``: ``no power sensor readable: ...``)."""
    from parity.timing.energy import PowerSampler

    with PowerSampler(_power_sensors(device)) as sampler:
        m = _time_work(work, device=device, group=group)
    return _with_energy(m, sampler.energy())


def _power_sensors(device: Any) -> Any:
    """The device's power sensors; none, with the reason, for a target that has no reader."""
    from parity.device.power import PowerSensors

    reader = getattr(device, "power_sensors", None)
    return reader() if reader is not None else PowerSensors(
        unavailable=f"{type(device).__name__} has no power reader")


def _with_energy(m: Any, energy: Any) -> Any:
    """``m`` with the window's energy record (joules per call from its median) in its telemetry."""
    if energy.unavailable or isinstance(m, type) or "telemetry" not in getattr(m, "__dataclass_fields__", {}):
        return m
    record = energy.to_dict(per_call_s=m.summary.median)
    return replace(m, telemetry={**m.telemetry, "energy": record})


def _time_work(work: Work, *, device: Any, group: Any = None) -> Any:
    from parity.timing import measure

    if not isinstance(work.strategy, str):
        return work.strategy.time(work, device=device, group=group)

    timing = {"device": device, "inputs": work.inputs, "warmup_s": work.warmup_s,
              "budget_s": work.budget_s, "min_samples": work.min_samples,
              "max_samples": work.max_samples, "flush_cache": work.flush_cache}
    if group is not None or work.strategy == "max-over-ranks":
        from parity.timing.ranks import measure_over_ranks

        if group is None:
            raise ValueError("max-over-ranks timing needs a group of ranks; run with --ranks N")
        return measure_over_ranks(work.call, group=group, **timing)
    return measure(work.call, graph=work.strategy == "graph-replay", **timing)



def _run_check(work: Work) -> dict[str, Any]:
    try:
        check = dict(work.check())
    except Exception as exc:  # noqa: BLE001 - a broken check is a failed check, not a crash
        return {"passed": False, "method": "check raised", "error": f"{type(exc).__name__}: {exc}"}
    if not isinstance(check.get("passed"), bool):
        return {**check, "passed": False, "error": "the check returned no boolean 'passed'"}
    return check



def measure_work(case: CaseSpec, work: Work, *, device: Any, group: Any = None) -> CaseResult:
    """Time, check and rate ``work`` for ``case`` (see the module docstring)."""
    try:
        m = time_work(work, device=device, group=group)
        check = _run_check(work)
    finally:
        if work.release is not None:
            work.release()
    samples = m.samples if isinstance(m.samples, dict) else {"main": m.samples}
    metrics: dict[str, Any] = {**timing_metrics(m.summary), **getattr(m, "metrics", {}), **work.metrics}
    if work.flop:
        metrics.update({"flop": work.flop, "flop_per_s": rate_per_s(work.flop, m.summary.median)})
    if work.bytes:
        metrics.update({"bytes": work.bytes, "bytes_per_s": rate_per_s(work.bytes, m.summary.median),
                        "bytes_convention": work.bytes_convention})
    metrics["strategy"] = samples["main"].method
    findings = list(m.findings) + list(work.findings)
    if not check["passed"]:
        findings.append(Finding(code="wrong-result", severity=Severity.ERROR,
                                message=f"check failed: {check.get('error') or check.get('method', '')}",
                                hint="the timed figures of this case are not to be quoted"))
    return CaseResult(suite=case.suite, key=case.key, params=dict(case.params),
                      samples=samples, metrics=metrics, check=check,
                      findings=tuple(findings), telemetry=dict(m.telemetry))


def load_window(device: Any, *, group: Any = None) -> Any:
    """A ``parity.timing.contention.LoadWindow`` to hold around one case: what else used the
    host and the device meanwhile. In a run of ranks, the ranks (the group's pids and the
    launcher's descendants) are this run's own work, not contention."""
    from parity.timing.contention import LoadWindow

    ranks = group is not None and getattr(group, "world_size", 1) > 1
    pids = {int(p["pid"]) for p in getattr(group, "rank_provenance", ()) or () if p.get("pid") is not None}
    return LoadWindow(device=device, ranks=ranks, rank_pids=pids)


def with_conditions(result: CaseResult, *, load: dict[str, Any] | None, others: list[dict[str, Any]],
                    device_name: str) -> CaseResult:
    """``result`` with what else ran beside it: the contention record under
    ``telemetry["contention"]``, a ``contended`` finding when the record says so and the row
    holds timed samples, and a
    ``concurrent-run`` finding when another parity run held a lock on the same device."""
    from parity.device.lock import concurrent_message
    from parity.timing.contention import contended_finding

    findings = list(result.findings)
    telemetry = dict(result.telemetry)
    if load is not None:
        telemetry["contention"] = load
        timed = result.error is None and bool(result.samples)  # a row with nothing timed is not judged
        finding = contended_finding(load) if timed else None
        if finding is not None:
            findings.append(finding)
    if others:
        unique = list({str(o.get("run_id")): o for o in others}.values())
        telemetry["concurrent_runs"] = unique
        findings.append(Finding(code="concurrent-run", severity=Severity.WARNING,
                                message=concurrent_message(unique, device_name),
                                hint="measure one run at a time on a device; this case's figures shared it"))
    return replace(result, findings=tuple(findings), telemetry=telemetry)
