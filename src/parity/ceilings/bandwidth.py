"""The measured bandwidth ceiling ``B``: one dedicated device-to-device copy, shared by suites.

docs/definitions.md: ``B`` is a large copy, bytes read plus bytes written (STREAM convention), whatever
range a sweep covers. GEMM's roofline and the membw suite both measure it here, with the same
size (``ceiling_copy_bytes``: several times the last-level cache, or the largest that fits) and
the same protocol (``measure_bandwidth_ceiling``: warm-up, then timed copies without a cache
flush, since the operands are far larger than any cache; the median call).

One ``B`` per run and device (``shared_bandwidth_case``): the first suite of a run that needs
it measures it; every later suite's bandwidth case in that run reproduces that case (its
``bandwidth_bps`` and statistics, no samples of its own) with ``bandwidth_source`` naming where
it was measured, found in this process's run context (``parity.harness.run_context``) or, for
a resumed run, among the run's stored cases. Outside a run every case measures its own.
"""

from __future__ import annotations

from typing import Any

from parity.harness.measure import time_work
from parity.harness.run_context import current_run
from parity.harness.suite import CaseSpec
from parity.harness.work import Work
from parity.model.findings import Finding, Severity
from parity.model.result import CaseResult

# Never let the copy's two buffers take more than this share of the free memory.
MEMORY_SHARE = 0.8
CONVENTION = "bytes read plus bytes written (STREAM)"
# The timing protocol's own default: the copy is bounded by its budget, not by a sample count.
MAX_SAMPLES = 10_000


def bandwidth_copy_bytes(device: Any) -> int:
    """Size of the copy for ``B``, so that it streams from memory rather than cache: on a CPU
    4x the last-level cache and at least 64 MiB; on an accelerator 1 GiB (8x the largest L2
    shipped); never more than an eighth of the device memory."""
    props = device.properties()
    llc = props.llc_bytes or props.l2_bytes or 0
    size = max(4 * llc, 64 * 2**20) if device.type == "cpu" else max(8 * llc, 2**30)
    if props.memory_bytes:
        size = min(size, props.memory_bytes // 8)
    return int(size)


def ceiling_copy_bytes(device: Any) -> int:
    """``bandwidth_copy_bytes``, or the largest copy that fits: two buffers within
    ``MEMORY_SHARE`` of the free memory (``MEMORY_SHARE·free/4`` per buffer, leaving room)."""
    size = bandwidth_copy_bytes(device)
    free = device.free_memory_bytes()
    if free is not None and 2 * size > MEMORY_SHARE * free:
        size = int(MEMORY_SHARE * free / 4)
    return max(4, size)


def measure_bandwidth_ceiling(*, device: Any, size_bytes: int, budget_s: float = 0.3) -> dict[str, Any]:
    """``B``: copy a ``size_bytes`` buffer into another; ``2·size/median`` B/s (read + write).
    The copy is declared Work the harness times (``parity.harness.measure.time_work``)."""
    import torch

    elements = max(1, size_bytes // 4)
    src = device.random_tensor((elements,), torch.float32)
    dst = torch.empty_like(src)
    moved = 2 * elements * 4
    work = Work(call=lambda: dst.copy_(src),
                check=lambda: {"passed": bool(torch.equal(dst, src)),
                               "method": "the destination equals the source after the timed copies"},
                bytes=moved, bytes_convention=CONVENTION, warmup_s=0.05, budget_s=budget_s, min_samples=5,
                max_samples=MAX_SAMPLES, flush_cache=False)
    result = time_work(work, device=device)
    summary = result.summary
    return {
        "check": work.check(),
        "bps": moved / summary.median,
        "bytes_copied": elements * 4,
        "operand_bytes": elements * 4,
        "bytes_moved": moved,
        "convention": CONVENTION,
        "median_s": summary.median,
        "iqr_s": summary.iqr,
        "ci95_s": [summary.ci_low, summary.ci_high],
        "min_s": summary.min,
        "samples": result.samples,
        "findings": list(result.findings),
    }


def bandwidth_ceiling_case(case: CaseSpec, *, device: Any) -> CaseResult:
    """The ceiling copy as a stored case: ``bandwidth_bps`` (B/s) and ``gbps``, its check, raw
    samples and timing statistics; an allocation failure is a row with an error."""
    size = ceiling_copy_bytes(device)
    try:
        result = measure_bandwidth_ceiling(device=device, size_bytes=size)
    except Exception as exc:  # noqa: BLE001 - errors are rows
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        message = f"{type(exc).__name__}: {text}"[:300]
        code = "out-of-memory" if "memory" in message.lower() else "backend-error"
        return CaseResult(suite=case.suite, key=case.key, params=dict(case.params), error=message,
                          findings=(Finding(code=code, severity=Severity.ERROR, message=message,
                                            hint="free device memory or run without other jobs"),))
    samples = result.pop("samples")
    findings = tuple(result.pop("findings"))
    check = result.pop("check")
    if not check["passed"]:
        findings += (Finding(code="wrong-result", severity=Severity.ERROR, message="the copy did not reproduce its source",
                             hint="the device or its driver corrupts copies; do not quote B"),)
    metrics = {"bandwidth_bps": result["bps"], "gbps": result["bps"] / 1e9, **result}
    return CaseResult(suite=case.suite, key=case.key, params={**case.params, "bytes": size}, check=check,
                      samples={"main": samples}, metrics=metrics, findings=findings)


SHARED_KEY = "bandwidth-ceiling"


def shared_bandwidth_case(case: CaseSpec, *, device: Any) -> CaseResult:
    """``B`` for ``case``: the run's ceiling copy on this device when one was measured already
    (``reused_bandwidth_row``), else measured here (``bandwidth_ceiling_case``) and shared with
    the run's later suites. ``metrics["bandwidth_source"]``: ``measured_in`` (suite/key), the
    device, and ``reused``."""
    run = current_run()
    origin = None
    if run is not None:
        origin = run.shared.get((SHARED_KEY, device.name)) or stored_bandwidth_case(run, device_name=device.name)
    if origin is not None:
        return reused_bandwidth_row(case, origin)
    result = bandwidth_ceiling_case(case, device=device)
    source = {"measured_in": f"{case.suite}/{case.key}", "device": device.name, "reused": False}
    result = CaseResult(suite=result.suite, key=result.key, params=result.params, check=result.check,
                        samples=result.samples, findings=result.findings, error=result.error,
                        metrics={**result.metrics, "bandwidth_source": source} if result.error is None else result.metrics)
    if run is not None and result.ok:
        run.shared[(SHARED_KEY, device.name)] = result
    return result


def stored_bandwidth_case(run: Any, *, device_name: str) -> CaseResult | None:
    """The run's stored case that measured ``B`` on ``device_name`` (its ``bandwidth_source``
    names itself), None when there is none or no store."""
    if run.store is None:
        return None
    for stored in run.store.cases(run.run_id):
        source = stored.metrics.get("bandwidth_source") or {}
        if (stored.ok and not source.get("reused") and source.get("device") == device_name
                and source.get("measured_in") == f"{stored.suite}/{stored.key}"):
            return stored
    return None


def reused_bandwidth_row(case: CaseSpec, origin: CaseResult) -> CaseResult:
    """``case`` answered by ``origin``'s measurement: its metrics and check, its copy size in
    the params, ``bandwidth_source`` saying it is reused; no samples (they are ``origin``'s)."""
    source = {**origin.metrics["bandwidth_source"], "reused": True}
    return CaseResult(suite=case.suite, key=case.key, params={**case.params, "bytes": origin.params.get("bytes")},
                      check=dict(origin.check), findings=origin.findings,
                      metrics={**origin.metrics, "bandwidth_source": source})


def bandwidth_source_note(source: dict[str, Any] | None) -> str:
    """Where a case's ``B`` came from, for a figure's note: ``measured here (gemm/bandwidth), once
    for this run and device`` or ``shared: measured once for this run and device by
    gemm/bandwidth``; empty when not recorded."""
    if not source or not source.get("measured_in"):
        return ""
    if source.get("reused"):
        return f"shared: measured once for this run and device by {source['measured_in']}"
    return f"measured here ({source['measured_in']}), once for this run and device"
