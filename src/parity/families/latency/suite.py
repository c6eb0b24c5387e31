"""Pointer-chase latency: against working-set size, and against concurrent blocks.

Two kinds of case:

- ``size/<page>/<bytes>``: one chaser through a random single-cycle ring of ``bytes`` at cache-line stride
  (64 B on the CPU, 128 B on GPUs), from 4 KiB to well past the last-level cache. The plateaus
  of this curve are the cache levels.
- ``blocks/<page>/<n>``: ``n`` chasers at once, each through its own 16 KiB ring (the published
  Ascend test), ``n`` from 1 to twice the compute units. On the CPU a block is a thread; on a
  GPU it is a Triton program. The knees of this curve are where a shared resource saturates.

Each case times two chain lengths with the harness (declared ``Work`` with the
``TwoLengthSlope`` strategy; no cache flush: the working set must stay warm) and reports ns per
load from the slope, which cancels launch and thread-start costs:
``ns_per_load`` from the two medians, ``ns_per_load_min`` from the two minima. Interference
(preemption by other processes, other tenants) only ever adds time to a dependent chain, so on
a shared machine the minima are the better estimate of the undisturbed latency, a property of
the hardware, while the medians say what a program sharing the machine would see. The summary
uses the minima unless the ``estimator`` option says ``median``, and names the one it used. On
the CPU each case runs with 4 KiB pages and again with transparent huge pages where the OS
allows, and every figure carries the page size it used (and the share of the buffer the kernel
actually backed with huge pages).
"""

from __future__ import annotations

import logging
import math
from typing import Any

from parity.families.latency.options import LatencyOptions
from parity.families.latency.figures import latency_figures
from parity.families.latency.summary import LatencySummary, off_trend_latency_points, summarize_latency
from parity.harness.measure import time_work
from parity.harness.strategies import BestOf, TwoLengthSlope
from parity.harness.suite import CaseSpec, SuiteBase
from parity.harness.work import Work
from parity.metrics.latency import ns_per_load
from parity.model.errors import ParityError
from parity.model.findings import Finding, Severity
from parity.model.figure import Figure
from parity.model.result import CaseResult

log = logging.getLogger(__name__)

KIB, MIB = 1024, 1024 * 1024
MIN_WORKING_SET = 4 * KIB
BLOCK_REGION = 16 * KIB
CPU_STRIDE = 64
GPU_STRIDE = 128
# Working sets reach this multiple of the last-level cache (4x in quick mode, 8x in full), so
# the sweep leaves the last cache (past 2x, where a random ring hits it on at most half its loads)
# with points to spare, whatever the cache's size: 128 MiB on a 32 MiB L3, 1.2 GiB on a 300 MiB one.
QUICK_LLC_FACTOR, FULL_LLC_FACTOR = 4, 8
# The largest ring may take this share of the memory free when the cases are planned: the ring,
# plus the build's index arrays (about 0.7x the ring at a 64 B stride), with room for the rest.
FREE_MEMORY_SHARE = 0.25
# The long chain is timed for about this long (s); the short one is a quarter as many loads.
# Short enough that most samples escape preemption on a shared machine.
QUICK_TARGET_S, FULL_TARGET_S = 0.002, 0.005
# Concurrent chasers run much longer: when there are more threads than cores the scheduler
# shares the cores in slices of milliseconds, and only chains many slices long show the
# sharing as a steady slowdown rather than as the luck of one slice.
QUICK_BLOCKS_TARGET_S, FULL_BLOCKS_TARGET_S = 0.04, 0.1
MIN_SAMPLES, BLOCKS_MIN_SAMPLES = 15, 7
# Past the last cache every load goes to memory, which other processes and tenants share, and
# their bursts last longer than a short chain: more samples, over a longer window, give the
# minimum a better chance at an undisturbed one (lmbench-style references repeat about 50 times).
PAST_CACHE_MIN_SAMPLES = 51
SLOPE_ATTEMPTS = 3  # measurements of a case before a non-positive slope becomes an error row
DISTURBED = "other work disturbed the timing"  # the error row's reason, as a caller can look for it
PROBE_LOADS, MIN_LOADS, MAX_LOADS = 1 << 12, 1 << 14, 1 << 28
PROBE_REPEATS = 3
# ETA: expected seconds of a case on a CPU (CaseSpec.cost; 0.15-1 s measured on a 2-core host),
# growing with the working set
CASE_S = 0.25
HUGE_SHARE_EXPECTED = 0.9


def working_sets(*, max_bytes: int, per_octave: int = 2) -> list[int]:
    """Sizes from 4 KiB to ``max_bytes``, ``per_octave`` per doubling, multiples of 4 KiB.

    ``max_bytes`` (rounded down to 4 KiB) is always the last size, so the sweep ends where it
    was asked to even between grid points.
    """
    if max_bytes < MIN_WORKING_SET:
        raise ParityError(f"largest working set {max_bytes} B is under {MIN_WORKING_SET} B")
    steps = math.floor(math.log2(max_bytes / MIN_WORKING_SET) * per_octave + 1e-9)
    grid = {int(MIN_WORKING_SET * 2 ** (k / per_octave)) // (4 * KIB) * (4 * KIB) for k in range(steps + 1)}
    return sorted(grid | {max_bytes // (4 * KIB) * (4 * KIB)})


def largest_working_set(llc_bytes: int, *, quick: bool, free_bytes: int | None) -> tuple[int, str | None]:
    """The sweep's largest working set and what capped it (None when the cache decided).

    ``factor · llc_bytes`` (``QUICK_LLC_FACTOR`` = 4 quick, ``FULL_LLC_FACTOR`` = 8 full), at
    most ``FREE_MEMORY_SHARE`` of ``free_bytes`` rounded down to a power of two (so a resume
    plans the same sizes unless free memory changed twofold); never under 64 KiB.
    """
    top = (QUICK_LLC_FACTOR if quick else FULL_LLC_FACTOR) * llc_bytes
    if free_bytes:
        bound = 2 ** math.floor(math.log2(max(1, FREE_MEMORY_SHARE * free_bytes)))
        if bound < top:
            return max(64 * KIB, bound), "free memory"
    return top, None


def free_memory_bytes(device: Any, props: Any) -> int | None:
    """Memory the chase buffer can take: the host's available memory for the CPU, the device's
    total memory elsewhere (the device interface reports no free figure yet)."""
    if device.type == "cpu":
        from parity.device.pages import available_memory_bytes

        return available_memory_bytes()
    return props.memory_bytes


def page_sizes(device: Any, options: LatencyOptions) -> list[str]:
    """``base`` (and ``thp`` where the OS allows it) on the CPU; the driver's choice on GPUs."""
    if device.type != "cpu":
        return ["device"]
    from parity.device.pages import thp_unavailable_reason

    wanted = list(options.pages) or ["base", "thp"]
    reason = thp_unavailable_reason()
    if "thp" in wanted and reason:
        log.warning("%s; measuring base pages only", reason)
    return [p for p in wanted if p == "base" or (p == "thp" and reason is None)]


def block_counts(compute_units: int, *, quick: bool) -> list[int]:
    """1 .. 2x compute units; quick mode thins large ranges to about 16 points."""
    top = 2 * max(1, compute_units)
    if not quick or top <= 16:
        return list(range(1, top + 1))
    step = max(1, top // 16)
    return sorted({1, 2, *range(step, top + 1, step), top})


class LatencySuite(SuiteBase):
    """Pointer-chase latency across working-set sizes and concurrent blocks."""

    name = "latency"
    description = "pointer-chase latency: plateaus across working-set sizes, knees across blocks"
    options_type = LatencyOptions

    def cases(self, *, device: Any, quick: bool, options: LatencyOptions) -> list[CaseSpec]:
        props = device.properties()
        llc = props.llc_bytes or props.l2_bytes or 32 * MIB
        top, limit = largest_working_set(llc, quick=quick, free_bytes=free_memory_bytes(device, props))
        if options.max_bytes is not None:
            top, limit = options.max_bytes, "max_bytes"
        stride = options.stride_bytes or (CPU_STRIDE if device.type == "cpu" else GPU_STRIDE)
        common = {
            "device": device.name, "device_name": props.name, "stride_bytes": stride,
            "caches": _reported_caches(props), "memory_bytes": props.memory_bytes,
            "memory_name": "DRAM" if device.type == "cpu" else "HBM",
            "compute_units": props.compute_units, "compute_unit_kind": props.compute_unit_kind,
            "quick": bool(quick), "hypervisor": _under_hypervisor(device), "sweep_limit": limit,
        }
        cases = []
        for page in page_sizes(device, options):
            for size in working_sets(max_bytes=top, per_octave=options.per_octave):
                cases.append(CaseSpec(suite=self.name, key=f"size/{page}/{size}", cost=CASE_S * (1.0 + size / (64 * MIB)),
                                      params={**common, "curve": "size", "page": page, "working_set_bytes": size, "blocks": 1}))
            for n in block_counts(props.compute_units or 1, quick=quick):
                cases.append(CaseSpec(suite=self.name, key=f"blocks/{page}/{n}", cost=CASE_S,
                                      params={**common, "curve": "blocks", "page": page,
                                              "working_set_bytes": BLOCK_REGION, "blocks": n}))
        return cases

    def measure(self, case: CaseSpec, *, device: Any, options: LatencyOptions, state: Any = None) -> CaseResult:
        p = case.params
        rings = _rings(device, p)
        try:
            return self._measure_rings(case, rings, device=device, options=options)
        finally:
            rings.close()

    def _measure_rings(self, case: CaseSpec, rings: Any, *, device: Any, options: LatencyOptions) -> CaseResult:
        p = case.params
        many = p["curve"] == "blocks"

        def run(loads: int) -> None:
            rings.step(loads, many=many)

        target = options.target_s or _target_s(quick=bool(p.get("quick")), many=many)
        long_loads = _loads_for(run, device=device, target_s=target) // 4 * 4
        short_loads = long_loads // 4
        samples = _min_samples(p)
        work = Work(call=run, check=lambda: {"passed": rings.verify(), "method": rings.check_method},
                    strategy=TwoLengthSlope(short=short_loads, long=long_loads, attempts=SLOPE_ATTEMPTS),
                    flush_cache=False, warmup_s=options.warmup_s,
                    budget_s=options.budget_s or 1.5 * samples * target,
                    min_samples=options.min_samples or samples, max_samples=options.max_samples)
        timed = time_work(work, device=device)
        chains = {"short": timed.samples["short"], "long": timed.samples["long"]}
        m = timed.metrics
        ns = ns_per_load(short_s=m["short_median_s"], long_s=m["long_median_s"],
                         short_loads=short_loads, long_loads=long_loads)
        ns_min = ns_per_load(short_s=m["short_min_s"], long_s=m["long_min_s"],
                             short_loads=short_loads, long_loads=long_loads)
        if not (ns > 0 and ns_min > 0):
            # Interference only adds time, so a slope <= 0 means the short chain was disturbed
            # more than the long one in every attempt: the pairs say nothing about latency.
            return CaseResult(
                suite=self.name, key=case.key, params=dict(p), samples=chains,
                error=(f"the chase slope was not positive in {SLOPE_ATTEMPTS} attempts "
                       f"({ns:.3g} ns median, {ns_min:.3g} ns min): {DISTURBED}; "
                       "rerun on a quieter machine or raise target_s"),
            )
        check = work.check()  # after timing: the timed chases are checked too
        huge = rings.memory.huge_fraction() if hasattr(rings, "memory") else None
        findings = list(timed.findings) + _page_findings(p["page"], huge)
        metrics = {
            "ns_per_load": ns, "headline_metric": "ns_per_load", "ns_per_load_min": ns_min, "short_loads": short_loads, "long_loads": long_loads,
            # the slope from the two chains' medians: compare resamples each for the CI
            "headline_medians": {"short": -1e9 / (long_loads - short_loads), "long": 1e9 / (long_loads - short_loads)},
            "short_median_s": m["short_median_s"], "long_median_s": m["long_median_s"],
            "page_label": rings.page_label, "huge_page_share": huge, "stride_bytes": rings.stride_bytes,
            "slots_per_block": rings.slots, "method": "slope between two chain lengths",
            "attempts": m["attempts"],
        }
        return CaseResult(suite=self.name, key=case.key, params=dict(p), metrics=metrics, samples=chains,
                          check=check, findings=tuple(findings))

    def recheck(self, results: list[CaseResult], *, options: LatencyOptions) -> list[CaseSpec]:
        """Points whose latency is off the trend of their neighbours on their curve
        (``off_trend_latency_points``, by the summary's estimator), to be measured once more."""
        return [CaseSpec(suite=self.name, key=f"{r.key}/again", params={**r.params, "again_of": r.key})
                for r in off_trend_latency_points(results, estimator=options.estimator)]

    def summarize(self, results: list[CaseResult], *, options: LatencyOptions) -> LatencySummary:
        return summarize_latency(results, estimator=options.estimator)

    def figures(self, summary: LatencySummary) -> list[Figure]:
        return latency_figures(summary)


def _rings(device: Any, p: dict[str, Any]) -> Any:
    """The chase memory for one case: native rings on the CPU, a Triton table elsewhere."""
    count = int(p["blocks"])
    if device.type == "cpu":
        from parity.families.latency.chase import ChaseRings

        return ChaseRings(region_bytes=int(p["working_set_bytes"]), stride_bytes=int(p["stride_bytes"]),
                          count=count, page=p["page"])
    try:
        from parity.families.latency.chase_triton import TritonChase
    except ImportError as exc:
        raise ParityError(f"the {device.type} pointer chase needs triton ({exc}); pip install triton") from None
    return TritonChase(device=device, region_bytes=int(p["working_set_bytes"]),
                       stride_bytes=int(p["stride_bytes"]), count=count)


def _min_samples(params: dict[str, Any]) -> int:
    """Samples per chain length: fewer for concurrent blocks (long chains), more past the last
    reported cache (memory, shared and bursty), ``MIN_SAMPLES`` otherwise."""
    if params["curve"] == "blocks":
        return BLOCKS_MIN_SAMPLES
    caches = params.get("caches") or []
    last = max((int(size) for _, size in caches), default=None)
    return PAST_CACHE_MIN_SAMPLES if last and params["working_set_bytes"] > last else MIN_SAMPLES


def _target_s(*, quick: bool, many: bool) -> float:
    """How long the long chain should take, in seconds."""
    if many:
        return QUICK_BLOCKS_TARGET_S if quick else FULL_BLOCKS_TARGET_S
    return QUICK_TARGET_S if quick else FULL_TARGET_S


def _loads_for(run: Any, *, device: Any, target_s: float) -> int:
    """Loads per long chain so that it takes about ``target_s``.

    The per-load time is itself a slope, between probes of 4096 and 32768 loads (best of
    three each: the ``BestOf`` strategy), so thread start and launch costs do not inflate it.
    """
    small, large = PROBE_LOADS, 8 * PROBE_LOADS
    t_small = _probe(lambda: run(small), device=device)
    t_large = _probe(lambda: run(large), device=device)
    per_load = (t_large - t_small) / (large - small)
    if per_load <= 0:
        per_load = t_large / large
    return max(MIN_LOADS, min(MAX_LOADS, int(target_s / max(per_load, 1e-11))))


def _probe(call: Any, *, device: Any) -> float:
    """The best of three synchronized host-clock timings of ``call()``, in seconds."""
    work = Work(call=call, check=lambda: {"passed": True, "method": "not checked: a probe"},
                strategy=BestOf(repeats=PROBE_REPEATS), flush_cache=False)
    return time_work(work, device=device).summary.min


def _page_findings(page: str, huge: float | None) -> list[Finding]:
    if page != "thp" or huge is None or huge >= HUGE_SHARE_EXPECTED:
        return []
    return [Finding(code="thp-not-granted", severity=Severity.WARNING,
                    message=f"only {huge:.0%} of the buffer is backed by huge pages",
                    hint="memory is fragmented or THP is restricted; the figure mixes page sizes")]


def _under_hypervisor(device: Any) -> bool:
    """True when the CPU says it runs in a virtual machine (the ``hypervisor`` cpuinfo flag):
    its caches are then shared with other guests, and what it reports may not be what it gets."""
    if device.type != "cpu":
        return False
    from parity.device.host import cpu_flags

    return "hypervisor" in cpu_flags()


def _reported_caches(props: Any) -> list[list[Any]]:
    """``[[name, bytes], ...]`` from the device's properties, smallest first, duplicates dropped.

    The last level is named by its number when the device lists its cache levels (``L3`` on
    most CPUs), else ``LLC``.
    """
    levels = [c.get("level") for c in props.extra.get("caches", []) if c.get("type") != "instruction"]
    last = f"L{max(levels)}" if levels and max(levels) > 2 else "LLC"
    named = [("L1", props.l1_bytes), ("L2", props.l2_bytes), (last, props.llc_bytes)]
    seen: set[int] = set()
    out = []
    for name, size in named:
        if size and size not in seen:
            seen.add(size)
            out.append([name, int(size)])
    return out
