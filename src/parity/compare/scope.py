"""Like and like: whether a suite figure of one run may be set beside the same figure of another.

A figure's scope says what it is over: the dtype, the byte convention, the operation, the
regime, the subset, how many cases. Two figures of one name are comparable when their scopes
agree on everything that is a condition of the measurement; what a run found rather than what
it was asked (the device, the shape that gave the ceiling, how many timings or points a fit
used, where a figure was measured) may differ. A figure over cases (its scope counts ``cases``)
is comparable only when both runs measured the same cases of its suite, and its unit must be
the same. A figure that is not comparable is listed with the reason, never as a ratio, unless
the comparison is forced, and then marked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from parity.store.figures import StoredFigure

# Scope entries that record what a run found, not a condition it was measured under (a latency
# plateau's extent, ``from_bytes``/``to_bytes``, is where that device's cache level was found: an
# L2 against an L2 of another size, or the same L2 whose edge moved a step with the noise).
FOUND_SCOPE = frozenset({"device", "shape", "best_shape", "timings", "points", "measured_in", "ceiling_from",
                         "run", "runs", "case", "rounds", "samples", "raised_at_bytes", "from_bytes", "to_bytes",
                         "tpot_ms"})  # a decode Pareto point's measured TPOT: its batch is the condition


@dataclass(frozen=True, kw_only=True)
class Comparability:
    """Whether a figure may be compared across runs, and why not."""

    comparable: bool
    reason: str = ""


def _text(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return "none" if value is None else str(value)


def scope_differences(scopes: Sequence[dict[str, Any]]) -> list[str]:
    """``key: a vs b`` for every condition (scope key not in :data:`FOUND_SCOPE`) whose values
    are not all equal (a key missing from one scope counts as ``none``)."""
    keys = sorted(set().union(*(s.keys() for s in scopes)) - FOUND_SCOPE)
    out = []
    for key in keys:
        values = [s.get(key) for s in scopes]
        if len({repr(v) for v in values}) > 1:
            out.append(f"{key}: {' vs '.join(dict.fromkeys(_text(v) for v in values))}")
    return out


def figure_comparability(figures: Sequence[StoredFigure], case_sets: Sequence[frozenset[str]]) -> Comparability:
    """Whether ``figures`` (one name, one per run) compare: one unit, scopes equal in every
    condition, and for a figure over cases the same case keys of its suite in every run
    (``case_sets``, one per run)."""
    units = {f.unit for f in figures}
    if len(units) > 1:
        return Comparability(comparable=False, reason=f"units differ: {' vs '.join(sorted(units))}")
    differences = scope_differences([f.scope for f in figures])
    if differences:
        return Comparability(comparable=False, reason="scope differs: " + "; ".join(differences))
    if any("cases" in f.scope for f in figures) and len(set(case_sets)) > 1:
        common = frozenset.intersection(*case_sets)
        extra = sum(len(s - common) for s in case_sets)
        return Comparability(comparable=False,
                             reason=f"over different case sets ({extra} case(s) not measured in every run)")
    return Comparability(comparable=True)
