"""The GEMM roofline of docs/definitions.md: work, minimum traffic, intensity, ridge, attainable, class.

For ``C[M,N] = A[M,K] @ B[K,N]`` (Williams, Waterman and Patterson, "Roofline: an insightful
visual performance model for multicore architectures", CACM 52(4), 2009):

- work ``F = 2·M·N·K`` FLOP (one multiply and one add per term of every dot product);
- minimum traffic ``Q = (M·K + K·N)·in_bytes + M·N·out_bytes`` bytes (read each input once,
  write the output once: what a perfectly cached kernel would move);
- arithmetic intensity ``AI = F/Q`` FLOP/B;
- ridge ``R = P/B`` FLOP/B for a compute ceiling ``P`` (FLOP/s) and bandwidth ceiling ``B`` (B/s);
- attainable ``A(AI) = min(P, AI·B)`` FLOP/s; efficiency ``achieved/A``;
- class: compute-bound when ``AI >= R``, memory-bound otherwise; "near-ridge" is reported as well
  when ``|AI/R - 1| <= 0.25``.

Everything is SI (FLOP, B, s, FLOP/s); no torch here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from parity.stats.summary import bootstrap_ci, percentile

NEAR_RIDGE_FRACTION = 0.25
# Fewest shapes whose median efficiency gets a bootstrap CI.
MIN_SHAPES_FOR_CI = 5
COMPUTE_BOUND = "compute-bound"
MEMORY_BOUND = "memory-bound"


def gemm_flops(m: int, n: int, k: int) -> int:
    """Work of one GEMM in FLOP: ``F = 2·M·N·K``. Example: 2x3x4 -> 48 FLOP."""
    _check_dims(m, n, k)
    return 2 * m * n * k


def gemm_min_bytes(m: int, n: int, k: int, *, in_bytes: float, out_bytes: float) -> float:
    """Minimum traffic in bytes: ``Q = (M·K + K·N)·in_bytes + M·N·out_bytes``.

    Example: 2x3x4 in bf16 (2 B in, 2 B out) -> (8 + 12)·2 + 6·2 = 52 B.
    """
    _check_dims(m, n, k)
    if in_bytes <= 0 or out_bytes <= 0:
        raise ValueError(f"element sizes must be positive, got {in_bytes!r} and {out_bytes!r}")
    return (m * k + k * n) * in_bytes + m * n * out_bytes


def arithmetic_intensity(flops: float, bytes_moved: float) -> float:
    """``AI = F/Q`` in FLOP/B. Example: 48 FLOP over 52 B -> 0.923 FLOP/B."""
    if bytes_moved <= 0:
        raise ValueError(f"bytes moved must be positive, got {bytes_moved!r}")
    return flops / bytes_moved


def gemm_intensity(m: int, n: int, k: int, *, in_bytes: float, out_bytes: float) -> float:
    """``AI`` of a GEMM shape: ``2MNK / ((MK + KN)·in_bytes + MN·out_bytes)`` FLOP/B."""
    return arithmetic_intensity(
        gemm_flops(m, n, k), gemm_min_bytes(m, n, k, in_bytes=in_bytes, out_bytes=out_bytes)
    )


def ridge_point(peak_flops: float, bandwidth_bps: float) -> float:
    """``R = P/B`` FLOP/B: the intensity where the memory roof meets the compute roof."""
    if peak_flops <= 0 or bandwidth_bps <= 0:
        raise ValueError(f"ceilings must be positive, got P={peak_flops!r}, B={bandwidth_bps!r}")
    return peak_flops / bandwidth_bps


def attainable_flops(intensity: float, *, peak_flops: float, bandwidth_bps: float) -> float:
    """``A(AI) = min(P, AI·B)`` FLOP/s: the roof above an intensity."""
    if peak_flops <= 0 or bandwidth_bps <= 0:
        raise ValueError(f"ceilings must be positive, got P={peak_flops!r}, B={bandwidth_bps!r}")
    return min(peak_flops, intensity * bandwidth_bps)


def efficiency(achieved_flops: float, attainable: float) -> float:
    """``achieved / A(AI)`` as a fraction (1.0 = on the roof; above 1 means a ceiling is low)."""
    if attainable <= 0:
        raise ValueError(f"attainable rate must be positive, got {attainable!r}")
    return achieved_flops / attainable


def fraction_of(value: float, reference: float | None) -> float | None:
    """``value / reference``; None when there is no (positive) reference, e.g. no datasheet."""
    if reference is None or not reference > 0:
        return None
    return value / reference


def classify(intensity: float, ridge: float, *, near: float = NEAR_RIDGE_FRACTION) -> tuple[str, bool]:
    """``(class, near_ridge)``: compute-bound when ``AI >= R`` else memory-bound; near-ridge when
    ``R·(1 - near) <= AI <= R·(1 + near)``. At exactly the ridge a shape is compute-bound."""
    if ridge <= 0:
        raise ValueError(f"ridge must be positive, got {ridge!r}")
    kind = COMPUTE_BOUND if intensity >= ridge else MEMORY_BOUND
    return kind, ridge * (1.0 - near) <= intensity <= ridge * (1.0 + near)


@dataclass(frozen=True, kw_only=True)
class RooflinePoint:
    """One shape placed on a roofline: intensity (FLOP/B), rates (FLOP/s), fractions, class."""

    intensity: float
    achieved_flops: float
    attainable_flops: float
    efficiency: float
    fraction_of_ceiling: float
    kind: str
    near_ridge: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "arithmetic_intensity": self.intensity,
            "achieved_flops": self.achieved_flops,
            "attainable_flops": self.attainable_flops,
            "efficiency": self.efficiency,
            "fraction_of_ceiling": self.fraction_of_ceiling,
            "class": self.kind,
            "near_ridge": self.near_ridge,
        }


def place(*, intensity: float, achieved_flops: float, peak_flops: float, bandwidth_bps: float) -> RooflinePoint:
    """A shape's roofline figures from its intensity, its rate and the two ceilings."""
    attainable = attainable_flops(intensity, peak_flops=peak_flops, bandwidth_bps=bandwidth_bps)
    kind, near = classify(intensity, ridge_point(peak_flops, bandwidth_bps))
    return RooflinePoint(
        intensity=intensity,
        achieved_flops=achieved_flops,
        attainable_flops=attainable,
        efficiency=efficiency(achieved_flops, attainable),
        fraction_of_ceiling=achieved_flops / peak_flops,
        kind=kind,
        near_ridge=near,
    )


def best_fraction_of_ceiling(achieved: Sequence[float], peak_flops: float) -> float:
    """``max(achieved) / P``: the "99.7% of the measured ceiling" figure of a sweep."""
    if not achieved:
        raise ValueError("no achieved rates to take the best of")
    if peak_flops <= 0:
        raise ValueError(f"ceiling must be positive, got {peak_flops!r}")
    return max(achieved) / peak_flops


def median_efficiency(efficiencies: Sequence[float], *, confidence: float = 0.95) -> dict[str, Any]:
    """Median of per-shape efficiencies with a percentile-bootstrap CI of the median
    (the "41.5% vs 46.8%" figure when given the compute-bound subset), plus p10/p25/p75/p90.
    Under ``MIN_SHAPES_FOR_CI`` shapes the CI is None and ``note`` says "too few for a CI":
    a bootstrap of one or two values returns those values, a CI that promises nothing."""
    values = np.asarray(list(efficiencies), dtype=np.float64)
    if values.size == 0:
        raise ValueError("no efficiencies to summarise")
    enough = values.size >= MIN_SHAPES_FOR_CI
    low, high = bootstrap_ci(values, confidence=confidence) if enough else (None, None)
    return {
        "n": int(values.size),
        "median": float(np.median(values)),
        "ci95_low": low,
        "ci95_high": high,
        "note": "" if enough else f"too few for a CI (n={values.size}, a CI needs {MIN_SHAPES_FOR_CI})",
        "p10": percentile(values, 10.0),
        "p25": percentile(values, 25.0),
        "p75": percentile(values, 75.0),
        "p90": percentile(values, 90.0),
        "min": float(values.min()),
        "max": float(values.max()),
    }


def _check_dims(m: int, n: int, k: int) -> None:
    if min(m, n, k) < 1:
        raise ValueError(f"GEMM dimensions must be positive, got M={m}, N={n}, K={k}")
