"""Memory bandwidth across transfer sizes: copy, read, write, triad and host<->device copies.

Each case is one operation at one size (the size of one operand array), declared as ``Work``
that the harness times (``parity.harness.measure.time_work``: warm-up, cache flushed before each
call unless ``flush`` is false, raw samples kept). The suite summary fits ``t = a + V/b`` to each operation's curve and rates
every point against the measured ceiling and the datasheet peak where the device has an entry.
Small sizes (up to ``WARM_MAX_BYTES``) are measured cold (the cache flushed before every call:
what a transfer costs when its data comes from memory) and warm (repeated without a flush: the
launch and fixed cost alone; a warm sample spans ``warm_calls_per_sample`` back-to-back
calls, divided by their count: the ``CallsPerSample`` strategy), keyed ``<op>/<bytes>`` and ``<op>/<bytes>/warm``; each regime
gets its own curve and fit, and the quoted fixed cost and ``n½`` are the warm ones.
The ceiling is its own case (``ceiling/copy``), measured whatever the sweep's range by the
copy and protocol GEMM's roofline uses (``parity.ceilings.bandwidth``).

On the CPU, torch runs these operations on several threads: the count is set from the
``threads`` option when given and always recorded with each case.
"""

from __future__ import annotations

import logging
import math
from dataclasses import replace
from typing import Any

from parity.ceilings.bandwidth import bandwidth_copy_bytes, shared_bandwidth_case
from parity.families.membw.ops import (
    DEVICE_OPS,
    HOST_OPS,
    MemoryOp,
    base_op,
    operand_count,
)
from parity.families.membw.figures import membw_figures
from parity.families.membw.options import MembwOptions
from parity.families.membw.summary import MembwSummary, off_trend_points, summarize_membw
from parity.harness.measure import time_work
from parity.harness.strategies import CallsPerSample
from parity.harness.suite import CaseSpec, SuiteBase
from parity.harness.work import Work
from parity.metrics.bandwidth import (
    NVBANDWIDTH_CONVENTION,
    STREAM_CONVENTION,
    bandwidth_gbps,
    bytes_moved,
)
from parity.model.errors import ParityError
from parity.model.figure import Figure
from parity.model.result import CaseResult

log = logging.getLogger(__name__)

KIB = 1024
MIN_BYTES = KIB
MAX_BYTES = 4 * KIB**3
# --quick stops here: the largest size a 2-core CPU sweeps, four operations, within a minute.
QUICK_MAX_BYTES = 64 * KIB**2
# Timing budget per case (s): the sweep's length is about cases x budget.
BUDGET_S, QUICK_BUDGET_S = 0.1, 0.04
# Never let a case's operands take more than this share of the free memory.
FREE_MEMORY_SHARE = 0.5
# Sizes up to this are measured twice: cold (cache flushed before each call) and warm (repeated,
# no flush), so the fixed cost of a transfer is not the cost of refilling the cache.
WARM_MAX_BYTES = 1024 * KIB
# Warm samples of small sizes time this many bytes' worth of back-to-back calls (at most 64).
WARM_BATCH_BYTES = 64 * KIB
WARM_MAX_CALLS = 64
# The dedicated copy that gives the bandwidth ceiling B, whatever the sweep's range.
CEILING_KEY = "ceiling/copy"
# ETA: expected seconds of a small case on a CPU (CaseSpec.cost; 0.13-0.55 s measured on a 2-core
# host), growing with the bytes a call moves
CASE_S = 0.2


def transfer_sizes(*, min_bytes: int, max_bytes: int, per_octave: int) -> list[int]:
    """Log-spaced sizes ``min·2^(k/per_octave)`` up to ``max``, rounded to multiples of 256 B
    (1 KiB and up are exact powers of two when ``per_octave`` is 1)."""
    if min_bytes < 4 or max_bytes < min_bytes or per_octave < 1:
        raise ParityError(
            f"size range {min_bytes}..{max_bytes} B with {per_octave} per octave is invalid; "
            "give 4 <= min <= max and at least one point per octave"
        )
    steps = int(math.floor(math.log2(max_bytes / min_bytes) * per_octave + 1e-9))
    sizes = {int(round(min_bytes * 2 ** (k / per_octave) / 256.0)) * 256 or min_bytes for k in range(steps + 1)}
    return sorted(s for s in sizes if min_bytes <= s <= max_bytes)


def free_memory_bytes(device: Any) -> int | None:
    """Bytes free for new tensors on ``device`` (host MemAvailable on the CPU): the device's
    ``free_memory_bytes()``, else its total memory, None if both are unknown."""
    free = device.free_memory_bytes()
    return free if free is not None else device.properties().memory_bytes


def _ops(device: Any, options: MembwOptions) -> list[str]:
    wanted = options.ops
    available = list(DEVICE_OPS) + ([] if device.type == "cpu" else list(HOST_OPS))
    if not wanted:
        return available
    ops = list(wanted)
    for op in ops:
        if op not in DEVICE_OPS + HOST_OPS:
            raise ParityError(f"unknown membw op {op!r}; known: {', '.join(DEVICE_OPS + HOST_OPS)}")
        if op in HOST_OPS and device.type == "cpu":
            raise ParityError(f"op {op!r} needs an accelerator; the CPU has no host-device copy")
    return ops


def host_page_policy() -> str:
    """How torch's CPU tensors are paged: 4 KiB pages unless THP is system-wide ("always") or
    torch's allocator is told to ask for it (``THP_MEM_ALLOC_ENABLE=1``)."""
    import os

    from parity.device.pages import THP_ENABLED, base_page_bytes

    try:
        mode = THP_ENABLED.read_text().split("[", 1)[1].split("]", 1)[0]
    except (OSError, IndexError):
        mode = "unavailable"
    if mode == "always" or (mode == "madvise" and os.environ.get("THP_MEM_ALLOC_ENABLE") == "1"):
        return f"transparent huge pages where aligned (THP {mode})"
    return f"{base_page_bytes() // 1024}KiB (THP {mode}, not requested by torch)"


class MembwSuite(SuiteBase):
    """Bandwidth against transfer size for each memory operation."""

    name = "membw"
    description = "memory bandwidth across transfer sizes: copy, read, write, triad, host<->device"
    options_type = MembwOptions

    def cases(self, *, device: Any, quick: bool, options: MembwOptions) -> list[CaseSpec]:
        per_octave = (1 if quick else 2) if options.per_octave is None else options.per_octave
        top = (QUICK_MAX_BYTES if quick else MAX_BYTES) if options.max_bytes is None else options.max_bytes
        bottom = MIN_BYTES if options.min_bytes is None else options.min_bytes
        free = free_memory_bytes(device)
        props = device.properties()
        common = {
            "device": device.name,
            "device_name": props.name,
            "llc_bytes": props.llc_bytes,
            "dtype": options.dtype,
            "flush": options.flush,
            "quick": bool(quick),
            "pages": host_page_policy() if device.type == "cpu" else "device-default",
        }
        ceiling_bytes = bandwidth_copy_bytes(device)
        cases = [CaseSpec(suite=self.name, key=CEILING_KEY, cost=CASE_S * (1.0 + 2 * ceiling_bytes / 2**28),
                          params={**common, "kind": "ceiling", "op": "copy", "target_bytes": ceiling_bytes})]
        cap = top
        for op in _ops(device, options):
            cap = top if free is None else min(top, int(free * FREE_MEMORY_SHARE / operand_count(op)))
            sizes = transfer_sizes(min_bytes=bottom, max_bytes=max(cap, bottom), per_octave=per_octave)
            for size in sizes:
                cost = CASE_S * (1.0 + bytes_moved(base_op(op), size) / 2**28)
                regime = "cold" if options.flush else "warm"
                cases.append(CaseSpec(suite=self.name, key=f"{op}/{size}",
                                      params={**common, "op": op, "bytes": size, "regime": regime}, cost=cost))
                if options.flush and size <= WARM_MAX_BYTES:  # the same point warm: no flush
                    cases.append(CaseSpec(suite=self.name, key=f"{op}/{size}/warm", cost=cost,
                                          params={**common, "op": op, "bytes": size, "flush": False,
                                                  "regime": "warm"}))
        if free is not None and top > cap:
            log.info("sizes capped at %d B by free memory (%d B free)", cap, free)
        return cases

    def measure(self, case: CaseSpec, *, device: Any, options: MembwOptions, state: Any = None) -> CaseResult:
        threads = _set_threads(device, options.threads)
        if case.params.get("kind") == "ceiling":
            result = shared_bandwidth_case(case, device=device)
            return replace(result, params={**result.params, "threads": threads},
                           metrics={**result.metrics, "threads": threads})
        params = {**case.params, "threads": threads}
        op = MemoryOp(op=params["op"], nbytes=int(params["bytes"]), device=device, dtype=params["dtype"])
        try:
            op.prepare()
        except RuntimeError as exc:  # out of memory is a row with an error, the sweep goes on
            return CaseResult(suite=self.name, key=case.key, params=params, error=f"allocation failed: {exc}".splitlines()[0])
        calls = warm_calls_per_sample(int(params["bytes"])) if params.get("regime") == "warm" else 1
        params["calls_per_sample"] = calls
        work = Work(call=op, check=op.check, strategy=CallsPerSample(calls=calls), flush_cache=params["flush"],
                    warmup_s=options.warmup_s,
                    budget_s=options.budget_s or (QUICK_BUDGET_S if params.get("quick") else BUDGET_S),
                    min_samples=options.min_samples, max_samples=options.max_samples)
        try:
            timed = time_work(work, device=device)
            check = work.check()
        finally:
            op.release()
        return CaseResult(suite=self.name, key=case.key, params=params, samples={"main": timed.samples["main"]},
                          metrics=_case_metrics(op, timed.summary, dtype=params["dtype"], threads=threads),
                          check=check, findings=timed.findings, telemetry=timed.telemetry)

    def recheck(self, results: list[CaseResult], *, options: MembwOptions) -> list[CaseSpec]:
        """Points whose GB/s is off the trend of their neighbours in size, per operation and
        regime (``parity.stats.trend.off_trend``), to be measured once more."""
        return [CaseSpec(suite=self.name, key=f"{r.key}/again", params={**r.params, "again_of": r.key})
                for r in off_trend_points(results)]

    def summarize(self, results: list[CaseResult], *, options: MembwOptions) -> MembwSummary:
        return summarize_membw(results)

    def figures(self, summary: MembwSummary) -> list[Figure]:
        return membw_figures(summary)


def warm_calls_per_sample(nbytes: int) -> int:
    """Back-to-back calls per warm sample: ``clamp(WARM_BATCH_BYTES // nbytes, 1, WARM_MAX_CALLS)``
    (64 at 1 KiB, 1 from 64 KiB), so a warm sample of a tiny copy is the span of many calls, as a
    bare timed loop measures it, not one call plus the timer's own cost."""
    return max(1, min(WARM_MAX_CALLS, WARM_BATCH_BYTES // max(1, nbytes)))


def _case_metrics(op: MemoryOp, summary: Any, *, dtype: str, threads: int | None) -> dict[str, Any]:
    """A case's stored figures: its timing statistics and its GB/s under both byte conventions
    (STREAM: bytes read + written; nvbandwidth: one operand)."""
    operand = op.numel * _itemsize(dtype)
    moved = bytes_moved(base_op(op.op), operand)
    median_s = summary.median
    return {
        "operand_bytes": operand,
        "bytes_moved": moved,
        "median_s": median_s,
        "iqr_s": summary.iqr,
        "ci95_s": [summary.ci_low, summary.ci_high],
        "min_s": summary.min,
        "gbps": bandwidth_gbps(moved, median_s),
        "convention": STREAM_CONVENTION,
        "operand_gbps": bandwidth_gbps(moved / bytes_moved(base_op(op.op), 1), median_s),
        "operand_convention": NVBANDWIDTH_CONVENTION,
        "threads": threads,
    }


def _itemsize(dtype: str) -> int:
    import torch

    return torch.empty((), dtype=getattr(torch, dtype)).element_size()


def _set_threads(device: Any, threads: Any) -> int | None:
    """Set torch's intra-op thread count on the CPU when asked; return the count in use."""
    if device.type != "cpu":
        return None
    import torch

    if threads:
        torch.set_num_threads(int(threads))
    return int(torch.get_num_threads())
