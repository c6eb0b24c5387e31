"""Measured ceilings: the best sustained GEMM rate per dtype, and the device-copy bandwidth.

Compute ceiling ``P``. mamf-finder (Stas Bekman, "Maximum Achievable Matmul FLOPS finder",
ml-engineering) times every shape of a large (M, N, K) grid and keeps the best, which takes
hours. ``search_ceiling`` finds the same maximum within a time budget, in three phases:

1. scout: square shapes on a geometric ladder (``min_dim``·√2^i, aligned), smallest first,
   stopping before a shape whose predicted call time exceeds ``max_call_s`` or once the rate
   has fallen for ``patience`` sizes in a row past the best;
   then every combination of ``s/4``, ``s`` and ``4s`` for (M, N, K) around the best square
   ``s``, so thin, wide and long-K shapes are in the running;
2. refine: a compass search with line extrapolation from the three best shapes: each of
   M, N and K is scaled up and down by 2, 1.5 and 1.25, then stepped by 4, 2 and 1
   alignments, and every move that raises the rate is followed further along its line, so
   non-square winners (a wide N, a long K) are reached in a few probes; each move is decided
   by timing the two shapes back to back, which keeps a drifting load from misleading it;
3. confirm: the best few shapes are re-timed ``confirm_repeats`` times with a longer budget,
   interleaved, and ``P`` is the best median among them, stored with its shape.

Bandwidth ceiling ``B``: a large device-to-device copy, counted as bytes read plus bytes written
(STREAM convention), timed with the same protocol.

The search takes its measurement as a callback, so the algorithm is tested without a device.
"""

from __future__ import annotations

import itertools
import logging
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)

Dims = tuple[int, int, int]
# Enough samples for a stable median; more only slows the bootstrap in the summary.
MAX_PROBE_SAMPLES = 100
# Refinement steps: factors first (to reach far shapes, e.g. a long K), then alignments.
REFINE_STEPS_MUL = (("mul", 2.0), ("mul", 1.5), ("mul", 1.25))
REFINE_STEPS_ADD = (4, 2, 1)
REFINE_STARTS = 3
# The aspect scout: sides s/4, s, 4s around the best square, within this share of the budget.
ASPECT_FACTOR = 4
ASPECT_SHARE = 0.45
Evaluate = Callable[[int, int, int, float], float]  # (m, n, k, budget_s) -> FLOP/s


@dataclass(frozen=True, kw_only=True)
class SearchPlan:
    """Bounds of the ceiling search. Sizes in elements, times in seconds."""

    budget_s: float
    min_dim: int
    max_dim: int
    align: int
    max_call_s: float
    probe_budget_s: float
    confirm_budget_s: float
    confirm_repeats: int = 3
    confirm_top: int = 3
    patience: int = 3

    @classmethod
    def for_device(cls, device_type: str, *, budget_s: float) -> SearchPlan:
        """Defaults: accelerators search 256..20480 in steps of 64 (mamf-finder's range);
        CPUs 16..8192 in steps of 16, where per-call times are long."""
        if device_type == "cpu":
            return cls(budget_s=budget_s, min_dim=16, max_dim=8192, align=16,
                       max_call_s=max(0.02, budget_s / 40), probe_budget_s=max(0.03, budget_s / 400),
                       confirm_budget_s=max(0.1, budget_s / 60))
        return cls(budget_s=budget_s, min_dim=256, max_dim=20480, align=64,
                   max_call_s=max(0.01, budget_s / 100), probe_budget_s=max(0.03, budget_s / 400),
                   confirm_budget_s=max(0.2, budget_s / 40))


@dataclass(kw_only=True)
class SearchResult:
    """What the search found: ``flops`` (FLOP/s) at ``dims``, with every probe it made."""

    flops: float
    dims: Dims
    confirm_rates: list[float]
    probes: dict[Dims, float] = field(default_factory=dict)
    spent_s: float = 0.0
    phases: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        top = sorted(self.probes.items(), key=lambda kv: kv[1], reverse=True)[:10]
        return {
            "flops": self.flops,
            "shape": {"m": self.dims[0], "n": self.dims[1], "k": self.dims[2]},
            "confirm_flops": list(self.confirm_rates),
            "probes": len(self.probes),
            "top_probes": [{"m": d[0], "n": d[1], "k": d[2], "flops": r} for d, r in top],
            "spent_s": self.spent_s,
            "phases": dict(self.phases),
        }


def align_up(value: float, align: int) -> int:
    """``value`` rounded to the nearest positive multiple of ``align``."""
    return max(align, int(round(value / align)) * align)


def scout_sizes(plan: SearchPlan) -> list[int]:
    """The square sizes of phase 1: ``min_dim·2^(i/2)`` aligned, up to ``max_dim``, distinct."""
    sizes: list[int] = []
    i = 0
    while True:
        size = align_up(plan.min_dim * 2 ** (i / 2), plan.align)
        if size > plan.max_dim:
            return sizes
        if size not in sizes:
            sizes.append(size)
        i += 1


class _Search:
    def __init__(self, evaluate: Evaluate, plan: SearchPlan, clock: Callable[[], float]) -> None:
        self.evaluate = evaluate
        self.plan = plan
        self.clock = clock
        self.start = clock()
        self.probes: dict[Dims, float] = {}
        self.phases = {"scout": 0, "refine": 0, "confirm": 0}

    def spent(self) -> float:
        return self.clock() - self.start

    def probe(self, dims: Dims, phase: str) -> float:
        if dims not in self.probes:
            self.probes[dims] = self.evaluate(*dims, self.plan.probe_budget_s)
            self.phases[phase] += 1
        return self.probes[dims]

    def too_slow(self, dims: Dims) -> bool:
        """True when the call is predicted to exceed ``max_call_s`` at the best rate seen."""
        best = max(self.probes.values(), default=0.0)
        return best > 0 and 2.0 * math.prod(dims) / best > self.plan.max_call_s

    def scout(self) -> None:
        best, falling = 0.0, 0
        for size in scout_sizes(self.plan):
            dims = (size, size, size)
            if self.spent() > 0.35 * self.plan.budget_s or self.too_slow(dims):
                break
            rate = self.probe(dims, "scout")
            if rate > best:
                best, falling = rate, 0
            else:
                falling += 1
                if falling >= self.plan.patience:
                    break

    def aspect_scout(self) -> None:
        """Probe every combination of ``s/4``, ``s`` and ``4s`` for (M, N, K) around the best
        square ``s``: thin, wide and long-K shapes that a square ladder never visits."""
        squares = [d for d in self.probes if d[0] == d[1] == d[2]]
        if not squares:
            return
        size = max(squares, key=self.probes.__getitem__)[0]
        sides = sorted({align_up(size / ASPECT_FACTOR, self.plan.align), size,
                        align_up(size * ASPECT_FACTOR, self.plan.align)})
        sides = [v for v in sides if self.plan.min_dim <= v <= self.plan.max_dim]
        for dims in itertools.product(sides, sides, sides):
            if self.spent() > ASPECT_SHARE * self.plan.budget_s:
                return
            if dims not in self.probes and not self.too_slow(dims):
                self.probe(dims, "scout")

    def refine(self, start: Dims) -> Dims:
        """Compass search from ``start`` with line extrapolation: for each dimension and
        direction, keep scaling by the step (2, then 1.5, 1.25) or adding it (4, 2, 1
        alignments) while the rate improves; repeat a step until a full sweep finds nothing
        better, then take the next, finer step. Each move is decided by timing the neighbour
        and the current shape back to back, so a machine whose load drifts between probes
        (a shared CPU, a GPU warming up) cannot mislead the search."""
        center = start
        steps = REFINE_STEPS_MUL + tuple(("add", float(self.plan.align * a)) for a in REFINE_STEPS_ADD)
        tried: set[tuple[Dims, Dims]] = set()
        for kind, step in steps:
            improved = True
            while improved:
                improved = False
                for axis in range(3):
                    for direction in (1, -1):
                        while self.spent() < 0.8 * self.plan.budget_s:
                            neighbour = self._move(center, axis, direction, kind, step)
                            if neighbour is None or (center, neighbour) in tried:
                                break
                            if neighbour not in self.probes and self.too_slow(neighbour):
                                break
                            tried.add((center, neighbour))
                            if not self.beats(neighbour, center):
                                break
                            center, improved = neighbour, True
                if self.spent() >= 0.8 * self.plan.budget_s:
                    return center
        return center

    def beats(self, challenger: Dims, holder: Dims) -> bool:
        """Time ``challenger`` then ``holder`` back to back; True when the challenger is faster.
        Both probes are recorded (the latest rate of a shape is kept)."""
        rate = self.evaluate(*challenger, self.plan.probe_budget_s)
        self.probes[challenger] = rate
        reference = self.evaluate(*holder, self.plan.probe_budget_s)
        self.probes[holder] = reference
        self.phases["refine"] += 2
        return rate > reference

    def _move(self, center: Dims, axis: int, direction: int, kind: str, step: float) -> Dims | None:
        """``center`` with one dimension scaled (``mul``) or shifted (``add``); None when out of
        range or when alignment leaves it unchanged."""
        value = center[axis]
        if kind == "mul":
            moved = align_up(value * step if direction > 0 else value / step, self.plan.align)
        else:
            moved = value + direction * int(step)
        if moved == value or not self.plan.min_dim <= moved <= self.plan.max_dim:
            return None
        dims = list(center)
        dims[axis] = moved
        return (dims[0], dims[1], dims[2])

    def confirm(self, champions: list[Dims]) -> tuple[Dims, float, list[float]]:
        """Re-time the refinements' end points (chosen by back-to-back comparisons) and the
        best recorded probes, ``confirm_top`` shapes in all."""
        ranked = list(dict.fromkeys(champions))[: self.plan.confirm_top]
        for dims in sorted(self.probes, key=self.probes.__getitem__, reverse=True):
            if len(ranked) >= self.plan.confirm_top:
                break
            if dims not in ranked:
                ranked.append(dims)
        self.phases["confirm"] += len(ranked) * self.plan.confirm_repeats
        return confirm_best(self.evaluate, ranked, budget_s=self.plan.confirm_budget_s,
                            repeats=self.plan.confirm_repeats)


def confirm_best(evaluate: Evaluate, candidates: list[Dims], *, budget_s: float,
                 repeats: int) -> tuple[Dims, float, list[float]]:
    """Re-time ``candidates`` ``repeats`` times, interleaved (so drift hits all alike); return
    the one with the best median rate, that median, and its rates."""
    rates: dict[Dims, list[float]] = {d: [] for d in candidates}
    for _ in range(repeats):
        for dims in candidates:
            rates[dims].append(evaluate(*dims, budget_s))
    medians = {d: statistics.median(r) for d, r in rates.items()}
    winner = max(medians, key=medians.__getitem__)
    return winner, medians[winner], rates[winner]


def search_ceiling(
    evaluate: Evaluate, plan: SearchPlan, *, clock: Callable[[], float] = time.perf_counter
) -> SearchResult:
    """Find the best sustained rate ``evaluate`` reports, within ``plan.budget_s`` (see module).

    ``evaluate(m, n, k, budget_s)`` times one shape for about ``budget_s`` and returns FLOP/s.
    One probe of the smallest square runs before the clock starts: it pays for imports and
    library initialisation (seconds on a loaded CPU), which must not eat the search's budget.
    """
    first = scout_sizes(plan)[0]
    evaluate(first, first, first, plan.probe_budget_s)
    search = _Search(evaluate, plan, clock)
    search.scout()
    if not search.probes:
        size = scout_sizes(plan)[0]
        search.probe((size, size, size), "scout")
    search.aspect_scout()
    starts = sorted(search.probes, key=search.probes.__getitem__, reverse=True)
    champions = [search.refine(start) for start in starts[:REFINE_STARTS]]
    dims, flops, rates = search.confirm(champions)
    log.info("compute ceiling %.4g FLOP/s at %s after %d probes", flops, dims, len(search.probes))
    return SearchResult(flops=flops, dims=dims, confirm_rates=rates, probes=dict(search.probes),
                        spent_s=search.spent(), phases=dict(search.phases))


# --- measuring on a device ------------------------------------------------------------------


def gemm_rate_evaluator(*, device: Any, backend: Any, dtype: Any, warmup_s: float = 0.01,
                        keep: dict[Dims, Any] | None = None) -> Evaluate:
    """An ``evaluate`` callback timing ``backend`` on ``device`` with the timing core.

    ``keep``, when given, receives the raw samples of the latest measurement of each shape.

    Inputs rotate past the last-level cache and the cache is not flushed between calls
    (mamf-finder times back-to-back calls): a sustained rate of the matrix units. The rate is
    ``2MNK / median``.
    """
    from parity.bench.gemm.dtypes import precision_mode
    from parity.bench.gemm.inputs import rotation_for
    from parity.timing import measure

    def evaluate(m: int, n: int, k: int, budget_s: float) -> float:
        inputs = rotation_for(device=device, backend=backend, dtype=dtype, m=m, n=n, k=k, max_sets=4)
        with precision_mode(dtype, device):
            result = measure(backend.run, device=device, inputs=inputs, warmup_s=warmup_s,
                             budget_s=budget_s, min_samples=3, max_samples=MAX_PROBE_SAMPLES,
                             flush_cache=False)
        del inputs
        if keep is not None:
            keep[(m, n, k)] = result.samples
        return 2.0 * m * n * k / result.median_s

    return evaluate


def measure_bandwidth_ceiling(*, device: Any, size_bytes: int, budget_s: float = 0.3) -> dict[str, Any]:
    """``B``: copy a ``size_bytes`` buffer into another; ``2·size/median`` B/s (read + write)."""
    import torch

    from parity.timing import measure

    elements = max(1, size_bytes // 4)
    src = device.random_tensor((elements,), torch.float32)
    dst = torch.empty_like(src)
    result = measure(lambda: dst.copy_(src), device=device, warmup_s=0.05, budget_s=budget_s,
                     min_samples=5, flush_cache=False)
    moved = 2 * elements * 4
    return {
        "bps": moved / result.median_s,
        "bytes_copied": elements * 4,
        "bytes_moved": moved,
        "convention": "bytes read plus bytes written (STREAM)",
        "median_s": result.median_s,
        "samples": result.samples,
        "findings": list(result.findings),
    }


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
