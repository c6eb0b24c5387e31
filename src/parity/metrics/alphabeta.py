"""The α-β model of a collective's time, fitted to measured points (docs/definitions.md,
"α-β fit").

Model: ``t = α + x / β`` with ``x = S · f(op, n)`` the bus bytes of the operation (``S`` as
nccl-tests counts it, ``f`` its bus factor on ``n`` ranks, ``parity.metrics.collectives``), so
``β`` is a bus bandwidth (B/s) comparable across rank counts and ``α`` a fixed cost (s). One fit
per collective and dimension (intra-node, inter-node, or the whole group).

Fit: weighted least squares, minimising ``Σ (t_i - α - x_i·s)² / t_i`` with ``s = 1/β``
(weights ``1/t_i``: a time's variance taken to grow with the time, as a count of packets does),
so the small sizes still set ``α`` but their noise (a scheduler's millisecond on a loaded host)
does not tilt the slope that predicts the large ones; plain least squares would leave ``α`` to
the largest points, relative residuals (``1/t²``) let the smallest set ``β``. Closed form: with
``w_i = 1/t_i`` and the weighted sums
``W = Σw, X = Σw·x, XX = Σw·x², T = Σw·t, XT = Σw·x·t``,
``det = W·XX - X²``, ``α = (T·XX - X·XT)/det``, ``s = (W·XT - X·T)/det``.
CIs: the 2.5th and 97.5th percentiles of α and β over ``resamples`` bootstrap resamples of the
points (seeded; resamples with fewer than two distinct sizes are skipped).

Check: each left-out point's relative error ``e = t_pred / t_meas - 1``; the fit predicts them
"within q" when ``max |e| <= q``.

Doubt: a point keeps the codes of its case's findings that put it in doubt (``contended``:
others used the machine while it was timed; ``invalid``), and a fit and a check count the
points that carry any, so what rests on such points says so.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from parity.metrics.collectives import bus_factor
from parity.model.errors import ParityError

RESAMPLES = 1000
SEED = 20261203


@dataclass(frozen=True, kw_only=True)
class Point:
    """One measured time: ``op`` on ``world_size`` ranks in ``dimension``, ``size_bytes`` = S,
    ``time_s`` (the max over ranks per iteration, median), from run ``run_id``."""

    op: str
    dimension: str
    world_size: int
    size_bytes: float
    time_s: float
    run_id: str = ""
    doubts: tuple[str, ...] = ()  # the case's untrusted finding codes (contended, invalid)

    @property
    def bus_bytes(self) -> float:
        """``x = S · f(op, n)``."""
        return self.size_bytes * bus_factor(self.op, self.world_size)


@dataclass(frozen=True, kw_only=True)
class AlphaBetaFit:
    """``t = α + x/β``: ``alpha_s`` (s), ``beta_bps`` (bus B/s), their 95% CIs (None with too few
    points), the points' count and range, and the runs they came from."""

    op: str
    dimension: str
    alpha_s: float
    beta_bps: float
    alpha_ci_s: tuple[float, float] | None = None
    beta_ci_bps: tuple[float, float] | None = None
    points: int = 0
    min_size_bytes: float = 0.0
    max_size_bytes: float = 0.0
    world_sizes: tuple[int, ...] = ()
    runs: tuple[str, ...] = ()
    method: str = "least squares weighted by 1/t; bootstrap CIs over points"
    doubtful_points: int = 0  # points whose case carries an untrusted finding
    doubts: tuple[str, ...] = ()  # those findings' codes

    def predict(self, *, op: str, size_bytes: float, world_size: int) -> float:
        """``α + S·f(op, n)/β`` in seconds."""
        return self.alpha_s + size_bytes * bus_factor(op, world_size) / self.beta_bps

    def to_dict(self) -> dict[str, object]:
        return {"op": self.op, "dimension": self.dimension, "alpha_s": self.alpha_s, "beta_bps": self.beta_bps,
                "alpha_ci_s": list(self.alpha_ci_s) if self.alpha_ci_s else None,
                "beta_ci_bps": list(self.beta_ci_bps) if self.beta_ci_bps else None,
                "points": self.points, "min_size_bytes": self.min_size_bytes,
                "max_size_bytes": self.max_size_bytes, "world_sizes": list(self.world_sizes),
                "runs": list(self.runs), "method": self.method, "doubtful_points": self.doubtful_points,
                "doubts": list(self.doubts)}


def weighted_line(xs: Sequence[float], ts: Sequence[float]) -> tuple[float, float]:
    """``(α, s)`` minimising ``Σ (t - α - x·s)²/t`` (module docstring's closed form).
    Example: x (0, 1, 2), t (1, 3, 4) gives α = 216/204, s = 324/204."""
    if len(xs) != len(ts) or len(set(xs)) < 2:
        raise ParityError("an α-β fit needs points at two or more sizes")
    if any(t <= 0 for t in ts):
        raise ParityError("an α-β fit needs positive times")
    w = [1.0 / t for t in ts]
    W = sum(w)
    X = sum(wi * x for wi, x in zip(w, xs))
    XX = sum(wi * x * x for wi, x in zip(w, xs))
    T = sum(wi * t for wi, t in zip(w, ts))
    XT = sum(wi * x * t for wi, x, t in zip(w, xs, ts))
    det = W * XX - X * X
    if det <= 0:
        raise ParityError("the α-β fit is degenerate: the sizes do not differ")
    return (T * XX - X * XT) / det, (W * XT - X * T) / det


def fit_alpha_beta(points: Sequence[Point], *, resamples: int = RESAMPLES, seed: int = SEED) -> AlphaBetaFit:
    """The α-β fit of ``points`` (one collective, one dimension) with bootstrap CIs."""
    if not points:
        raise ParityError("no measured points to fit")
    kinds = {(p.op, p.dimension) for p in points}
    if len(kinds) > 1:
        raise ParityError(f"fit one collective and dimension at a time, not {sorted(kinds)}")
    xs = [p.bus_bytes for p in points]
    ts = [p.time_s for p in points]
    alpha, slope = weighted_line(xs, ts)
    if slope <= 0:
        raise ParityError(f"the measured times of {points[0].op} do not grow with size; no bandwidth to fit")
    alpha_ci, beta_ci = _bootstrap(xs, ts, resamples=resamples, seed=seed) if len(points) >= 3 else (None, None)
    return AlphaBetaFit(op=points[0].op, dimension=points[0].dimension, alpha_s=alpha, beta_bps=1.0 / slope,
                        alpha_ci_s=alpha_ci, beta_ci_bps=beta_ci, points=len(points),
                        min_size_bytes=min(p.size_bytes for p in points),
                        max_size_bytes=max(p.size_bytes for p in points),
                        world_sizes=tuple(sorted({p.world_size for p in points})),
                        runs=tuple(sorted({p.run_id for p in points if p.run_id})),
                        doubtful_points=sum(1 for p in points if p.doubts),
                        doubts=tuple(sorted({c for p in points for c in p.doubts})))


def _bootstrap(xs: list[float], ts: list[float], *, resamples: int,
               seed: int) -> tuple[tuple[float, float] | None, tuple[float, float] | None]:
    rng = random.Random(seed)
    alphas, betas = [], []
    for _ in range(resamples):
        picks = [rng.randrange(len(xs)) for _ in xs]
        sx = [xs[i] for i in picks]
        if len(set(sx)) < 2:
            continue
        alpha, slope = weighted_line(sx, [ts[i] for i in picks])
        if slope > 0:
            alphas.append(alpha)
            betas.append(1.0 / slope)
    if len(alphas) < 10:
        return None, None
    return _interval(alphas), _interval(betas)


def _interval(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    last = len(ordered) - 1
    return ordered[round(0.025 * last)], ordered[round(0.975 * last)]


@dataclass(frozen=True, kw_only=True)
class Prediction:
    """One left-out point: measured and predicted time (s) and ``relative_error`` = pred/meas - 1."""

    size_bytes: float
    world_size: int
    measured_s: float
    predicted_s: float
    relative_error: float
    doubts: tuple[str, ...] = ()  # the measured point's untrusted finding codes


@dataclass(frozen=True, kw_only=True)
class PredictionCheck:
    """How well a fit predicts points it did not see: each prediction, ``max_abs_error`` and
    ``median_abs_error`` (relative), and ``within`` the tolerance asked."""

    tolerance: float
    predictions: tuple[Prediction, ...] = field(default_factory=tuple)
    max_abs_error: float = 0.0
    median_abs_error: float = 0.0
    within: bool = True

    def to_dict(self) -> dict[str, object]:
        return {"tolerance": self.tolerance, "max_abs_error": self.max_abs_error,
                "median_abs_error": self.median_abs_error, "within": self.within,
                "predictions": [{**vars(p), "doubts": list(p.doubts)} for p in self.predictions]}

    @property
    def doubtful_points(self) -> int:
        """Left-out points whose case carries an untrusted finding."""
        return sum(1 for p in self.predictions if p.doubts)


def check_predictions(fit: AlphaBetaFit, held_out: Sequence[Point], *, tolerance: float = 0.15) -> PredictionCheck:
    """Predict each held-out point and say how far off (module docstring). Example: a fit
    α = 0, β = 1e9 predicts 1e9 B in 1 s; measured 1.1 s gives e = 1/1.1 - 1 = -0.0909."""
    if not held_out:
        raise ParityError("no held-out points to check the fit against")
    predictions = []
    for p in held_out:
        predicted = fit.predict(op=p.op, size_bytes=p.size_bytes, world_size=p.world_size)
        predictions.append(Prediction(size_bytes=p.size_bytes, world_size=p.world_size, measured_s=p.time_s,
                                      predicted_s=predicted, relative_error=predicted / p.time_s - 1.0,
                                      doubts=p.doubts))
    errors = [abs(p.relative_error) for p in predictions]
    return PredictionCheck(tolerance=tolerance, predictions=tuple(predictions), max_abs_error=max(errors),
                           median_abs_error=statistics.median(errors), within=max(errors) <= tolerance)
