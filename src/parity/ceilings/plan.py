"""The ceiling search's plan (``parity.ceilings.compute``): its bounds and budgets per device, and
the shapes its first two phases time, a ladder of squares and a grid of sides around the best.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from parity.ceilings.contest import Dims
from parity.metrics.roofline import gemm_flops

# The grid phase: sides s·2^j for j in -2..2 around the best square.
GRID_EXPONENTS = (-2, -1, 0, 1, 2)
# The anchors' long-K shape: (s/LONG_K, s/LONG_K, LONG_K²·s) has the work of the cube s.
LONG_K = 2
# Anchors are sized for this share of the device's reference peak when it is known: on a loaded
# host small calls are held up by the scheduler (a 512-cube reads 1 GFLOP/s where a 2048-cube
# reads 60), so the best rate the ladder saw would size them far too small.
ANCHOR_PEAK_SHARE = 0.25
# An anchor's call takes at most this share of ``max_call_s``: a probe times several calls, and
# the anchors are timed whatever the ladder found, so they must stay cheap on a slow device.
ANCHOR_CALL_SHARE = 0.25


@dataclass(frozen=True, kw_only=True)
class SearchPlan:
    """Bounds of the ceiling search. Sizes in elements, times in seconds. ``relative``: score
    ladder and grid shapes against a shape timed next to them (for machines whose speed drifts
    between probes; see the module's Scores)."""

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
    relative: bool = False
    max_elements: int | None = None
    reference_flops: float | None = None

    @classmethod
    def for_device(cls, device_type: str, *, budget_s: float) -> SearchPlan:
        """Defaults: accelerators search 256..20480 in steps of 64 (mamf-finder's range);
        CPUs 16..8192 in steps of 16, with relative scoring and a contest of five shapes over
        seven short rounds (a shared CPU's speed swings by tens of percent within seconds).
        Calls longer than 1% of the budget are not timed: each probe costs about four calls.
        ``max_elements``: the most elements one shape's operands may hold (``M·K + K·N + M·N``),
        from the device's free memory; None: not bounded. ``reference_flops``: the device's
        datasheet or ISA peak (FLOP/s) when known, which sizes the anchors (``anchor_rate``)."""
        if device_type == "cpu":
            return cls(budget_s=budget_s, min_dim=16, max_dim=8192, align=16,
                       max_call_s=max(0.02, budget_s / 100), probe_budget_s=max(0.03, budget_s / 400),
                       confirm_budget_s=max(0.05, budget_s / 200), confirm_repeats=7, confirm_top=5,
                       relative=True)
        return cls(budget_s=budget_s, min_dim=256, max_dim=20480, align=64,
                   max_call_s=max(0.01, budget_s / 100), probe_budget_s=max(0.03, budget_s / 400),
                   confirm_budget_s=max(0.2, budget_s / 40))

    def too_slow(self, dims: Dims, flops: float) -> bool:
        """True when one call of ``dims`` at ``flops`` FLOP/s (0: not known yet, never too slow)
        would exceed ``max_call_s``: ``2MNK / flops > max_call_s``."""
        return flops > 0 and gemm_flops(*dims) / flops > self.max_call_s

    def fits(self, dims: Dims) -> bool:
        """True when ``dims`` is within the side range and its operands ``M·K + K·N + M·N``
        within ``max_elements``."""
        m, n, k = dims
        inside = all(self.min_dim <= d <= self.max_dim for d in dims)
        return inside and (self.max_elements is None or m * k + k * n + m * n <= self.max_elements)


def align_up(value: float, align: int) -> int:
    """``value`` rounded to the nearest positive multiple of ``align``."""
    return max(align, round(value / align) * align)


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


def grid_shapes(size: int, plan: SearchPlan) -> list[Dims]:
    """Phase 2's shapes: sides ``size·2^j`` (j in ``GRID_EXPONENTS``, aligned, within the plan's
    range) in every combination, nearest to the square ``size`` first (sum of |j| over M, N, K),
    so a budget cut drops the farthest ones."""
    sides = {j: align_up(size * 2.0**j, plan.align) for j in GRID_EXPONENTS}
    sides = {j: v for j, v in sides.items() if plan.min_dim <= v <= plan.max_dim}
    combos = sorted(itertools.product(sides, sides, sides), key=lambda js: (sum(map(abs, js)), js))
    return list(dict.fromkeys((sides[a], sides[b], sides[c]) for a, b, c in combos))


def anchor_rate(plan: SearchPlan, seen_flops: float) -> float:
    """The rate (FLOP/s) the anchors are sized at: ``max(seen, ANCHOR_PEAK_SHARE·reference)``.
    Example: seen 2e8, ISA peak 6.6e11 -> 1.65e11."""
    return max(seen_flops, ANCHOR_PEAK_SHARE * (plan.reference_flops or 0.0))


def anchor_shapes(plan: SearchPlan, flops: float) -> list[Dims]:
    """The large shapes every search times whatever its ladder found (a ladder misled by a
    burst of load can stop at small shapes): the largest aligned cube ``s`` whose call fits
    ``ANCHOR_CALL_SHARE·max_call_s`` at ``flops`` (FLOP/s, the best rate seen;
    ``2s³/flops <= ANCHOR_CALL_SHARE·max_call_s``), within the side range and ``max_elements``,
    then the long-K shape of the same work ``(s/LONG_K, s/LONG_K, LONG_K²·s)`` (K clipped to
    ``max_dim``), then the cube ``s/2``.
    Example: 4e12 FLOP/s, max_call_s 0.2 s: s³ <= 0.25·0.2·4e12/2 = 1e11, s = 4641 -> 4640
    (aligned to 16), so (4640, 4640, 4640), (2320, 2320, 8192 with max_dim 8192), (2320, 2320, 2320)."""
    if flops <= 0:
        return []
    side = min(plan.max_dim, int((ANCHOR_CALL_SHARE * plan.max_call_s * flops / 2.0) ** (1.0 / 3.0)))
    side = max(plan.min_dim, side - side % plan.align)
    while side > plan.min_dim and not plan.fits((side, side, side)):
        side -= plan.align
    half = align_up(side / LONG_K, plan.align)
    long_k = min(plan.max_dim, align_up(side * LONG_K**2, plan.align))
    shapes = [(side, side, side), (half, half, long_k), (half, half, half)]
    return [d for d in dict.fromkeys(shapes) if plan.fits(d) and not plan.too_slow(d, flops)]
