"""Named what-if formulas: how a step changes when one kind of work runs k times faster.

Definitions from DESIGN.md ("What-if"). Times are in any one unit (the trace code passes ns);
``k`` is a speed factor: ``k = 2`` halves the scaled work, ``k = inf`` removes it, ``k < 1``
slows it down. Every function is pure arithmetic on its arguments.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

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
    stream saves (DESIGN.md, What-if). Example: ``T = 10``, ``T_c = 4``, ``k = 2`` gives ``8``.
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
