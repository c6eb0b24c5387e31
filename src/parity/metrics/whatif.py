"""Named what-if formulas: how a step changes when one kind of work runs k times faster.

Definitions from docs/definitions.md ("What-if"). Times are in any one unit (the trace code passes ns);
``k`` is a speed factor: ``k = 2`` halves the scaled work, ``k = inf`` removes it, ``k < 1``
slows it down. Every function is pure arithmetic on its arguments.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence

from parity.model.errors import ParityError


def check_factor(k: float) -> float:
    """``k`` as a float, refusing values that are not a positive speed factor."""
    try:
        value = float(k)
    except (TypeError, ValueError):
        raise ParityError(f"speed factor {k!r} is not a number; use e.g. 2 or inf") from None
    if math.isnan(value) or value <= 0:
        raise ParityError(f"speed factor {k!r} must be > 0 (2 = twice as fast, inf = free)")
    return value


def saved_fraction(k: float) -> float:
    """Fraction of a scaled duration that disappears: ``1 - 1/k`` (``1`` for ``k = inf``).

    Negative when ``k < 1`` (the work gets slower).
    """
    return 1.0 - 1.0 / check_factor(k)


def scaled_duration(duration: float, k: float) -> float:
    """A duration run ``k`` times faster: ``d / k`` (``0`` for ``k = inf``)."""
    return duration / check_factor(k)


def first_order_step(step: float, category_time: float, k: float) -> float:
    """First-order step time ``T' = T - (1 - 1/k)·T_c``.

    ``T`` is the measured step, ``T_c`` the scaled category's time on the critical (busiest)
    stream; overlap and idle are held fixed, so the step shrinks exactly by the time the critical
    stream saves (docs/definitions.md, What-if). Example: ``T = 10``, ``T_c = 4``, ``k = 2`` gives ``8``.
    """
    return first_order_step_multi(step, [(category_time, k)])


def first_order_step_multi(step: float, scaled: Iterable[tuple[float, float]]) -> float:
    """``T' = T - Σ_c (1 - 1/k_c)·T_c`` for several categories scaled at once.

    The categories must be disjoint (each kernel belongs to one), so their savings add.
    """
    if step <= 0:
        raise ParityError(f"step time {step!r} must be > 0; check the window")
    new = float(step)
    for category_time, k in scaled:
        if category_time < 0 or category_time > step * (1 + 1e-9):
            raise ParityError(
                f"category time {category_time!r} is outside [0, step {step!r}]; check the window"
            )
        new -= saved_fraction(k) * category_time
    return new


def speedup(step: float, new_step: float) -> float:
    """Speedup ``S = T / T'`` (``inf`` when the new step is 0)."""
    if step <= 0:
        raise ParityError(f"step time {step!r} must be > 0; check the window")
    if new_step <= 0:
        return math.inf
    return step / new_step


def speedup_bounds(
    step: float, scaled: Iterable[tuple[float, float, float]]
) -> tuple[float, float]:
    """Lowest and highest speedups consistent with the trace, ``(L, U)``.

    ``scaled`` holds ``(E_c, U_c, k_c)`` per scaled category, where ``E_c`` is the category's
    *exposed* time (when it runs and no other work does, on any stream) and ``U_c`` its *union*
    time (when any of it runs, on any stream), both inside the window of length ``T``:

    - ``L = T / (T - Σ (1 - 1/k_c)·E_c)``: overlapped time saves nothing (other streams still
      need it), exposed time saves fully;
    - ``U = T / (T - Σ (1 - 1/k_c)·U_c)``: every instant some scaled work runs shrinks, as if the
      scaled work were all on the critical path.

    With gaps and unscaled durations held fixed, a critical path's scaled work is a set of
    sequential kernels, so its length is at most ``U_c``: no schedule saves more. For ``k < 1``
    the two swap so that ``L <= U`` always. Example: ``T = 10``, ``E = 2``, ``U = 6``, ``k = 2``
    gives ``L = 10/9``, ``U = 10/7``.
    """
    low_saving = 0.0
    high_saving = 0.0
    for exposed, union, k in scaled:
        if not 0 <= exposed <= union * (1 + 1e-9) + 1e-12:
            raise ParityError(f"exposed time {exposed!r} must lie in [0, union time {union!r}]")
        fraction = saved_fraction(k)
        low_saving += fraction * exposed
        high_saving += fraction * union
    a = speedup(step, step - low_saving)
    b = speedup(step, step - high_saving)
    return (min(a, b), max(a, b))


# Validation figures: how a prediction compares with a measured step, and whether the measured
# steps are steady enough to compare with at all.

BIMODAL_THRESHOLD = 5 / 9  # Sarle's coefficient of a uniform distribution


def prediction_error(predicted: float, measured: float) -> float:
    """Signed relative error ``e = P / M - 1`` of a predicted step ``P`` against a measured ``M``
    (negative: the prediction is too fast). Example: ``P = 9``, ``M = 10`` gives ``-0.1``."""
    if measured <= 0:
        raise ParityError(f"measured step {measured!r} must be > 0")
    return predicted / measured - 1.0


def half_drift(values: Sequence[float]) -> float:
    """Drift of a series in time order: ``|med(second half) - med(first half)| / med(all)``.

    A steady series drifts by about its noise over sqrt(n/2); a series whose level moved while it
    was measured (another process started, the clock changed) drifts by the move. With an odd
    count the middle value belongs to the second half. Example: ``[1, 1, 2, 2]`` gives
    ``|2 - 1| / 1.5 = 2/3``.
    """
    n = len(values)
    if n < 2:
        raise ParityError(f"a drift needs at least 2 values, got {n}")
    whole = statistics.median(values)
    if whole <= 0:
        raise ParityError(f"median {whole!r} must be > 0 to compare halves")
    first, second = values[: n // 2], values[n // 2:]
    return abs(statistics.median(second) - statistics.median(first)) / whole


def bimodality_coefficient(values: Sequence[float]) -> float:
    """Sarle's bimodality coefficient ``b = (g² + 1) / (κ + 3(n-1)² / ((n-2)(n-3)))``.

    ``g`` is the sample skewness ``sqrt(n(n-1))/(n-2) · m3/m2^1.5`` and ``κ`` the sample excess
    kurtosis ``(n-1)/((n-2)(n-3)) · ((n+1)(m4/m2² - 3) + 6)``, ``m_j`` the central moments (over
    ``n``). A uniform distribution gives 5/9 (:data:`BIMODAL_THRESHOLD`), a normal one 1/3;
    values above 5/9 point to two modes or one heavy tail, both of which make a median step a
    poor summary. 0 for constant values. Example: 20 values, ten 0s and ten 1s: ``g = 0``,
    ``κ = 19/306 · (21·(-2) + 6) = -2.235``, ``b = 1 / (3·361/306 - 2.235) = 0.767``.
    """
    n = len(values)
    if n < 4:
        raise ParityError(f"a bimodality coefficient needs at least 4 values, got {n}")
    mean = statistics.fmean(values)
    m2, m3, m4 = (statistics.fmean((v - mean) ** p for v in values) for p in (2, 3, 4))
    if m2 <= 0:
        return 0.0
    skew = math.sqrt(n * (n - 1)) / (n - 2) * m3 / m2 ** 1.5
    kurt = (n - 1) / ((n - 2) * (n - 3)) * ((n + 1) * (m4 / m2 ** 2 - 3) + 6)
    return (skew ** 2 + 1) / (kurt + 3 * (n - 1) ** 2 / ((n - 2) * (n - 3)))


def run_queue_share(wait_ns: float, wall_ns: float) -> float:
    """Share of a step a thread spent runnable but off the CPU: ``w / T`` (the kernel's
    run-queue wait ``w`` over the step's wall time ``T``, same unit). Other processes on the
    same cores cause it; the trace cannot show it, so no replay of the trace can predict it."""
    if wall_ns <= 0:
        raise ParityError(f"step wall time {wall_ns!r} must be > 0")
    return wait_ns / wall_ns


def half_drift_z(values: Sequence[float]) -> float:
    """How many standard errors apart the two halves' medians of a series are:
    ``z = |med2 - med1| / (1.2533 · 1.4826 · MAD · sqrt(1/n1 + 1/n2))``.

    ``MAD`` is the median absolute deviation of each value from its own half's median, so a
    clean step between two levels does not count as spread; ``1.4826 · MAD`` estimates the
    noise's standard deviation robustly and ``1.2533 · σ / sqrt(n)`` is the standard error of a
    median of normal noise, so a steady series gives ``z`` below 2 about 95% of the time: a
    drift large next to the target but small next to the noise is noise. ``inf`` when the
    halves differ and MAD is 0, 0 when nothing differs. Example: ``[1, 2, 3, 2, 3, 4]``: medians
    2 and 3, deviations ``[1, 0, 1, 1, 0, 1]``, MAD 1,
    ``z = 1 / (1.2533 · 1.4826 · sqrt(2/3)) = 0.659``.
    """
    n = len(values)
    if n < 2:
        raise ParityError(f"a drift needs at least 2 values, got {n}")
    first, second = values[: n // 2], values[n // 2:]
    m1, m2 = statistics.median(first), statistics.median(second)
    mad = statistics.median([abs(v - m1) for v in first] + [abs(v - m2) for v in second])
    if mad == 0:
        return math.inf if m1 != m2 else 0.0
    return abs(m2 - m1) / (1.2533 * 1.4826 * mad * math.sqrt(1 / len(first) + 1 / len(second)))
