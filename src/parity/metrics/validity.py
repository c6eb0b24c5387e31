"""Figures that cannot be true: each rule a named check that returns an ``invalid`` finding or None.

A benchmark on a shared machine can print numbers no device could produce: a shape faster than
the measured compute ceiling, more of the shorter work hidden than there was of it, a kernel
faster beside other work than alone, a prediction outside the bounds it was computed with. Such
a figure is not clipped or dropped (the raw value is the evidence); it carries a finding of code
and severity ``invalid`` (``parity.model.findings``), and the run that holds it does not end
``OK``. Each rule allows for the figure's own uncertainty: a value is invalid only when its 95%
CI (where it has one) lies wholly on the impossible side, so noise around a true 100% is not
flagged; a share (an overlap) is judged by its value, since a share outside [0, 1] is not a
share at all.

Rules (one function each):

- ``fraction_above_one``: a fraction of a measured ceiling ``f = achieved / P`` is invalid when
  ``f_low > 1`` (``f > 1`` without a CI). Example: 3.12 with CI [2.9, 3.3] is invalid; 1.02 with
  CI [0.98, 1.05] is not.
- ``overlap_outside_unit``: an overlap fraction (the share of the shorter work hidden under the
  other) is invalid when the value lies outside ``[0, 1]``, whatever its CI: a share cannot be
  negative or above 1, and a figure printed outside the range is never left unmarked (its CI is
  named in the message). Example: 13.82 and -9.07 are; 0.5 is not.
- ``faster_together``: "together" cannot be faster than "alone" (two works sharing a device
  can at best not slow each other): invalid when ``together_high < alone_low`` (the CIs of the
  two times do not meet, together below). Example: together [2.0, 2.2] ms, alone [3.0, 3.1] ms
  is invalid.
- ``outside_bounds``: a prediction outside the bounds computed with it, ``v < low`` or
  ``v > high`` beyond a relative ``tolerance`` (1e-9: rounding). Example: replay 0.975x with
  bounds [1.31, 1.86] is invalid.
- ``non_positive_rate``: a rate (FLOP/s, B/s, tok/s) ``<= 0`` is invalid. Example: -3 GB/s.

One exception, a warning rather than ``invalid`` (``replay_against_bounds``): a what-if replay
between 1 and its bounds (it saves less than the bounds say, in the same direction) when ops that
follow the scaled work on its lanes waited for work elsewhere (their launch on the host, another
stream, thread or rank). The bounds hold idle gaps fixed; where an op waits for work elsewhere,
time saved before it becomes idle time, which the replay follows and the bounds do not, so there
the replay is the likelier figure. Example: bounds [1.323, 1.323], replay 1.000 with one op that
waited for its launch after the scaled work is that warning; replay 0.975 (slower when made
faster) stays invalid.
"""

from __future__ import annotations

from parity.model.findings import INVALID, Finding, Severity
from parity.model.figure import told_apart

BOUNDS_TOLERANCE = 1e-9  # relative slack for a prediction that sits on its bound up to rounding


def invalid(message: str, hint: str) -> Finding:
    """An ``invalid`` finding (code and severity ``invalid``)."""
    return Finding(code=INVALID, severity=Severity.INVALID, message=message, hint=hint)


def _ci_text(ci95: tuple[float, float] | None, fmt: str = ".3g") -> str:
    return f" (95% CI [{ci95[0]:{fmt}}, {ci95[1]:{fmt}}])" if ci95 is not None else ""


def fraction_above_one(fraction: float | None, ci95: tuple[float, float] | None = None, *,
                       what: str, ceiling: str = "P") -> Finding | None:
    """``invalid`` when a fraction of a measured ceiling exceeds 1 beyond its CI: ``low > 1``,
    or ``fraction > 1`` when there is no CI. ``what`` names the figure in the message."""
    if fraction is None:
        return None
    low = ci95[0] if ci95 is not None else fraction
    if low <= 1.0:
        return None
    return invalid(f"{what} is {fraction:.1%} of the measured ceiling {ceiling}{_ci_text(ci95, '.1%')}: "
                   f"a run cannot sustain more than its own ceiling",
                   f"the ceiling {ceiling} was measured low (a busy machine, too small a search); "
                   "measure again on a quiet machine before quoting either")


def overlap_outside_unit(overlap: float | None, ci95: tuple[float, float] | None = None, *,
                         what: str = "overlap") -> Finding | None:
    """``invalid`` when an overlap fraction lies outside ``[0, 1]`` (its CI, if given, is named
    in the message)."""
    if overlap is None or 0.0 <= overlap <= 1.0:
        return None
    if overlap > 1.0:
        return invalid(f"{what} {overlap:.1%}{_ci_text(ci95, '.1%')} is above 1: more of the shorter work "
                       "hidden than there was of it",
                       "the times alone and together were not measured under the same conditions "
                       "(other load, too few iterations); run again with more iterations on a quiet machine")
    return invalid(f"{what} {overlap:.1%}{_ci_text(ci95, '.1%')} is below 0: both together took longer than one "
                   "after the other",
                   "the two works contend for the same cores, memory or links (see the slowdowns: on a CPU "
                   "the exchange's threads and the compute share the cores), or the times alone and together "
                   "were taken under different load; no overlap can be read from it: run again on a quiet "
                   "machine, on a device whose exchange does not take the compute's cores")


def faster_together(together_ci95: tuple[float, float] | None, alone_ci95: tuple[float, float] | None, *,
                    what: str) -> Finding | None:
    """``invalid`` when ``what`` ran faster beside other work than alone beyond both CIs:
    the CI of the time together ends below the start of the CI of the time alone (s)."""
    if together_ci95 is None or alone_ci95 is None or together_ci95[1] >= alone_ci95[0]:
        return None
    return invalid(f"{what} ran faster beside the other work than alone: together "
                   f"[{together_ci95[0] * 1e3:.3g}, {together_ci95[1] * 1e3:.3g}] ms, alone "
                   f"[{alone_ci95[0] * 1e3:.3g}, {alone_ci95[1] * 1e3:.3g}] ms (95% CIs)",
                   "the time alone was taken under other load than the time together; "
                   "run again with more iterations on a quiet machine")


def within_bounds(value: float, low: float, high: float, tolerance: float = BOUNDS_TOLERANCE) -> bool:
    """Whether ``value`` lies in ``[low, high]`` up to ``tolerance`` relative to the bound."""
    return low * (1 - tolerance) <= value <= high * (1 + tolerance)


def outside_bounds(value: float | None, low: float, high: float, *, what: str,
                   tolerance: float = BOUNDS_TOLERANCE) -> Finding | None:
    """``invalid`` when ``value`` lies outside ``[low, high]``, the bounds computed with it,
    by more than ``tolerance`` relative to the bound."""
    if value is None or within_bounds(value, low, high, tolerance):
        return None
    shown, low_text, high_text = told_apart(value, low, high)
    return invalid(f"{what} {shown}x lies outside its own bounds [{low_text}x, {high_text}x]",
                   "nothing in the trace explains it (slower when work gets faster, more saved than all "
                   "the scaled time, or less saved with no wait after the scaled work): the dependency "
                   "graph may lack a link (see its assumptions); do not quote it: quote the bounds")


def toward_one(value: float, low: float, high: float, tolerance: float = BOUNDS_TOLERANCE) -> bool:
    """Whether ``value`` lies outside ``[low, high]`` but between 1 and the bounds: a speedup that
    saves (or a slowdown that loses) less than the bounds say, never the other way."""
    return (not within_bounds(value, low, high, tolerance)
            and min(1.0, low) * (1 - tolerance) <= value <= max(1.0, high) * (1 + tolerance))


REPLAY_WAITS_ELSEWHERE = "replay-waits-elsewhere"


def replay_against_bounds(value: float | None, low: float, high: float, *, waited: int, why: str,
                          what: str) -> Finding | None:
    """A replayed speedup against the bounds computed with it: None inside them; a warning
    (``replay-waits-elsewhere``) when it lies between 1 and the bounds and ``waited`` ops after
    the scaled work waited for work elsewhere (``why`` says which: the bounds' fixed idle gaps
    do not hold there); ``invalid`` (:func:`outside_bounds`) otherwise."""
    if value is None or within_bounds(value, low, high):
        return None
    if waited > 0 and toward_one(value, low, high):
        shown, low_text, high_text = told_apart(value, low, high)
        return Finding(code=REPLAY_WAITS_ELSEWHERE, severity=Severity.WARNING,
                       message=f"{what} {shown}x lies between 1 and its bounds [{low_text}x, {high_text}x]: {why}",
                       hint="where ops wait for work elsewhere the replay is the figure to quote; the bounds "
                            "assume they never do")
    return outside_bounds(value, low, high, what=what)


def non_positive_rate(rate: float | None, *, what: str, unit: str) -> Finding | None:
    """``invalid`` when a rate (work per second) is zero or negative."""
    if rate is None or rate > 0:
        return None
    return invalid(f"{what} is {rate:.4g} {unit}: a rate must be positive",
                   "the timed work or its time is wrong (a zero-length sample, work declared as 0); "
                   "report it with the run's JSON")
