"""The measured bandwidth ceiling ``B``: one dedicated device-to-device copy, shared by suites.

docs/definitions.md: ``B`` is a large copy, bytes read plus bytes written (STREAM convention), whatever
range a sweep covers. GEMM's roofline and the membw suite both measure it here, with the same
size (``ceiling_copy_bytes``: several times the last-level cache, or the largest that fits) and
the same protocol (``measure_bandwidth_ceiling``: warm-up, then timed copies without a cache
flush, since the operands are far larger than any cache; the median call), so the two suites'
``B`` of one device agree by construction rather than by luck.
"""

from __future__ import annotations

from typing import Any

from parity.harness.measure import time_work
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
