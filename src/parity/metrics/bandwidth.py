"""Memory bandwidth: byte conventions per operation, the fixed-cost fit, n½, utilization.

Conventions (docs/definitions.md, "Bandwidth"). For an operation on arrays of ``n`` bytes each:

=========  ===========================  =======================  =====================
op         what it does                 bytes counted (STREAM)   nvbandwidth-style
=========  ===========================  =======================  =====================
copy       ``b[:] = a``                 ``2n`` (read + write)    ``n`` (bytes copied)
read       ``sum(a)`` (a reduction)     ``n``                    ``n``
write      ``a[:] = s`` (a fill)        ``n``                    ``n``
triad      ``a[:] = b + s*c``           ``3n`` (2 reads, 1 write) ``n``
h2d, d2h   host <-> device copy         ``n``                    ``n``
=========  ===========================  =======================  =====================

The STREAM column follows McCalpin's STREAM benchmark (which counts every array read and
written, and ignores write-allocate traffic); nvbandwidth (NVIDIA) reports ``n/t`` for a copy,
half the STREAM figure. Both are reported, each labelled, so neither is mistaken for the other.

The fit ``t = a + V/b`` (Hockney's model) splits a transfer's time into a fixed cost ``a``
(launch, synchronisation, first-touch) and a streaming rate ``b``; ``n½ = a·b`` is the volume at
which half of ``b`` is reached, so "better on small transfers" becomes ``a`` and "approaches on
large ones" becomes ``b``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from parity.model.errors import ParityError

# Bytes moved per byte of one operand, STREAM convention (reads plus writes).
STREAM_FACTORS: dict[str, int] = {"copy": 2, "read": 1, "write": 1, "triad": 3, "h2d": 1, "d2h": 1}
STREAM_CONVENTION = "stream: bytes read + bytes written (write-allocate not counted)"
NVBANDWIDTH_CONVENTION = "nvbandwidth: bytes of one operand per second (n/t)"


def bytes_moved(op: str, operand_bytes: int) -> int:
    """Bytes one call of ``op`` moves under the STREAM convention: ``factor(op) · n``.

    ``copy`` 2n, ``read`` n, ``write`` n, ``triad`` 3n, ``h2d``/``d2h`` n (table above).
    """
    try:
        factor = STREAM_FACTORS[op]
    except KeyError:
        known = ", ".join(STREAM_FACTORS)
        raise ParityError(f"unknown bandwidth op {op!r}; known ops: {known}") from None
    if operand_bytes < 0:
        raise ParityError(f"operand size {operand_bytes} B is negative; give a size >= 0")
    return factor * int(operand_bytes)


def bandwidth_gbps(nbytes: float, seconds: float) -> float:
    """Bandwidth in GB/s (10^9 bytes per second): ``nbytes / seconds / 1e9``."""
    if seconds <= 0:
        raise ParityError(f"duration {seconds!r} s is not positive; cannot derive a bandwidth")
    return nbytes / seconds / 1e9


def utilization(achieved_gbps: float, ceiling_gbps: float | None) -> float | None:
    """``achieved / ceiling`` as a fraction (1.0 = 100%); None when there is no ceiling."""
    if ceiling_gbps is None or not ceiling_gbps > 0:
        return None
    return achieved_gbps / ceiling_gbps


def n_half_bytes(fixed_cost_s: float, asymptotic_bps: float) -> float:
    """Half-bandwidth volume ``n½ = a · b`` in bytes (Hockney): at ``V = n½``, ``V/t = b/2``."""
    return fixed_cost_s * asymptotic_bps


def fitted_bandwidth_bps(volume_bytes: float, *, fixed_cost_s: float, asymptotic_bps: float) -> float:
    """Bandwidth the fit ``t = a + V/b`` predicts at volume ``V``: ``V / (a + V/b)`` B/s.

    It rises from 0 towards ``b`` and is ``b/2`` at ``V = n½ = a·b`` (Hockney's model)."""
    if asymptotic_bps <= 0 or fixed_cost_s < 0 or volume_bytes < 0:
        raise ValueError(f"fit needs a >= 0, b > 0, V >= 0; got a={fixed_cost_s!r}, b={asymptotic_bps!r}, "
                         f"V={volume_bytes!r}")
    if volume_bytes == 0:
        return 0.0
    return volume_bytes / (fixed_cost_s + volume_bytes / asymptotic_bps)


@dataclass(frozen=True, kw_only=True)
class BandwidthFit:
    """``t = a + V/b`` fitted to one curve.

    ``fixed_cost_s`` is ``a``; ``asymptotic_gbps`` is ``b`` in GB/s under the curve's byte
    convention; ``n_half_bytes`` is ``a·b``; ``relative_rms_residual`` is the root mean square
    of ``(t_i - t̂_i)/t_i`` (0.05 means the model is off by about 5% per point);
    ``points`` is how many points were fitted and ``min_bytes``/``max_bytes`` their range.
    """

    fixed_cost_s: float
    asymptotic_gbps: float
    n_half_bytes: float
    relative_rms_residual: float
    points: int
    min_bytes: int
    max_bytes: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "fixed_cost_s": self.fixed_cost_s,
            "asymptotic_gbps": self.asymptotic_gbps,
            "n_half_bytes": self.n_half_bytes,
            "relative_rms_residual": self.relative_rms_residual,
            "fitted_points": self.points,
            "min_bytes": self.min_bytes,
            "max_bytes": self.max_bytes,
        }


def fit_fixed_cost(volumes_bytes: Sequence[float], times_s: Sequence[float]) -> BandwidthFit:
    """Least-squares fit of ``t = a + V/b`` with relative weights.

    Minimises ``Σ ((t_i - a - c·V_i) / t_i)²`` over ``a`` and ``c = 1/b`` (weighted linear least
    squares, weights ``1/t_i²``). Relative weights matter because sizes span six decades: an
    unweighted fit lets the largest transfers' noise swamp the microseconds that decide ``a``.
    ``a`` may come out slightly negative when the fixed cost is below the noise; it is clamped to
    zero (and ``n½`` with it) rather than reported as a negative time.
    """
    v = np.asarray(volumes_bytes, dtype=np.float64)
    t = np.asarray(times_s, dtype=np.float64)
    if v.shape != t.shape or v.ndim != 1:
        raise ParityError("volumes and times must be two 1-d sequences of the same length")
    if v.size < 2 or np.unique(v).size < 2:
        raise ParityError(f"need at least 2 distinct sizes to fit t = a + V/b, got {np.unique(v).size}")
    if np.any(t <= 0) or not np.all(np.isfinite(t)):
        raise ParityError("every time must be a positive finite number of seconds to fit")
    weights = 1.0 / t
    design = np.column_stack([np.ones_like(v), v]) * weights[:, None]
    (a, c), *_ = np.linalg.lstsq(design, t * weights, rcond=None)
    if c <= 0:
        raise ParityError("the fitted time does not grow with size; the curve has no bandwidth term")
    if a < 0:
        a = 0.0
        c = float(np.sum(v * t / t**2) / np.sum(v * v / t**2))  # refit through the origin
    residual = (t - (a + c * v)) / t
    b = 1.0 / c
    return BandwidthFit(
        fixed_cost_s=float(a),
        asymptotic_gbps=float(b / 1e9),
        n_half_bytes=float(n_half_bytes(float(a), b)),
        relative_rms_residual=float(math.sqrt(float(np.mean(residual**2)))),
        points=int(v.size),
        min_bytes=int(v.min()),
        max_bytes=int(v.max()),
    )
